"""Noisy outputs of tools without rules: many progress or passing lines around a few failures.

Each sample is written in the shape such a tool prints (a search over a tree, a test driver's
per-test progress counters, a test runner's assertion object under its stack, a database
client's hint, a package installer's boxed exit status, counts behind an info glyph), and
runs as the command line runs it: ``budget_tokens="auto"``, ``exit_code=1``, no kind. The
noise must go and every failure, detail and total line must stay.
"""

from __future__ import annotations

from contextwright.budget._tokenizers import exact_token_counter
from contextwright.tool_outputs.compressors import compress, normalize
from contextwright.tool_outputs.compressors.generic import is_failure_line, is_summary_line

_count = exact_token_counter()


def _run(text: str) -> tuple[set[str], float]:
    result = compress(text, budget_tokens="auto", exit_code=1)
    kept = {line.rstrip() for line in normalize(result.text).splitlines()}
    return kept, 1 - _count(result.text) / _count(text)


def test_search_matches_of_a_failed_run_stay_a_search_and_are_cut():
    # grep -rn prints the matched text right after "path:line:" (or indented code); a
    # failed exit status does not make such rows a checker's findings.
    rows = []
    for n in range(160):
        rows.append(f"lib/module_{n // 8}.js:{n * 13 + 2}:\t\t// TODO handle the error case for item {n} later")
        rows.append(f"lib/module_{n // 8}.js:{n * 13 + 9}:    const failed = run(items[{n}]); // FIXME retry")
    text = "\n".join(rows) + "\n"
    result = compress(text, budget_tokens="auto", exit_code=1)
    assert result.kind == "grep"
    assert 1 - _count(result.text) / _count(text) >= 0.75


def test_findings_after_file_line_in_a_failed_run_are_still_kept():
    rows = [f"lib/part_{n % 3}.py:{n * 7 + 1}: unused variable 'value_{n}' (60% confidence)" for n in range(40)]
    rows += [f"lib/part_{n % 3}.py:{n * 5 + 2}:    value_{n} = compute()" for n in range(60)]
    result = compress("\n".join(rows) + "\n", budget_tokens="auto", exit_code=1)
    assert result.kind == "generic"
    assert set(rows[:40]) <= set(result.text.splitlines())


def test_a_test_drivers_progress_counters_are_not_totals():
    passing = "{n:3}/200 Test #{n:3}: case_{n} ..........................   Passed    0.01 sec"
    assert not is_summary_line(passing.format(n=1))
    assert is_summary_line("98% tests passed, 4 tests failed out of 200")
    # A count after a slash is still a total when it counts items in the plural.
    assert is_summary_line("9/10 tests passed")
    assert is_summary_line("Failed 2/12 subtests")
    lines = []
    for n in range(1, 201):
        lines.append(f"      Start {n:3}: case_{n}")
        if n in (17, 120):
            lines.append(f"{n:3}/200 Test #{n:3}: case_{n} ..........................***Failed    0.00 sec")
            lines.append(f"tests/case.c:41: case {n}: expected 0, got -1")
        else:
            lines.append(passing.format(n=n))
    summary = [
        "",
        "99% tests passed, 2 tests failed out of 200",
        "",
        "The following tests FAILED:",
        "\t 17 - case_17 (Failed)",
        "\t120 - case_120 (Failed)",
        "Errors while running CTest",
    ]
    kept, cut = _run("\n".join(lines + summary) + "\n")
    assert {line for line in lines if "Failed" in line or "expected 0" in line} <= kept
    assert {line.rstrip() for line in summary if line} <= kept
    assert cut >= 0.75


def test_an_assertions_actual_and_expected_under_its_stack_are_kept():
    # node --test prints the error object after the frames: its actual/expected come ~12 lines
    # after the failure, past what the lines right after a failure cover.
    lines = [f"✔ adds item number {n} to the cart (0.{n % 9 + 1}ms)" for n in range(150)]
    failure = [
        "✖ applies the discount (2.8ms)",
        "  AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:",
        "  ",
        "  90 !== 100",
        "  ",
        "      at TestContext.<anonymous> (file:///srv/shop/cart.test.mjs:41:12)",
        *[f"      at Test.run{k} (node:internal/test_runner/test:{700 + k}:25)" for k in range(6)],
        "    generatedMessage: true,",
        "    code: 'ERR_ASSERTION',",
        "    actual: 90,",
        "    expected: 100,",
        "    operator: 'strictEqual'",
        "  }",
    ]
    totals = ["ℹ tests 151", "ℹ suites 0", "ℹ pass 150", "ℹ fail 1", "ℹ duration_ms 690.8"]
    kept, cut = _run("\n".join(lines[:75] + failure + [""] + lines[75:] + totals) + "\n")
    assert {"    actual: 90,", "    expected: 100,", "✖ applies the discount (2.8ms)"} <= kept
    assert {"ℹ tests 151", "ℹ pass 150", "ℹ fail 1"} <= kept
    assert cut >= 0.75


def test_a_database_hint_under_a_quoted_statement_is_kept():
    lines = []
    for n in range(120):
        lines += [f"INSERT INTO items(name, qty) VALUES('item{n}', {n});", "INSERT 0 1"]
    error = [
        "SELECT nme FROM items;",
        'psql:load.sql:121: ERROR:  column "nme" does not exist',
        "LINE 1: SELECT nme FROM items;",
        "               ^",
        'HINT:  Perhaps you meant to reference the column "items.name" of the table you selected from.',
    ]
    kept, cut = _run("\n".join(lines[:120] + error + lines[120:]) + "\n")
    assert set(error[1:3] + error[4:]) <= kept
    assert cut >= 0.75


def test_a_boxed_non_zero_exit_status_is_a_failure_line():
    assert is_failure_line("  │ exit code: 1")
    assert is_failure_line("Process finished with exit code 137")
    assert not is_failure_line("  │ exit code: 0")
    build = [f"  copying src/pkg/module_{n}.py -> build/lib/pkg" for n in range(150)]
    box = [
        "  error: subprocess-exited-with-error",
        "  ",
        "  × Building wheel for pkg (pyproject.toml) did not run successfully.",
        "  │ exit code: 1",
        "  ╰─> See above for output.",
    ]
    kept, cut = _run("\n".join(["Building wheels for collected packages: pkg", *build, *box, "Failed to build pkg"]) + "\n")
    assert {line.rstrip() for line in box if line.strip() and "See above" not in line} <= kept
    assert cut >= 0.75


def test_an_uncaught_java_exception_spliced_with_another_streams_line_is_kept():
    # stdout and stderr share the terminal: a log line can land right after the header.
    log = [f"[0.{n:03d}s][info][class,load] java.util.Item{n} source: shared objects file" for n in range(303)]
    header = 'Exception in thread "main" [0.188s][info][class,load] java.lang.Throwable$Print source: jrt:/java.base'
    tail = [
        *log[300:303],
        "java.lang.RuntimeException: service failed to start",
        "\tat app.Loader.start(Loader.java:10)",
        "\tat app.Loader.main(Loader.java:14)",
        "Caused by: java.io.FileNotFoundException: /etc/app/missing.properties (No such file or directory)",
        "\tat app.Loader.read(Loader.java:6)",
    ]
    kept, cut = _run("\n".join(log[:200] + [header] + tail + log[200:300]) + "\n")
    assert {header, *tail[3:]} <= kept
    assert cut >= 0.75


def test_numbered_failures_counted_after_the_runs_total_are_kept():
    # jasmine: "Failures:", then "1) ...", "2) ..." separated by blank lines, then "163 specs, 3 failures".
    body = ["Randomized with seed 56466", "Started", "." * 80 + "F" + "." * 80, "", "Failures:"]
    titles = [f"{n}) cart handles order number {n}" for n in range(1, 4)]
    for n, title in enumerate(titles, start=1):
        body += [
            title,
            "  Message:",
            "    AssertionError: Expected values to be strictly deep-equal:",
            "    + actual - expected",
            "    ",
            "      {",
            *[f"        field_{k}: {k}," for k in range(12)],
            f"    +   total: {n}",
            f"    -   total: {n + 1}",
            "      }",
            "  Stack:",
            f"    error properties: Object({{ generatedMessage: true, code: 'ERR_ASSERTION', actual: {n} }})",
            f"        at UserContext.<anonymous> (/srv/shop/spec/cartSpec.js:{n * 7}:42)",
            "        at <Jasmine>",
            "",
        ]
    body += ["163 specs, 3 failures", "Finished in 0.029 seconds"]
    kept, _ = _run("\n".join(body) + "\n")
    assert set(titles) <= kept
