"""Linters: eslint, ruff/flake8/pycodestyle, pylint, rubocop, golangci-lint/staticcheck, hlint, remark.

Every finding keeps its location line (``file:line[:col]``; for ruff's multi-line
format the code line and its ``-->`` line; for eslint's stylish format the finding
line and the file header above it), and the tool's summary line is kept. Severity
decides the rest: an error or warning (rubocop ``W:``, hlint ``Warning:``, eslint
``warning``) ranks its source excerpt and help text, while a style finding's
(conventions, suggestions, codes such as ``E501``) are ordinary lines that go first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from contextwright.tool_outputs.compressors.marks import KEY, KEY_LOW, Marks

_CODE_STYLE = re.compile(
    r"^(?:[EW][1-8]\d\d|C\d+|N\d+|D\d+|Q\d+|I\d+|UP\d+|COM\d+|SIM\d+|RET\d+|ERA\d+|T20\d|S1\d+|ST\d+|QF\d+|R\d{4}|C\d{4})$"
)
# path:line:col: CODE[:] message   (flake8, ruff, pycodestyle, pylint)
_CODED = re.compile(r"^(?P<loc>\S+?:\d+:\d+): (?P<code>[A-Z]+\d+)(?:\[\*\])?:? (?P<msg>.*)$")
# path:line:col: X: message     (rubocop, pylint --msg-template with letters)
_LETTERED = re.compile(r"^(?P<loc>\S+?:\d+:\d+): (?P<sev>[CRWEF]): (?:\[Correctable\] )?(?P<msg>.*)$")
# path:line:col: message (linter) (golangci-lint, staticcheck)
_PAREN = re.compile(r"^(?P<loc>\S+?:\d+(?::\d+)?): (?P<msg>.*) \((?P<rule>[\w-]+)\)$")
# path:line:col: Severity: message   (hlint)
_HLINT = re.compile(r"^(?P<loc>\S+?:\d+:\d+(?:-\d+)?(?::\d+)?): (?P<sev>Error|Warning|Suggestion|Ignore): (?P<msg>.*)$")
# path:line:col: error|warning|note: message   (gcc-style: clang-tidy, shellcheck -f gcc, mypy)
_WORDED = re.compile(r"^(?P<loc>\S+?:\d+(?::\d+)?): (?P<sev>error|warning|note|info): (?P<msg>.*)$")
# "  2:10  error  message  rule"   (eslint stylish, remark)
_STYLISH = re.compile(
    r"^\s+\d+:\d+(?:-\d+:\d+)?\s+(?P<sev>error|warning|info)\s+(?P<msg>.*?)(?:\s{2,}|\s)(?P<rule>[\w@/.-]+)?\s*$"
)
_SUMMARY_AT_START = re.compile(
    r"^(?:(?:[✖✕×⚠✓✔]\s*)?\d+ (?:problems?|errors?|warnings?|hints?|offenses?|issues?)\b"
    r"|Found \d+ (?:errors?|problems?)|All checks passed|No (?:hints|issues|problems)"
    r"|\d+ (?:errors?|problems?) and \d+ warnings?)"
)
# Apart from the line-start forms above, each searched on its own: a pattern that starts with a
# digit or a fixed word is found by a fast scan, where one alternation is tried at every offset.
_SUMMARY_ANYWHERE = (re.compile(r"\d+ files? inspected, "), re.compile(r"potentially fixable"))
_GO_STYLE_RULE = re.compile(r"^(?:S\d+|ST\d+|QF\d+|gofmt|goimports|gofumpt|lll|whitespace|wsl|godot|misspell|stylecheck|revive)$")
# A bare path on its own line heads the findings under it ("name....Failed" leaders are not paths).
_FILE_HEADER = re.compile(r"^(?!.*\.\.\.)(?:[A-Za-z]:)?[\w./\\@~+-]+\.\w+$|^(?!.*\.\.\.)(?:[A-Za-z]:)?[\w./\\@~+-]+/[\w.@+-]+$")
# CODE [*] message, with the location on the next line   (ruff's default "full" format)
_HEADED = re.compile(r"^(?P<code>[A-Z]+\d+) (?:\[\*\] )?(?P<msg>\S.*)$")
_ARROW = re.compile(r"^\s*--> \S+:\d+")
_CARET = re.compile(r"^\s*\^+\s*$")
_PROGRESS = re.compile(r"[.A-Z*]+")
_DIGITS = re.compile(r"\d+")


def _short(text: str) -> str:
    # Numbers vary between findings of one rule ("[83/80]"); fold them so they group.
    text = _DIGITS.sub("N", text)
    return text if len(text) <= 48 else text[:47] + "…"


def _is_summary(line: str) -> bool:
    return _SUMMARY_AT_START.match(line) is not None or any(pattern.search(line) for pattern in _SUMMARY_ANYWHERE)


def analyse_lint(lines: Sequence[str], marks: Marks) -> None:
    """Keep every finding's location line and the summaries; rank excerpts of serious findings only."""
    header: int | None = None
    header_kept = False
    finding: int | None = None
    serious: set[int] = set()  # findings that are errors or warnings, not style
    for index, line in enumerate(lines):
        if _is_summary(line) and len(line) < 160:
            marks.must(index)
            finding = None
            continue
        if (m := _HLINT.match(line)) is not None:
            _severity(
                marks,
                serious,
                index,
                m.group("sev") in ("Error", "Warning"),
                f"{m.group('sev')}: {_short(m.group('msg'))}",
            )
            finding = index
        elif (m := _LETTERED.match(line)) is not None:
            _severity(
                marks,
                serious,
                index,
                m.group("sev") in ("W", "E", "F"),
                f"{m.group('sev')}: {_short(m.group('msg'))}",
            )
            finding = index
        elif (m := _CODED.match(line)) is not None:
            code = m.group("code")
            _severity(marks, serious, index, not _CODE_STYLE.match(code), code)
            finding = index
        elif (m := _WORDED.match(line)) is not None:
            severity = m.group("sev")
            if severity == "error":
                marks.must(index)
                marks.failed = True
                serious.add(index)
            elif severity == "warning":
                marks.must(index)
                serious.add(index)
            else:
                marks.key(index, KEY_LOW, severity)
            finding = index
        elif (m := _HEADED.match(line)) is not None and index + 1 < len(lines) and _ARROW.match(lines[index + 1]):
            _severity(marks, serious, index, not _CODE_STYLE.match(m.group("code")), m.group("code"))
            finding = index
        elif finding is not None and _ARROW.match(line):
            # The location of the finding above, kept with it.
            marks.block(finding, index)
            marks.must(index)
        elif (m := _PAREN.match(line)) is not None:
            _severity(marks, serious, index, not _GO_STYLE_RULE.match(m.group("rule")), m.group("rule"))
            finding = index
        elif (m := _STYLISH.match(line)) is not None:
            rule = m.group("rule") or _short(m.group("msg"))
            _severity(marks, serious, index, m.group("sev") != "info", f"{m.group('sev')} {rule}")
            if header is not None and not header_kept:
                # The finding line holds only line:col; the file header above names the file.
                marks.must(header)
                header_kept = True
            finding = None
        elif _PROGRESS.fullmatch(line.strip()) and len(line.strip()) > 8:
            marks.noise(index, "progress line")
        elif _FILE_HEADER.match(line):
            header, header_kept = index, False
            marks.key(index, KEY)
            finding = None
        elif not line.strip():
            finding = None
        elif finding is not None:
            # Code excerpt, caret or "Found:/Perhaps:" lines that belong to the finding above.
            # A style finding's excerpt stays ordinary, so it goes first under a budget.
            marks.block(finding, index)
            if finding in serious:
                marks.key(index, KEY if not _CARET.match(line) else KEY_LOW)
            else:
                marks.label(index, "source excerpt of a style finding")
        elif line.startswith(("Inspecting ", "Offenses:")):
            marks.label(index, "runner line")


def _severity(marks: Marks, serious_findings: set[int], index: int, serious: bool, label: str) -> None:
    # Every finding's own line is kept; only a serious one marks the run failed.
    marks.must(index, "" if serious else label)
    if serious:
        marks.failed = True
        serious_findings.add(index)
