"""A ladder of finding severities: lower findings fold when higher ones fail the run.

Linters and compilers print findings at several severities (pylint ``E``/``W``/``C``
codes, yamllint ``[error]``/``[warning]``, gcc ``error:``/``warning:``, bandit
``Severity: High``/``Low``). Only the highest severity present fails the run; when an
output also has findings strictly below it, those are context, not failures. Each rule
or code among them keeps its first finding (ranked, not protected) and the rest become
ordinary lines labelled by the code, so omission markers say what was folded
(``23× W0621 redefined-outer-name``). When one severity is all there is (a report of
warnings alone), every finding is a failure and nothing here changes.

Unknown letters and words are not on the ladder: a finding the rules cannot place
counts as the highest, so it is never folded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from contextwright.tool_outputs.compressors.marks import KEY, KEY_HIGH, NORMAL, Marks

FATAL = 5
ERROR = 4
WARNING = 3
STYLE = 2
INFO = 1

_WORDS = {
    "fatal error": FATAL,
    "fatal": FATAL,
    "error": ERROR,
    "warning": WARNING,
    "refactor": STYLE,
    "convention": STYLE,
    "style": STYLE,
    "performance": STYLE,
    "portability": STYLE,
    "info": INFO,
    "information": INFO,
    "hint": INFO,
    "remark": INFO,
}
# pylint's message letters; flake8/ruff codes (E501, F401) are three digits and every one fails.
_LETTERS = {"F": FATAL, "E": ERROR, "W": WARNING, "R": STYLE, "C": STYLE, "I": INFO}
_SECURITY = {"high": ERROR, "medium": WARNING, "low": STYLE}
_FIRST_KEPT = 1

# path:line[:col]: opens every located shape below; each is then matched from where it ends.
# The path runs to the line's first colon whatever the quantifier: greedy, it is read in one
# step instead of a try per character.
_LOCATED = re.compile(r"[^\s:][^:]*:\d+(?::\d+)?:\s+")
# word: message   or   [word] message   (gcc, clang, mypy, cppcheck, yamllint)
_WORDED = re.compile(
    r"(?P<open>\[)?(?P<word>fatal error|fatal|error|warning|refactor|convention|style|performance"
    r"|portability|info|information|hint|remark|note)(?(open)\]|:)\s+(?P<msg>.*)$"
)
# W0621: message (symbol)   (pylint text)
_PYLINT = re.compile(r"(?P<code>[A-Z]\d{4}): (?P<msg>.*?)(?: \((?P<symbol>[\w-]+)\))?$")
# [W0621(symbol), obj] message   (pylint parseable)
_PARSEABLE = re.compile(r"\[(?P<code>[A-Z]\d{4})(?:\((?P<symbol>[\w-]+)\))?[^\]]*\] (?P<msg>.*)$")
# "  18:81   error   message  (rule)"   (stylish formats under a file header: yamllint, eslint)
_STYLISH = re.compile(r"^\s+\d+:\d+\s+(?P<word>error|warning|info)\s+(?P<msg>.*?)\s+\(?(?P<rule>[\w@/.-]+)\)?\s*$")
# [WARNING] /src/A.java:[12,5] message   (maven)
_BRACKETED = re.compile(r"^\[(?P<word>ERROR|WARNING|INFO)\] (?P<loc>\S+:\[\d+,\d+\]) (?P<msg>.*)$")
# error[E0308]: message / warning: message, with its place on a "  --> file:line:col" line below (rustc, clippy)
_HEADED = re.compile(r"^(?P<word>error|warning)(?:\[(?P<code>[\w:-]+)\])?: (?P<msg>.*)$")
_ARROW = re.compile(r"^\s*--> \S+:\d+")
_ISSUE = re.compile(r"^>> Issue: \[(?P<code>[^\]]+)\] (?P<msg>.*)$")
_ISSUE_SEVERITY = re.compile(r"^\s+Severity: (?P<level>High|Medium|Low)\b")
_TRAILING_RULE = re.compile(r"(?:\[(?P<bracket>-?[\w=-]+)\]|\((?P<paren>[\w-]+)\))\s*$")
# file: line 9, col 48,   or   line 9 column 48 -   (jshint, eslint compact, tidy)
_WORDED_PLACE = re.compile(r"(?:[^\s:][^:]*?:\s+)?line \d+,? col(?:umn)? \d+(?:,|\s+-|:)?\s+")
# Error - message   or   Warning: message   after a worded place (eslint compact, tidy)
_LEADING_WORD = re.compile(r"(?P<word>Error|Warning|Info)(?: -|:)\s+(?P<msg>.*)$", re.IGNORECASE)
# message (W033)   (jshint, jslint: E error, W warning, I info)
_TRAILING_CODE = re.compile(r"\((?P<code>[A-Z]\d{3,4})\)\s*$")
# message [Error/rule]   (eslint unix)
_TRAILING_WORD = re.compile(r"\[(?P<word>Error|Warning|Info)/(?P<rule>[^\]]+)\]\s*$", re.IGNORECASE)
# file(3,5): error TS2322: message   or   C:\\dir\\file.c(12): warning C4996: message   (tsc, msvc)
_PAREN_PLACE = re.compile(
    r"^\S.*?\(\d+(?:,\d+)?\):\s+(?P<word>fatal error|error|warning|info)(?:\s+(?P<code>[A-Z]+\d+))?:\s+(?P<msg>.*)$"
)
# "  ^-- SC1073 (error): message"   under "In file line N:"   (shellcheck tty)
_CARET_CODE = re.compile(r"^\s*\^-*\^?\s+(?P<code>[A-Z]+\d+) \((?P<word>error|warning|info|style)\):")
_IN_FILE_LINE = re.compile(r"^In \S.* line \d+:\s*$")
# <error line='3' column='5' severity='warning' message='...' source='...'/>   (checkstyle XML)
_CHECKSTYLE = re.compile(r"^\s*<error\s[^>]*?severity=(?P<q>['\"])(?P<word>\w+)(?P=q)")
_CHECKSTYLE_SOURCE = re.compile(r"source=(?P<q>['\"])(?P<source>[^'\"]*)(?P=q)")
_CHECKSTYLE_FILE = re.compile(r"^\s*<file\s+name=")
# message at FILE line N.   or   message at FILE line N, near "..."   (perl's diagnostics)
_PERL_DIAGNOSTIC = re.compile(r"^(?P<msg>\S.*?) at (?P<file>\S+) line \d+(?:, (?:near|<\w+>|at) .*)?\.$")
# Messages perldiag classes as warnings (W, S, D), by the category that enables them; any
# other message at a place is taken as an error, the highest rank the ladder gives it.
_PERL_WARNINGS = (
    ("once", re.compile(r"^Name \S+ used only once: possible typo$")),
    ("redefine", re.compile(r"^(?:Subroutine|Constant subroutine|Format) \S+ redefined$")),
    ("uninitialized", re.compile(r"^Use of uninitialized value\b")),
    ("void", re.compile(r"^Useless use of\b")),
    ("misc", re.compile(r"^(?:\"(?:my|our|state)\" variable \S+ masks earlier declaration|Odd number of elements)\b")),
    ("syntax", re.compile(r"^(?:Scalar value \S+ better written as|Found = in conditional|Statement unlikely to be reached)")),
    ("closure", re.compile(r"^Variable \S+ will not stay shared$")),
    ("prototype", re.compile(r"^(?:Prototype mismatch|\S+\(\) called too early to check prototype)\b")),
    ("deprecated", re.compile(r"\bis deprecated\b")),
)
# ERROR: message   or   *** WARNING: message   at the start of a line (pip, bazel, podchecker)
_BARE = re.compile(r"^(?:\*{3} )?(?P<word>FATAL|ERROR|WARNING|Fatal|Error|Warning)\s*: (?P<msg>\S.*)$")
# collect2: error: ld returned 1 exit status   or   gcc: fatal error: no input files   (a tool's own verdict, no place)
_TOOL_VERDICT = re.compile(r"^(?P<tool>[\w.+-]+): (?P<word>fatal error|error): (?P<msg>\S.*)$")
# note: message [SC2086]   (a note with a tool's own code is a finding, not an addendum)
_CODED_NOTE = re.compile(r"\[(?P<code>[A-Z]+\d+)\]\s*$")
_SEPARATOR = re.compile(r"^[-=*_]{5,}\s*$")
_EXCERPT = re.compile(r"^\d+\t|^\s*\d*\s*\|")
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True, slots=True)
class _Finding:
    start: int
    end: int
    """The last line of the finding's block (source excerpt, caret, notes, detail lines)."""
    rank: int
    rule: str
    """The code or rule that groups alike findings, or the message's shape."""


def fold_lower_severities(lines: Sequence[str], marks: Marks) -> None:
    """Fold findings below the highest severity in ``lines``, one ranked example per rule."""
    findings = _findings(lines)
    if not findings:
        return
    top = max(finding.rank for finding in findings)
    seen: dict[str, int] = {}
    for finding in findings:
        if finding.rank >= top:
            _keep_file_element(lines, finding.start, marks)
            continue
        count = seen[finding.rule] = seen.get(finding.rule, 0) + 1
        label = finding.rule
        first = count <= _FIRST_KEPT
        for index in range(finding.start, finding.end + 1):
            if first:
                level = KEY_HIGH if index == finding.start else KEY
            else:
                level = NORMAL
            marks.priority[index] = level
            marks.labels[index] = label
        marks.block(finding.start, finding.end)


def _keep_file_element(lines: Sequence[str], start: int, marks: Marks) -> None:
    # A checkstyle finding names no file; the <file name=...> element around it is its place.
    if not lines[start].lstrip().startswith("<error"):
        return
    for index in range(start - 1, -1, -1):
        if _CHECKSTYLE_FILE.match(lines[index]) is not None:
            marks.must(index)
            return


def _findings(lines: Sequence[str]) -> list[_Finding]:
    heads: list[tuple[int, int, str]] = []
    for index, line in enumerate(lines):
        placed = _place(lines, index, line)
        if placed is not None:
            heads.append((index, *placed))
    starts = {index for index, rank, _ in heads if rank}
    # A note belongs to the finding above it, not a finding of its own.
    return [_Finding(index, _block_end(lines, index, starts), rank, rule) for index, rank, rule in heads if rank]


def _place(lines: Sequence[str], index: int, line: str) -> tuple[int, str] | None:
    # (rank, rule) of a finding that starts on ``line``; rank 0 for a note; None otherwise.
    head = line[:1]
    if head == ">":
        if (m := _ISSUE.match(line)) is None:
            return None
        for follow in lines[index + 1 : index + 4]:
            if (s := _ISSUE_SEVERITY.match(follow)) is not None:
                return _SECURITY[s.group("level").lower()], f"{m.group('code')} {s.group('level')}"
        return None
    if (head == "e" or head == "w") and (m := _HEADED.match(line)) is not None:
        # Without its "-->" place below, the line is a verdict or a total, not a finding.
        if not any(_ARROW.match(follow) for follow in lines[index + 1 : index + 3]):
            return None
        return _WORDS[m.group("word")], f"{m.group('word')} {m.group('code') or _shape(m.group('msg'))}"
    if head == "[":
        if (m := _BRACKETED.match(line)) is None:
            return None
        return _WORDS[m.group("word").lower()], f"{m.group('word').lower()} {_shape(m.group('msg'))}"
    if head.isspace():
        if ":" not in line or (m := _STYLISH.match(line)) is None:
            return None
        return _WORDS[m.group("word")], f"{m.group('word')} {m.group('rule')}"
    if head == "<":
        return _checkstyle(line)
    if head == "I" and _IN_FILE_LINE.match(line) is not None:
        return _caret_paragraph(lines, index)
    if (head == "E" or head == "W" or head == "F" or head == "*") and (m := _BARE.match(line)) is not None:
        word = m.group("word").lower()
        return _WORDS[word], f"{word} {_rule(m.group('msg'))}"
    located = _LOCATED.match(line) if ":" in line else None
    if located is None:
        if "error: " in line and (m := _TOOL_VERDICT.match(line)) is not None:
            # The run failed at error severity even when no located finding says so (the linker's
            # "undefined reference" lines carry no severity word): warnings beside it fold.
            return _WORDS[m.group("word")], f"{m.group('word')} {m.group('tool')}"
        if line.endswith(".") and " line " in line and (m := _PERL_DIAGNOSTIC.match(line)) is not None:
            return _perl(m.group("msg"))
        return _worded_or_parenthesised(line) if ":" in line else None
    at = located.end()
    if (m := _PYLINT.match(line, at)) is not None or (m := _PARSEABLE.match(line, at)) is not None:
        code = m.group("code")
        rank = _LETTERS.get(code[0], FATAL)
        symbol = m.group("symbol")
        return rank, f"{code} {symbol}" if symbol else code
    if (m := _WORDED.match(line, at)) is not None:
        word = m.group("word")
        if word == "note":
            # shellcheck's gcc format prints its info and style findings as coded notes.
            if (c := _CODED_NOTE.search(m.group("msg"))) is not None:
                return INFO, f"note {c.group('code')}"
            return 0, ""
        return _WORDS[word], f"{word} {_rule(m.group('msg'))}"
    if line.endswith("]") and (w := _TRAILING_WORD.search(line, at)) is not None:
        word = w.group("word").lower()
        return _WORDS[word], f"{word} {w.group('rule')}"
    return None


def _worded_or_parenthesised(line: str) -> tuple[int, str] | None:
    # Places given in words (file: line 9, col 48,) or in parentheses (file(3,5):).
    if "line " in line and (place := _WORDED_PLACE.match(line)) is not None:
        at = place.end()
        if (m := _LEADING_WORD.match(line, at)) is not None:
            word = m.group("word").lower()
            return _WORDS[word], f"{word} {_rule(m.group('msg'))}"
        if (c := _TRAILING_CODE.search(line, at)) is not None:
            code = c.group("code")
            return _LETTERS.get(code[0], FATAL), code
        if (w := _TRAILING_WORD.search(line, at)) is not None:
            word = w.group("word").lower()
            return _WORDS[word], f"{word} {w.group('rule')}"
        return None
    if "(" in line and (m := _PAREN_PLACE.match(line)) is not None:
        word = m.group("word")
        return _WORDS[word], f"{word} {m.group('code') or _rule(m.group('msg'))}"
    return None


def _perl(message: str) -> tuple[int, str]:
    for category, pattern in _PERL_WARNINGS:
        if pattern.search(message) is not None:
            return WARNING, f"warning {category}"
    return ERROR, f"error {_shape(message)}"


def _checkstyle(line: str) -> tuple[int, str] | None:
    if (m := _CHECKSTYLE.match(line)) is None:
        return None
    source = _CHECKSTYLE_SOURCE.search(line)
    word = m.group("word").lower()
    # A severity the ladder does not know counts as the highest.
    return _WORDS.get(word, FATAL), f"{word} {source.group('source') if source else ''}".rstrip()


def _caret_paragraph(lines: Sequence[str], index: int) -> tuple[int, str] | None:
    # "In file line N:" heads a paragraph of source and caret lines; it ranks as its highest caret.
    best: tuple[int, str] | None = None
    for follow in lines[index + 1 :]:
        if not follow.strip():
            break
        if (m := _CARET_CODE.match(follow)) is not None:
            rank = _WORDS[m.group("word")]
            if best is None or rank > best[0]:
                best = rank, m.group("code")
    return best


def _rule(message: str) -> str:
    # The tool's own rule name when it prints one at the end ([-Wunused], (comments)); else the message's shape.
    if (m := _TRAILING_RULE.search(message)) is not None:
        return m.group("bracket") or m.group("paren")
    return _shape(message)


def _shape(message: str) -> str:
    text = _DIGITS.sub("N", message)
    return text if len(text) <= 40 else text[:39] + "…"


def _is_note(line: str) -> bool:
    if ": note: " not in line or (located := _LOCATED.match(line)) is None:
        return False
    return (m := _WORDED.match(line, located.end())) is not None and m.group("word") == "note"


def _block_end(lines: Sequence[str], start: int, starts: set[int]) -> int:
    # A finding's block runs over the indented or gutter lines under it (source, caret,
    # bandit's detail lines) and its notes, up to a blank line, a separator or the next finding.
    end = start
    paragraph = _IN_FILE_LINE.match(lines[start]) is not None
    for index in range(start + 1, len(lines)):
        line = lines[index]
        if not line.strip() or _SEPARATOR.match(line):
            break
        if index in starts:
            break
        if paragraph or line[:1].isspace() or _EXCERPT.match(line) or _is_note(line):
            end = index
            continue
        break
    return end
