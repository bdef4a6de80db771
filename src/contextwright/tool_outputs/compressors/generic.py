"""Diagnostics recognised by their shape, for every kind, and the generic fallback.

Per-kind rules find most important lines, but outputs of tools nobody wrote rules
for (and outputs a detector mistook for another kind) still print their diagnostics
in a few shapes that every tool shares:

* failure lines: exception names (``ZeroDivisionError``), panics, signals, ``FAIL``,
  ``failed``, ``Failure/Error``, severity tags (``ERROR``, ``error:``, ``[error]``),
  failure glyphs (``✕``, ``●``) and JSON records whose status says ``fail``;
* warning lines: a ``warning``/``WARN`` tag where a severity goes (line start, after
  a rail or a ``line:col`` column, or as an upper-case word);
* locations: ``file.ext:12[:3]``, ``dir/file:12``, ``file.ext(12,3)``, ``main.tf line 42``,
  ``[12, 15]:``;
* totals and verdicts: ``3 failed, 40 passed``, ``65 total warnings``, ``Failures: 1``,
  ``BUILD SUCCESSFUL in 4s``;
* the two lines after a failure or warning (its detail or location), the items listed
  under a header that announces them (``app.rb -- 5 warnings:``, ``Failures:``), the
  first frame in the project's own code after a failure (the last frame before a
  Python exception line), and rare lines that open a section about a file
  (``diff --git a/x b/x``).

All of these are kept verbatim. Stack frames and mere mentions of "warning" rank
high without being protected; so do places inside dependencies and the runtime, and
source lines quoted under a diagnostic. :func:`protect_own_locations` then keeps the
lines that point into the project's own code for the kinds that ask for it. Shapes only ever raise a line's priority, and they
only look at lines the kind's own rules left alone.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import re
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field

from contextwright.tool_outputs.compressors.literals import required_literals, top_alternatives
from contextwright.tool_outputs.compressors.marks import KEY, KEY_HIGH, KEY_LOW, MUST, NOISE, NORMAL, Marks

_EXCEPTION = re.compile(
    r"(?:^|[\s|>:(\[])(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Fault|Failure|Panic)"
    r"(?::|$|\s*\[|\s*\()"
)
# Every match names one of these endings ("Error", "Exception"...): one scan for them spares most lines the pattern.
_EXCEPTION_WORDS = re.compile("|".join(map(re.escape, required_literals(_EXCEPTION.pattern) or ("",))))
# Code or documentation that names an exception without raising it: "except KeyError:",
# a docstring's ":raises ValueError: if empty", javadoc's "@throws IOException".
_CODE_CONTEXT = re.compile(r"\b(?:except|catch|raises?|throws?|import|class|def|new)\b[^:]*$|\b(?:except|catch)\s")
# Each pattern with the words (lower-cased) that any match of it contains: on an ASCII line,
# where lower-casing is exact, a pattern none of whose words occur is skipped. Most lines
# of a test run carry a hint word and reached every pattern before.
_FAILURE_PATTERNS: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    (
        ("panic", "fatal error: ", "warning: data race"),
        re.compile(r"\bpanicked at\b|(?:^\s*|\")panic: |^fatal error: |WARNING: DATA RACE"),
    ),
    ((), re.compile(r"^\s*(?:\d+:\d+\s+)?(?:[✕✗✘×❌●✖]|\[(?:✗|FAIL|FAILED|ERROR)\])\s")),
    # A finding stated as what the tool would do ("would reformat x.py") or under a label ("Issue: [B301]").
    ((), re.compile(r"^\s*(?i:would (?:reformat|fix|change|rewrite|update))\b:?\s+\S|^\W*(?:Issue|Problem|Violation):\s+\S")),
    (
        (),
        re.compile(
            r"(?i)\"(?:action|status|state|result|outcome|level|severity|conclusion)\"\s*:\s*\"[\w-]*(?:fail(?:ed|ure)?|error|fatal|panic)\""
        ),
    ),
    (
        ("segmentation fault", "core dumped", "sig", "oomkilled"),
        re.compile(r"(?i)\bsegmentation fault\b|\bcore dumped\b|\b(?:SIGSEGV|SIGABRT|SIGKILL|SIGBUS|OOMKilled)\b"),
    ),
    ((), re.compile(r"^\s*(?:\[(?:error|ERROR|FATAL|fatal)\]|error(?:\[[A-Z]?\d+\])?:|ERROR\b|Error:|FATAL\b|fatal:|E: )")),
    (
        ("fail", "error", "fatal", "critical", "severe", "err!"),
        re.compile(r"\bFAIL(?:ED|URE|URES|S)?\b|\b(?:ERROR|FATAL|CRITICAL|SEVERE|ERR!)(?!\w)|(?i:\btests? failed\b)"),
    ),
    (("fail",), re.compile(r"(?i)\b(?:failed|failure)\b(?!\s*[=:]\s*0\b)|Failure/Error")),
    ((), re.compile(r"^[\s│┃|>*•]*(?:\d+:\d+(?:-\d+:\d+)?\s+)?(?:error|Error)(?:\[\w+\])?(?::|\s+\S)")),
    ((), re.compile(r"Traceback \(most recent call last\)")),
    # A status cell in a table (kubectl, docker ps): "api-7d9f  0/1  CrashLoopBackOff  7".
    (
        ("backoff", "errimagepull", "error", "evicted", "fail", "notready", "unhealthy", "exited ("),
        re.compile(
            r"(?:^|\s)(?:CrashLoopBackOff|ImagePullBackOff|ErrImagePull|CreateContainer\w*Error|Evicted|Error|Failed"
            r"|NotReady|Unhealthy|Exited \([1-9]\d*\))(?:\s{2,}|$)"
        ),
    ),
    # A severity mid-line after a separator: "file.js: line 3, col 5, Error - x"; "Severity: high".
    (("error", "severity"), re.compile(r"[,:\]|]\s*(?:Error|ERROR|error)\b\s*[-:]|(?i:^\s*severity:\s*(?:high|critical))")),
    ((), re.compile(r"^(?:[\s│┃|>*•]*\[[EF]\]\s|e: \S+:\d)")),
    # A failed TAP test point (node --test, prove, bats, tape): "not ok 12 - adds vat".
    ((), re.compile(r"^\s*not ok\b")),
    # A line that opens with a kind of error: "Parse error near line 122: ...", "Syntax error: ...".
    ((), re.compile(r"^\s*[A-Z]?[a-z]+ error(?: near| at| in| on|:)")),
    # A merge that stopped: "CONFLICT (content): Merge conflict in app.py".
    (("conflict (", "merge failed"), re.compile(r"^CONFLICT \(|\bAutomatic merge failed\b")),
    # An HTTP error status (curl -v, wget -S): "< HTTP/1.1 404 Not Found"; a step "finished with status 'error'".
    (("http/", "status '"), re.compile(r"^[<\s]*HTTP/[\d.]+ [45]\d\d\b|\bstatus '(?:error|failed)'")),
    # A severity placed at a file: "CMake Error at CMakeLists.txt:3 (find_package):".
    (("error",), re.compile(r"\b(?:Error|ERROR)\s+(?:at|in)\s+\S+:\d")),
    # Java's uncaught-exception header, even when another stream's line got spliced onto it.
    ((), re.compile(r"^Exception in thread \"")),
    # A step that ended with a non-zero status: pip's boxed "│ exit code: 1", "Process finished with exit code 2".
    (("exit ",), re.compile(r"(?i)\bexit (?:code|status)\b:?\s*[1-9]\d*\b")),
)


def _behind_one_anchor(patterns: Sequence[re.Pattern[str]]) -> re.Pattern[str]:
    # Patterns whose every alternative starts at the line start, as one pattern anchored
    # once: a match then tries the line start alone, once, instead of a search per pattern.
    parts: list[str] = []
    for pattern in patterns:
        alternatives = top_alternatives(pattern.pattern)
        assert alternatives is not None and all(part.startswith("^") for part in alternatives), pattern.pattern
        parts += [part[1:] for part in alternatives]
    return re.compile("^(?:" + "|".join(parts) + ")")


def _starts_lines(pattern: re.Pattern[str]) -> bool:
    alternatives = top_alternatives(pattern.pattern)
    return alternatives is not None and all(part.startswith("^") for part in alternatives)


_FAILURE_AT_START = _behind_one_anchor([p for words, p in _FAILURE_PATTERNS if not words and _starts_lines(p)])
_FAILURE_PATTERNS_ELSEWHERE = tuple((words, p) for words, p in _FAILURE_PATTERNS if words or not _starts_lines(p))
_ERROR_AT = re.compile(r"\S:\d+(?::\d+)?:?\s+(?:fatal )?error\b|: error [A-Z]+\d+:|\berror TS\d+|\berror CS\d+")
_WARNING_TAG = re.compile(
    r"^[\s│┃|>*•⚠]*(?:\d+:\d+(?:-\d+:\d+)?\s+)?(?i:warn(?:ing)?)(?:\[\w+\])?(?::|\s+\S)|\b(?:WARN|WARNING)\b|(?i:\bwarning)(?:\[\w+\])?: "
    r"|[,\]|]\s*(?:Warning|warning)\b\s*[-:]|^[\s│┃|>*•]*\[W\]\s|^w: \S+:\d|^\s*\[warn(?:ing)?\]\s|^\s*\d+:\d+\s+⚠\s"
)


def _needle(pattern: re.Pattern[str]) -> str:
    # A string every match of the pattern holds, to test before the search ("" when none is known).
    needles = required_literals(pattern.pattern)
    return needles[0] if needles is not None and len(needles) == 1 else ""


# Findings in shapes that carry no severity word: a rule code leading the line ("  D205: 1 blank
# line required", "E501 line too long"), a suggested fix ("x.py:12: teh ==> the"), a place given
# as a table cell ("L:   3 | P:  10 | LT01 | ...") or as a bare "(12,5)".
_FINDING_SHAPES = (
    re.compile(r"^\s*[A-Z]{1,3}\d{2,4}:?\s+\S"),
    re.compile(r"\S\s+==>\s+\S"),
    re.compile(r"^\s*L:\s*\d+\s*\|\s*P:\s*\d+\s*\|"),
    re.compile(r"(?:^|\s)\(\d+,\s?\d+\):?(?:\s|$)"),
    re.compile(r"\w:\[\d+:\d+\]"),  # pylint's duplicate-code places: "==pkg.mod:[12:40]"
    re.compile(r"^\s*\^[\^~-]*\s+\S+\s+\S"),  # the message under a caret: "  ^-- SC2086 (info): Double quote"
)
_GATED_FINDING_SHAPES = tuple((_needle(pattern), pattern) for pattern in _FINDING_SHAPES[1:])
"""The shapes after the first, each with a character run that every match of it holds."""
# A header over totals ("Total issues (by severity):") and the counts indented under it ("Low: 18").
_TOTALS_HEADER = re.compile(r"^\s*(?:Total|TOTAL)\b[^:\d]*:\s*$")
_COUNT_ITEM = re.compile(r"^\s+[\w ()./-]{1,40}:\s*\d[\d,.]*%?\s*$")
_WARNING_MENTION = re.compile(r"(?i)\bwarn(?:ing)?\b")
_NOUNS = (
    r"failed|failures?|failing|errors?|passed|passing|tests?|problems?|offen[cs]es?|warnings?|hints?|issues?|smells?"
    r"|examples?|assertions?|skipped|pending|suites?|subtests?|violations?|vulnerabilit(?:y|ies)"
)
_SUMMARY = re.compile(
    # Not the "60" of a progress counter, which names one item: "1/60 Test #1: case_1 ... Passed"
    # is one test's line, where "9/10 tests passed" is a total.
    rf"(?i)(?<![\d:.,])\b(?!(?<=/)\d[\d,]* (?:test|suite|subtest|example|assertion)\b)"
    rf"\d[\d,]* (?:total |new |more )?(?:{_NOUNS})\b"
    r"|(?i:\b(?:failures|errors|tests run|tests|assertions|skipped|warnings)\s*:\s*\d)"
    r"|\b\d+ to (?:add|change|destroy)\b"
    # TAP's closing counts (node --test, tap): "# tests 43", "# fail 3"; behind a glyph, "ℹ pass 91".
    r"|^\S (?:tests|suites|pass|fail|cancelled|skipped|todo) \d"
    r"|\b\d[\d,]* files? (?:would be )?(?:reformatted|failed|left unchanged|checked|inspected|scanned)\b"
    # A line that opens with a total: "Total lines of code: 11265", coverage's "TOTAL  812  97  88%".
    r"|^\s*(?:Total|TOTAL)\b\D{0,60}\d"
)
_SUMMARY_MAX_CHARS = 160
_DIGIT = re.compile(r"\d")
_VERDICT = re.compile(
    r"(?i)^\W*(?:build|compilation|deploy(?:ment)?|tests?|all tests|apply|plan|install(?:ation)?|run|job)\b.{0,40}?"
    r"\b(?:succe(?:ss(?:ful)?|eded)|passed|complete[d!]?|failed|failure)\b"
)
_COUNT_HEADER = re.compile(
    r"(?i)\b\d[\d,]* (?:\w+ ){0,2}(?:warnings?|errors?|offen[cs]es?|problems?|issues?|smells?|failures?|violations?|findings?)\b"
    r"[^:]*:\s*$"
)
_LIST_HEADER = re.compile(
    r"(?i)^\s*(?:failures|errors|failed (?:examples|tests)|failing tests|warnings|problems|(?:[a-z]+ )?summary):\s*$"
)
# A location is read token by token (cheap string tests first): a regex searched over
# the whole line costs a scan per character, too slow on long logs.
_LOCATION_TOKEN = re.compile(
    r"(?:[^\s(]*\()?[(\[\"'`<]*(?:[a-z][\w+.-]*://|[\w-]+:(?=[\w./~-]+[:(]\d))?(?:[A-Za-z]:)?"
    r"(?:(?:[\w.@~+-]*[/\\])+[\w@~+-][\w.@~+-]*|[\w@~+-][\w.@~+-]*\.[A-Za-z]\w{0,11}|[A-Z]\w*file)"
    # "File.cs(12,3):" and "foo.c(12)" are places; a call quoted in source, "l.add(0);", is not.
    r"(?::\d|\(\d+(?:,\d+)*\)?(?:[:,]|$)|:line$)"
)
_PLACE_END = re.compile(r"[:(]\d|:line$")
"""What ends every match of ``_LOCATION_TOKEN``: a token without it is no place, and the cheap search spares it the pattern."""
_FILE_TOKEN = re.compile(r"[(\[\"'`<]*(?:[\w.@~+-]*[/\\])*[\w@~+-][\w.@~+-]*\.[A-Za-z]\w{0,11}\"?[,:]?$")
_BRACKET_LOCATION = re.compile(
    r"\s*\[\d+(?:, \d+)*\]:|\s*-->\s*\S|LINE \d+:"
    # Python frames in code with no file ("<doctest m.f[2]>", "<stdin>"), "In deploy.sh line 12:",
    # and a line-number gutter over the quoted line ("  L12 |<div>").
    r'|\s*File "<[^"]+>", line \d+|\s*In \S+ line \d+:\s*$|\s*L\d+ *\|'
)
# One anchor before the alternatives: a search then tries the line's start alone, not every offset.
_FRAME = re.compile(
    r"^(?:\s+at \S|\s*File \"|\s*#\d+\s+(?:0x[0-9a-f]+ in |\w+ \(.*\) at )|\t\S+\.\w+:\d+|\s+in \S+ at \S|\s*\d+: 0x[0-9a-f]+ - )"
)
_LIBRARY_FRAME = re.compile(
    r"node_modules|\(node:|\(internal/|site-packages|dist-packages|/usr/lib/|\.cargo/registry|/rustc/"
    r"|\bat (?:java|javax|jdk|sun|kotlin|kotlinx|scala|org\.junit|org\.opentest4j|org\.testng|org\.gradle"
    r"|org\.apache\.maven|junit|System|Microsoft|NUnit|Xunit)\."
)
# A source line quoted under a diagnostic ("  7 |     if (a = b)"), or the carets that point into it.
_SNIPPET = re.compile(r"^\s*\d*\s*[|│]|^[\s^~|│-]*\^[\s^~|│-]*$|^\s*\d+\t")
_CARET = re.compile(r"^[\s^~|│-]*\^[\s^~|│-]*$")
# Code that is not the project's: dependencies, the runtime, the C library's own sources.
_FOREIGN = re.compile(_LIBRARY_FRAME.pattern + r"|/usr/include/|\.\./(?:sysdeps|csu)/|<frozen |\(node:")
# The chain of includes that led to a header: context for the diagnostic below it, not a place of its own.
_INCLUDE_CHAIN = re.compile(r"^(?:In file included from |\s+from )\S+:\d+[,:]$")
_COMPILER_STYLE = re.compile(r"\S+:\d+:\d+: \S")
_ARROW_LOCATION = re.compile(r"\s*-->\s*\S")
# A process id between punctuation at the start of a line: the "==4021==" rail of valgrind and the sanitizers.
_RAIL = re.compile(r"[^\w\s]+\d+[^\w\s]+(?= |$)")
_RAIL_MIN_LINES = 5
# A line that starts a log record of its own: a timestamp, or a quiet level first.
_NEW_RECORD = re.compile(r"^\W{0,2}(?:\d{4}-\d\d-\d\d[ T]\d|\d\d:\d\d:\d\d|(?:DEBUG|INFO|TRACE)\b)")
# A label that introduces a value: "Expected:", "Got:", "Exception raised:", perl's "#     expected: '5'".
_LABEL = re.compile(r"^[\s#]*([A-Za-z][A-Za-z -]{0,24}?)\s*:(?:\s+[|>][-+]?)?(\s+\S.*)?$")
"""A label; group 2 is its value on the same line, None when the value follows below (YAML's ``|-`` too)."""
_LABEL_VALUE_LINES = 4
_LABEL_VALUE_CHARS = 40  # a longer value on the label's line is prose or a link, not a datum
_LABELS_PER_FAILURE = 8
# Labels that carry a failure's detail wherever they stand in its record: an assertion's
# "actual:" and "expected:" under a stack (node's AssertionError), a database's "HINT:".
_DETAIL_LABELS = frozenset(
    {"actual", "expected", "received", "got", "want", "left", "right", "hint", "detail", "reason", "cause"}
)
_DETAIL_REACH = 20
# A line of punctuation alone: a rule between records, a YAML block's "---" or "...".
_RULE_LINE = re.compile(r"^[\W_]+$")
# A line that only times something: "duration_ms: 2.57", "Took 0min 0.006s", "time: 12 ms".
_TIMING = re.compile(
    r"(?i)^\W*(?:[\w]+[ _])?(?:duration|elapsed|time|took|runtime)(?:[ _][a-z]+)?\s*[:=]?\s*"
    r"(?:\d+\s*min\s*)?\d[\d.,]*\s*(?:ms|s|sec|secs|seconds|milliseconds|µs|us|ns|m)?\W*$"
)
_STACK_OPENER = re.compile(r"Traceback \(most recent call last\):\s*$|^\W*(?:The above exception was|During handling of)")
_RAIL_OPENERS = frozenset("=[<#*-+~|:")
_SHOWN_FOLLOWING = 2
_FAILURE_HINTS = (
    "error", "fail", "panic", "fatal", "exception", "exit", "interrupt", "fault", "traceback",
    "segmentation", "core dumped", "sig", "oomkilled", "err!", "e: ", "data race", "critical",
    "severe", "✕", "✗", "✘", "×", "❌", "●", "✖", "would ", "issue:", "problem:", "violation:", "backoff", "errimage", "evicted", "notready",
    "unhealthy", "severity", "[e]", "[f]", "[w]", "not ok", "conflict", "http/",
)  # fmt: skip
_SUMMARY_HINTS = (
    "fail", "error", "pass", "test", "problem", "offen", "warn", "hint", "issue", "smell", "example",
    "assert", "skip", "pending", "suite", "violation", "vulnerab", "succe", "complete", "file", " to add", "# ", "total",
    " to change", " to destroy",
)  # fmt: skip
_WORD_HINTS = (
    *_FAILURE_HINTS, *_SUMMARY_HINTS, "warn", "abort", "denied", "invalid", "could", "cannot", "can't", "unable to",
    "not permitted", "is a directory", "no such file", "not found", "falsifying", "caused by", "undefined reference",
    "unmet", "terminated",
)  # fmt: skip
# The words a reader scans a log for: a line that says one of them reports a problem, unless it
# is a quiet log record (INFO, DEBUG), progress, a passing test or quoted source.
_FAILURE_WORDS = re.compile(
    r"(?i)\b(?:error|fail|fatal|exception|panic|abort|assert|segfault|traceback|conflict)"
    r"|(?i:\b(?:caused by|undefined reference|core dumped|segmentation fault|denied|invalid|could not|couldn't"
    r"|cannot|can't|unable to|not permitted|is a directory|no such file|command not found|not found"
    r"|falsifying example|unmet|terminated)\b)"
)
# A check that found nothing says so with the same words: "No syntax errors detected in a.php".
_NO_PROBLEM = re.compile(
    r"(?i)^\W*(?:no|zero|0) (?:[a-z-]+ ){0,2}(?:errors?|failures?|problems?|issues?|warnings?|conflicts?)"
    r"(?: were)? (?:detected|found|reported)\b"
)
_QUIET_RECORD = re.compile(
    r"^.{0,40}?\b(?:INFO|DEBUG|TRACE|NOTICE|info|debug|trace)\b"
    r"|^\s*(?:\[\s*\d+%\]|(?:Compiling|Checking|Downloading|Downloaded|Building|Installing|Collecting|Fresh) "
    r"|-- (?:Looking|Performing|Check|Detecting))"
    r"|(?:\.\.\.\s*ok|\bPASS(?:ED)?|\bpassed|[✓✔])\s*$|^\s*(?:ok \d|[✓✔] )"
)
# Place shapes that mark a line as worth the shape tests (HINTED), each on the line of the
# character after the match's start; grouped by how far a match reaches.
_WITHIN_LINE_HINTS = tuple(
    re.compile(pattern)
    for pattern in (
        r"\.[a-z]\w{0,11}(?:[:(]\d|:line)",  # file.ext:12, file.ext(12, File.cs:line 12
        r"/[\w.@~+-]+:\d",  # bin/spring:10
        r"file:\d",  # Dockerfile:9
        r" line \d",  # main.tf line 4, "x.py", line 3
        r"-->",  # rustc
    )
)
"""Matches inside one line: they mark the line they are in."""
_LINE_START_HINTS = tuple(
    re.compile(pattern)
    for pattern in (
        r"\n[ \t]*\[\d",  # [12, 15]: (reek)
        r"\nline \d+:",  # psql: LINE 1: SELECT ...
        r"\nin \S+ line \d",  # shellcheck: "In deploy.sh line 12:"
    )
)
"""A newline and the start of the line after it, which they mark."""
_LINE_END_HINT = re.compile(r":[ \t]*\n")  # headers ending in a colon
"""A line's last characters and its newline: it marks that line."""
_GUTTER_HINT = re.compile(r"\n\s*l\d+ *\|")  # a line-number gutter: "  L12 |<div>"
"""May run over blank lines before the gutter: always searched over the whole text."""
_PATTERN_HINTS = (*_WITHIN_LINE_HINTS, *_LINE_START_HINTS, _LINE_END_HINT, _GUTTER_HINT)


def is_exception_line(line: str) -> bool:
    """True when the line names an exception (``ValueError:``, ``java.io.IOException``)."""
    if _EXCEPTION_WORDS.search(line) is None:
        return False
    match = _EXCEPTION.search(line)
    if match is None:
        return False
    return not _CODE_CONTEXT.search(line[: match.start() + 1])


def _has(line: str, hints: tuple[str, ...]) -> bool:
    # Substring tests run in C; most lines of a long log fail all of them and skip the regexes.
    low = line.lower()
    return any(hint in low for hint in hints)


def is_failure_line(line: str) -> bool:
    """True when the line reports a failure or an error by its shape."""
    return _has(line, _FAILURE_HINTS) and _failure_shape(line)


def _failure_shape(line: str) -> bool:
    # is_failure_line past its hint test.
    if "error" in line and _ERROR_AT.search(line):
        return True
    if is_exception_line(line):
        return True
    if _FAILURE_AT_START.match(line):
        return True
    low = line.lower() if line.isascii() else None
    for words, pattern in _FAILURE_PATTERNS_ELSEWHERE:
        if low is not None and words:
            # A plain loop: a generator per pattern and line cost more than the substring tests.
            for word in words:
                if word in low:
                    break
            else:
                continue
        if pattern.search(line):
            return True
    return False


def is_warning_line(line: str) -> bool:
    """True when the line carries a warning severity tag."""
    return _has(line, ("warn",)) and _WARNING_TAG.search(line) is not None


def _may_bracket_location(line: str) -> bool:
    # Every branch of _BRACKET_LOCATION holds one of these.
    return "]:" in line or "-->" in line or "LINE " in line or 'File "<' in line or " line " in line or "|" in line


def is_location_line(line: str) -> bool:
    """True when the line names a place in a file (``a.py:12``, ``x.cs(3,5)``, ``main.tf line 4``)."""
    if _may_bracket_location(line) and _BRACKET_LOCATION.match(line):
        return True
    if ":" not in line and "(" not in line and " line " not in line:
        return False
    return place_of(line) is not None


def is_summary_line(line: str) -> bool:
    """True for a short line that states totals or the verdict (``3 failed, 40 passed``, ``BUILD SUCCESSFUL in 4s``)."""
    return len(line) <= _SUMMARY_MAX_CHARS and _has(line, _SUMMARY_HINTS) and _summary_shape(line)


def _summary_shape(line: str) -> bool:
    # is_summary_line past its length and hint tests. Every total holds a digit: a cheap
    # scan for one spares most lines the totals pattern, which is tried at every offset.
    return (_DIGIT.search(line) is not None and _SUMMARY.search(line) is not None) or _VERDICT.search(line) is not None


# A line's hint flags: which groups of hint words its lower-cased text holds. A group's bit
# answers "does the line hold one of these words" without a scan of the line, and gates the
# patterns whose every match holds one of them.
HINTED = 1
"""Any hint word or place pattern: the shape tests are worth running on the line."""
_HAS_FAILURE_HINT = 2
_HAS_SUMMARY_HINT = 4
_HAS_WARN = 8
_HAS_FAILURE_WORD = 16
# Every match of _FAILURE_WORDS on an ASCII line holds one of these (lower-cased); each is a hint word too.
_FAILURE_WORD_NEEDLES = (
    "error", "fail", "fatal", "exception", "panic", "abort", "assert", "fault", "traceback", "conflict",
    "caused by", "undefined reference", "core dumped", "segmentation", "denied", "invalid", "could", "cannot",
    "can't", "unable to", "not permitted", "is a directory", "no such file", "not found", "falsifying", "unmet",
    "terminated",
)  # fmt: skip


def _hint_masks() -> tuple[tuple[str, int], ...]:
    groups = (
        (HINTED, _WORD_HINTS),
        (_HAS_FAILURE_HINT, _FAILURE_HINTS),
        (_HAS_SUMMARY_HINT, _SUMMARY_HINTS),
        (_HAS_WARN, ("warn",)),
        (_HAS_FAILURE_WORD, _FAILURE_WORD_NEEDLES),
    )
    masks: dict[str, int] = {}
    for bit, words in groups:
        for word in words:
            masks[word] = masks.get(word, 0) | bit
    # A word that holds a shorter word with the same bits or more is found with it: no scan of its own.
    return tuple(
        (word, mask)
        for word, mask in masks.items()
        if not any(other != word and other in word and masks[other] | mask == masks[other] for other in masks)
    )


_HINT_MASKS = _hint_masks()
_ASCII_HINT_MASKS = tuple((word, mask) for word, mask in _HINT_MASKS if word.isascii())
"""The hint words without the glyphs ("✕", "●"): an ASCII text holds none of those, and is not scanned for them."""


_UNHINTED = bytes(0 if flag & HINTED else 1 for flag in range(256))
"""A ``bytearray.translate`` table: 1 for a line's flags without ``HINTED``."""
_CHARS_PER_TRIED_LINE = 400
"""Lines without a hint word are each tried for the place shapes, instead of searching the whole
text for each shape, when there is at most one of them per this many characters of text (a test
run, where nearly every line says "test"): trying a line costs about what searching that much text does."""


def _hinted(lines: Sequence[str]) -> bytearray:
    # One set of hint flags per line (the bits above). Scans of the whole lowered text
    # (str.count, str.find, and regexes that start with a fixed character) find the few
    # lines worth the line regexes; per-line searches cost more in call overhead than these
    # scans on long outputs. Line starts are kept in an array, and the text is lowered once,
    # whole: no per-line copies beyond one split, so the working set stays about two texts long.
    flags = bytearray(len(lines))
    if not lines:
        return flags
    low, starts = _flag_hint_words(flags, lines)
    flags[0] |= HINTED  # the first line has no newline before it for the patterns
    patterns = _PATTERN_HINTS
    # A line a hint word marked needs no place shape: when few lines are left, only they are tried.
    unhinted = flags.translate(_UNHINTED)
    # (Lines with newlines of their own would have matches across them: those take the whole search.)
    if unhinted.count(1) * _CHARS_PER_TRIED_LINE <= len(low) and low.count("\n") == len(lines) - 1:
        index = unhinted.find(1)
        while index != -1:
            if _has_place_shape(low, starts, index):
                flags[index] |= HINTED
            index = unhinted.find(1, index + 1)
        patterns = (_GUTTER_HINT,)
    for pattern in patterns:
        for match in pattern.finditer(low):
            flags[bisect.bisect_right(starts, match.start() + 1) - 1] |= HINTED
    return flags


def _has_place_shape(low: str, starts: array[int], index: int) -> bool:
    """True when a search of ``low`` for the place shapes (but the gutter) would mark line ``index``.

    No match of these takes another line's characters, so the search for a line's mark starts
    at the line: a match inside it, one from the newline before it, one that ends with its newline.
    """
    start, end = starts[index], starts[index + 1] - 1  # ``end``: the line's newline (the text's end for the last)
    return (
        any(pattern.search(low, start, end) for pattern in _WITHIN_LINE_HINTS)
        or (index > 0 and any(pattern.match(low, start - 1) for pattern in _LINE_START_HINTS))
        or _LINE_END_HINT.search(low, start, end + 1) is not None
    )


def _flag_hint_words(flags: bytearray, lines: Sequence[str]) -> tuple[str, array[int]]:
    """Set the bits of the hint words each of ``lines`` holds (lower-cased) in ``flags``; returns
    the lowered text and the offsets of the lines in it."""
    low = "\n".join(lines).lower()
    lowered: Sequence[str] = lines
    if len(low) != sum(map(len, lines)) + len(lines) - 1:
        # Lowering changed a length ("İ"): take the offsets from the lowered lines themselves.
        lowered = [line.lower() for line in lines]
    starts = array("q", itertools.accumulate((len(line) + 1 for line in lowered), initial=0))
    # Lowering never shortens a character, so when the lengths add up every lowered line sits at
    # its start in ``low``, and a line holds a hint exactly when its piece of ``low`` does.
    aligned = lowered is lines
    del lowered
    pieces: list[str] | None = None
    # How often a hint occurs is judged from the text's start: a count over the whole text
    # would cost one more scan of it for each hint that occurs.
    probe = min(len(low), _DENSE_PROBE_CHARS)
    whole = probe == len(low)
    for hint, mask in _candidate_hints(low):
        seen = low.count(hint, 0, probe)
        if not seen and whole:
            continue  # counted over the whole text: absent
        if seen and aligned and seen * len(low) * _DENSE_HINT_LINES >= probe * len(lines):
            if pieces is None:
                pieces = low.split("\n")
                aligned = len(pieces) == len(lines)  # else a line has a newline of its own: offsets only
            if aligned:
                _flag_lines_holding(flags, pieces, hint, mask)
                continue
        _flag_found(flags, low, starts, hint, mask)
    return low, starts


_LETTERS_ONLY = bytes(byte if 97 <= byte <= 122 else 32 for byte in range(256))
"""A ``bytes.translate`` table that keeps the letters a-z and turns every other byte into a space."""
_WORDS_MIN_CHARS = 2_048
"""A shorter text is scanned for every hint word: the scans cost less than gathering its words."""


def _longest_run(hint: str) -> str:
    # Where the hint occurs, this run of its letters lies inside one run of letters of the text
    # ("" for a glyph: every text holds it).
    return max(re.findall("[a-z]+", hint), key=len, default="")


_HINT_RUNS = tuple(_longest_run(hint) for hint, _ in _HINT_MASKS)
_ASCII_HINT_RUNS = tuple(_longest_run(hint) for hint, _ in _ASCII_HINT_MASKS)


def _candidate_hints(low: str) -> Sequence[tuple[str, int]]:
    """The hint words (with their bits) that ``low`` may hold: all of them in a short text, else
    those whose longest run of letters occurs in one of its words, where it must lie when the
    hint occurs.

    Most hint words occur in no output; the words of a log are a small vocabulary, so their
    absence is told without a scan of the whole text for each (in UTF-8 every byte of a
    non-ASCII character is above ``z``, so the runs of a-z are the same as the text's).
    """
    masks, runs = (_ASCII_HINT_MASKS, _ASCII_HINT_RUNS) if low.isascii() else (_HINT_MASKS, _HINT_RUNS)
    if len(low) < _WORDS_MIN_CHARS:
        return masks
    words = b" ".join(set(low.encode().translate(_LETTERS_ONLY).split())).decode()
    return [pair for pair, run in zip(masks, runs, strict=True) if run in words]


_DENSE_HINT_LINES = 16
"""A hint found at least once per this many lines (``test`` in a test run) is looked for line by
line, in one C-level pass, rather than found occurrence by occurrence, which costs a bisect and a
search from the next line's start for each line that holds it."""
_DENSE_PROBE_CHARS = 4_096
"""How much of the text's start the hint's rate is judged from."""


def _flag_lines_holding(flags: bytearray, pieces: Sequence[str], hint: str, mask: int) -> None:
    for index in itertools.compress(itertools.count(), map(operator.contains, pieces, itertools.repeat(hint))):
        flags[index] |= mask


def _flag_found(flags: bytearray, low: str, starts: array[int], hint: str, mask: int) -> None:
    # Each line that holds the hint once: after a find, the search goes on from the next line's start.
    last = len(flags) - 1
    position = low.find(hint)
    while position != -1:
        line = bisect.bisect_right(starts, position) - 1
        flags[line] |= mask
        position = low.find(hint, starts[line + 1]) if line < last else -1


def _opens_stack(line: str) -> bool:
    # Every match of the pattern contains one of its words; the substring tests spare most lines the scan.
    return (
        "Traceback (most recent call last):" in line or "The above exception was" in line or "During handling of" in line
    ) and _STACK_OPENER.search(line) is not None


def _own_location(line: str) -> bool:
    # A frame in the project's code, not in a dependency or the runtime.
    return is_location_line(line) and _LIBRARY_FRAME.search(line) is None


def _quiet(line: str) -> bool:
    return _QUIET_RECORD.search(line) is not None or _is_snippet(line)


def _is_snippet(line: str) -> bool:
    # Every match of _SNIPPET holds a bar, a caret or a tab: substring tests spare most lines the pattern.
    return ("|" in line or "│" in line or "^" in line or "\t" in line) and _SNIPPET.match(line) is not None


def is_finding_shape(line: str) -> bool:
    """True for a finding that names no severity: ``  D205: ...``, ``teh ==> the``, ``L:  3 | P: 10 |``, ``(12,5)``."""
    stripped = line.lstrip()
    if stripped[:1].isupper() and stripped[1:2].isalnum() and _FINDING_SHAPES[0].match(line):
        return True
    for needle, pattern in _GATED_FINDING_SHAPES:
        if needle in line and pattern.search(line):
            return True
    return False


def is_diagnostic_line(line: str) -> bool:
    """True when the line is a failure, a warning, a finding or a compiler-style ``file:line:col: message``."""
    return is_failure_line(line) or is_warning_line(line) or _COMPILER_STYLE.match(line) is not None or is_finding_shape(line)


def count_diagnostic_lines(lines: Sequence[str], enough: int) -> int:
    """How many of ``lines`` are diagnostic lines (:func:`is_diagnostic_line`), counted up to ``enough``.

    The hint words of all the lines are found at once, so a line is tried for a failure's or
    a warning's shape only when it holds one of their words, as :class:`LineView` does.
    """
    if len(lines) < _BULK_HINT_MIN_LINES:
        return min(enough, sum(1 for line in lines if is_diagnostic_line(line)))
    flags = bytearray(len(lines))
    _flag_hint_words(flags, lines)
    count = 0
    for line, flag in zip(lines, flags, strict=True):
        if (
            (flag & _HAS_FAILURE_HINT and _failure_shape(line))
            or (flag & _HAS_WARN and _WARNING_TAG.search(line) is not None)
            or _COMPILER_STYLE.match(line) is not None
            or is_finding_shape(line)
        ):
            count += 1
            if count >= enough:
                break
    return count


_BULK_HINT_MIN_LINES = 16
"""Fewer lines are each tested for hint words: that costs less than scanning their text for each word."""


def _free(marks: Marks, index: int) -> bool:
    return marks.priority[index] == NORMAL and not marks.labels[index]


def _protect_listed_items(lines: Sequence[str], marks: Marks, header: int) -> None:
    # The items under "app.rb -- 5 warnings:" or "Failures:" are what the header counts.
    index = header + 1
    while index < len(lines) and not lines[index].strip():
        index += 1
    indent = len(lines[header]) - len(lines[header].lstrip())
    while index < len(lines) and lines[index].strip():
        line = lines[index]
        if len(line) - len(line.lstrip()) <= indent and (_COUNT_HEADER.search(line) or is_summary_line(line)):
            return
        if _free(marks, index):
            marks.must(index)
        index += 1


def _without_rail(lines: Sequence[str]) -> Sequence[str]:
    # Lines behind a rail are read without it, so that its blank lines are blank and its
    # frames and headers start the line; the program's own lines between them stay as they are.
    rails: dict[str, int] = {}
    for line in lines:
        if line[:1] in _RAIL_OPENERS and (match := _RAIL.match(line)) is not None:
            rails[match.group()] = rails.get(match.group(), 0) + 1
    if not rails:
        return lines
    rail, count = max(rails.items(), key=lambda item: (item[1], item[0]))
    if count < _RAIL_MIN_LINES:
        return lines
    return [line[len(rail) + 1 :] if line.startswith(rail) else line for line in lines]


@dataclass(frozen=True, slots=True)
class LineView:
    """The probe lines as the shape passes read them (without a rail), with their hint flags.

    Built once per output by :func:`view_of` and shared by the passes below: both the rail
    and the hint flags depend on the text alone, not on the marks the passes change.
    """

    lines: Sequence[str]
    hinted: bytearray
    """Each line's hint flags (``HINTED`` and the word-group bits)."""
    frames: bytearray
    """1 for each line that is a stack frame by ``_FRAME``: the passes ask about every line again."""
    # The shape tests' answers by line text: the passes ask about the same lines again (a
    # line apply_needles found plain, protect_findings tests anew), and logs repeat lines.
    _failures: dict[str, bool] = field(default_factory=dict, repr=False, compare=False)
    _summaries: dict[str, bool] = field(default_factory=dict, repr=False, compare=False)
    _locations: dict[str, bool] = field(default_factory=dict, repr=False, compare=False)

    def is_failure(self, index: int) -> bool:
        """:func:`is_failure_line` of line ``index``, computed once per distinct line."""
        if not self.hinted[index] & _HAS_FAILURE_HINT:
            return False
        line = self.lines[index]
        known = self._failures.get(line)
        if known is None:
            known = self._failures[line] = _failure_shape(line)
        return known

    def is_summary(self, index: int) -> bool:
        """:func:`is_summary_line` of line ``index``, computed once per distinct line."""
        line = self.lines[index]
        if not self.hinted[index] & _HAS_SUMMARY_HINT or len(line) > _SUMMARY_MAX_CHARS:
            return False
        known = self._summaries.get(line)
        if known is None:
            known = self._summaries[line] = _summary_shape(line)
        return known

    def is_warning(self, index: int) -> bool:
        """:func:`is_warning_line` of line ``index``."""
        return bool(self.hinted[index] & _HAS_WARN) and _WARNING_TAG.search(self.lines[index]) is not None

    def says_failure_word(self, index: int) -> bool:
        """True when line ``index`` holds one of the words a reader scans a log for (``_FAILURE_WORDS``)."""
        line = self.lines[index]
        # On an ASCII line lower-casing is exact, so the word bit rules the pattern out.
        if not self.hinted[index] & _HAS_FAILURE_WORD and line.isascii():
            return False
        return _FAILURE_WORDS.search(line) is not None

    def is_location(self, line: str) -> bool:
        """:func:`is_location_line`, computed once per distinct line."""
        known = self._locations.get(line)
        if known is None:
            known = self._locations[line] = is_location_line(line)
        return known


def view_of(lines: Sequence[str]) -> LineView:
    """The :class:`LineView` of ``lines``."""
    plain = _without_rail(lines)
    # The frame test in C-level maps: no Python frame per line.
    return LineView(plain, _hinted(plain), bytearray(map(bool, map(_FRAME.search, plain))))


def apply_needles(view: LineView, marks: Marks) -> bool:
    """Protect failures, warnings, locations, totals and what follows them; True if a failure showed.

    Only lines the kind's rules left alone are looked at: a line those rules ranked or
    named (a detail line inside a failure, a style finding, a passing test) keeps its rank.
    """
    needles = _NeedlePass(view, marks)
    for index, line in enumerate(view.lines):
        if line.strip():
            needles.read(index, line)
    _protect_section_headers(view.lines, marks)
    _protect_numbered_failures(view.lines, marks, view.hinted)
    return needles.saw_failure


@dataclass(slots=True)
class _NeedlePass:
    """What :func:`apply_needles` carries from one non-blank line to the next, and its steps for one line."""

    view: LineView
    marks: Marks
    saw_failure: bool = False
    follow: int = 0
    """How many of the next lines still carry the detail of the last failure or warning."""
    previous: int | None = None
    """The last non-blank line."""
    # The first frame with a file location after a failure is where it happened (Java,
    # .NET, JavaScript); in Python the last frame before the exception line is.
    located: bool = True
    last_frame: int | None = None
    # A failure's detail may go on in labelled values ("Expected:" and the lines indented
    # under it, "Got:", perl's "#   got: '4'"), which the two following lines do not cover.
    # A label that already headed ordinary records ("Trying:" before each doctest example)
    # starts the next record instead.
    labels_outside: set[str] = field(default_factory=set)
    chain: int | None = None
    """The indent of the bare label whose value is being read."""
    value_indent: int | None = None
    value_lines: int = 0
    labels: int = 0
    detail_end: int = -1
    """Labelled values up to this line still belong to the last failure."""
    last_failure: int = -_DETAIL_REACH - 1

    def read(self, index: int, line: str) -> None:
        """Rank one non-blank line: as a labelled value, then as what opens it, then by its own shape."""
        frame = bool(self.view.frames[index])
        label = _LABEL.match(line) if ":" in line else None
        indent = len(line) - len(line.lstrip())
        # The guards below spare a common line (no label, no frame, no hint) the calls that would decide nothing.
        if (label is not None or self.chain is not None) and self._read_label(index, line, frame, label, indent):
            return
        opener, self.previous = self.previous, index
        if opener is not None and (frame or "-->" in line):
            self._protect_opener(opener, line, frame)
        if frame:
            self.last_frame = index  # also for frames a kind's rules ranked: their quoted source opens nothing
        if frame and not self.located and self.marks.priority[index] < MUST and _own_location(line):
            self.marks.must(index)
            self.located = True
            return
        if not _free(self.marks, index):
            self._follow_ranked(index, line)
            return
        hint = bool(self.view.hinted[index] & HINTED)
        if hint and self._protect_diagnostic(index, line, frame, label, indent):
            return
        if (frame or hint) and self._rank_place(index, line, frame, hint):
            return
        if self.follow and self._rank_detail(index, line):
            return
        if hint and _WARNING_MENTION.search(line):
            self.marks.key(index, KEY + 10)

    def _read_label(self, index: int, line: str, frame: bool, label: re.Match[str] | None, indent: int) -> bool:
        """Keep a failure's labelled values, which the two following lines may not cover; True if the line was one."""
        chain = self.chain
        if chain is not None and indent > chain:
            return self._read_chained_value(index, line, frame, indent)
        if label is not None and self._is_detail_label(index, label):
            self.marks.must(index)
            self.labels += 1
            self.previous = index
            self.detail_end = index + 2
            if label.group(2) is None:
                self._read_values_under(indent)
            return True
        if chain is not None:
            self.chain = None
        elif label is not None and not self.follow and index > self.detail_end:
            self.labels_outside.add(label.group(1).lower())
        return False

    def _read_chained_value(self, index: int, line: str, frame: bool, indent: int) -> bool:
        """Keep the first lines indented under a bare label: they are its value; True if the line was one."""
        if self.value_indent is None:
            self.value_indent = indent
        if indent != self.value_indent or frame or not _free(self.marks, index):
            return False
        if self.value_lines < _LABEL_VALUE_LINES and not _FOREIGN.search(line):
            self.marks.must(index)
        else:
            self.marks.key(index, KEY_HIGH)
        self.value_lines += 1
        self.previous = index
        return True

    def _is_detail_label(self, index: int, label: re.Match[str]) -> bool:
        """True when a label belongs to the last failure's detail rather than to an ordinary record."""
        name = label.group(1).lower()
        if self.labels >= _LABELS_PER_FAILURE or name in self.labels_outside:
            return False
        value = label.group(2)
        if (self.chain is not None or self.follow or index <= self.detail_end) and (
            value is None or len(value) <= _LABEL_VALUE_CHARS
        ):
            return True
        # A kind's rules may have ranked it (jest's "Expected:").
        return index - self.last_failure <= _DETAIL_REACH and name in _DETAIL_LABELS and _free(self.marks, index)

    def _read_values_under(self, indent: int) -> None:
        """Read the lines indented under a bare label at ``indent`` as its value, not as following lines."""
        self.chain, self.value_indent, self.value_lines, self.follow = indent, None, 0, 0

    def _protect_opener(self, opener: int, line: str, frame: bool) -> None:
        """Keep the line that opens a stack or that a ``--> file:line`` points from: it says what went wrong."""
        if (frame or ("-->" in line and _ARROW_LOCATION.match(line))) and _free(self.marks, opener):
            # A source line quoted under a frame (Python's) opens no stack.
            if not self.view.frames[opener] and (self.last_frame is None or opener - self.last_frame > 2):
                self.marks.must(opener)
                self.located = self.located and not frame

    def _follow_ranked(self, index: int, line: str) -> None:
        """After a line the kind's rules ranked, show its following lines only if the rules protected it."""
        if _opens_stack(line):
            self.follow = 0  # frames follow, and the frames have rules of their own
            return
        self.follow = _SHOWN_FOLLOWING if self.marks.priority[index] >= MUST else 0
        self.located = self.located and self.follow == 0
        self.labels = 0
        if self.follow and self.view.is_failure(index):
            self.last_failure = index

    def _protect_diagnostic(self, index: int, line: str, frame: bool, label: re.Match[str] | None, indent: int) -> bool:
        """Keep a hinted line shaped like a list header, failure, warning or total; True if it was one."""
        view, marks = self.view, self.marks
        if line.rstrip().endswith(":") and (_COUNT_HEADER.search(line) or _LIST_HEADER.match(line)):
            marks.must(index)
            _protect_listed_items(view.lines, marks, index)
            self.follow = 0
        elif not frame and view.is_failure(index):
            self._protect_failure(index, label, indent)
        elif view.is_warning(index):
            marks.must(index)
            self.follow = _SHOWN_FOLLOWING
        elif not frame and view.says_failure_word(index) and not _quiet(line) and not _NO_PROBLEM.match(line):
            marks.must(index)
            self.follow = 0
        elif view.is_summary(index):
            marks.must(index)
            self.follow = 0
        else:
            return False
        return True

    def _protect_failure(self, index: int, label: re.Match[str] | None, indent: int) -> None:
        """Keep a failure line, open its detail window, and keep the located frame just before it (Python's)."""
        self.marks.must(index)
        self.saw_failure, self.follow, self.located, self.labels = True, _SHOWN_FOLLOWING, False, 0
        self.last_failure = index
        self.detail_end = index + _SHOWN_FOLLOWING + 1
        if label is not None and label.group(2) is None:
            self._read_values_under(indent)
        last_frame = self.last_frame
        if last_frame is not None and index - last_frame <= 2 and self.view.is_location(self.view.lines[last_frame]):
            self.marks.must(last_frame)

    def _rank_place(self, index: int, line: str, frame: bool, hint: bool) -> bool:
        """Rank a frame or a place by whether it names where; True if the line was one."""
        if frame:
            # Every frame that names its place says how the program got to the failure.
            if self.view.is_location(line):
                self.marks.must(index)
            else:
                self.marks.key(index, KEY_HIGH if self.follow else KEY_LOW)
        elif hint and self.view.is_location(line):
            # A place in a dependency or the runtime (a header's note) is part of the diagnostic too.
            if _INCLUDE_CHAIN.match(line):
                self.marks.key(index, KEY_HIGH)
            else:
                self.marks.must(index)
        else:
            return False
        self.follow = 0
        return True

    def _rank_detail(self, index: int, line: str) -> bool:
        """Keep the lines right after a failure or warning, which carry its detail; True if the line was one."""
        if not self.follow:
            return False
        if _NEW_RECORD.match(line):
            self.follow = 0  # the next record of a log, not the detail of the one before
        elif _RULE_LINE.match(line) or _TIMING.match(line):
            # A rule ("---", "-----") or a timing ("duration_ms: 2.5") after a failure says nothing
            # of it: it neither counts as its detail nor takes the place of a line that does.
            self.marks.key(index, KEY_LOW)
        else:
            # The lines right after a failure or warning carry its detail ("left: 5", the location);
            # a quoted source line or a caret under it only repeats the source, so it merely ranks high.
            # A line with a caret line under it is quoted source too, pipe or not (javac, clang).
            if _is_snippet(line) or (index + 1 < len(self.view.lines) and _CARET.match(self.view.lines[index + 1])):
                self.marks.key(index, KEY_HIGH, "code snippet line")
            else:
                self.marks.must(index)
            self.follow -= 1
        return True


# "5 failing" (mocha), or the failures after the run's total: "163 specs, 3 failures" (jasmine).
_FAILING_COUNT = re.compile(r"(?i)^\s*(?:\d[\d,]* [a-z]+, )?(\d+) (?:failing|failed|failures?)\b")
_NUMBERED_ITEM = re.compile(r"^\s*(\d+)\) \S")


def _protect_numbered_failures(lines: Sequence[str], marks: Marks, hinted: bytearray) -> None:
    # "5 failing" (mocha, rspec's "5 failures", jasmine's "163 specs, 5 failures") counts the items numbered "1) ..." to "5) ...":
    # each names a failed test, where it is listed and where its detail starts.
    count = 0
    for index, line in enumerate(lines):
        if hinted[index] & HINTED and line.lstrip()[:1].isdecimal() and (match := _FAILING_COUNT.match(line)):
            count = max(count, int(match.group(1)))
    if not count:
        return
    for index, line in enumerate(lines):
        if ")" in line and (match := _NUMBERED_ITEM.match(line)) and 1 <= int(match.group(1)) <= count:
            if marks.priority[index] != NOISE:
                marks.must(index)


_PATH = re.compile(r"(?:[\w.@~+-]+/)+[\w.@~+-]+")
_HEADER_MAX_SHARE = 0.1
_HEADER_MAX_COUNT = 200


def _protect_section_headers(lines: Sequence[str], marks: Marks) -> None:
    # Lines that open a section about a file ("diff --git a/x b/x", "# example.com/pkg",
    # "== app/x.rb ==") share their first word, are rare, and name a path: they say what
    # the rest is about, so they are kept even by a reader who knows nothing of the tool.
    groups: dict[str, list[int]] = {}
    nonblank = 0
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        nonblank += 1
        if line[0].isspace() or "/" not in line or not _free(marks, index) or not _PATH.search(line):
            continue
        groups.setdefault(line.split(None, 1)[0], []).append(index)
    most = min(_HEADER_MAX_COUNT, max(3, nonblank * _HEADER_MAX_SHARE))
    for word, indexes in groups.items():
        if 2 <= len(indexes) <= most:
            # A word that starts many other lines (strace's pid, a log's level) opens no section.
            prefix = word + " "
            if sum(1 for line in lines if line.startswith(prefix)) > max(most, 2 * len(indexes)):
                continue
            for index in indexes:
                following = index + 1
                if following < len(lines) and lines[following].strip() and following not in indexes:
                    marks.must(index)


# A frame that names only a call and its place: "Test.run (node:internal/test_runner/test:796:25)",
# valgrind's "by 0x109243: main (main.c:10)", a bare "/srv/app/lib/text.js:8:37".
_CALL_FRAME = re.compile(
    r"^\s*(?:(?:at|by)\s+)?(?:0x[0-9A-Fa-f]+:?\s+)?(?:async\s+)?[\w$.<>\[\]~:]+(?:\s+\[as [\w$]+\])?"
    r"\s+\([^()\s]*:\d+(?::\d+)?\)\s*$"
    r"|^\s*(?:at\s+)?(?:file://)?[\w./@~+-]*/[\w.@~+-]+:\d+:\d+\s*$"
)
REPEATED_FRAME = "repeated frame"
REPEATED_PLACE = "repeated place"
PASSED_RECORD = "record not in the failure list"


def _is_call_frame(line: str) -> bool:
    # Both branches of _CALL_FRAME hold a ":line" place and end in ")" or a digit, before trailing space.
    if ":" not in line:
        return False
    end = line.rstrip()[-1:]
    return (end == ")" or end.isdecimal()) and _CALL_FRAME.match(line) is not None


def place_of(line: str) -> str | None:
    """The place a location line names (``src/a.py:12``, ``x.pl line 3``), as written; None when there is none."""
    tokens = line.split()
    for position, token in enumerate(tokens):
        if (":" in token or "(" in token) and _PLACE_END.search(token) and _LOCATION_TOKEN.match(token):
            return token.strip("([\"'`<>)],;.")
        if (
            token == "line"
            and 0 < position < len(tokens) - 1
            and tokens[position + 1].rstrip(",:.").isdigit()  # Perl ends the sentence: "at w.pl line 3."
            and _FILE_TOKEN.match(tokens[position - 1])
        ):
            return tokens[position - 1].strip("(\"',:") + " line " + tokens[position + 1].rstrip(",:.")
    return None


def fold_repeated_places(view: LineView, marks: Marks) -> None:
    """Rank below must a frame or a place that an earlier protected line already showed.

    The same frame under every error of a run (valgrind's ``by 0x109243: main (main.c:10)``,
    the test runner's own frames under each failed test) and the same place named by every
    line that uses it (a step definition, a shared helper) say nothing the first copy did
    not: the first stays protected, the later ones rank low. A line that is a failure, a
    warning, a finding or a total keeps its rank whatever place it names.
    """
    lines = view.lines
    seen: set[str] = set()
    for index, line in enumerate(lines):
        if marks.priority[index] < MUST or not line.strip():
            continue
        frame = bool(view.frames[index]) or _is_call_frame(line)
        if frame:
            key = "\x00" + line.strip()
        elif (
            view.hinted[index] & HINTED
            and view.is_location(line)
            and (place := place_of(line)) is not None
            and not line.lstrip().startswith(place)  # a finding opens with its place; a reference trails
        ):
            key = place
        else:
            continue
        if key not in seen:
            seen.add(key)
            continue
        if _says_more_than_place(view, index):
            continue
        marks.priority[index] = KEY_LOW
        marks.labels[index] = REPEATED_FRAME if frame else REPEATED_PLACE


_FAILED_LIST_HEADER = re.compile(r"(?i)^\s*(?:\w+ ){0,2}(?:fail(?:ed|ing|ures?)|error(?:ed|s)?)(?: \w+){0,2}:\s*$")


def protect_listed_records(view: LineView, marks: Marks) -> None:
    """Keep the record of each failure that a closing list names by its place.

    A run that ends with a list of what failed by place (``Failing scenarios:`` over
    ``  features/cart.feature:38  Gift wrapping``) points back at the record that opened
    with the same place (``  Scenario: Gift wrapping  # features/cart.feature:38``): the lines
    indented under that record are the failure's steps, the failing one among them whether
    or not it names a failure word. Records the list does not name stay as ranked.
    """
    lines = view.lines
    listed: set[str] = set()
    items: set[int] = set()
    for index, line in enumerate(lines):
        if not view.hinted[index] & HINTED or not line.rstrip().endswith(":") or not _FAILED_LIST_HEADER.match(line):
            continue
        item = index + 1
        while item < len(lines) and lines[item].strip():
            place = place_of(lines[item])
            if place is None or not lines[item].lstrip().startswith(place):
                break
            listed.add(place)
            items.add(item)
            item += 1
    if not listed:
        return
    files = {place.rsplit(":", 1)[0] for place in listed if ":" in place}
    for index, line in enumerate(lines):
        if index in items or not view.hinted[index] & HINTED:
            continue
        place = place_of(line)
        if place is None or line.lstrip().startswith(place):
            continue
        indent = _indent(line)
        block = range(index + 1, _block_end(lines, index, indent))
        if place in listed:
            marks.must(index)
            for below in block:
                if NOISE < marks.priority[below] < MUST and marks.labels[below] != REPEATED_FRAME:
                    if not view.frames[below]:
                        marks.must(below)
        elif ":" in place and place.rsplit(":", 1)[0] in files:
            # A record in the same file that the list leaves out passed: it and its steps are context.
            for row in (index, *block):
                if marks.priority[row] >= MUST and not _says_more_than_place(view, row):
                    marks.priority[row] = KEY_LOW
                    marks.labels[row] = PASSED_RECORD


def _block_end(lines: Sequence[str], index: int, indent: int) -> int:
    # The first line after ``index`` that is blank or no deeper than ``indent``.
    for below in range(index + 1, len(lines)):
        if not lines[below].strip() or _indent(lines[below]) <= indent:
            return below
    return len(lines)


def _says_more_than_place(view: LineView, index: int) -> bool:
    # A failure, a warning, a total or a finding is kept whatever record it stands in.
    line = view.lines[index]
    if view.hinted[index] & HINTED and (view.is_failure(index) or view.is_warning(index) or view.is_summary(index)):
        return True
    return _COMPILER_STYLE.match(line) is not None or is_finding_shape(line) or _opens_stack(line)


FOREIGN_FRAME = "runtime frame under the project's"


def rank_foreign_frames_after_own(view: LineView, marks: Marks) -> None:
    """In a stack, rank below must the frames in dependencies or the runtime under a frame in the project's code.

    A failed test's stack runs from the project's frame (the assertion, the call that threw)
    into the runner and the runtime (``Test.run (node:internal/test_runner/test:796:25)``,
    ``at org.junit.runners...``): those frames say how the runner got there, not where the
    failure is. Frames before the first project frame (where a library threw) stay, and so
    does every frame in the project's code. Python's ``File "..."`` frames have their own rule.
    A stack is a run of frame lines, ended by a blank line or by any other ranked line.
    """
    lines, priority = view.lines, marks.priority
    own_seen = False
    for index, line in enumerate(lines):
        # Only ranked lines are read (every frame that names its place was ranked or kept by
        # now); an ordinary line is passed over, a blank line ends the stack.
        if priority[index] <= NORMAL:
            if not line.strip():
                own_seen = False
            continue
        frame = bool(view.frames[index]) or _is_call_frame(line)
        if not frame or line.lstrip().startswith('File "'):
            own_seen = False
            continue
        if not _FOREIGN.search(line):
            own_seen = own_seen or view.is_location(line)
            continue
        if own_seen and marks.priority[index] >= MUST and not _says_more_than_place(view, index):
            marks.priority[index] = KEY
            marks.labels[index] = FOREIGN_FRAME


REPEATED_DETAIL = "detail repeated from an earlier failure"
_DETAIL_MAX_LINES = 30


def fold_repeated_details(view: LineView, marks: Marks) -> None:
    """Rank low a failure's protected detail when an earlier failure's detail reads the same.

    Parametrised cases that fail alike print the same detail under each headline (tcltest's
    ``---- Result was:`` / ``0`` / ``---- Result should have been (exact matching):`` / ``1``):
    the headlines stay, the first copy of the detail stays, and the later copies rank low.
    The detail of a failure is the run of protected lines after its headline, up to the next
    failure line or a second blank line; it folds only when every line of it is the same.
    """
    lines = view.lines
    headlines = [
        index
        for index in range(len(lines))
        if marks.priority[index] >= MUST and view.hinted[index] & HINTED and view.is_failure(index)
    ]
    seen: set[tuple[str, ...]] = set()
    for position, start in enumerate(headlines):
        stop = headlines[position + 1] if position + 1 < len(headlines) else len(lines)
        detail: list[int] = []
        blanks = 0
        for index in range(start + 1, min(stop, start + 1 + _DETAIL_MAX_LINES)):
            if not lines[index].strip():
                blanks += 1
                if blanks >= 2:
                    break
                continue
            blanks = 0
            if marks.priority[index] >= MUST:
                detail.append(index)
        if len(detail) < 2:
            continue
        key = tuple(lines[index].strip() for index in detail)
        if key not in seen:
            seen.add(key)
            continue
        for index in detail:
            if not _says_more_than_place(view, index):
                marks.priority[index] = KEY_LOW
                marks.labels[index] = REPEATED_DETAIL


def protect_own_locations(view: LineView, marks: Marks) -> None:
    """Make every line that names a place in a file a must line, whatever rank a kind's rules gave it.

    A note, a finding's ``--> file:line``, a frame (every frame of a stack, in the
    project's code or in a dependency) says where something went wrong or how the program
    got there; a note in a system header is part of the diagnostic that led there. Noise
    stays noise.
    """
    lines = view.lines
    for index, line in enumerate(lines):
        priority = marks.priority[index]
        if priority >= MUST or priority == NOISE or not view.is_location(line) or _INCLUDE_CHAIN.match(line):
            continue
        marks.must(index)
        owner = marks.owner[index]
        if owner != index and marks.priority[owner] != NOISE:
            marks.must(owner)  # the finding a "--> file:line" line belongs to


_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")
_HUNK_LINE = re.compile(r"^(?:[ +-]|\\ No newline)")
DIFF_LINE = "diff line"


def label_diff_bodies(lines: Sequence[str], marks: Marks) -> None:
    """Label the lines of unified-diff hunks that a kind's rules left alone, so no shape reads them.

    A formatter's ``--diff`` (black, isort, gofmt -d) quotes the code it would change; a
    ``-    raise ValueError(...)`` there is source, not a failure of this run.
    """
    inside = False
    for index, line in enumerate(lines):
        if line.startswith("@@") and _HUNK.match(line):
            inside = True
            continue
        if not inside:
            continue
        if not _HUNK_LINE.match(line) or line.startswith(("--- ", "+++ ")):
            inside = False
            continue
        if _free(marks, index):
            marks.label(index, DIFF_LINE)


def protect_findings(view: LineView, marks: Marks) -> None:
    """Make every line that is a finding by its shape a must line, whatever rank a kind's rules gave it.

    The kind's rules and :func:`apply_needles` decide what they recognise; this floor is
    for the lines they ranked below must although they report a failure, a warning, a
    finding, a place in the project's code or a total (a package manager's ``WARNING:``, a
    linter's file header over findings that give only ``line:col``). Noise, quoted
    source, diff bodies and stack frames keep their rank: frames have rules of their own.
    """
    lines, hinted = view.lines, view.hinted
    for index, line in enumerate(lines):
        priority = marks.priority[index]
        if priority != NOISE and "otal" in line and _TOTALS_HEADER.match(line):
            marks.must(index)
            item = index + 1
            while item < len(lines) and _COUNT_ITEM.match(lines[item]) and _indent(lines[item]) > _indent(line):
                marks.must(item)
                item += 1
            continue
        if priority >= MUST or priority == NOISE or not line.strip() or marks.labels[index] == DIFF_LINE:
            continue
        if marks.labels[index] == "code snippet line" or _is_snippet(line) or view.frames[index]:
            continue
        if is_finding_shape(line) or (
            hinted[index] & HINTED
            and (
                view.is_failure(index)
                or view.is_warning(index)
                # A quiet record's tally ("[INFO] Tests run: 3, Failures: 0") is the kind's to rank.
                or (view.is_summary(index) and _QUIET_RECORD.search(line) is None)
                or (view.is_location(line) and not _FOREIGN.search(line) and not _INCLUDE_CHAIN.match(line))
            )
        ):
            marks.must(index)
    _protect_file_headers(lines, marks)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _protect_file_headers(lines: Sequence[str], marks: Marks) -> None:
    # A bare path over findings that give only "line:col" (stylelint, yamllint, eslint) is
    # their location: without it the findings point nowhere.
    for index, line in enumerate(lines[:-1]):
        if marks.priority[index] >= MUST or line[:1].isspace() or " " in line.strip():
            continue
        if not _FILE_TOKEN.match(line.strip()) or line.rstrip().endswith((",", ":")):
            continue
        following = lines[index + 1]
        if marks.priority[index + 1] >= MUST and _LINE_COL.match(following):
            marks.must(index)


_LINE_COL = re.compile(r"^\s+\d+:\d+\s")


def analyse_generic(lines: Sequence[str], marks: Marks) -> None:
    """Fallback: nothing kind-specific; the shapes above and shape grouping do the work."""
    del lines, marks
