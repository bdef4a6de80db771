"""Long Python tracebacks through library code: the ends and the project's frames stay.

A failing ``pip install -v`` prints twenty and more ``File "...", line N`` frames inside
pip, setuptools and the standard library before the error. The shape rules keep every
frame that names its place; in a traceback with many library frames, those between the
first two and the last three of the traceback rank below must instead, and the omission
marker counts them. Frames in the project's own code are always kept.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from contextwright.tool_outputs.compressors.marks import KEY_LOW, MUST, Marks

_FRAME = re.compile(r'^\s*File "([^"]+)", line \d+')
_LIBRARY = re.compile(r"site-packages|dist-packages|/lib/python\d[\d.]*/|^<frozen |/usr/lib/")
_MIN_LIBRARY_FRAMES = 8
_HEAD = 2
_TAIL = 3
_GAP = 3  # lines a frame's source and annotations may take before the next frame
LIBRARY_FRAME = "library frame"


def rank_library_frames(lines: Sequence[str], marks: Marks) -> None:
    """In each traceback with many library frames, rank its middle library frames below must."""
    for traceback in _tracebacks(lines):
        frames = [(index, _LIBRARY.search(path) is not None) for index, path in traceback]
        if sum(library for _, library in frames) < _MIN_LIBRARY_FRAMES:
            continue
        for position, (index, library) in enumerate(frames):
            if not library or position < _HEAD or position >= len(frames) - _TAIL:
                continue
            if marks.priority[index] >= MUST:
                marks.priority[index] = KEY_LOW
                marks.labels[index] = LIBRARY_FRAME


def _tracebacks(lines: Sequence[str]) -> list[list[tuple[int, str]]]:
    # Frames no more than a few lines apart belong to one traceback.
    groups: list[list[tuple[int, str]]] = []
    last = -_GAP - 1
    for index, line in enumerate(lines):
        if "File " not in line or (frame := _FRAME.match(line)) is None:
            continue
        if index - last > _GAP or not groups:
            groups.append([])
        groups[-1].append((index, frame.group(1)))
        last = index
    return groups
