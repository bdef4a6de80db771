"""Totals and locations of failures in shapes printed by linters, validators and test runners.

Each sample is written in the shape the tool prints, padded with ordinary lines so that
compression has to choose, and runs as the command line runs it: ``budget_tokens="auto"``,
``exit_code=1``, no kind.
"""

from __future__ import annotations

from contextwright.tool_outputs.compressors import compress, normalize


def _kept(text: str, exit_code: int | None = 1) -> set[str]:
    result = compress(text, budget_tokens="auto", exit_code=exit_code)
    assert result.text != text, "the sample is meant to be compressed"
    return {line.strip() for line in normalize(result.text).splitlines()}


def _chatter(count: int, word: str = "checking") -> list[str]:
    return [f"{word} pkg/module_{n}.py" for n in range(count)]


def test_a_linter_statistics_table_is_kept_whole():
    findings = [f"pkg/module_{n}.py:{n + 4}:1: E712 comparison to False should be 'if cond is False:'" for n in (3, 9)]
    table = [
        "1       E711 comparison to None should be 'if cond is None:'",
        "6       E712 comparison to False should be 'if cond is False:' or 'if not cond:'",
        "2       E713 test for membership should be 'not in'",
        "1     F841 local variable 'e' is assigned to but never used",
    ]
    counters = [f"{n * 37:<10} lines processed in pass {n}" for n in range(12)]
    text = "\n".join(_chatter(120) + findings + counters + table + ["10"]) + "\n"
    kept = _kept(text)
    assert set(table) <= kept


def test_a_validator_error_object_keeps_its_place_and_message():
    # Package names vary in shape, as real ones do: the valid lines do not fold into one run.
    words = ["lodash", "semver", "chalk", "debug", "ms", "yargs", "glob", "minimatch", "ansi", "strip"]
    valid = [f"{words[n % 10]}{'-' * (n % 3)}{words[n // 10 % 10]}.json valid" for n in range(400)]
    errors = [
        "package-7.json invalid",
        "[",
        "  {",
        "    instancePath: '/engines',",
        "    schemaPath: '#/properties/engines/type',",
        "    keyword: 'type',",
        "    params: {",
        "      type: 'object'",
        "    },",
        "    message: 'must be object'",
        "  },",
        "  {",
        "    instancePath: '/bin',",
        "    schemaPath: '#/properties/bin/anyOf',",
        "    keyword: 'anyOf',",
        "    params: {},",
        "    message: 'must match a schema in anyOf'",
        "  }",
        "]",
    ]
    kept = _kept("\n".join(valid[:200] + errors + valid[200:]) + "\n")
    assert {
        "instancePath: '/engines',",
        "message: 'must be object'",
        "instancePath: '/bin',",
        "message: 'must match a schema in anyOf'",
    } <= kept


def test_the_first_place_of_each_pytest_failure_is_kept():
    progress = [f"tests/test_mod_{n}.py {'.' * (20 + n % 30)}" for n in range(60)]
    failures = []
    for n in range(3):
        failures += [
            f"____________________ test_case_{n} ____________________",
            "",
            f"    def test_case_{n}():",
            f"        table = build(rows={n})",
            ">       check_equal(table, expected())",
            "",
            f"tests/test_tables.py:{100 + n}: ",
            "_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _",
            "",
            f"left = 'row {n}', right = 'row {n + 1}'",
            "",
            "    def check_equal(left, right):",
            ">       assert left == right",
            "E       AssertionError",
            "",
            "tests/common.py:9: AssertionError",
            *[f"captured line {m} of the failing test's own output, long enough to matter" for m in range(20)],
        ]
    summary = [f"FAILED tests/test_tables.py::test_case_{n} - AssertionError" for n in range(3)]
    text = "\n".join(
        ["============================= test session starts ==============================", *progress]
        + ["=================================== FAILURES ==================================="]
        + failures
        + ["=========================== short test summary info ============================", *summary]
        + ["========================= 3 failed, 900 passed in 4.58s ========================="]
    )
    kept = _kept(text + "\n")
    assert {f"tests/test_tables.py:{100 + n}:" for n in range(3)} <= kept


def test_the_first_reason_line_under_each_failed_jest_test_is_kept():
    passing = [f"    ✓ formats token {n} the way the locale asks ({n % 4} ms)" for n in range(200)]
    failures = []
    for n in range(12):
        failures += [
            f"  ● format tokens › token {n} formats",
            "",
            "    expect(received).toBe(expected) // Object.is equality",
            "",
            f'    Expected: "v{n}"',
            f'    Received: "w{n}"',
            "",
            f"      {10 + n} |   test.each(cases)('%s formats', (tok, expected) => {{",
            f"    > {11 + n} |     expect(base.format(tok)).toBe(expected);",
            "         |                              ^",
            f"      {12 + n} |   }});",
            "",
            f"      at test/format.test.js:{11 + n}:30",
            "",
        ]
    text = "\n".join(
        ["FAIL test/format.test.js", "  format tokens", *passing, "", *failures]
        + ["Test Suites: 1 failed, 1 total", "Tests:       12 failed, 200 passed, 212 total", "Ran all test suites."]
    )
    kept = _kept(text + "\n")
    assert "expect(received).toBe(expected) // Object.is equality" in kept


def test_a_doc_test_compile_error_keeps_its_place():
    passing = [f"test src/ops_{n % 7}.rs - ops::Op{n}::apply (line {n * 13 + 5}) ... ok" for n in range(180)]
    failure = [
        "",
        "failures:",
        "",
        "---- src/float.rs - float::Float::clamp (line 1536) stdout ----",
        "error[E0061]: this method takes 2 arguments but 1 argument was supplied",
        "    --> src/float.rs:1544:14",
        "     |",
        "1544 | assert_eq!(x.clamp(y), 2.0);",
        "     |              ^^^^^--- argument #2 of type `{float}` is missing",
        "     |",
        "note: method defined here",
        "    --> src/float.rs:1545:8",
        *[f"     | context line {n} of the method's definition in the library" for n in range(8)],
        "error: aborting due to 1 previous error",
        "",
        "Couldn't compile the test.",
        "---- src/pow.rs - pow::pow (line 171) stdout ----",
        "Test executable failed (exit status: 101).",
        "",
        "thread 'main' (3027) panicked at src/pow.rs:7:1:",
        "assertion `left == right` failed",
        "  left: 64",
        " right: 16",
        "stack backtrace:",
        *[f"  {n:2}: core::panicking::frame_number_{n}::h{n:016x}" for n in range(30)],
        "",
        "failures:",
        "    src/float.rs - float::Float::clamp (line 1536)",
        "",
        "test result: FAILED. 180 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 9.10s",
    ]
    text = "\n".join(
        ["running 181 tests", *passing[:40], "test src/float.rs - float::Float::clamp (line 1536) ... FAILED"]
        + passing[40:]
        + failure
    )
    kept = _kept(text + "\n")
    assert "--> src/float.rs:1544:14" in kept


def test_a_bare_path_over_its_indented_findings_is_kept():
    # Coloured as htmlhint prints to a terminal: the escapes are what compression saves.
    grey, red, plain = "\x1b[37m", "\x1b[31m", "\x1b[39m"
    report = []
    for n in range(3):
        report += [
            "",
            f"   /build/site/_static/page_{n}.html",
            f"{grey}      L{11 + n} |\x1b[90m</head>{plain}",
            f"{grey}           ^ {red}<title> must be present in <head> tag. (title-require){plain}",
            f'      L{380 + n} |... y="91"></rect><text x="669.5" y="106">\'>=\'</text></g><path d="M706.5 102a10"...',
            f"{grey}                     ^ {red}Special characters must be escaped : [ > ]. (spec-char-escape){plain}",
        ]
    text = "\n".join([*report, "", "Scanned 40 files, found 6 errors in 3 files (363 ms)"])
    kept = _kept(text + "\n")
    assert {f"/build/site/_static/page_{n}.html" for n in range(3)} <= kept
