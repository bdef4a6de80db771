"""Test runners: pytest, jest/vitest, go test (text and ``-json``), cargo test, Scala runners.

Passing tests are noise; failing test ids, assertion detail, locations and the
runner's own summary lines are protected. A run that fails to collect or compile
(a suite-level failure) is protected just like a failing test, so it can never
read as green.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from contextwright.tool_outputs.compressors.generic import is_exception_line
from contextwright.tool_outputs.compressors.marks import KEY, KEY_HIGH, KEY_LOW, MUST, NORMAL, Marks

# --- pytest ---------------------------------------------------------------------------

_PY_SUMMARY = re.compile(r"^=+ .*\b(?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?|no tests ran)\b.* =+$")
_PY_FINAL = re.compile(r"^=+ .* in [\d.]+s(?: \([^)]*\))? =+$")
_PY_SHORT = re.compile(r"^(?:FAILED|ERROR|XPASS|XFAIL) \S")
_PY_PROGRESS_OK = re.compile(r"^\S+\.py [.sx]+\s*(?:\[\s*\d+%\])?$")
_PY_PROGRESS = re.compile(r"^\S+\.py [.sxXfFE]+\s*(?:\[\s*\d+%\])?$")
_PY_VERBOSE = re.compile(r"^\S+::\S.* (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")
_PY_HEADER = re.compile(r"^_{3,} (.+?) _{3,}$")
# "path.py:12: AssertionError", a frame passed through ("path.py:12: in helper") or, in
# the long traceback, a frame's place alone ("path.py:12:") above its separator.
_PY_LOCATION = re.compile(r"^\S+:\d+:(?: \S|\s*$)")
# "path.py:12: in helper": a frame the failure passed through, not where it was raised.
_PY_CALL_SITE = re.compile(r"^\S+:\d+:(?: in \S+|\s*)$")
_PY_LIBRARY = re.compile(r"(?:site|dist)-packages/|^/usr/lib/|^<")
_PY_SECTION = re.compile(r"^=+ (.+?) =+$")
_PY_SHORT_FIRST = "FEX!"
"""The first characters of the lines that ``_PY_SHORT`` matches, and of pytest's ``!!!`` interruption lines."""
_PY_SESSION = re.compile(r"^(?:platform |rootdir: |cachedir: |plugins: |configfile: |collecting |collected )")


def analyse_pytest(lines: Sequence[str], marks: Marks) -> None:
    """pytest: the short summary, the tally, collection errors and each failure's body are kept.

    Of each failure, the ``____ TestC.test_y ____`` header, every block of ``E``
    lines with the ``>`` source line it explains (the middle of a very long block may
    go) and the ``file:line: ErrorType`` location are kept, and so are the ``FAILED``
    lines of ``-v`` progress; the frames it passed through (``file:line: in func``) are
    protected too when the run printed no short summary, since nothing else would then
    name the failing tests. Past the first ``_DETAILED_FAILURES`` failures of a run that
    prints a short summary, a failure keeps only its first ``E`` line and its location
    (the summary names it): a run with dozens of failures must still shrink.
    """
    in_failure = False
    in_collection_error = False
    has_short_summary = any(map(_PY_SHORT.match, lines))
    first_e_pending = False
    # With --tb=short a failure prints no "file:line: ErrorType" line; its last
    # "file:line: in func" frame is then where it failed.
    located = True
    last_call_site: int | None = None
    first_frame_pending = False  # the failure's first in-project place is still to come

    source_line: int | None = None  # the last ">" line, which the E lines below it explain
    e_block: list[int] = []
    failures = 0
    detailed = True  # this failure is one of the first few, or nothing else names it
    verbose_failures = 0

    def close_failure() -> None:
        if not located and last_call_site is not None:
            marks.must(last_call_site)

    def close_e_block() -> None:
        if detailed:
            _protect_e_block(e_block, marks, lines)
        e_block.clear()

    for index, line in enumerate(lines):
        is_e_line = line.startswith("E ") or line == "E"
        if e_block and not is_e_line:
            close_e_block()
        # Each pattern below needs a first character or a substring that the cheap test before it
        # checks: most lines of a long run (a passing test) then skip the patterns that cannot match.
        first = line[:1]
        if first in _PY_SHORT_FIRST and (_PY_SHORT.match(line) or line.startswith("!!!")):
            marks.must(index)
            if not line.startswith(("XFAIL", "XPASS")) or "strict" in line:
                marks.failed = True
        elif first == "=" and (_PY_FINAL.match(line) or _PY_SUMMARY.match(line)):
            marks.must(index)
            if re.search(r"\b\d+ (?:failed|errors?)\b|no tests ran", line):
                marks.failed = True
        elif ".py " in line and _PY_PROGRESS_OK.match(line):
            marks.noise(index, "progress line")
        elif ".py " in line and _PY_PROGRESS.match(line):
            marks.key(index, KEY_LOW)
        elif "::" in line and (verbose := _PY_VERBOSE.match(line)) is not None:
            if verbose.group(1) in ("PASSED", "XFAIL", "SKIPPED"):
                marks.noise(index, "passed test")
            elif verbose.group(1) in ("FAILED", "ERROR"):
                verbose_failures += 1
                if verbose_failures <= _DETAILED_FAILURES or not has_short_summary:
                    marks.must(index)  # which test failed, in the order they ran
                else:
                    marks.key(index, KEY_HIGH)
                marks.failed = True
            else:
                marks.key(index, KEY_HIGH)
        elif first == "_" and (header := _PY_HEADER.match(line)) is not None:
            close_failure()
            in_failure, first_e_pending, first_frame_pending = True, True, True
            located, last_call_site = False, None
            in_collection_error = header.group(1).startswith("ERROR collecting")
            source_line = None
            failures += 1
            detailed = in_collection_error or not has_short_summary or failures <= _DETAILED_FAILURES
            if detailed:
                marks.must(index)  # names the failing test its body is about
            else:
                marks.key(index, KEY_HIGH + 10, "failure header")
            marks.failed = True
        elif first == "=" and (section := _PY_SECTION.match(line)) is not None:
            close_failure()
            located, last_call_site = True, None
            in_failure = section.group(1) in ("FAILURES", "ERRORS")
            marks.key(index, KEY_HIGH)
        elif is_e_line:
            if in_collection_error or (first_e_pending and line.strip() != "E"):
                marks.must(index)  # what failed: the first assertion line of each failure
                first_e_pending = False
            else:
                marks.key(index, KEY if line.strip() != "E" else KEY_LOW, "assertion line")
            if in_failure and not e_block and source_line is not None and detailed:
                marks.must(source_line)
                source_line = None
            if in_failure:
                e_block.append(index)
        elif in_failure and _PY_LOCATION.match(line):
            call_site = _PY_CALL_SITE.match(line) is not None
            if call_site:
                last_call_site = index
            else:
                located = True
            first_frame = first_frame_pending and detailed and not _PY_LIBRARY.search(line)
            if first_frame:
                first_frame_pending = False
            if in_collection_error or not has_short_summary or not call_site or first_frame:
                # Where it failed ("path.py:12: AssertionError") and where the test's own code
                # stood when it did (its first frame in the project, often the test itself).
                marks.must(index)
            else:
                marks.key(index, KEY_HIGH, "failure location")
        elif line.startswith(">"):
            marks.key(index, KEY, "failing source line")
            source_line = index
        elif _PY_SESSION.match(line):
            marks.label(index, "session header")
        elif in_failure:
            marks.key(index, KEY_LOW - 10, "failure context")
    close_e_block()
    close_failure()


_DETAILED_FAILURES = 10
_E_BLOCK_HEAD = 12
_E_BLOCK_TAIL = 3
_FULL_DIFF_HEAD = 3
_FULL_DIFF_TAIL = 2


def _head_and_tail(block: Sequence[int], head: int, tail: int) -> list[int]:
    return list(block) if len(block) <= head + tail else [*block[:head], *block[-tail:]]


def _protect_e_block(block: Sequence[int], marks: Marks, lines: Sequence[str]) -> None:
    # The E lines after the first carry the difference itself ("Right contains 1 more item:",
    # "{'k': 2} != {'k': 1}"), so they are kept; a very long block keeps its head and tail,
    # and the "Full diff:" that -v appends, which restates them, only its ends.
    split = next((n for n, index in enumerate(block) if lines[index][1:].strip() == "Full diff:"), len(block))
    kept = _head_and_tail(block[:split], _E_BLOCK_HEAD, _E_BLOCK_TAIL)
    kept += _head_and_tail(block[split:], _FULL_DIFF_HEAD, _FULL_DIFF_TAIL)
    for index in kept:
        marks.must(index)


# --- go test ---------------------------------------------------------------------------

_GO_NOISE = re.compile(r"^\s*=== (?:RUN|PAUSE|CONT|NAME)\s")
_GO_PASS = re.compile(r"^\s*--- (?:PASS|SKIP): ")
_GO_FAIL = re.compile(r"^\s*--- FAIL: ")
_GO_PKG_FAIL = re.compile(r"^FAIL(?:\s|$)")
_GO_PKG_OK = re.compile(r"^ok\s+\S")
_GO_COMPILE = re.compile(r"^\s*\S+\.go:\d+(?::\d+)?: ")
_GO_BUILD_ERROR = re.compile(r"^\S+\.go:\d+:\d+: ")
_GO_PANIC = re.compile(r"^(?:panic: |fatal error: |WARNING: DATA RACE|\[signal |SIGSEGV)")
_GO_GOROUTINE = re.compile(r"^goroutine \d+ \[")


def _go_text_line(line: str, marks: Marks, index: int, failing: bool) -> None:
    if _GO_NOISE.match(line):
        marks.noise(index, "=== RUN/PAUSE/CONT line")
    elif _GO_PASS.match(line):
        marks.noise(index, "passed test")
    elif _GO_FAIL.match(line) or _GO_PKG_FAIL.match(line) or _GO_PANIC.match(line):
        marks.must(index)
        marks.failed = True
    elif line.startswith("# "):
        marks.key(index, KEY_HIGH)
    elif _GO_BUILD_ERROR.match(line):
        marks.must(index)
        marks.failed = True
    elif _GO_COMPILE.match(line):
        if failing:
            marks.key(index, KEY_HIGH, "failure output")
        else:
            marks.label(index, "test log line")
    elif _GO_PKG_OK.match(line):
        marks.label(index, "ok package")
    elif line == "PASS":
        marks.label(index, "PASS line")
    elif _GO_GOROUTINE.match(line):
        marks.key(index, KEY_LOW)
    elif line.startswith(("\t", "    ")) and failing:
        marks.key(index, KEY_LOW, "failure output")


def analyse_go_test(lines: Sequence[str], marks: Marks) -> None:
    """go test: ``--- FAIL``, ``FAIL pkg``, panics, races and build errors are kept."""
    events = sum(1 for line in lines[:50] if line.startswith("{") and '"Action"' in line)
    if events:
        _analyse_go_json(lines, marks)
        return
    failing = False
    for index, line in enumerate(lines):
        if _GO_FAIL.match(line):
            failing = True
        elif _GO_NOISE.match(line) or _GO_PASS.match(line) or _GO_PKG_OK.match(line):
            failing = False
        _go_text_line(line, marks, index, failing)


def _analyse_go_json(lines: Sequence[str], marks: Marks) -> None:
    parsed: list[dict[str, object] | None] = []
    failed_tests: set[tuple[object, object]] = set()
    for line in lines:
        try:
            event = json.loads(line) if line.startswith("{") else None
        except ValueError:
            event = None
        parsed.append(event if isinstance(event, dict) else None)
        if isinstance(event, dict) and event.get("Action") == "fail":
            failed_tests.add((event.get("Package"), event.get("Test")))
    for index, event in enumerate(parsed):
        if event is None:
            if lines[index].strip():
                _go_text_line(lines[index], marks, index, False)
            continue
        action = event.get("Action")
        output = str(event.get("Output", ""))
        owner = (event.get("Package"), event.get("Test"))
        if action in ("fail", "build-fail"):
            marks.must(index)
            marks.failed = True
        elif action == "build-output":
            if _GO_COMPILE.match(output) or "error" in output:
                marks.must(index)
            else:
                marks.key(index, KEY_HIGH)
        elif action in ("run", "pause", "cont", "start") or action in ("pass", "skip"):
            marks.noise(index, f"{action} event")
        elif action == "output":
            if _GO_NOISE.match(output) or _GO_PASS.match(output) or output.strip() in ("PASS", ""):
                marks.noise(index, "output event (progress)")
            elif _GO_PANIC.match(output):
                marks.must(index)
                marks.failed = True
            elif _GO_FAIL.match(output) or _GO_PKG_FAIL.match(output):
                # The "fail" action event that follows says the same and is protected.
                marks.key(index, KEY_HIGH, "FAIL output event")
                marks.failed = True
            elif owner in failed_tests:
                marks.key(index, KEY if event.get("Test") else KEY_LOW, "output event of a failed test")
            else:
                marks.label(index, "output event")
        else:
            marks.label(index, f"{action} event")


# --- cargo test ------------------------------------------------------------------------

_CARGO_TEST = re.compile(r"^test (\S+)(?: - .*?)? \.\.\. (ok|FAILED|ignored|bench:.*)$")
_CARGO_RESULT = re.compile(r"^test result: ")
_CARGO_STDOUT = re.compile(r"^---- (\S+) std(?:out|err) ----$")
_CARGO_ERROR_PLACE = re.compile(r"^\s*--> \S+:\d+")
_CARGO_PROGRESS = re.compile(
    r"^\s*(?:Compiling|Checking|Finished|Running|Doc-tests|Downloaded|Downloading|Updating|Locking|Blocking)\b"
)
_CARGO_ASSERT = re.compile(
    r"^(?:assertion .* failed|\s*left: |\s*right: |note: panic did not|\s*(?:panic message|expected substring): )"
)


def analyse_cargo_test(lines: Sequence[str], marks: Marks) -> None:
    """cargo test: FAILED tests, panics, assertion left/right and ``test result:`` are kept.

    A doc test that does not compile prints rustc's error; the `` --> file:line:col`` right
    under its header is where, and is kept with it.
    """
    section = ""
    failing = False
    error_above = False
    for index, line in enumerate(lines):
        if error_above and _CARGO_ERROR_PLACE.match(line):
            marks.must(index)
        error_above = line.startswith(("error:", "error["))
        if (test := _CARGO_TEST.match(line)) is not None:
            if test.group(2) == "FAILED":
                marks.must(index)
                marks.failed = True
            else:
                marks.noise(index, f"{test.group(2).split(':')[0]} test")
        elif _CARGO_RESULT.match(line):
            marks.must(index)
            if "FAILED" in line:
                marks.failed = True
        elif _CARGO_STDOUT.match(line):
            # Which test printed what: one short line, kept for passing tests too.
            failing = section != "successes"
            marks.must(index)
        elif line in ("failures:", "successes:"):
            section = line[:-1]
            marks.key(index, KEY_LOW)
        elif "panicked at" in line or _CARGO_ASSERT.match(line) or line.startswith(("error:", "error[")):
            marks.must(index)
            marks.failed = True
        elif _CARGO_PROGRESS.match(line):
            marks.label(index, "cargo progress")
        elif line.startswith("running "):
            marks.label(index, "running N tests")
        elif line.startswith("note: run with `RUST_BACKTRACE"):
            marks.label(index, "backtrace hint")
        elif section == "failures" and line.startswith("    "):
            marks.key(index, KEY_HIGH)
        elif failing and line.strip():
            marks.key(index, KEY, "failure output")
        elif section == "successes" and line.strip():
            marks.label(index, "captured output of a passing test")


# --- jest / vitest ---------------------------------------------------------------------

_JEST_SUITE = re.compile(r"^\s*(PASS|FAIL)\s+\S")
_JEST_OK = re.compile(r"^\s+(?:✓|√|✔)\s")
_JEST_BAD = re.compile(r"^\s+(?:✕|×|✗|✘)\s")
_JEST_SKIP = re.compile(r"^\s+(?:○|↓)\s")
_JEST_BULLET = re.compile(r"^\s*●\s")
_JEST_TALLY = re.compile(r"^\s*(?:Tests?|Test Suites|Test Files|Snapshots)\s*:?\s+.*\d")
_JEST_FRAME = re.compile(r"^\s+at .*\((?!.*node_modules)(?!node:)[^)]*:\d+:\d+\)$|^\s+at (?!.*node_modules)\S+:\d+:\d+$")
_JEST_ANY_FRAME = re.compile(r"^\s+at \S")
_JEST_CODE = re.compile(r"^\s+(?:>\s*)?\d+ \|")
_JEST_CARET = re.compile(r"^\s+\|\s+\^")
_JEST_ASSERT = re.compile(r"^\s+(?:expect\(|Expected|Received|- Expected|\+ Received)")
_JEST_FOOTER = re.compile(r"^\s*Ran all test suites")
_VITEST_FAIL = re.compile(r"^\s*(?:FAIL|❯|×)\s")


def analyse_jest(lines: Sequence[str], marks: Marks) -> None:
    """jest/vitest: FAIL suites, ● headers, ✕ tests and the tally are kept; ✓ tests are noise.

    Inside a "● Test suite failed to run" block the error itself is protected too,
    because no test-level line will report that failure. The first frame in the
    project's own code under each ● header is its location, and is kept, and so is the
    first line of its reason (``expect(received).toBe(expected) // Object.is equality``).
    """
    block = ""
    located = True
    reason_pending = False
    for index, line in enumerate(lines):
        if reason_pending and line.strip() and not _JEST_BULLET.match(line):
            reason_pending = False
            if not (_JEST_ANY_FRAME.match(line) or _JEST_CODE.match(line) or _JEST_TALLY.match(line)):
                marks.must(index)
        if (suite := _JEST_SUITE.match(line)) is not None:
            block = ""
            if suite.group(1) == "FAIL":
                marks.must(index)
                marks.failed = True
            else:
                marks.noise(index, "passing suite")
        elif _JEST_BULLET.match(line):
            marks.must(index)
            marks.failed = True
            block = "suite" if "failed to run" in line else "test"
            located, reason_pending = False, True
        elif _JEST_TALLY.match(line):
            marks.must(index)
            block = ""
            if re.search(r"\d+ failed", line):
                marks.failed = True
        elif _JEST_OK.match(line):
            marks.noise(index, "passed test")
        elif _JEST_SKIP.match(line):
            marks.noise(index, "skipped test")
        elif _JEST_BAD.match(line):
            marks.must(index)  # a failing test's name: a failure line, whatever the budget
            marks.failed = True
        elif _JEST_FRAME.match(line):
            if located:
                marks.key(index, KEY_HIGH, "stack frame")
            else:
                marks.must(index)
                located = True
        elif _JEST_ANY_FRAME.match(line):
            marks.label(index, "library stack frame")
        elif _JEST_CODE.match(line):
            if line.lstrip().startswith(">"):
                marks.key(index, KEY, "failing source line")
            else:
                marks.label(index, "code frame line")
        elif _JEST_CARET.match(line):
            marks.key(index, KEY_LOW)
        elif _JEST_ASSERT.match(line):
            marks.key(index, KEY_HIGH, "assertion line")
        elif _JEST_FOOTER.match(line):
            marks.label(index, "runner footer")
        elif _VITEST_FAIL.match(line):
            marks.must(index)
            marks.failed = True
        elif block == "suite" and line.strip():
            if is_exception_line(line):
                marks.must(index)
            else:
                marks.key(index, KEY_HIGH, "suite error detail")
        elif block == "test" and line.strip():
            marks.key(index, KEY_LOW - 10, "failure detail")


# --- Scala runners (sbt, bloop, munit, scalatest) --------------------------------------

_SCALA_FAILED = re.compile(r"\*\*\* FAILED \*\*\*|^==> X |^\[error\] Failed|^\[error\] Failed tests:|^Failed:$")
_SCALA_TALLY = re.compile(
    r"^(?:\[info\] )?(?:\d+ tests?, \d+ passed, \d+ failed|\d+ passed, \d+ failed|Tests: succeeded \d+, failed \d+|\*\*\* \d+ TESTS? FAILED \*\*\*|All tests passed)"
)
_SCALA_PASS = re.compile(r"^(?:\[info\] )?\s*(?:- (?!.*\*\*\* FAILED)|\+ )\S")
_SCALA_COMPILE = re.compile(r"^(?:\[info\] )?(?:Compiling|Compiled|Test run \S+ (?:started|finished))")


def analyse_scala_test(lines: Sequence[str], marks: Marks) -> None:
    """sbt/bloop/munit/scalatest: FAILED tests with their message, tallies and the failure list."""
    in_failed_list = False
    for index, line in enumerate(lines):
        if _SCALA_FAILED.search(line):
            marks.must(index)
            marks.failed = True
            in_failed_list = in_failed_list or line.strip() in ("Failed:", "[error] Failed tests:")
            if "*** FAILED ***" in line and index + 1 < len(lines):
                marks.must(index + 1)
        elif _SCALA_TALLY.match(line):
            marks.must(index)
            if re.search(r"[1-9]\d* failed|FAILED", line):
                marks.failed = True
        elif in_failed_list and re.match(r"^(?:\[error\])?\s*[-*]\s|^\[error\]\s+\S", line):
            marks.must(index)
        elif line.startswith("=" * 20):
            in_failed_list = False
            marks.label(index, "separator")
        elif _SCALA_PASS.match(line) and marks.priority[index] == NORMAL:
            marks.noise(index, "passed test")
        elif _SCALA_COMPILE.match(line):
            marks.label(index, "compile progress")
        elif re.match(r"^\s+at \S", line):
            marks.key(index, KEY_LOW)
        elif re.match(r"^=> (?:Obtained|Diff)", line):
            marks.key(index, KEY_HIGH)
        elif marks.priority[index] < MUST and re.match(r"^\d+:", line):
            marks.key(index, KEY)
