"""Lines that state how one unit of a run ended, whatever tool printed them.

A per-unit tally (Maven's ``Tests run: 5, Failures: 0, ... -- in com.x.FooTest``),
what a package manager built and installed (``Successfully built a b``), and a
non-zero exit status in any of its spellings (prove's ``Dubious, test returned 1
(wstat 256, 0x100)``, ``│ exit code: 1`` in pip's error box, npm's
``npm info run pkg@1.0.0 postinstall { code: 1, signal: null }`` with the line that
named the script) are totals: they are kept. Passing test points (tcltest's
``++++ name PASSED``, TAP's ``ok 3 - adds``) say only that nothing went wrong there.
A linter's ``--statistics`` table (flake8, pycodestyle: ``6       E712 comparison to
False ...``, a count, a code and its message per line) is the run's totals by code: it
is short and kept whole.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from contextwright.tool_outputs.compressors.marks import MUST, NOISE, NORMAL, Marks

_UNIT_TALLY = re.compile(r"\bTests run: \d+, Failures: \d+|^\W*Successfully (?:built|installed) \S")
_EXIT_STATUS = re.compile(
    r"(?i)\b(?:returned|exited with|exit (?:code|status|value)|return code)\s*(?:was\s*)?[:=]?\s*-?[1-9]\d*\b"
    r"|\bcode: [1-9]\d*, signal: "
)
_NPM_SCRIPT = re.compile(r"^(npm (?:info|verb|ERR!|error) run \S+ \S+) ")
_CODE_COUNT = re.compile(r"^\d+ +[A-Z]{1,3}\d{2,4} \S")
_PASSED_POINT = re.compile(
    r"^\+{4} \S+ PASSED\s*$|^\s*ok \d+(?: |$)(?!.*# TODO)"
    # unittest's and cargo's "name ... ok", a table row's "| PASS |", a glyph's "✔ name (1.2ms)".
    r"|\S.*? \.\.\. ok\s*$|^\S.*\s\|\s*PASS\s*\|\s*$|^\s*[✓✔] \S"
)
_YAML_OPEN = "---"
_YAML_CLOSE = "..."
_YAML_MAX_LINES = 40


def protect_outcomes(lines: Sequence[str], marks: Marks) -> None:
    """Keep per-unit tallies and non-zero exit statuses; let passing test points go."""
    failed_scripts: set[str] = set()
    for index, line in enumerate(lines):
        if line[:1].isdecimal() and _CODE_COUNT.match(line) and marks.priority[index] != NOISE:
            marks.must(index)
            continue
        priority = marks.priority[index]
        if priority == MUST and not marks.labels[index] and _may_pass(line) and _PASSED_POINT.match(line):
            # Kept only for following a failure line: a passing test point is not its detail.
            marks.priority[index] = NORMAL
            marks.noise(index, "passed test")
            _drop_passed_block(lines, marks, index)
            continue
        if priority >= MUST or priority == NOISE or not line.strip():
            continue
        if _may_state_outcome(line) and (_UNIT_TALLY.search(line) or _EXIT_STATUS.search(line)):
            marks.must(index)
            if (script := _NPM_SCRIPT.match(line)) is not None:
                failed_scripts.add(script.group(1))
        elif priority == NORMAL and not marks.labels[index] and _may_pass(line) and _PASSED_POINT.match(line):
            marks.noise(index, "passed test")
            _drop_passed_block(lines, marks, index)
    if failed_scripts:
        # The lifecycle line before the exit code names the script that failed.
        for index, line in enumerate(lines):
            if (script := _NPM_SCRIPT.match(line)) is not None and script.group(1) in failed_scripts:
                if marks.priority[index] != NOISE:
                    marks.must(index)


def _drop_passed_block(lines: Sequence[str], marks: Marks, index: int) -> None:
    # The YAML block a TAP producer indents under a passing point ("  ---", "  duration_ms: 0.4",
    # "  ...") goes with it. Only a block whose every line was ordinary: a block that the
    # rules ranked (a diagnostic of a passing point) stays.
    start = index + 1
    if start >= len(lines) or lines[start].strip() != _YAML_OPEN:
        return
    indent = len(line := lines[index]) - len(line.lstrip())
    for end in range(start, min(len(lines), start + _YAML_MAX_LINES)):
        text = lines[end]
        if len(text) - len(text.lstrip()) <= indent and text.strip():
            return
        if text.strip() == _YAML_CLOSE:
            block = range(start, end + 1)
            if all(marks.priority[i] <= NORMAL for i in block):
                for i in block:
                    marks.noise(i, "passed test")
            return


def _may_pass(line: str) -> bool:
    # Every match of _PASSED_POINT holds one of these: substring tests spare most lines its ".*" scans.
    return "ok" in line or "PASS" in line or "✓" in line or "✔" in line


def _may_state_outcome(line: str) -> bool:
    # Substring tests first: most lines of a long log state no tally and no exit status.
    low = line.lower()
    return "return" in low or "exit" in low or "code: " in low or "tests run" in low or "successfully" in low
