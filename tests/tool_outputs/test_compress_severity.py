"""Findings below the highest severity of an output fold; the highest are kept whole.

Each sample is written here in a tool's shape (pylint's text and parseable formats,
yamllint's parsable and standard formats, bandit's report, gcc with ``-Wall -Wextra``),
with a few findings at the severity that fails the run among many lower ones. They run
as the command line runs them: ``budget_tokens="auto"``, ``exit_code=1``, no kind.
"""

from __future__ import annotations

import as_cli as cli

from contextwright.tool_outputs.compressors import compress
from contextwright.tool_outputs.compressors.marks import MUST
from contextwright.tool_outputs.compressors.pipeline import analyse


def _protected(text: str) -> set[str]:
    lines = text.splitlines()
    marks, _, _ = analyse(lines, "generic", exit_code=1)
    return {line for line, priority in zip(lines, marks.priority, strict=True) if priority >= MUST}


def _pylint(parseable: bool) -> tuple[str, list[str]]:
    lower = [
        ("W0621", "redefined-outer-name", "Redefining name 'session' from outer scope (line 12)"),
        ("C0116", "missing-function-docstring", "Missing function or method docstring"),
        ("C0103", "invalid-name", 'Constant name "_cache" doesn\'t conform to UPPER_CASE naming style'),
        ("R1705", "no-else-return", 'Unnecessary "else" after "return", remove the "else"'),
        ("W0212", "protected-access", "Access to a protected member _pool of a client class"),
    ]
    lines = ["************* Module billing.rates"]
    must: list[str] = []
    for n in range(150):
        code, symbol, message = lower[n % len(lower)]
        place = f"src/billing/rates_{n // 30}.py:{n + 10}"
        if parseable:
            lines.append(f"{place}: [{code}({symbol}), rate_{n}] {message}")
        else:
            lines.append(f"{place}:{n % 7}: {code}: {message} ({symbol})")
        if n in (40, 97, 133):
            if parseable:
                error = f"{place}: [E0611(no-name-in-module), ] No name 'parse_rate_{n}' in module 'billing.util'"
            else:
                error = f"{place}:4: E0611: No name 'parse_rate_{n}' in module 'billing.util' (no-name-in-module)"
            lines.append(error)
            must.append(error)
    lines += ["", "-" * 34, "Your code has been rated at 6.12/10", ""]
    return "\n".join(lines), must


def test_pylint_conventions_and_warnings_fold_under_its_errors():
    for parseable in (False, True):
        text, must = _pylint(parseable)
        shown = cli.shown(text)
        assert not [line for line in must if line not in shown], parseable
        assert cli.reduction(text) > 0.75, parseable
        # The markers say which codes were folded.
        assert "W0621 redefined-outer-name" in compress(text, budget_tokens="auto", exit_code=1).text


def test_yamllint_warnings_fold_under_its_errors_in_both_formats():
    parsable = []
    standard = []
    must = []
    for n in range(120):
        path = f"roles/web/tasks/step_{n // 20}.yml"
        warning = f"{path}:{n + 3}:9: [warning] too few spaces before comment: expected 2 (comments)"
        parsable.append(warning)
        if n % 20 == 0:
            standard += ["", path]
        standard.append(f"  {n + 3}:9       warning  too few spaces before comment: expected 2  (comments)")
        if n in (17, 88):
            error = f"{path}:{n + 4}:81: [error] line too long (97 > 80 characters) (line-length)"
            parsable.append(error)
            must.append(error)
            standard.append(f"  {n + 4}:81      error    line too long (97 > 80 characters)  (line-length)")
    text = "\n".join(parsable) + "\n"
    shown = cli.shown(text)
    assert not [line for line in must if line not in shown]
    assert cli.reduction(text) > 0.75
    text = "\n".join(standard) + "\n"
    errors = [line for line in standard if " error " in line]
    shown = cli.shown(text)
    assert not [line for line in errors if line.rstrip() not in shown]
    assert cli.reduction(text) > 0.6


def _bandit_issue(code: str, name: str, severity: str, place: str, row: int, source: str) -> list[str]:
    return [
        f">> Issue: [{code}:{name}] Finding of rule {name}.",
        f"   Severity: {severity}   Confidence: High",
        "   CWE: CWE-703 (https://cwe.mitre.org/data/definitions/703.html)",
        f"   More Info: https://bandit.readthedocs.io/en/latest/plugins/{code.lower()}_{name}.html",
        f"   Location: {place}:{row}:8",
        f"{row - 1}\t",
        f"{row}\t        {source}",
        f"{row + 1}\t",
        "",
        "-" * 50,
    ]


def test_bandit_low_findings_fold_under_a_high_one():
    lines = ["Run started:2026-01-05 09:00:00", "", "Test results:"]
    must = []
    for n in range(40):
        lines += _bandit_issue("B101", "assert_used", "Low", f"app/module_{n}.py", n + 20, "assert value is not None")
        if n == 25:
            high = _bandit_issue(
                "B602", "subprocess_popen_with_shell_equals_true", "High", "app/run.py", 77, "run(cmd, shell=True)"
            )
            lines += high
            must += [high[0], high[4]]
    totals = [
        "Run metrics:",
        "\tTotal issues (by severity):",
        "\t\tUndefined: 0",
        "\t\tLow: 40",
        "\t\tMedium: 0",
        "\t\tHigh: 1",
    ]
    lines += ["", "Code scanned:", "\tTotal lines of code: 5120", "", *totals, ""]
    text = "\n".join(lines)
    shown = cli.shown(text)
    assert not [line for line in must if line not in shown]
    assert "\tTotal issues (by severity):" in text and "Total issues (by severity):" in {s.strip() for s in shown}
    assert cli.reduction(text) > 0.75


def test_gcc_warnings_fold_under_its_errors_with_their_source_and_caret():
    lines = []
    must = []
    for n in range(60):
        unit = f"src/enc_{n // 10}.c"
        lines += [
            f"gcc -Wall -Wextra -Wconversion -c {unit} -o build/enc_{n // 10}.o" if n % 10 == 0 else "",
            f"{unit}:{n + 40}:17: warning: conversion from 'size_t' to 'uint32_t' may change value [-Wconversion]",
            f"   {n + 40} |   uint32_t bits = total_{n};",
            "      |                 ^~~~~~~",
        ]
        if n in (12, 47):
            error = f"{unit}:{n + 41}:5: error: 'window_{n}' undeclared (first use in this function)"
            lines += [error, f"   {n + 41} |     window_{n} = 0;", "      |     ^~~~~~~~"]
            must.append(error)
    lines += ["make: *** [Makefile:41: build/enc_4.o] Error 1", "make: Target 'all' not remade because of errors."]
    must += lines[-2:]
    text = "\n".join(line for line in lines if line) + "\n"
    shown = cli.shown(text)
    assert not [line for line in must if line not in shown]
    assert cli.reduction(text) > 0.75
    # The source line under an error is shown with it; under a folded warning it is not protected.
    assert "   53 |     window_12 = 0;" in shown
    assert "   52 |   uint32_t bits = total_12;" not in _protected(text)


def test_a_report_of_warnings_alone_keeps_every_warning():
    # The highest severity present is what fails the run: with no errors, the warnings do.
    lines = [f"lib/parser_{n // 10}.rb:{n + 5}:3: warning: assigned but unused variable - token_{n} (unused)" for n in range(60)]
    lines.append("60 warnings found")
    text = "\n".join(lines) + "\n"
    shown = cli.shown(text)
    assert not [line for line in lines if line not in shown]


def test_codes_the_ladder_does_not_know_are_never_folded():
    # flake8 fails on every finding, whatever its letter; an unknown letter counts as the highest.
    lines = []
    for n in range(50):
        lines.append(f"pkg/mod.py:{n + 1}:80: E501 line too long (91 > 79 characters)")
        lines.append(f"pkg/mod.py:{n + 1}:1: X{1000 + n}: custom plugin finding number {n}")
    lines.append("pkg/mod.py:99:1: E0602: Undefined variable 'rate' (undefined-variable)")
    text = "\n".join(lines) + "\n"
    protected = _protected(text)
    assert "pkg/mod.py:7:80: E501 line too long (91 > 79 characters)" in protected
    assert "pkg/mod.py:4:1: X1003: custom plugin finding number 3" in protected


def test_cargo_warnings_fold_under_its_errors_with_their_place_and_excerpt():
    lines = []
    for n in range(40):
        lines += [
            f"warning: unused variable: `total_{n}`",
            f"  --> src/report_{n // 10}.rs:{n + 12}:9",
            "   |",
            f"{n + 12:<3}|     let total_{n} = rows.len();",
            f"   |         ^^^^^^^ help: if this is intentional, prefix it with an underscore: `_total_{n}`",
            "",
        ]
    error = [
        "error[E0308]: mismatched types",
        "  --> src/main.rs:42:23",
        "   |",
        "42 |     let n: u32 = name;",
        "   |            ^^^ expected `u32`, found `&str`",
        "",
    ]
    lines[60:60] = error
    lines += [
        'warning: `report` (bin "report") generated 40 warnings',
        'error: could not compile `report` (bin "report") due to 1 previous error; 40 warnings emitted',
    ]
    text = "\n".join(lines) + "\n"
    must = [error[0], error[1], lines[-1]]
    shown = cli.shown(text)
    assert not [line for line in must if line not in shown]
    assert "  --> src/report_2.rs:33:9" not in _protected(text)
    assert cli.reduction(text) > 0.75


def test_a_path_that_starts_like_a_severity_word_is_still_a_place():
    # "enc/..." and "warn/..." open a path, not rustc's "error:" or "warning:" header.
    lines = [f"enc/block_{n}.c:{n + 3}:5: warning: unused variable 'v{n}' [-Wunused-variable]" for n in range(40)]
    lines.append("enc/encode.c:90:2: error: expected ';' before '}' token")
    protected = _protected("\n".join(lines) + "\n")
    assert "enc/encode.c:90:2: error: expected ';' before '}' token" in protected
    assert "enc/block_7.c:10:5: warning: unused variable 'v7' [-Wunused-variable]" not in protected
