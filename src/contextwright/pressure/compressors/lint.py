"""Linters: eslint, ruff/flake8/pycodestyle, pylint, rubocop, golangci-lint/staticcheck, hlint, remark.

Findings are sorted by severity, not by tool. Errors and warnings (rubocop ``W:``,
hlint ``Warning:``, eslint ``warning``) are kept verbatim with the tool's summary
line. Style findings (conventions, suggestions, style codes such as ``E501``) are
ordinary lines labelled by rule, so they are grouped and counted per rule instead
of listed one by one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from contextwright.pressure.compressors.marks import KEY, KEY_HIGH, KEY_LOW, MUST, Marks

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
_SUMMARY = re.compile(
    r"^(?:[✖✕×⚠✓✔]\s*)?\d+ (?:problems?|errors?|warnings?|hints?|offenses?|issues?)\b"
    r"|\d+ files? inspected, |^Found \d+ (?:errors?|problems?)|^All checks passed|^No (?:hints|issues|problems)"
    r"|^\d+ (?:errors?|problems?) and \d+ warnings?|potentially fixable"
)
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


def analyse_lint(lines: Sequence[str], marks: Marks) -> None:
    """Keep error-level findings and summaries; label style findings by rule for grouping."""
    header: int | None = None
    header_has_error = False
    finding: int | None = None
    for index, line in enumerate(lines):
        if _SUMMARY.search(line) and len(line) < 160:
            marks.must(index)
            finding = None
            continue
        if (m := _HLINT.match(line)) is not None:
            _severity(
                marks,
                index,
                m.group("sev") in ("Error", "Warning"),
                f"{m.group('sev')}: {_short(m.group('msg'))}",
            )
            finding = index
        elif (m := _LETTERED.match(line)) is not None:
            _severity(
                marks,
                index,
                m.group("sev") in ("W", "E", "F"),
                f"{m.group('sev')}: {_short(m.group('msg'))}",
            )
            finding = index
        elif (m := _CODED.match(line)) is not None:
            code = m.group("code")
            _severity(marks, index, not _CODE_STYLE.match(code), code)
            finding = index
        elif (m := _WORDED.match(line)) is not None:
            severity = m.group("sev")
            if severity == "error":
                marks.must(index)
                marks.failed = True
            elif severity == "warning":
                marks.must(index)
            else:
                marks.key(index, KEY_LOW, severity)
            finding = index
        elif (m := _HEADED.match(line)) is not None and index + 1 < len(lines) and _ARROW.match(lines[index + 1]):
            _severity(marks, index, not _CODE_STYLE.match(m.group("code")), m.group("code"))
            finding = index
        elif finding is not None and _ARROW.match(line):
            # The location of the finding above: kept with it when it is kept whatever the budget.
            marks.block(finding, index)
            if marks.priority[finding] >= MUST:
                marks.must(index)
            else:
                marks.key(index, KEY_LOW)
        elif (m := _PAREN.match(line)) is not None:
            _severity(marks, index, not _GO_STYLE_RULE.match(m.group("rule")), m.group("rule"))
            finding = index
        elif (m := _STYLISH.match(line)) is not None:
            is_error = m.group("sev") == "error"
            rule = m.group("rule") or _short(m.group("msg"))
            _severity(marks, index, m.group("sev") != "info", f"{m.group('sev')} {rule}")
            if is_error and header is not None and not header_has_error:
                marks.must(header)
                header_has_error = True
            finding = None
        elif _PROGRESS.fullmatch(line.strip()) and len(line.strip()) > 8:
            marks.noise(index, "progress line")
        elif _FILE_HEADER.match(line):
            header, header_has_error = index, False
            marks.key(index, KEY)
            finding = None
        elif not line.strip():
            finding = None
        elif finding is not None:
            # Code excerpt, caret or "Found:/Perhaps:" lines that belong to the finding above.
            marks.block(finding, index)
            if marks.priority[finding] >= KEY_HIGH:
                marks.key(index, KEY if not _CARET.match(line) else KEY_LOW)
        elif line.startswith(("Inspecting ", "Offenses:")):
            marks.label(index, "runner line")


def _severity(marks: Marks, index: int, serious: bool, label: str) -> None:
    if serious:
        marks.must(index)
        marks.failed = True
    else:
        marks.label(index, label)
