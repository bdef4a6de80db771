"""Findings of tools nobody wrote rules for, recognised by their shape at default settings.

Each sample is written here in the shape such a tool prints (a docstring checker's rule
codes indented under a place, a spell checker's ``teh ==> the``, a SQL linter's table
rows, a formatter's ``[warn]`` lines and diff, an ORM's dotted exception, a security
scanner's totals), padded with ordinary lines so that compression has to choose. They
run as the command line runs them: ``budget_tokens="auto"``, ``exit_code=1``, no kind.
"""

from __future__ import annotations

from contextwright.tool_outputs.compressors import compress, normalize
from contextwright.tool_outputs.compressors.generic import is_diagnostic_line, is_finding_shape


def _kept(text: str, exit_code: int | None = 1) -> set[str]:
    result = compress(text, budget_tokens="auto", exit_code=exit_code)
    assert result.text != text, "the sample is meant to be compressed"
    return {line.rstrip() for line in normalize(result.text).splitlines()}


def _chatter(count: int, word: str = "checking") -> list[str]:
    return [f"{word} module number {n} of the package, nothing to report here at all" for n in range(count)]


def test_rule_codes_indented_under_their_place_are_kept():
    findings = []
    for n in range(30):
        findings += [
            f"pkg/module_{n}.py:{n + 3} in public function `run_{n}`:",
            f"        D{200 + n % 7}: First line should end with a period (not '{chr(97 + n % 26)}')",
        ]
    kept = _kept("\n".join(_chatter(60) + findings) + "\n")
    assert set(findings) <= kept


def test_suggested_fixes_in_file_line_rows_are_findings_in_a_failed_run():
    rows = [f"docs/page_{n}.md:{n + 10}: teh ==> the" for n in range(25)]
    rows += [f"src/app_{n}.py:{n + 4}: recieve ==> receive" for n in range(25)]
    kept = _kept("\n".join(_chatter(80) + rows) + "\n")
    assert set(rows) <= kept
    assert is_diagnostic_line(rows[0])


def test_file_line_rows_of_a_failed_run_are_not_search_matches():
    # A dead-code finder prints "path:line: message"; grep prints nothing when it fails.
    rows = [f"lib/part_{n % 2}.py:{n * 7 + 1}: unused function 'helper_{n}' (60% confidence)" for n in range(80)]
    failed = compress("\n".join(rows) + "\n", budget_tokens="auto", exit_code=1)
    assert failed.kind == "generic"
    assert set(rows) <= set(failed.text.splitlines())
    passing = compress("\n".join(rows) + "\n", budget_tokens="auto", exit_code=0)
    assert passing.kind == "grep"


def test_table_rows_with_line_and_position_cells_are_kept():
    rows = []
    for n in range(20):
        rows += [
            f"== [queries/report_{n}.sql] FAIL",
            f"L:  {n + 1:2} | P:  {n % 9 + 1:2} | LT01 | Expected only single space before start bracket '('.",
            f"L:  {n + 3:2} | P:   1 | CP01 | Keywords must be consistently upper case.",
        ]
    kept = _kept("\n".join(_chatter(40) + rows) + "\n")
    assert {row for row in rows if row.startswith("L:")} <= kept
    assert is_finding_shape("L:   3 | P:  10 | LT01 | Expected single whitespace.")


def test_bracketed_warn_lines_are_kept_and_a_formatter_diff_is_not_protected():
    warned = [f"[warn] src/components/widget_{n}.tsx" for n in range(15)]
    warned.append("[warn] Code style issues found in 15 files. Run Prettier with --write to fix.")
    diff = []
    for n in range(15):
        diff += [
            f"--- src/lib/error_{n}.py\t2026-01-01 00:00:00+00:00",
            f"+++ src/lib/error_{n}.py\t2026-01-01 00:00:01+00:00",
            f"@@ -{n + 1},3 +{n + 1},3 @@",
            "-    raise ValueError('bad input: error in field')",
            '+    raise ValueError("bad input: error in field")',
            "     return failed_count",
        ]
    diff.append("would reformat src/lib/error_0.py")
    kept = _kept("\n".join(warned + diff) + "\n")
    assert set(warned) <= kept
    assert "would reformat src/lib/error_0.py" in kept
    # The quoted code says "error" and "raise ValueError" but reports nothing about this run.
    assert "-    raise ValueError('bad input: error in field')" not in kept


def test_dotted_exceptions_and_migration_failures_are_kept():
    lines = [f"INFO  [alembic.runtime.migration] Running upgrade step {n} -> {n + 1}, add column" for n in range(40)]
    failures = [
        "ERROR [alembic.util.messaging] Can't locate revision identified by 'ae1027a6acf'",
        "  FAILED: Can't locate revision identified by 'ae1027a6acf'",
        "sqlalchemy.exc.OperationalError: (sqlite3.OperationalError) no such table: users",
        "[SQL: SELECT users.id FROM users]",
    ]
    kept = _kept("\n".join(lines + failures) + "\n")
    assert set(failures[:3]) <= kept


def test_totals_indented_under_a_totals_header_are_kept():
    body = []
    for n in range(30):
        body += [
            f">> Issue: [B10{n % 9}:check_{n}] Something possibly unsafe number {n}.",
            f"   Location: ./pkg/mod_{n}.py:{n + 5}:4",
            f"{n + 5}\t    value = call_{n}()",
            "",
        ]
    totals = [
        "\tTotal issues (by severity):",
        "\t\tUndefined: 0",
        "\t\tLow: 18",
        "\t\tMedium: 8",
        "\t\tHigh: 0",
    ]
    kept = _kept("\n".join(_chatter(120) + body + ["Run metrics:", *totals, "Files skipped (0):"]) + "\n")
    assert {line.rstrip() for line in totals} <= kept


def test_a_package_manager_warning_and_an_unmet_dependency_are_kept():
    pip = [f"Collecting package-{n}==1.{n}" for n in range(30)]
    pip += [f"  Downloading package_{n}-1.{n}-py3-none-any.whl (12 kB)" for n in range(30)]
    warnings = [
        f"WARNING: Location 'file:///srv/simple/package-{n}/' is ignored: it is neither a file nor a directory."
        for n in range(30)
    ]
    pip[10:10] = warnings
    # Alone, the warnings are the findings of the run and all are kept.
    assert set(warnings) <= _kept("\n".join(pip) + "\n")
    # Beside an ERROR: line they rank below it on the severity ladder: the error is kept
    # and the warnings fold to an example of their shape and a counted marker.
    error = "ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/"
    kept = _kept("\n".join([*pip, error]) + "\n")
    assert error in kept
    assert set(warnings) & kept
    tree = ["app@1.0.0 /srv/app", *[f"├── dep-{n}@2.{n}.0" for n in range(60)]]
    tree += ["├── UNMET DEPENDENCY left-pad@^1.0.0", "└── dep-last@1.0.0"]
    assert "├── UNMET DEPENDENCY left-pad@^1.0.0" in _kept("\n".join(tree) + "\n")


def test_a_file_header_over_line_col_findings_is_kept_even_past_the_budget():
    lines: list[str] = []
    for n in range(12):
        lines += ["", f"styles/sheet_{n}.css"]
        lines += [f"  {k + 1}:{k + 3}  ✖  Unexpected unit in rule number {k}   length-zero-no-unit" for k in range(8)]
    lines += ["", "✖ 96 problems (96 errors, 0 warnings)"]
    kept = _kept("\n".join(_chatter(120, "linting") + lines) + "\n")
    assert {f"styles/sheet_{n}.css" for n in range(12)} <= kept


def test_a_terminated_compilation_is_a_failure_line():
    lines = [f"gcc -O2 -c part_{n}.c -o part_{n}.o" for n in range(40)]
    lines[20:20] = [
        "parser.c:3:10: fatal error: lexer.h: No such file or directory",
        '    3 | #include "lexer.h"',
        "      |          ^~~~~~~~~",
        "compilation terminated.",
    ]
    assert "compilation terminated." in _kept("\n".join(lines) + "\n")


def test_a_checker_that_found_nothing_in_a_file_is_not_a_failure():
    # A syntax checker run file by file says "No syntax errors detected in X" for each clean
    # file: those lines are what a budget may cut, and the real errors stay.
    clean = [f"No syntax errors detected in lib/part_{n}/module_{n}.php" for n in range(120)]
    errors = [
        'PHP Parse error:  syntax error, unexpected token "}" in lib/broken.php on line 14',
        "Errors parsing lib/broken.php",
    ]
    result = compress("\n".join(clean[:60] + errors + clean[60:]) + "\n", budget_tokens="auto", exit_code=255)
    shown = set(result.text.splitlines())
    assert set(errors) <= shown
    assert result.compressed_tokens < result.original_tokens / 3


def test_places_named_in_words_and_messages_under_carets_are_kept():
    # A shell linter names the place in words and puts each finding's message under a caret;
    # an HTML checker prints a line-number gutter over the quoted line.
    report: list[str] = []
    must: list[str] = []
    for n in range(25):
        place = f"In deploy_{n}.sh line {n * 3 + 2}:"
        message = f"       ^-- SC20{n % 10}6 (warning): Double quote to prevent globbing and word splitting."
        report += [place, f'cp $SRC_{n} "$DEST"', message, "", f'Did you mean: cp "$SRC_{n}" "$DEST"', ""]
        must += [place, message]
    for n in range(15):
        gutter = f'      L{n + 4} |<link rel=stylesheet href="style_{n}.css">'
        message = "               ^ The value of attribute [ rel ] must be in double quotes. (attr-value-double-quotes)"
        report += [f"   site/page_{n}.html", gutter, message]
        must += [gutter, message]
    kept = _kept("\n".join(_chatter(40) + report) + "\n")
    assert set(must) <= kept


def test_frames_in_code_without_a_file_are_places():
    # doctest and the interactive prompt run code that has no file: their frames still say where.
    frames = [f'      File "<doctest textutils.fn_{n}[{n % 3}]>", line 1, in <module>' for n in range(12)]
    report: list[str] = []
    for n, frame in enumerate(frames):
        report += [
            "*" * 70,
            f'File "textutils.py", line {n * 10 + 5}, in textutils.fn_{n}',
            "Failed example:",
            f"    fn_{n}('')",
            "Exception raised:",
            "    Traceback (most recent call last):",
            '      File "/usr/lib/python3.11/doctest.py", line 1350, in __run',
            '        exec(compile(example.source, filename, "single",',
            frame,
            f"        fn_{n}('')",
            f"    ValueError: empty input to fn_{n}",
        ]
    kept = _kept("\n".join(_chatter(40) + report + ["***Test Failed*** 12 failures."]) + "\n")
    assert set(frames) <= kept


def test_a_failing_test_marked_with_a_cross_is_kept_in_a_test_runner_report():
    passing = [f"     ✓ computes total number {n} 1ms" for n in range(200)]
    failing = [f"     × rejects bad input number {n} when the cart holds {n + 2} items 3ms" for n in range(40)]
    lines = [" ❯ src/cart.test.js (240 tests | 40 failed) 65ms", *passing[:100], *failing, *passing[100:]]
    lines += ["", " Test Files  1 failed (1)", "      Tests  40 failed | 200 passed (240)"]
    kept = _kept("\n".join(lines) + "\n")
    assert set(failing) <= kept
