"""Failed path lookups in a system-call trace: normal probing, kept as a few and a count.

A program that searches a path (the loader, an interpreter's imports, ``$PATH``) makes
hundreds of ``openat(...) = -1 ENOENT (No such file or directory)`` calls that fail by
design. They read as failures, so the shape rules keep them all; here all but the last
few of them, and those right before a line kept for another reason (the message the
program wrote, its exit), rank below must, and the omission marker counts them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from contextwright.tool_outputs.compressors.marks import KEY_LOW, MUST, Marks

_LOOKUP = re.compile(
    r"^(?:\[pid\s+\d+\] |\d+ +)?(?:open|openat|openat2|stat|lstat|stat64|lstat64|newfstatat|fstatat64|statx|access"
    r"|faccessat2?|readlink|readlinkat|execve)\(.*\)\s+= -1 ENOENT \("
)
_MIN_LOOKUPS = 10
_LAST_KEPT = 3
_BEFORE_KEPT = 2  # lookups this close before another kept line may be what it reports
LOOKUP_LABEL = "failed path lookup (ENOENT)"


def rank_failed_lookups(lines: Sequence[str], marks: Marks) -> None:
    """Rank the failed lookups of a trace below must, except the last few and those before a kept line."""
    lookups = [index for index, line in enumerate(lines) if "ENOENT" in line and _LOOKUP.match(line)]
    if len(lookups) < _MIN_LOOKUPS:
        return
    probing = set(lookups)
    for index in lookups[:-_LAST_KEPT]:
        if marks.priority[index] < MUST or _before_other_kept(index, lines, marks, probing):
            continue
        marks.priority[index] = KEY_LOW
        marks.labels[index] = LOOKUP_LABEL


def _before_other_kept(index: int, lines: Sequence[str], marks: Marks, probing: set[int]) -> bool:
    for following in range(index + 1, min(len(lines), index + 1 + _BEFORE_KEPT)):
        if following not in probing and marks.priority[following] >= MUST:
            return True
    return False
