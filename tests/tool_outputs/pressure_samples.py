"""Small tool outputs written for these tests, one builder per kind.

Each builder returns ``(text, must)``: the output and the lines that must survive
any compression of it. Sizes are parameters so tests can make an output long
enough to be compressed.
"""

from __future__ import annotations


def pytest_run(passing: int = 60, *, failures: int = 2) -> tuple[str, list[str]]:
    """A pytest run: progress, a FAILURES section, the short summary and the tally."""
    dots = "." * passing + "F" * failures
    lines = [
        "============================= test session starts ==============================",
        "platform linux -- Python 3.12.1, pytest-8.3.2, pluggy-1.5.0",
        "rootdir: /src/app",
        f"collected {passing + failures} items",
        "",
        f"tests/test_calc.py {dots}                                  [100%]",
        "",
        "=================================== FAILURES ===================================",
    ]
    must = []
    for n in range(failures):
        lines += [
            f"_________________________________ test_div_{n} _________________________________",
            "",
            f"    def test_div_{n}():",
            f">       assert divide({n}, 0) == 0",
            "",
            "tests/test_calc.py:12: ",
            "_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ ",
            "",
            "    def divide(a, b):",
            ">       return a / b",
            "E       ZeroDivisionError: division by zero",
            "",
            f"app/calc.py:{3 + n}: ZeroDivisionError",
        ]
    lines += ["=========================== short test summary info ============================"]
    for n in range(failures):
        line = f"FAILED tests/test_calc.py::test_div_{n} - ZeroDivisionError: division by zero"
        lines.append(line)
        must.append(line)
    tally = f"========================= {failures} failed, {passing} passed in 0.42s =========================="
    lines.append(tally)
    must.append(tally)
    return "\n".join(lines) + "\n", must


def pytest_verbose(passing: int = 40) -> tuple[str, list[str]]:
    """pytest -v: one PASSED line per test, one FAILED line, no FAILURES section."""
    lines = [
        "============================= test session starts ==============================",
        "collected items",
    ]
    for n in range(passing):
        lines.append(f"tests/test_api.py::test_endpoint_{n} PASSED                          [{n:3d}%]")
    failed = "tests/test_api.py::test_login FAILED                                   [100%]"
    summary = "FAILED tests/test_api.py::test_login - KeyError: 'token'"
    tally = "========================= 1 failed, 40 passed in 1.10s ========================="
    lines += [
        failed,
        "=========================== short test summary info ============================",
        summary,
        tally,
    ]
    return "\n".join(lines) + "\n", [summary, tally]


def pytest_collection_error() -> tuple[str, list[str]]:
    """pytest stopped by an import error during collection (no test ran)."""
    lines = [
        "============================= test session starts ==============================",
        "platform linux -- Python 3.12.1, pytest-8.3.2, pluggy-1.5.0",
        "rootdir: /src/app",
        "collected 0 items / 1 error",
        "",
        "==================================== ERRORS ====================================",
        "_____________________ ERROR collecting tests/test_models.py _____________________",
        "ImportError while importing test module '/src/app/tests/test_models.py'.",
        "Hint: make sure your test modules/packages have valid Python names.",
        "Traceback:",
        "/usr/lib/python3.12/importlib/__init__.py:90: in import_module",
        "    return _bootstrap._gcd_import(name[level:], package, level)",
        "tests/test_models.py:3: in <module>",
        "    from app.models import Invoice",
        "E   ImportError: cannot import name 'Invoice' from 'app.models' (/src/app/app/models.py)",
        "=========================== short test summary info ============================",
        "ERROR tests/test_models.py",
        "!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!!",
        "=============================== 1 error in 0.31s ===============================",
    ]
    must = [lines[6], lines[14], lines[16], lines[17], lines[18]]
    return "\n".join(lines) + "\n", must


def go_test_verbose(passing: int = 30) -> tuple[str, list[str]]:
    """go test -v with passing tests around one failure and the package verdict."""
    lines = []
    for n in range(passing):
        lines += [f"=== RUN   TestHandler{n}", f"--- PASS: TestHandler{n} (0.00s)"]
    lines += [
        "=== RUN   TestParseConfig",
        "    config_test.go:41: expected port 8080, got 0",
        "--- FAIL: TestParseConfig (0.01s)",
        "FAIL",
        "FAIL\texample.com/svc/config\t0.214s",
    ]
    return "\n".join(lines) + "\n", [
        "--- FAIL: TestParseConfig (0.01s)",
        "FAIL\texample.com/svc/config\t0.214s",
    ]


def go_test_build_failure() -> tuple[str, list[str]]:
    """go test where the package does not compile (no test result at all)."""
    lines = [
        "# example.com/svc/config [example.com/svc/config.test]",
        "./config_test.go:18:2: undefined: loadDefaults",
        "./config_test.go:27:9: cannot use cfg (variable of type *Config) as Config value in return statement",
        "FAIL\texample.com/svc/config [build failed]",
        "ok  \texample.com/svc/server\t0.120s",
        "ok  \texample.com/svc/store\t0.301s",
        "ok  \texample.com/svc/auth\t0.090s",
        "FAIL",
    ]
    return "\n".join(lines) + "\n", lines[1:4]


def go_test_json(passing: int = 25) -> tuple[str, list[str]]:
    """go test -json: one event per line, one failing test."""
    pkg = "example.com/svc/config"
    lines = [f'{{"Action":"start","Package":"{pkg}"}}']
    for n in range(passing):
        lines += [
            f'{{"Action":"run","Package":"{pkg}","Test":"TestOk{n}"}}',
            f'{{"Action":"output","Package":"{pkg}","Test":"TestOk{n}","Output":"=== RUN   TestOk{n}\\n"}}',
            f'{{"Action":"output","Package":"{pkg}","Test":"TestOk{n}","Output":"--- PASS: TestOk{n} (0.00s)\\n"}}',
            f'{{"Action":"pass","Package":"{pkg}","Test":"TestOk{n}","Elapsed":0}}',
        ]
    fail_test = f'{{"Action":"fail","Package":"{pkg}","Test":"TestBad","Elapsed":0.01}}'
    fail_pkg = f'{{"Action":"fail","Package":"{pkg}","Elapsed":0.2}}'
    lines += [
        f'{{"Action":"run","Package":"{pkg}","Test":"TestBad"}}',
        f'{{"Action":"output","Package":"{pkg}","Test":"TestBad","Output":"    bad_test.go:9: want 1, got 2\\n"}}',
        f'{{"Action":"output","Package":"{pkg}","Test":"TestBad","Output":"--- FAIL: TestBad (0.01s)\\n"}}',
        fail_test,
        f'{{"Action":"output","Package":"{pkg}","Output":"FAIL\\n"}}',
        fail_pkg,
    ]
    return "\n".join(lines) + "\n", [fail_test, fail_pkg]


def cargo_test(passing: int = 30) -> tuple[str, list[str]]:
    """cargo test with one assert_eq failure."""
    lines = [
        "   Compiling adder v0.1.0 (/src/adder)",
        "    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.61s",
        "     Running unittests src/lib.rs (target/debug/deps/adder-92948b65e88960b4)",
        "",
        f"running {passing + 1} tests",
    ]
    lines += [f"test tests::case_{n} ... ok" for n in range(passing)]
    must = [
        "test tests::adds_two ... FAILED",
        "---- tests::adds_two stdout ----",
        "thread 'tests::adds_two' panicked at src/lib.rs:12:9:",
        "assertion `left == right` failed",
        "  left: 5",
        " right: 4",
        f"test result: FAILED. {passing} passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s",
    ]
    lines += [
        must[0],
        "",
        "failures:",
        "",
        must[1],
        must[2],
        must[3],
        must[4],
        must[5],
        "",
        "failures:",
        "    tests::adds_two",
        "",
        must[6],
        "",
        "error: test failed, to rerun pass `--lib`",
    ]
    must.append("error: test failed, to rerun pass `--lib`")
    return "\n".join(lines) + "\n", must


def jest_run(passing: int = 30) -> tuple[str, list[str]]:
    """jest with a passing suite and a failing one."""
    lines = ["PASS src/utils/format.test.js"]
    lines += [f"  ✓ formats value {n} (2 ms)" for n in range(passing)]
    lines += [
        "FAIL src/api/client.test.js",
        "  ✕ retries on 503 (12 ms)",
        "",
        "  ● retries on 503",
        "",
        "    expect(received).toBe(expected) // Object.is equality",
        "",
        "    Expected: 3",
        "    Received: 1",
        "",
        "      40 |   await client.get('/x');",
        "    > 41 |   expect(fetch).toHaveBeenCalledTimes(3);",
        "         |                 ^",
        "",
        "      at Object.toBe (src/api/client.test.js:41:17)",
        "",
        "Test Suites: 1 failed, 1 passed, 2 total",
        f"Tests:       1 failed, {passing} passed, {passing + 1} total",
        "Snapshots:   0 total",
        "Time:        2.31 s",
    ]
    must = ["FAIL src/api/client.test.js", "  ● retries on 503", lines[-4], lines[-3]]
    return "\n".join(lines) + "\n", must


def jest_suite_failure(passing: int = 25) -> tuple[str, list[str]]:
    """jest where a suite fails to compile: no test inside it reports anything."""
    lines = ["PASS src/a.test.ts"] + [f"  ✓ case {n} (1 ms)" for n in range(passing)]
    lines += [
        "FAIL src/b.test.ts",
        "  ● Test suite failed to run",
        "",
        "    SyntaxError: /src/b.test.ts: Unexpected token (4:10)",
        "",
        "Test Suites: 1 failed, 1 passed, 2 total",
        f"Tests:       {passing} passed, {passing} total",
    ]
    return "\n".join(lines) + "\n", lines[-7:-5] + [lines[-4], lines[-2], lines[-1]]


def vitest_run(passing: int = 30) -> tuple[str, list[str]]:
    """vitest's reporter: ✓ lines, a FAIL block and the Test Files / Tests tallies."""
    lines = [" RUN  v1.6.0 /src/web", ""]
    lines += [f" ✓ src/lib/math.test.ts > adds {n}" for n in range(passing)]
    lines += [
        " × src/lib/date.test.ts > parses ISO weeks",
        "",
        " FAIL  src/lib/date.test.ts > parses ISO weeks",
        "AssertionError: expected 52 to be 53 // Object.is equality",
        " ❯ src/lib/date.test.ts:14:22",
        "",
        " Test Files  1 failed | 1 passed (2)",
        f"      Tests  1 failed | {passing} passed ({passing + 1})",
    ]
    must = [
        " FAIL  src/lib/date.test.ts > parses ISO weeks",
        "AssertionError: expected 52 to be 53 // Object.is equality",
        lines[-2],
        lines[-1],
    ]
    return "\n".join(lines) + "\n", must


def rustc_errors(noise: int = 20) -> tuple[str, list[str]]:
    """cargo build with one error and one warning."""
    lines = [f"   Compiling dep{n} v0.{n}.0" for n in range(noise)]
    lines += [
        "warning: unused variable: `x`",
        " --> src/main.rs:3:9",
        "  |",
        "3 |     let x = 5;",
        "  |         ^ help: if this is intentional, prefix it with an underscore: `_x`",
        "",
        "error[E0308]: mismatched types",
        " --> src/main.rs:9:18",
        "  |",
        '9 |     let n: u32 = "five";',
        "  |            ---   ^^^^^^ expected `u32`, found `&str`",
        "",
        "For more information about this error, try `rustc --explain E0308`.",
        'error: could not compile `app` (bin "app") due to 1 previous error; 1 warning emitted',
    ]
    return "\n".join(lines) + "\n", [
        "error[E0308]: mismatched types",
        " --> src/main.rs:9:18",
        lines[-1],
    ]


def tsc_errors(count: int = 12) -> tuple[str, list[str]]:
    """tsc --noEmit with several errors and the Found line."""
    lines = ["$ tsc --noEmit -p tsconfig.json"]
    must = []
    for n in range(count):
        error = f"src/views/page{n}.tsx({10 + n},5): error TS2322: Type 'string' is not assignable to type 'number'."
        lines += [error, "  Type 'string' is not assignable to type 'number'."]
        must.append(error)
    lines.append(f"Found {count} errors in {count} files.")
    must.append(lines[-1])
    return "\n".join(lines) + "\n", must


def mypy_errors(count: int = 10) -> tuple[str, list[str]]:
    """mypy with errors, notes and the summary."""
    lines, must = [], []
    for n in range(count):
        error = (
            f'app/service_{n}.py:{20 + n}: error: Argument 1 to "charge" has incompatible type "str"; expected "int"  [arg-type]'
        )
        lines += [
            error,
            f"app/service_{n}.py:{20 + n}: note: See https://mypy.rtfd.io/en/stable/_refs.html#code-arg-type",
        ]
        must.append(error)
    lines.append(f"Found {count} errors in {count} files (checked 48 source files)")
    must.append(lines[-1])
    return "\n".join(lines) + "\n", must


def eslint_stylish(warnings: int = 30) -> tuple[str, list[str]]:
    """eslint stylish: many warnings of one rule, two errors, the problem count."""
    lines = ["", "/src/web/app.js"]
    lines += [f"  {n + 1}:1  warning  Unexpected console statement  no-console" for n in range(warnings)]
    err1 = "  40:7   error    'user' is assigned a value but never used  no-unused-vars"
    err2 = "  52:3   error    Unreachable code                           no-unreachable"
    summary = f"✖ {warnings + 2} problems (2 errors, {warnings} warnings)"
    lines += [err1, err2, "", summary, ""]
    return "\n".join(lines) + "\n", ["/src/web/app.js", err1, err2, summary]


def ruff_findings(style: int = 30) -> tuple[str, list[str]]:
    """ruff/flake8: style findings (E501) around real ones (F401, E999)."""
    lines = [f"app/views.py:{n + 1}:89: E501 Line too long (101 > 88)" for n in range(style)]
    real = [
        "app/views.py:3:1: F401 [*] `os` imported but unused",
        "app/broken.py:7:5: E999 SyntaxError: invalid syntax",
    ]
    lines[5:5] = [real[0]]
    lines.append(real[1])
    lines.append(f"Found {style + 2} errors.")
    return "\n".join(lines) + "\n", [*real, lines[-1]]


def rubocop_offenses(conventions: int = 30) -> tuple[str, list[str]]:
    """rubocop: C offenses with code excerpts, one W offense, the summary."""
    lines = [
        "Inspecting 48 files",
        "CCCC.CCCCWCCCCCCC.CC.CCCCCCCCCCCCC..CCCCCCCCCC",
        "",
        "Offenses:",
        "",
    ]
    for n in range(conventions):
        lines += [
            f"app/models/m{n}.rb:{n + 1}:81: C: Layout/LineLength: Line is too long. [{90 + n}/80]",
            "  validates :name, presence: true, length: { maximum: 255 }, uniqueness: { case_sensitive: false }",
            "                                                                                ^^^^^^^^^^^^^^^",
        ]
    warning = "app/models/user.rb:23:14: W: Lint/AssignmentInCondition: Assignment in condition - you probably meant to use ==."
    lines += [
        warning,
        "    if login = conditions.delete(:login)",
        "             ^",
        "",
        f"12 files inspected, {conventions + 1} offenses detected",
    ]
    return "\n".join(lines) + "\n", [warning, lines[-1]]


def golangci(count: int = 12) -> tuple[str, list[str]]:
    """golangci-lint: errcheck findings with their source lines."""
    lines, must = [], []
    for n in range(count):
        finding = f"internal/store/db{n}.go:{40 + n}:12: Error return value of `rows.Close` is not checked (errcheck)"
        lines += [finding, "\tdefer rows.Close()", "\t               ^"]
        must.append(finding)
    return "\n".join(lines) + "\n", must


def git_status(modified: int = 40) -> tuple[str, list[str]]:
    """git status with many modified files, a conflict and untracked files."""
    lines = [
        "On branch feature/billing",
        "Your branch is ahead of 'origin/feature/billing' by 2 commits.",
        "",
        "You have unmerged paths.",
        '  (fix conflicts and run "git commit")',
        "",
        "Unmerged paths:",
        '  (use "git add <file>..." to mark resolution)',
        "\tboth modified:   app/billing.py",
        "",
        "Changes not staged for commit:",
        '  (use "git add <file>..." to update what will be committed)',
        '  (use "git restore <file>..." to discard changes in working directory)',
    ]
    lines += [f"\tmodified:   app/module_{n}.py" for n in range(modified)]
    lines += [
        "",
        "Untracked files:",
        '  (use "git add <file>..." to include in what will be committed)',
        "\tnotes.txt",
        "",
    ]
    return "\n".join(lines) + "\n", [
        "On branch feature/billing",
        "\tboth modified:   app/billing.py",
    ]


def git_diff(files: int = 6, body: int = 30) -> tuple[str, list[str]]:
    """A unified diff over several files."""
    lines, must = [], []
    for f in range(files):
        header = f"diff --git a/src/mod{f}.py b/src/mod{f}.py"
        must.append(header)
        lines += [
            header,
            f"index 1a2b3c{f}..4d5e6f{f} 100644",
            f"--- a/src/mod{f}.py",
            f"+++ b/src/mod{f}.py",
            "@@ -1,30 +1,30 @@",
        ]
        for n in range(body):
            lines.append(f" context line {n} in file {f}" if n % 3 else f"-old value {n}")
            if n % 3 == 0:
                lines.append(f"+new value {n}")
    return "\n".join(lines) + "\n", must


def git_log(commits: int = 40) -> tuple[str, list[str]]:
    """git log (medium format)."""
    lines = []
    for n in range(commits):
        lines += [
            f"commit {n:040x}",
            "Author: Dev One <dev@example.com>",
            f"Date:   Mon Mar {1 + n % 28} 10:00:00 2025 +0000",
            "",
            f"    Change number {n}: adjust the billing rules",
            "",
        ]
    return "\n".join(lines) + "\n", []


def grep_matches(files: int = 4, per_file: int = 40) -> tuple[str, list[str]]:
    """grep -rn output: many matches per file."""
    lines = [
        f'src/pkg{f}/handler.go:{n * 3 + 1}:\tlog.Printf("handling request %d", id)'
        for f in range(files)
        for n in range(per_file)
    ]
    return "\n".join(lines) + "\n", []


def ls_long(entries: int = 200) -> tuple[str, list[str]]:
    """ls -l of one large directory."""
    lines = [f"total {entries * 8}"]
    lines += [f"-rw-r--r-- 1 dev dev {1000 + n:6d} Mar  1 10:00 file_{n:04d}.txt" for n in range(entries)]
    return "\n".join(lines) + "\n", []


def pip_install(packages: int = 25) -> tuple[str, list[str]]:
    """pip install: download noise, then the verdict."""
    lines = []
    for n in range(packages):
        lines += [
            f"Collecting package{n}>=1.0",
            f"  Downloading package{n}-1.{n}.0-py3-none-any.whl (120 kB)",
            "     ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 120.0/120.0 kB 3.1 MB/s eta 0:00:00",
        ]
    lines.append("Installing collected packages: " + ", ".join(f"package{n}" for n in range(packages)))
    done = "Successfully installed " + " ".join(f"package{n}-1.{n}.0" for n in range(packages))
    lines.append(done)
    return "\n".join(lines) + "\n", [done]


def npm_install(deprecations: int = 20) -> tuple[str, list[str]]:
    """npm install with deprecation warnings, an audit result and an error."""
    lines = [f"npm WARN deprecated old-lib{n}@1.0.{n}: this library is no longer supported" for n in range(deprecations)]
    lines += [
        "",
        "added 812 packages, and audited 813 packages in 21s",
        "",
        "119 packages are looking for funding",
        "  run `npm fund` for details",
        "",
        "3 high severity vulnerabilities",
    ]
    return "\n".join(lines) + "\n", [
        "added 812 packages, and audited 813 packages in 21s",
        "3 high severity vulnerabilities",
    ]


def python_traceback(depth: int = 30) -> tuple[str, list[str]]:
    """A chained Python traceback with a deep recursion."""
    lines = [
        "Traceback (most recent call last):",
        '  File "/src/app/main.py", line 40, in <module>',
        "    run()",
    ]
    for _ in range(depth):
        lines += ['  File "/src/app/walk.py", line 12, in visit', "    return visit(node.child)"]
    lines += [
        '  File "/src/app/walk.py", line 10, in visit',
        "    raise LookupError(node)",
        "LookupError: <Node 7>",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "/src/app/main.py", line 44, in <module>',
        '    raise RuntimeError("walk failed") from err',
        "RuntimeError: walk failed",
    ]
    return "\n".join(lines) + "\n", ["LookupError: <Node 7>", "RuntimeError: walk failed"]


def java_trace(frames: int = 40) -> tuple[str, list[str]]:
    """A Java exception with a cause."""
    head = 'Exception in thread "main" java.lang.IllegalStateException: pool exhausted'
    lines = [head] + [f"\tat com.example.pool.Pool.acquire{n}(Pool.java:{100 + n})" for n in range(frames)]
    cause = "Caused by: java.net.ConnectException: Connection refused"
    lines += [cause, "\tat java.base/sun.nio.ch.Net.connect0(Native Method)", "\t... 38 more"]
    return "\n".join(lines) + "\n", [head, cause]


def json_response(items: int = 30) -> tuple[str, list[str]]:
    """A JSON API response: identity fields and a long array of objects."""
    import json

    body = {
        "total_count": items,
        "incomplete_results": False,
        "items": [
            {
                "id": 1000 + n,
                "name": f"repo-{n}",
                "html_url": f"https://example.com/r/{n}",
                "stars": n * 3,
                "owner": {
                    "login": f"user{n}",
                    "id": n,
                    "url": f"https://api.example.com/users/user{n}",
                },
                "topics": ["a", "b", "c"],
                "description": "A repository used in tests " * 3,
            }
            for n in range(items)
        ],
    }
    text = json.dumps(body, indent=2)
    return text + "\n", ['  "total_count": 30,', '  "incomplete_results": false,']


def msbuild_failure(warnings: int = 20) -> tuple[str, list[str]]:
    """dotnet build with warnings, one error and the verdict."""
    lines = ["  Determining projects to restore...", "  All projects are up-to-date for restore."]
    lines += [
        f"/src/Api/Controllers/C{n}.cs({n + 1},5): warning CS8618: Non-nullable property 'Name' must contain a non-null value. [/src/Api/Api.csproj]"
        for n in range(warnings)
    ]
    error = "/src/Api/Program.cs(7,17): error CS1525: Invalid expression term ';' [/src/Api/Api.csproj]"
    lines += [
        error,
        "",
        "Build FAILED.",
        "",
        f"    {warnings} Warning(s)",
        "    1 Error(s)",
        "",
        "Time Elapsed 00:00:03.12",
    ]
    return "\n".join(lines) + "\n", [error, "Build FAILED.", "    1 Error(s)"]


def gradle_failure(passing: int = 30) -> tuple[str, list[str]]:
    """gradle test with one failing JUnit test."""
    lines = ["> Task :compileJava UP-TO-DATE", "> Task :classes UP-TO-DATE", "> Task :test", ""]
    for n in range(passing):
        lines += [f"com.example.ServiceTest > case{n} PASSED", ""]
    lines += [
        "com.example.ServiceTest > rejectsNull FAILED",
        "    java.lang.NullPointerException: name is null",
        "        at com.example.Service.create(Service.java:31)",
        "",
        f"{passing + 1} tests completed, 1 failed",
        "",
        "> Task :test FAILED",
        "",
        "FAILURE: Build failed with an exception.",
        "",
        "BUILD FAILED in 3s",
    ]
    must = [
        "com.example.ServiceTest > rejectsNull FAILED",
        "    java.lang.NullPointerException: name is null",
        f"{passing + 1} tests completed, 1 failed",
        "> Task :test FAILED",
        "BUILD FAILED in 3s",
    ]
    return "\n".join(lines) + "\n", must


def make_failure(steps: int = 30) -> tuple[str, list[str]]:
    """make with gcc: progress lines, one compile error, make's verdict."""
    lines = [f"[{n * 3:3d}%] Building C object src/CMakeFiles/app.dir/unit{n}.c.o" for n in range(steps)]
    error = "/src/app/unit7.c:42:13: error: 'count' undeclared (first use in this function)"
    lines += [
        error,
        "   42 |     total = count + 1;",
        "      |             ^~~~~",
        "make[2]: *** [src/CMakeFiles/app.dir/build.make:76: src/CMakeFiles/app.dir/unit7.c.o] Error 1",
        "make: *** [Makefile:84: all] Error 2",
    ]
    return "\n".join(lines) + "\n", [error, lines[-2], lines[-1]]


def generic_log(lines_count: int = 80) -> tuple[str, list[str]]:
    """An application log: repeated info lines and one error."""
    lines = [f"2025-03-01 10:00:{n % 60:02d} INFO worker: processed batch {n}" for n in range(lines_count)]
    error = "2025-03-01 10:01:20 ERROR worker: batch 80 failed: ConnectionResetError: [Errno 104] Connection reset by peer"
    lines.insert(lines_count // 2, error)
    return "\n".join(lines) + "\n", [error]


def scalatest_run(passing: int = 40) -> tuple[str, list[str]]:
    """sbt/scalatest: passing specs around one failure, with the tallies."""
    lines = [
        "[info] Compiling 3 Scala sources to /src/target/scala-2.13/test-classes ...",
        "InvoiceSpec:",
    ]
    lines += [f"- should compute line {n} totals" for n in range(passing)]
    failed = "- should round half even *** FAILED ***"
    reason = "  2.5 did not equal 2.0 (InvoiceSpec.scala:88)"
    lines += [
        failed,
        reason,
        "Run completed in 1 second, 210 milliseconds.",
        f"{passing + 1} tests, {passing} passed, 1 failed",
    ]
    return "\n".join(lines) + "\n", [failed, reason, lines[-1]]


def git_blame_porcelain(lines_count: int = 40) -> tuple[str, list[str]]:
    """git blame --porcelain for two commits."""
    out = []
    for n in range(lines_count):
        sha = ("a" if n % 2 else "b") * 40
        out.append(f"{sha} {n + 1} {n + 1} 1")
        if n < 2:
            out += [
                f"author Dev {n}",
                f"author-mail <dev{n}@example.com>",
                "author-time 1700000000",
                "author-tz +0000",
                f"committer Dev {n}",
                f"committer-mail <dev{n}@example.com>",
                "committer-time 1700000000",
                "committer-tz +0000",
                f"summary change {n}",
                "filename app/billing.py",
            ]
        out.append(f"\tline {n} of the billing module")
    return "\n".join(out) + "\n", []


def ps_aux(processes: int = 60) -> tuple[str, list[str]]:
    """ps aux with kernel threads and one zombie."""
    lines = ["USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND"]
    lines += [f"root      {n + 2:6d}  0.0  0.0      0     0 ?        S    Oct25   0:00 [kworker/{n}:0]" for n in range(processes)]
    lines += [
        "app         4242  0.0  0.0      0     0 ?        Z    10:02   0:00 [worker] <defunct>",
        "app         4300 12.5  3.1 812344 64000 ?        Sl   10:00   1:12 /usr/bin/python3 -m app.server",
    ]
    return "\n".join(lines) + "\n", []
