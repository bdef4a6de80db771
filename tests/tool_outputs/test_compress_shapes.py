"""Shapes of real tool outputs the compressors must keep or may drop, whatever the kind detected.

Each sample is a real output's shape, cut short: git's merge conflicts, TAP totals,
curl's status line, sqlite's parse errors, chained Python tracebacks, Java causes,
gcc's warning floods, g++ notes inside the standard library.
"""

from __future__ import annotations

from contextwright.tool_outputs.compressors import compress, normalize


def _shown(text: str) -> set[str]:
    return {line.rstrip() for line in normalize(text).splitlines()}


def _protected(text: str) -> list[str]:
    from contextwright.tool_outputs.compressors.marks import MUST
    from contextwright.tool_outputs.compressors.pipeline import analyse

    lines = normalize(text).split("\n")
    marks, _, _ = analyse(lines, "generic", exit_code=None)
    return [line for line, priority in zip(lines, marks.priority, strict=True) if priority >= MUST]


def _squeezed(text: str, **options: object) -> tuple[set[str], int, int]:
    result = compress(text, budget_tokens=60, exit_code=1, **options)  # type: ignore[arg-type]
    return _shown(result.text), result.original_tokens, result.compressed_tokens


def test_merge_conflicts_are_failure_lines():
    files = [f"src/module_{n}.py" for n in range(12)]
    lines = [line for name in files for line in (f"Auto-merging {name}", f"CONFLICT (content): Merge conflict in {name}")]
    lines.append("Automatic merge failed; fix conflicts and then commit the result.")
    shown, _, _ = _squeezed("\n".join(lines) + "\n")
    assert all(f"CONFLICT (content): Merge conflict in {name}" in shown for name in files)
    assert "Automatic merge failed; fix conflicts and then commit the result." in shown


def test_tap_totals_are_kept():
    lines = ["TAP version 13"]
    for n in range(40):
        lines += [f"# Subtest: adds {n}", f"ok {n + 1} - adds {n}", "  ---", f"  duration_ms: 0.{n + 100}", "  ..."]
    lines += ["not ok 41 - subtracts", "  ---", "  error: 'Expected values to be strictly equal'", "  ..."]
    totals = ["# tests 41", "# suites 0", "# pass 40", "# fail 1", "# cancelled 0", "# skipped 0", "# todo 0"]
    lines += ["1..41", *totals, "# duration_ms 253.5"]
    shown, _, _ = _squeezed("\n".join(lines) + "\n")
    assert "not ok 41 - subtracts" in shown
    assert all(total in shown for total in totals)


def test_an_http_error_status_and_a_parse_error_are_failure_lines():
    curl = [
        "*   Trying 127.0.0.1:8080...",
        "* Connected to 127.0.0.1 (127.0.0.1) port 8080 (#0)",
        "> GET /missing/resource.json HTTP/1.1",
        "> Host: 127.0.0.1:8080",
        "> User-Agent: curl/7.88.1",
        "> Accept: */*",
        "> ",
        "< HTTP/1.1 404 Not Found",
        *[f"< X-Header-{n}: value-{n}-{'x' * 30}" for n in range(12)],
        "< ",
        "* Closing connection 0",
    ]
    assert "< HTTP/1.1 404 Not Found" in _squeezed("\n".join(curl) + "\n")[0]
    sqlite = [f"INSERT INTO t VALUES({n}, 'name{n}');" for n in range(40)]
    sqlite[20:20] = ["Parse error near line 122: no such column: nope", "  SELECT nope FROM t;", "         ^--- error here"]
    shown = _squeezed("\n".join(sqlite) + "\n")[0]
    assert {"Parse error near line 122: no such column: nope", "         ^--- error here"} <= shown


def test_a_chained_traceback_keeps_its_headers_and_own_frames():
    text = "\n".join(
        [
            *[f"starting worker {n}" for n in range(30)],
            "Traceback (most recent call last):",
            '  File "/srv/app/chain.py", line 7, in config',
            '    return load("/nonexistent/config.json")',
            "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
            '  File "/srv/app/chain.py", line 3, in load',
            "    with open(path) as f:",
            "FileNotFoundError: [Errno 2] No such file or directory: '/nonexistent/config.json'",
            "",
            "The above exception was the direct cause of the following exception:",
            "",
            "Traceback (most recent call last):",
            '  File "/srv/app/chain.py", line 13, in main',
            "    cfg = config()",
            '  File "/srv/app/chain.py", line 9, in config',
            '    raise RuntimeError("could not load configuration") from e',
            "RuntimeError: could not load configuration",
        ]
    )
    shown, _, _ = _squeezed(text + "\n")
    assert {
        "Traceback (most recent call last):",
        "The above exception was the direct cause of the following exception:",
        '  File "/srv/app/chain.py", line 7, in config',
        '  File "/srv/app/chain.py", line 3, in load',
        '  File "/srv/app/chain.py", line 13, in main',
        '  File "/srv/app/chain.py", line 9, in config',
    } <= shown
    assert "starting worker 12" not in shown


def test_every_frame_of_a_deep_stack_is_kept_and_its_quoted_source_goes():
    # Each frame names a place on the way to the failure; the source line quoted under it does not.
    frames = [f'  File "/srv/app/walk.py", line {n + 10}, in step_{n}\n    step_{n + 1}(x)' for n in range(40)]
    text = "Traceback (most recent call last):\n" + "\n".join(frames) + "\nRecursionError: too deep\n"
    shown, before, after = _squeezed(text)
    kept = [n for n in range(40) if f'  File "/srv/app/walk.py", line {n + 10}, in step_{n}' in shown]
    assert kept == list(range(40))
    assert len([line for line in _protected(text) if line.startswith("    step_")]) <= 1
    assert after < before


def test_java_frames_in_the_project_are_kept_and_a_maven_warning_is_too():
    text = "\n".join(
        [
            "server starting",
            'Exception in thread "main" java.lang.RuntimeException: request failed',
            "\tat com.example.Boom.outer(Boom.java:3)",
            "\tat com.example.Boom.main(Boom.java:4)",
            "Caused by: java.lang.IllegalStateException: pool exhausted",
            *["\tat com.example.Boom.inner(Boom.java:2)"] * 12,
            "\t... 2 more",
            *[f"worker {n} stopped" for n in range(20)],
        ]
    )
    shown, _, _ = _squeezed(text + "\n")
    assert {"\tat com.example.Boom.outer(Boom.java:3)", "\tat com.example.Boom.main(Boom.java:4)"} <= shown
    maven = [
        "[INFO] Scanning for projects...",
        "[WARNING] The POM for org.nonexistent:ghost:jar:9.9 is missing, no dependency information available",
        *[f"[INFO] Downloading from central: https://repo.example/org/x/{n}/x-{n}.pom" for n in range(20)],
        "[INFO] BUILD FAILURE",
    ]
    shown = _squeezed("\n".join(maven) + "\n", kind="build")[0]
    assert "[WARNING] The POM for org.nonexistent:ghost:jar:9.9 is missing, no dependency information available" in shown


def test_a_warning_flood_drops_the_quoted_source_and_folds_beside_an_error():
    lines, warnings = [], []
    for n in range(60):
        row = 7 * n + 4
        warning = f"flood.c:{row}:9: warning: suggest parentheses around assignment used as truth value [-Wparentheses]"
        warnings.append(warning)
        lines += [f"flood.c: In function ‘func_{n}’:", warning, f"{row:5} |     if (a = b) return a;", "      |         ^"]
    error = "flood.c:427:26: error: ‘missing_var’ undeclared (first use in this function)"
    note = "flood.c:427:26: note: each undeclared identifier is reported only once for each function it appears in"
    # Alone, the warnings are what the run reports: every one is kept, its quoted source is not.
    shown, before, after = _squeezed("\n".join(lines) + "\n")
    assert all(warning in shown for warning in warnings)
    assert "   11 |     if (a = b) return a;" not in shown
    assert after < 0.8 * before
    # Beside an error they are not failures: they fold into markers that name their flag.
    shown, before, after = _squeezed("\n".join([*lines, error, note]) + "\n")
    assert error in shown and note in shown
    assert sum(warning in shown for warning in warnings) < 10
    assert after < 0.3 * before


def test_notes_inside_the_standard_library_are_kept_and_the_include_chain_is_not():
    note = (
        "/usr/include/c++/12/bits/stl_algo.h:1276:7:   required from ‘void std::__sort(_RandomAccessIterator, "
        "_RandomAccessIterator, _Compare) [with _RandomAccessIterator = _Rb_tree_iterator<pair<const string, int> >]’"
    )
    lines = [
        "tmpl.cpp: In function ‘int main()’:",
        "tmpl.cpp:12:39: error: no matching function for call to ‘std::vector<Widget>::push_back(int)’",
        "   12 |   std::vector<Widget> ws; ws.push_back(3);",
        "In file included from /usr/include/c++/12/vector:64,",
        "                 from tmpl.cpp:2:",
        *[note.replace("1276:7", f"{1276 + n}:7") for n in range(30)],
    ]
    text = "\n".join(lines) + "\n"
    shown, before, after = _squeezed(text)
    assert "tmpl.cpp:12:39: error: no matching function for call to ‘std::vector<Widget>::push_back(int)’" in shown
    # The notes in the system's headers are the diagnostic's own places: every one stays.
    assert all(line in shown for line in lines[5:])
    protected = _protected(text)
    assert "In file included from /usr/include/c++/12/vector:64," not in protected
    assert "                 from tmpl.cpp:2:" not in protected


def test_a_program_prefix_before_a_location_is_read_as_one():
    lines = [f"INSERT 0 {n}" for n in range(300)]
    lines[150:150] = ['psql:load.sql:39: NOTICE:  relation "t" already exists, skipping']
    shown = _squeezed("\n".join(lines) + "\n")[0]
    assert 'psql:load.sql:39: NOTICE:  relation "t" already exists, skipping' in shown


def test_a_cut_that_saves_little_returns_the_input():
    # Every line but a short run is a failure line: markers would cost about what they save.
    lines = [f"ERROR: job {n} failed: connection refused by db-{n}.internal:5432" for n in range(30)]
    lines[15:15] = [f"retrying the connection to the database server in {n} seconds" for n in (5, 10, 20, 40)]
    text = "\n".join(lines) + "\n"
    result = compress(text, budget_tokens=60, exit_code=1)
    assert result.text == text and not result.changed


def test_the_record_after_a_warning_in_a_log_is_not_its_detail():
    lines = []
    for n in range(200):
        lines.append(f"2026-11-30 20:22:00,{n:03d} DEBUG [sync] fetched page {n + 1} of 200 ({100 + n % 7} records)")
        if n % 50 == 7:
            lines.append(f"2026-11-30 20:22:00,{n:03d} WARNING [sync] slow response from upstream: {1500 + n} ms")
    result = compress("\n".join(lines) + "\n", budget_tokens=60, exit_code=1)
    shown = _shown(result.text)
    assert all(line in shown for line in lines if " WARNING " in line)
    assert "2026-11-30 20:22:00,058 DEBUG [sync] fetched page 59 of 200 (102 records)" not in shown
