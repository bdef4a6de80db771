"""Stack traces: Python (including chained exceptions and exception groups), Java, JavaScript, Go.

The exception line of every traceback is protected, wherever it sits (after a
chain, inside an exception group, behind ``|`` rails). The frames nearest each
exception rank high; frames further out are ordinary and recursion collapses as a
repeated block.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from contextwright.tool_outputs.compressors.generic import is_exception_line
from contextwright.tool_outputs.compressors.marks import KEY, KEY_HIGH, KEY_LOW, MUST, Marks

_RAIL = r"^[\s|+>-]*"
_PY_TRACEBACK = re.compile(_RAIL + r"(?:Exception Group )?Traceback \(most recent call last\):")
_PY_FRAME = re.compile(_RAIL + r'File "[^"]+", line \d+')
_PY_CHAIN = re.compile(_RAIL + r"(?:The above exception was the direct cause|During handling of the above exception)")
_PY_EXCEPTION = re.compile(_RAIL + r"(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?::\s.*|:?$)")
_JVM_HEAD = re.compile(
    r"^(?:Exception in thread \"[^\"]*\" |Caused by: |Suppressed: |\s*)(?:[a-z_$][\w$]*\.)+[A-Z][\w$]*(?::.*)?$"
)
_AT_FRAME = re.compile(r"^\s+at \S")
_MORE = re.compile(r"^\s+\.\.\. \d+ (?:more|common frames omitted)")
_GO_PANIC = re.compile(r"^(?:panic: |fatal error: |goroutine \d+ \[)")
_ANNOTATION = re.compile(r"^[\s│└┬┼├─|]*[│└]")


def analyse_stack_trace(lines: Sequence[str], marks: Marks) -> None:
    """Keep every exception line; rank the frames closest to it high."""
    in_frames = False
    last_frames: list[int] = []
    for index, line in enumerate(lines):
        if _PY_TRACEBACK.match(line):
            marks.must(index)
            in_frames, last_frames = True, []
            marks.failed = True
        elif _PY_FRAME.match(line):
            last_frames.append(index)
            marks.label(index, "stack frame")
        elif _PY_CHAIN.match(line):
            marks.must(index)  # says how the exceptions of a chain relate
        elif (
            (
                in_frames
                and line.strip()
                and not line.startswith(("    ", "\t"))
                and _PY_EXCEPTION.match(line)
                and not _ANNOTATION.match(line)
            )
            or is_exception_line(line)
            and not _AT_FRAME.match(line)
        ):
            _exception(marks, index, last_frames)
            in_frames = False
        elif _JVM_HEAD.match(line) and index + 1 < len(lines) and _AT_FRAME.match(lines[index + 1]):
            _exception(marks, index, [])
        elif _AT_FRAME.match(line):
            # The first two frames under an exception line say where it was raised.
            near = any(index - back >= 0 and not _AT_FRAME.match(lines[index - back]) for back in (1, 2))
            if near:
                marks.key(index, KEY, "stack frame")
            else:
                marks.label(index, "stack frame")
        elif _MORE.match(line):
            marks.label(index, "stack frame")
        elif _GO_PANIC.match(line):
            if line.startswith("goroutine"):
                marks.key(index, KEY)
            else:
                marks.must(index)
            marks.failed = True
        elif _ANNOTATION.match(line):
            marks.label(index, "variable annotation")
        elif in_frames and line.startswith((" ", "\t", "|")) and last_frames:
            # The source line shown under a frame travels with that frame.
            marks.block(last_frames[-1], index)


def _exception(marks: Marks, index: int, frames: list[int]) -> None:
    marks.must(index)
    marks.failed = True
    for level, frame in zip((KEY_HIGH, KEY, KEY_LOW), reversed(frames), strict=False):
        if marks.priority[frame] < MUST:
            marks.key(frame, level)
        following = frame + 1
        while following < len(marks.owner) and marks.owner[following] == frame:
            marks.key(following, level - 5)
            following += 1
