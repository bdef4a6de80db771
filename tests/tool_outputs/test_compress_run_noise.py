"""Passing tests, timings, rules and repeated frames around failures are not protected.

Each sample is written here by hand in the shape a real runner prints; the checks read the
marks of the default analysis (what ``contextwright compress FILE --exit-code 1`` does).
"""

from __future__ import annotations

from contextwright.tool_outputs.compressors import compress
from contextwright.tool_outputs.compressors.marks import MUST
from contextwright.tool_outputs.compressors.pipeline import analyse, detect_lines


def _marks(text: str):
    lines = text.split("\n")
    kind = detect_lines(text, lines, exclude=frozenset(), failed=True)
    marks, _, _ = analyse(lines, kind, exit_code=1)
    return lines, marks


def _kept(text: str) -> set[str]:
    return set(compress(text, budget_tokens="auto", exit_code=1).text.split("\n"))


def _must(lines: list[str], marks) -> set[str]:
    return {line for line, priority in zip(lines, marks.priority, strict=True) if priority >= MUST}


def test_verbose_passing_tests_after_a_failure_are_not_its_detail():
    names = ["adds", "removes", "merges", "totals", "rounds", "parses", "prices", "lists"]
    lines = []
    for n, name in enumerate(names * 3):
        verdict = "FAIL" if n % 5 == 1 else "ok"
        lines.append(f"test_{name}_{n} (tests.test_cart.CartTests.test_{name}_{n}) ... {verdict}")
    lines += ["", "=" * 70, "FAIL: test_removes_1 (tests.test_cart.CartTests.test_removes_1)", "-" * 70]
    lines += [
        "Traceback (most recent call last):",
        '  File "/srv/shop/tests/test_cart.py", line 41, in test_removes_1',
        "    self.assertEqual(cart.count(), 0)",
        "AssertionError: 2 != 0",
        "",
        "-" * 70,
        "Ran 24 tests in 0.011s",
        "",
        "FAILED (failures=5)",
    ]
    text = "\n".join(lines) + "\n"
    lines, marks = _marks(text)
    must = _must(lines, marks)
    assert not [line for line in must if line.endswith("... ok")]
    assert {line for line in lines if line.endswith("... FAIL")} <= must
    assert {"AssertionError: 2 != 0", "Ran 24 tests in 0.011s", "FAILED (failures=5)"} <= must


def test_a_table_rows_pass_and_the_rules_after_a_failure_are_not_its_detail():
    rule = "-" * 78
    rows = []
    for n in range(12):
        verdict = "FAIL" if n % 4 == 2 else "PASS"
        rows += [f"{f'Checkout Case {n}':<70}| {verdict} |"]
        if verdict == "FAIL":
            rows.append(f"Expected total {n}0.00 but got {n}5.00")
        rows.append(rule)
    lines = ["=" * 78, f"{'Checkout :: Acceptance':<78}", "=" * 78, *rows, "12 tests, 9 passed, 3 failed", "=" * 78]
    lines += ["Output:  /tmp/run/output.xml", "Log:     /tmp/run/log.html", "Report:  /tmp/run/report.html"]
    text = "\n".join(lines) + "\n"
    lines, marks = _marks(text)
    must = _must(lines, marks)
    assert rule not in must
    assert not [line for line in must if line.endswith("| PASS |")]
    assert {line for line in lines if line.endswith("| FAIL |") or line.startswith("Expected total")} <= must
    assert "12 tests, 9 passed, 3 failed" in must


def test_tap_yaml_blocks_of_passing_points_and_a_failures_timing_go():
    lines = ["TAP version 13"]
    for n in range(1, 9):
        lines += [f"# Subtest: sums row {n}", f"ok {n} - sums row {n}", "  ---", f"  duration_ms: 0.{n}41", "  ..."]
    failure = [
        "# Subtest: rounds half up",
        "not ok 9 - rounds half up",
        "  ---",
        "  duration_ms: 2.572502",
        "  location: '/srv/ledger/test/round.test.js:8:11'",
        "  failureType: 'testCodeFailure'",
        "  error: 'Expected 3 to equal 2'",
        "  code: 'ERR_ASSERTION'",
        "  ...",
    ]
    lines += [*failure, "1..9", "# tests 9", "# pass 8", "# fail 1"]
    text = "\n".join(lines) + "\n"
    lines, marks = _marks(text)
    must = _must(lines, marks)
    for n in range(1, 9):
        block = lines.index(f"ok {n} - sums row {n}")
        assert all(marks.priority[i] == 0 for i in range(block, block + 4)), lines[block : block + 4]
    assert "  duration_ms: 2.572502" not in must
    assert {failure[1], failure[4], failure[6], "# tests 9", "# fail 1"} <= must


def test_a_frame_repeated_under_later_errors_keeps_only_its_first_copy():
    rail = "==4417=="
    errors = []
    for n, size in enumerate((1, 8, 4, 8, 1)):
        errors += [
            f"{rail} Invalid read of size {size}",
            f"{rail}    at 0x1095{n}7: ledger_sum (ledger.c:{30 + n})",
            f"{rail}    by 0x109243: main (main.c:10)",
            f"{rail}  Address 0x4b1f1d9 is 0 bytes after a block of size 25 alloc'd",
            f"{rail}    at 0x48417B4: malloc (in /usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so)",
            f"{rail}    by 0x109419: ledger_new (ledger.c:12)",
            f"{rail}    by 0x109243: main (main.c:10)",
            f"{rail} ",
        ]
    lines = [f"{rail} Memcheck, a memory error detector", f"{rail} ", *errors]
    lines += [f"{rail} ERROR SUMMARY: 5 errors from 5 contexts (suppressed: 0 from 0)"]
    text = "\n".join(lines) + "\n"
    lines, marks = _marks(text)
    repeated = [i for i, line in enumerate(lines) if line.endswith("main (main.c:10)")]
    assert marks.priority[repeated[0]] >= MUST
    # The last copy stands among a failed run's closing lines, which are kept whatever they say.
    assert all(marks.priority[i] < MUST for i in repeated[1:-1])
    must = _must(lines, marks)
    assert {line for line in lines if "Invalid read" in line or "ledger_sum" in line} <= must
    assert lines[-2] in must
    kept = _kept(text)
    assert {line for line in lines if "Invalid read" in line or "ledger_sum" in line} <= kept


def test_runtime_frames_repeated_in_every_failed_tests_stack_keep_their_first_copy():
    lines = ["TAP version 13"]
    for n in range(1, 7):
        lines += [
            f"not ok {n} - case {n}",
            "  ---",
            f"  location: '/srv/app/test/case.test.js:{n * 4}:1'",
            "  error: 'boom'",
            "  stack: |-",
            f"    TestContext.<anonymous> (/srv/app/test/case.test.js:{n * 4}:9)",
            "    Test.runInAsyncScope (node:async_hooks:206:9)",
            "    Test.run (node:internal/test_runner/test:796:25)",
            "    async Test.processPendingSubtests (node:internal/test_runner/test:526:7)",
            "  ...",
        ]
    lines += ["# tests 6", "# fail 6"]
    text = "\n".join(lines) + "\n"
    lines, marks = _marks(text)
    runtime = [i for i, line in enumerate(lines) if line.strip() == "Test.run (node:internal/test_runner/test:796:25)"]
    assert all(marks.priority[i] < MUST for i in runtime[1:])
    own = {line for line in lines if "TestContext.<anonymous>" in line or "location:" in line}
    assert own <= _must(lines, marks)


def test_a_closing_list_of_failed_places_keeps_those_records_and_lets_the_rest_go():
    def scenario(line: int, title: str, steps: list[tuple[str, str]], extra: list[str] = ()) -> list[str]:
        rows = [f"  Scenario: {title:<40} # features/ledger.feature:{line}"]
        rows += [f"    {step:<48} # {place}" for step, place in steps]
        return [*rows, *extra, ""]

    given = ("Given a ledger with three accounts", "features/steps/ledger.py:5")
    lines = ["Feature: Ledger # features/ledger.feature:1", ""]
    for n in range(6):
        lines += scenario(10 + 4 * n, f"posting {n}", [given, (f"When I post {n} to cash", "features/steps/ledger.py:12")])
    lines += scenario(40, "closing the year", [given, ("When I close the year", "None"), ("Then cash is 0", "None")])
    lines += scenario(
        44,
        "rounding",
        [given, ("Then cash is 0.10", "features/steps/ledger.py:20")],
        ["      ASSERT FAILED: expected 0.10, got 0.1000001"],
    )
    lines += [
        "Failing scenarios:",
        "  features/ledger.feature:44  rounding",
        "",
        "Errored scenarios:",
        "  features/ledger.feature:40  closing the year",
        "",
        "0 features passed, 1 failed, 0 skipped",
        "6 scenarios passed, 1 failed, 1 error, 0 skipped",
    ]
    text = "\n".join(lines) + "\n"
    lines, marks = _marks(text)
    must = _must(lines, marks)
    undefined = next(line for line in lines if "When I close the year" in line)
    assert undefined in must
    assert next(line for line in lines if "posting 3" in line) not in must
    assert next(line for line in lines if "When I post 4 to cash" in line) not in must
    assert {"  features/ledger.feature:44  rounding", "      ASSERT FAILED: expected 0.10, got 0.1000001"} <= must
    assert undefined in _kept(text)


def test_compiler_warnings_fold_when_the_linker_fails_the_build():
    lines = []
    for n, (func, flag) in enumerate(
        (("reset", "sizeof-pointer-memaccess"), ("dump", "format-overflow="), ("load", "use-after-free"))
    ):
        lines += [
            f"ledger.c: In function ‘{func}’:",
            f"ledger.c:{40 + n}:9: warning: something questionable in ‘{func}’ [-W{flag}]",
            f"   {40 + n} |     memset(e, 0, sizeof(e));",
            "      |         ^~~~~~",
        ]
    failures = [
        "/usr/bin/ld: /tmp/ccQ1w2e3.o: in function `main':",
        "/srv/ledger/main.c:15: undefined reference to `ledger_total'",
        "/usr/bin/ld: /srv/ledger/report.c:8: undefined reference to `ledger_hash'",
        "collect2: error: ld returned 1 exit status",
    ]
    text = "\n".join(lines + failures) + "\n"
    lines, marks = _marks(text)
    must = _must(lines, marks)
    assert set(failures[1:]) <= must
    assert not [line for line in must if ": warning: " in line]
    assert set(failures[1:]) <= _kept(text)


def test_parametrised_failures_with_the_same_detail_keep_their_headlines_and_one_copy():
    lines = []
    for n in range(10):
        verdict = "FAILED" if n % 2 else "PASSED"
        if verdict == "PASSED":
            lines.append(f"++++ window-{n} PASSED")
            continue
        lines += [
            "",
            f"==== window-{n} shifted window contains itself FAILED",
            "==== Contents of test case:",
            "        windows::contains [list $lo $hi] [list [expr {$lo + $k}] [expr {$hi + $k}]]",
            "---- Result was:",
            "0",
            "---- Result should have been (exact matching):",
            "1",
            f"==== window-{n} FAILED",
            "",
        ]
    lines.append("windows.test:\tTotal\t10\tPassed\t5\tSkipped\t0\tFailed\t5")
    text = "\n".join(lines) + "\n"
    lines, marks = _marks(text)
    must = _must(lines, marks)
    assert {line for line in lines if line.endswith("FAILED")} <= must
    assert lines[-2] in must
    results = [i for i, line in enumerate(lines) if line == "---- Result was:"]
    assert marks.priority[results[0]] >= MUST
    assert all(marks.priority[i] < MUST for i in results[1:])
    kept = _kept(text)
    assert {line for line in lines if line.endswith("FAILED")} <= kept
    assert {"---- Result was:", "0", "1"} <= kept


def test_runtime_frames_under_the_projects_frame_rank_below_must():
    failure = [
        "✖ applies the coupon (3.1ms)",
        "  TypeError: Cannot read properties of undefined (reading 'rate')",
        "      at applyCoupon (/srv/shop/lib/coupon.js:14:22)",
        "      at TestContext.<anonymous> (/srv/shop/test/coupon.test.js:9:5)",
        "      at Test.runInAsyncScope (node:async_hooks:206:9)",
        "      at Test.run (node:internal/test_runner/test:796:25)",
        "      at Test.start (node:internal/test_runner/test:702:17)",
        "      at async Promise.all (index 0)",
    ]
    lines = [f"✔ prices item {n} (0.{n % 9 + 1}ms)" for n in range(40)]
    lines += [*failure, "ℹ tests 41", "ℹ pass 40", "ℹ fail 1", "ℹ duration_ms 310.2"]
    text = "\n".join(lines) + "\n"
    lines, marks = _marks(text)
    must = _must(lines, marks)
    assert set(failure[:4]) <= must
    assert not {failure[4], failure[5], failure[6]} & must
    assert {"ℹ tests 41", "ℹ fail 1"} <= must


def test_library_frames_above_the_projects_first_frame_stay():
    failure = [
        'Exception in thread "main" java.lang.IllegalStateException: ledger closed',
        "\tat org.apache.commons.pool2.impl.GenericObjectPool.borrowObject(GenericObjectPool.java:412)",
        "\tat com.acme.ledger.Ledger.post(Ledger.java:88)",
        "\tat com.acme.ledger.Main.main(Main.java:12)",
    ]
    lines, marks = _marks("\n".join(["starting ledger", *failure]) + "\n")
    assert set(failure) <= _must(lines, marks)
