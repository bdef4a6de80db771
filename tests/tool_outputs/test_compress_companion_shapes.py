"""Lines that a kept failure needs beside it, in the shapes real tools print them.

Each sample is the shape a tool printed for a small program with a planted bug (pytest
-v, tcltest, Test::More under prove, gcc and ld, AddressSanitizer, Maven, pip, npm,
mocha, a Rust backtrace, cmake), padded with ordinary lines so that compression has to
choose. They run as the command line runs them: ``budget_tokens="auto"``, ``exit_code=1``.
"""

from __future__ import annotations

from contextwright.tool_outputs.compressors import compress, normalize


def _kept(text: str, exit_code: int | None = 1) -> set[str]:
    result = compress(text, budget_tokens="auto", exit_code=exit_code)
    assert result.text != text, "the sample is meant to be compressed"
    return {line.rstrip() for line in normalize(result.text).splitlines()}


def _missing(must: list[str], kept: set[str]) -> list[str]:
    return [line for line in must if line.rstrip() not in kept]


def _pytest_verbose() -> tuple[str, list[str]]:
    lines = ["=" * 29 + " test session starts " + "=" * 30, "collecting ... collected 42 items", ""]
    lines += [f"tests/test_calc.py::test_many[{n}] PASSED{' ' * 40}[{n * 2:3}%]" for n in range(38)]
    failed = [
        "tests/test_calc.py::TestCalc::test_dict FAILED                          [ 95%]",
        "tests/test_calc.py::TestCalc::test_list FAILED                          [100%]",
    ]
    dict_failure = [
        "______________________________ TestCalc.test_dict ______________________________",
        "",
        "self = <test_calc.TestCalc object at 0x7f57a23b0250>",
        "",
        "    def test_dict(self):",
        '>       assert {"k": 2, "a": 1, 3: 3} == {"k": 1, "a": 1}',
        "E       AssertionError: assert {'a': 1, 'k': 2, 3: 3} == {'a': 1, 'k': 1}",
        "E         ",
        "E         Omitting 1 identical items, use -vv to show",
        "E         Differing items:",
        "E         {'k': 2} != {'k': 1}",
        "E         Left contains 1 more item:",
        "E         {3: 3}",
        "E         Use -v to get more diff",
        "",
        "tests/test_calc.py:12: AssertionError",
    ]
    list_failure = [
        "______________________________ TestCalc.test_list ______________________________",
        "",
        "self = <test_calc.TestCalc object at 0x7f57a23bbe10>",
        "",
        "    def test_list(self):",
        "        got = [1, 2]",
        ">       assert got == [1, 2, 3]",
        "E       assert [1, 2] == [1, 2, 3]",
        "E         ",
        "E         Right contains one more item: 3",
        "E         Use -v to get more diff",
        "",
        "tests/test_calc.py:16: AssertionError",
    ]
    lines += failed + ["", "=" * 35 + " FAILURES " + "=" * 35, *dict_failure, *list_failure]
    lines += [
        "=========================== short test summary info ============================",
        "FAILED tests/test_calc.py::TestCalc::test_dict - AssertionError: assert {'a'...",
        "FAILED tests/test_calc.py::TestCalc::test_list - assert [1, 2] == [1, 2, 3]",
        "========================= 2 failed, 38 passed in 0.66s =========================",
    ]
    must = failed + [line for line in dict_failure + list_failure if line.startswith(("_", ">", "E", "tests/"))]
    return "\n".join(lines) + "\n", must


def test_a_pytest_failure_keeps_its_header_its_source_line_and_every_e_line():
    text, must = _pytest_verbose()
    kept = _kept(text)
    assert not _missing(must, kept)
    assert not any("PASSED" in line for line in kept)


def test_a_very_long_e_block_keeps_its_head_and_tail():
    diff = [f"E         -     'line {n}'," for n in range(60)]
    text = "\n".join(
        [f"tests/test_text.py::test_case_{n} PASSED{' ' * 40}[{n:3}%]" for n in range(60)]
        + [
            "tests/test_text.py::test_render FAILED                                  [100%]",
            "",
            "=" * 35 + " FAILURES " + "=" * 35,
            "_________________________________ test_render _________________________________",
            ">       assert render(doc) == expected",
            "E       AssertionError: assert ['a', 'b'] == ['line 0', 'line 1', ...]",
            "E         ",
            "E         Full diff:",
            *diff,
            "",
            "tests/test_text.py:40: AssertionError",
            "FAILED tests/test_text.py::test_render - AssertionError: assert ['a', 'b'...",
            "========================= 1 failed, 60 passed in 0.31s =========================",
        ]
    )
    kept = _kept(text + "\n")
    assert "E         Full diff:" in kept and diff[0].rstrip() in kept and diff[-1].rstrip() in kept
    assert diff[30].rstrip() not in kept


def test_tcltest_result_blocks_are_kept_and_passing_tests_go():
    passing = [f"++++ add-1.{n} PASSED" for n in range(40)]
    failure = [
        "==== str-3.1 multi line FAILED",
        "==== Contents of test case:",
        ' return "line one\\nline two" ',
        "---- Result was:",
        "line one",
        "line two",
        "---- Result should have been (exact matching):",
        "line one",
        "line 2",
        "==== str-3.1 FAILED",
    ]
    text = "\n".join([*passing[:20], "", "", *failure, "", *passing[20:], "all.tcl:\tTotal\t41\tPassed\t40\tFailed\t1"])
    kept = _kept(text + "\n")
    assert not _missing(failure, kept)
    assert len(kept & set(passing)) <= 2  # only the last lines of a failed run, kept whatever they say


def test_tcltest_result_blocks_are_kept_across_the_blank_lines_around_the_code():
    # tcltest sets the test's script apart by single blank lines before its result blocks.
    passing = [f"++++ add-1.{n} PASSED" for n in range(40)]
    failure = [
        "==== merge-1.4 merge joins FAILED",
        "==== Contents of test case:",
        "",
        "    intervals::merge {{1 2} {2 3}}",
        "",
        "---- Result was:",
        "{1 2} {2 3}",
        "---- Result should have been (exact matching):",
        "{1 3}",
        "==== merge-1.4 FAILED",
    ]
    text = "\n".join([*passing[:20], "", "", *failure, "", *passing[20:], "all.tcl:\tTotal\t41\tPassed\t40\tFailed\t1"])
    kept = _kept(text + "\n")
    assert not _missing([line for line in failure if line.strip()], kept)


def test_test_more_structures_that_differ_are_kept():
    ok = [f"ok {n} - positive {n}" for n in range(1, 41)]
    failures = [
        "#   Failed test 'nested'",
        "#   at t/basic.t line 4.",
        "#     Structures begin differing at:",
        "#          $got->[2][1] = '4'",
        "#     $expected->[2][1] = '5'",
        "",
        "#   Failed test 'joined'",
        "#   at t/basic.t line 3.",
        "#          got: '1,2'",
        "#     expected: '1,3'",
    ]
    tail = [
        "# Looks like you failed 2 tests of 42.",
        "t/basic.t .. ",
        "not ok 41 - nested",
        "not ok 42 - joined",
        "1..42",
        "Dubious, test returned 2 (wstat 512, 0x200)",
        "Failed 2/42 subtests ",
        "t/die.t .... ",
        "1..3",
        "Dubious, test returned 1 (wstat 256, 0x100)",
        "Failed 2/3 subtests ",
        "Result: FAIL",
    ]
    text = "\n".join(["", *failures, *tail[:2], *ok, *tail[2:]])
    kept = _kept(text + "\n")
    assert not _missing([line for line in failures if line], kept)
    assert "Dubious, test returned 1 (wstat 256, 0x100)" in kept
    assert not kept & set(ok)


def test_a_compiler_context_line_is_kept_with_the_diagnostic_under_it():
    compiled = [f"gcc -Wall -c src/ok{n}.c -o build/ok{n}.o" for n in range(40)]
    diagnostics = [
        "util.c: In function ‘compute’:",
        "util.c:7:25: error: ‘undefined_var’ undeclared (first use in this function)",
        "    7 |     return helper(*p) + undefined_var;",
        "      |                         ^~~~~~~~~~~~~",
        "util.c: At top level:",
        "util.c:3:12: warning: ‘unused_fn’ defined but not used [-Wunused-function]",
        "    3 | static int unused_fn(void) { return 1; }",
        "      |            ^~~~~~~~~",
        "/usr/bin/ld: libx.a(lib.o): in function `libf':",
        "lib.c:(.text+0x5): undefined reference to `missing_symbol'",
        "collect2: error: ld returned 1 exit status",
    ]
    kept = _kept("\n".join(compiled + diagnostics) + "\n")
    assert "util.c: In function ‘compute’:" in kept
    assert "util.c: At top level:" in kept
    assert "/usr/bin/ld: libx.a(lib.o): in function `libf':" in kept


def test_per_class_test_tallies_and_installed_packages_are_totals():
    maven = []
    for n in range(30):
        maven += [
            f"[INFO] Running com.example.Service{n}Test",
            f"[INFO] Tests run: 5, Failures: 0, Errors: 0, Skipped: 0, Time elapsed: 0.1{n} s -- in com.example.Service{n}Test",
        ]
    maven += [
        "[ERROR] Tests run: 3, Failures: 1, Errors: 0, Skipped: 0, Time elapsed: 0.2 s <<< FAILURE! -- in com.example.BadTest",
        "[ERROR] com.example.BadTest.adds -- Time elapsed: 0.01 s  <<< FAILURE!",
        "[ERROR] Tests run: 153, Failures: 1, Errors: 0, Skipped: 0",
        "[INFO] BUILD FAILURE",
    ]
    kept = _kept("\n".join(maven) + "\n")
    assert not _missing([line for line in maven if "Tests run:" in line], kept)

    pip = [f"  Downloading pkg{n}-1.0-py3-none-any.whl (12 kB)" for n in range(40)]
    pip += [
        "Building wheels for collected packages: pkg1, pkg2",
        "Successfully built pkg1 pkg2",
        "Installing collected packages: pkg1, pkg2",
        "Successfully installed pkg1-1.0 pkg2-2.0",
        "ERROR: pip's dependency resolver does not currently take into account all the packages that are installed.",
    ]
    kept = _kept("\n".join(pip) + "\n")
    assert "Successfully built pkg1 pkg2" in kept and "Successfully installed pkg1-1.0 pkg2-2.0" in kept


def test_a_mocha_failure_keeps_its_suite_and_title_lines():
    passing = [f"    ✔ handles case {n}" for n in range(40)]
    failure = [
        "  1) Calculator",
        "       divides by zero:",
        "",
        "      AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:",
        "",
        "Infinity !== 0",
        "",
        "      at Context.<anonymous> (test/calc.test.js:14:12)",
    ]
    text = "\n".join(["", "  Calculator", *passing, "", "  40 passing (20ms)", "  1 failing", "", *failure])
    kept = _kept(text + "\n")
    assert "  1) Calculator" in kept and "       divides by zero:" in kept


def test_an_npm_lifecycle_failure_keeps_the_script_and_its_exit_code():
    chatter = [f"npm http fetch GET 200 https://registry.npmjs.org/dep{n} 12ms (cache hit)" for n in range(40)]
    lifecycle = [
        "npm info run esbuild@0.19.2 postinstall node_modules/esbuild node install.js",
        "npm info run app@1.0.0 postinstall node scripts/setup.js",
        "npm info run esbuild@0.19.2 postinstall { code: 0, signal: null }",
        "npm info run app@1.0.0 postinstall { code: 1, signal: null }",
    ]
    text = "\n".join(chatter + lifecycle + [f"npm timing reify:audit Completed in {n}ms" for n in range(20)])
    kept = _kept(text + "\n")
    assert lifecycle[1] in kept and lifecycle[3] in kept


def test_a_sanitizer_report_keeps_its_block_headers():
    steps = [f"step {n} ok" for n in range(40)]
    report = [
        "=================================================================",
        "==20317==ERROR: AddressSanitizer: heap-use-after-free on address 0x602000000010 at pc 0x5560017362b1",
        "READ of size 4 at 0x602000000010 thread T0",
        "    #0 0x5560017362b0 in main /src/uaf.c:5",
        "",
        "0x602000000010 is located 0 bytes inside of 4-byte region [0x602000000010,0x602000000014)",
        "freed by thread T0 here:",
        "    #0 0x7f09cd6b76a8 in __interceptor_free ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:52",
        "    #1 0x55600173622d in drop /src/uaf.c:4",
        "",
        "previously allocated by thread T0 here:",
        "    #0 0x7f09cd6b89cf in __interceptor_malloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:69",
        "    #1 0x5560017361ca in make /src/uaf.c:3",
        "",
        "SUMMARY: AddressSanitizer: heap-use-after-free /src/uaf.c:5 in main",
    ]
    shadow = [f"  0x0c047fff{n:04x}: fa fa fa fa fa fa fa fa fa fa fa fa fa fa fa fa" for n in range(30)]
    text = "\n".join(steps + report + ["Shadow bytes around the buggy address:", *shadow, "==20317==ABORTING"])
    kept = _kept(text + "\n")
    assert not _missing([report[5], report[6], report[10]], kept)


def test_frame_names_check_steps_exit_codes_and_pip_boxes_are_kept():
    backtrace = ["stack backtrace:"]
    for n in range(12):
        backtrace += [
            f"  {n:2}: std::rt::lang_start_internal::frame_{n}",
            f"             at /rustc/abc123/library/std/src/rt.rs:{n + 10}:5",
        ]
    backtrace += ["  12: mycrate::tests::parses_header", "             at ./src/lib.rs:42:9"]
    running = [f"test tests::case_{n} ... ok" for n in range(60)]
    panic = "thread 'tests::parses_header' panicked at src/lib.rs:42:9:"
    kept = _kept("\n".join([*running, "", "---- tests::parses_header stdout ----", panic, *backtrace]) + "\n")
    assert "  12: mycrate::tests::parses_header" in kept

    cmake = [f"-- Looking for include file h{n}.h - found" for n in range(40)]
    cmake += [
        "-- Checking for module 'libzstd>=1.5'",
        "--   No package 'libzstd' found",
        "CMake Error at /usr/share/cmake-3.25/Modules/FindPkgConfig.cmake:607 (message):",
        "  A required package was not found",
    ]
    assert "-- Checking for module 'libzstd>=1.5'" in _kept("\n".join(cmake) + "\n")

    pip = [f"Collecting dep{n}==1.{n}" for n in range(40)]
    box = [
        "  × python setup.py egg_info did not run successfully.",
        "  │ exit code: 1",
        "  ╰─> [3 lines of output]",
        "      Traceback (most recent call last):",
        "      ModuleNotFoundError: No module named 'numpy'",
        "      [end of output]",
    ]
    pip += ["  error: subprocess-exited-with-error", "  ", *box, "", "note: This error originates from a subprocess."]
    assert not _missing(box, _kept("\n".join(pip) + "\n"))


def test_a_trace_keeps_only_the_last_failed_path_lookups_and_counts_the_rest():
    lookups = [
        f'newfstatat(AT_FDCWD, "/usr/lib/python3/site-packages/mod{n}.so", 0x7ffc06c54c00, 0) = -1 ENOENT (No such file or directory)'
        for n in range(150)
    ]
    denied = 'openat(AT_FDCWD, "/etc/app/config.yml", O_RDONLY) = -1 EACCES (Permission denied)'
    lines = []
    for n, lookup in enumerate(lookups):
        lines += [lookup, f"mmap(NULL, {4096 * (n + 1)}, PROT_READ, MAP_PRIVATE, 3, 0) = 0x7f3e1c4b{n:04x}"]
    lines += [denied, 'write(2, "app: cannot read config\\n", 24) = 24', "exit_group(3)                     = ?"]
    result = compress("\n".join(lines) + "\n", budget_tokens="auto", exit_code=3)
    kept = {line.rstrip() for line in normalize(result.text).splitlines()}
    assert denied in kept and lookups[-1] in kept
    assert len(kept & set(lookups)) <= 10
    assert "failed path lookup (ENOENT)" in result.text


def test_a_long_traceback_through_libraries_keeps_its_ends_and_the_projects_frames():
    site = "/usr/lib/python3.11/site-packages"
    frames = []
    for n in range(22):
        module = ("pip/_internal/cli/base_command", "setuptools/build_meta", "setuptools/_distutils/core")[n % 3]
        frames += [f'    File "{site}/{module}.py", line {100 + n}, in step_{n}', f"      result = step_{n + 1}(options)"]
    own = '    File "/home/dev/proj/setup.py", line 2, in <module>'
    lines = [f"  Using cached dependency_{n}-1.0-py3-none-any.whl" for n in range(30)]
    lines += ["  Traceback (most recent call last):", *frames[:30], own, "      import helper_config", *frames[30:]]
    lines += ["  ModuleNotFoundError: No module named 'helper_config'", "  error: subprocess-exited-with-error"]
    result = compress("\n".join(lines) + "\n", budget_tokens="auto", exit_code=1)
    kept = {line.rstrip() for line in normalize(result.text).splitlines()}
    frame_lines = frames[::2]
    assert own in kept
    assert set(frame_lines[:2]) <= kept and set(frame_lines[-3:]) <= kept
    assert len(kept & set(frame_lines)) < len(frame_lines) - 8
    assert "ModuleNotFoundError: No module named 'helper_config'" in result.text


def test_a_run_with_dozens_of_failures_details_the_first_few_and_still_shrinks():
    lines = ["=" * 35 + " FAILURES " + "=" * 35]
    headers = []
    for n in range(44):
        header = f"{'_' * 30} test_case_{n} {'_' * 30}"
        headers.append(header)
        lines += [
            header,
            "",
            f"    def test_case_{n}():",
            f">       assert compute({n}) == {n + 1}",
            f"E       assert {n} == {n + 1}",
            f"E        +  where {n} = compute({n})",
            "",
            f"tests/test_calc.py:{10 + n}: AssertionError",
        ]
    lines += [f"FAILED tests/test_calc.py::test_case_{n} - assert {n} == {n + 1}" for n in range(44)]
    lines.append("========================= 44 failed, 300 passed in 0.42s ==========================")
    text = "\n".join(lines) + "\n"
    result = compress(text, budget_tokens="auto", exit_code=1)
    kept = {line.rstrip() for line in normalize(result.text).splitlines()}
    assert set(headers[:10]) <= kept and "E        +  where 9 = compute(9)" in kept
    assert "E       assert 43 == 44" in kept and "tests/test_calc.py:53: AssertionError" in kept
    assert result.compressed_tokens <= 0.7 * result.original_tokens
