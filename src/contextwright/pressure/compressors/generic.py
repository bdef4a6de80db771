"""Failure needles shared by every kind that runs something, and the generic fallback.

Per-kind rules find most important lines, but a universal list still catches what
they miss: CamelCase exception names (``ZeroDivisionError``), panics, signals,
``FAILED``, error prefixes and pluralised summaries ("48 warnings"). Needles only
ever raise a line's priority.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from contextwright.pressure.compressors.marks import KEY, KEY_LOW, NORMAL, Marks

_EXCEPTION = re.compile(
    r"(?:^|[\s|>:(\[])(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Fault|Failure|Panic)"
    r"(?::|$|\s*\[|\s*\()"
)
_CODE_CONTEXT = re.compile(r"\b(?:except|catch|raise|throw|import|class|def|new)\b[^:]*$|\b(?:except|catch)\s")
_MUST_PATTERNS = (
    re.compile(r"\bpanicked at\b|^\s*panic: |^fatal error: |WARNING: DATA RACE"),
    re.compile(r"(?i)\bsegmentation fault\b|\bcore dumped\b|\b(?:SIGSEGV|SIGABRT|SIGKILL|SIGBUS|OOMKilled)\b"),
    re.compile(r"^\s*(?:\[(?:error|ERROR|FATAL|fatal)\]|error(?:\[[A-Z]?\d+\])?:|ERROR\b|Error:|FATAL\b|fatal:|E: )"),
    re.compile(r"\S:\d+(?::\d+)?:?\s+(?:fatal )?error\b|: error [A-Z]+\d+:|\berror TS\d+|\berror CS\d+"),
    re.compile(r"\bFAIL(?:ED|URE|S)?\b|(?i:\btests? failed\b)"),
    re.compile(r"Traceback \(most recent call last\)"),
)
_SUMMARY = re.compile(
    r"(?i)(?<![\d:.,])\b\d[\d,]* (?:failed|failures?|errors?|passed|passing|tests?|problems?|offenses?"
    r"|warnings?|hints?|issues?|vulnerabilit(?:y|ies))\b"
)
_WARNING = re.compile(r"(?i)\bwarn(?:ing)?\b")
_LOCATION = re.compile(r"(?<![\w./\\-])[\w./\\-]+\.\w+[:(]\d+|\bline \d+\b")
_FRAME = re.compile(r"^\s+at \S")


def is_exception_line(line: str) -> bool:
    """True when the line names an exception (``ValueError:``, ``java.io.IOException``)."""
    match = _EXCEPTION.search(line)
    if match is None:
        return False
    return not _CODE_CONTEXT.search(line[: match.start() + 1])


def apply_needles(lines: Sequence[str], marks: Marks) -> bool:
    """Raise failure, error, warning and summary lines; True if any failure showed.

    Only lines the kind's rules left alone are looked at: a line those rules ranked or
    named (a detail line inside a failure, a style finding, a passing test) keeps its rank.
    """
    saw_failure = False
    for index, line in enumerate(lines):
        if not line or marks.priority[index] != NORMAL or marks.labels[index]:
            continue
        if is_exception_line(line) or any(p.search(line) for p in _MUST_PATTERNS):
            marks.must(index)
            saw_failure = True
        elif len(line) <= 120 and _SUMMARY.search(line):
            marks.must(index)
        elif _WARNING.search(line):
            marks.key(index, KEY + 10)
        elif _LOCATION.search(line):
            marks.key(index, KEY - 10)
        elif _FRAME.search(line):
            marks.key(index, KEY_LOW)
    return saw_failure


def analyse_generic(lines: Sequence[str], marks: Marks) -> None:
    """Fallback: nothing kind-specific; the needles and shape grouping do the work."""
    del lines, marks
