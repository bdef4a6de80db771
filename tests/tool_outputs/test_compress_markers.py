"""Omission markers: the short form for short runs, and every form parsed by ``LINE_MARKER_RE``."""

from __future__ import annotations

from contextwright.tool_outputs.compressors import LINE_MARKER_RE, compress
from contextwright.tool_outputs.compressors.generic import is_location_line


def _flood(findings: int) -> str:
    # A compiler's warning flood: each finding, then a quoted source line and a caret that may go.
    lines: list[str] = []
    for n in range(findings):
        lines += [
            f"src/mod{n % 7}.c:{10 + n}:5: warning: unused variable 'tmp{n}' [-Wunused-variable]",
            f"   {10 + n} |     int tmp{n} = compute_something_long({n}, buffer, length);",
            "      |         ^~~~",
        ]
    return "\n".join(lines) + "\n"


def _marker_lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.startswith("[... ")]


def test_a_flood_with_short_gaps_gets_one_marker_that_names_what_it_hides():
    # 60 findings, each followed by two lines that go: one marker per gap cost as much as
    # the findings; one marker before the stretch names the span and the lines hidden in it.
    text = _flood(60)
    result = compress(text, budget_tokens=200, exit_code=1)
    markers = _marker_lines(result.text)
    assert len(markers) == 1, markers[:3]
    match = LINE_MARKER_RE.match(markers[0])
    assert match, markers[0]
    first, last, count = int(match["first"]), int(match["last"]), int(match["count"])
    inside = [(a, b) for a, b in result.omitted if first <= a and b <= last]
    assert inside and count == sum(b - a + 1 for a, b in inside)
    shown = result.text.split("\n")
    assert f"between the {last - first + 1 - count} lines below" in markers[0]
    assert all(line in shown for line in text.split("\n") if ": warning: " in line)
    assert result.compressed_tokens < 0.6 * compress(text, budget_tokens=None, exit_code=1).compressed_tokens


def test_a_lone_short_run_gets_the_short_marker_and_it_parses():
    lines = [f"step {n}: copied {n * 7} files to build/out/stage{n}" for n in range(40)]
    lines[3] = "src/app.c:12:5: error: 'count' undeclared (first use in this function)"
    lines[30] = "src/app.c:40:9: error: expected ';' before '}' token"
    text = "\n".join(lines) + "\n"
    result = compress(text, budget_tokens=80, exit_code=1)
    markers = _marker_lines(result.text)
    assert markers
    assert all("between the" not in line for line in markers), markers
    for line in markers:
        match = LINE_MARKER_RE.match(line)
        assert match, line
        first, last = int(match["first"]), int(match["last"] or match["first"])
        assert (first, last) in result.omitted
    assert lines[3] in result.text and lines[30] in result.text


def test_marker_re_reads_all_three_forms_and_rejects_mixtures():
    forms = {
        "[... 12 lines omitted (lines 3-14): 10× build progress ...]": ("3", "14", "12"),
        "[... lines 3-4 omitted ...]": ("3", "4", None),
        "[... line 9 omitted; full output: /tmp/a b ...]": ("9", None, None),
        "[... previous line repeated 5 more times (lines 7-11) ...]": ("7", "11", None),
        "  [... 1 line omitted (line 2) ...]": ("2", None, "1"),
        "[... 118 lines omitted (lines 2-177) between the 58 lines below ...]": ("2", "177", "118"),
    }
    for line, (first, last, count) in forms.items():
        match = LINE_MARKER_RE.match(line)
        assert match, line
        assert (match["first"], match["last"], match["count"]) == (first, last, count)
    for line in ("[... lines 3-4) ...]", "[... 2 lines omitted (lines 3-4 omitted ...]", "[... 3-4 ...]"):
        assert not LINE_MARKER_RE.match(line), line


def test_perl_locations_end_with_a_full_stop():
    # Perl ends its messages as sentences: "... at w.pl line 3." names a place in w.pl.
    assert is_location_line("Use of uninitialized value $u in concatenation (.) or string at w.pl line 3.")
    assert is_location_line("fatal: cannot open socket at lib/Net.pm line 61.")
    assert not is_location_line("we stood in line 3. then left")


def test_perl_warnings_folded_as_repeats_stay_under_a_tight_budget():
    warning = "Use of uninitialized value $u in concatenation (.) or string at w.pl line 3."
    other = 'Use of uninitialized value $h{"missing"} in addition (+) at w.pl line 4.'
    text = "\n".join([warning] * 30 + [other] + [f"item {n}: " for n in range(40)]) + "\n"
    result = compress(text, budget_tokens=60, exit_code=1)
    shown = result.text.split("\n")
    assert warning in shown and other in shown


def test_a_counter_that_errs_high_per_line_still_fills_the_budget():
    # The calibrated estimator sums short lines well above the whole text's count; the
    # first fill then came out at 70% of the budget and dropped the failures' detail.
    from contextwright.tool_outputs.compressors import calibrated_token_count

    text = "\n".join(
        [f"tests/test_mod.py::test_case_{n} PASSED{' ' * 30}[{n:3}%]" for n in range(120)]
        + [
            f"{'_' * 30} test_fail_{n} {'_' * 30}\n    def test_fail_{n}():\n"
            + "".join(f"        value_{k} = compute_step({n}, {k})\n" for k in range(6))
            + f">       assert f({n}) == {n + 1}\nE       assert {n} == {n + 1}"
            for n in range(3)
        ]
        + [f"FAILED tests/test_mod.py::test_fail_{n} - assert {n} == {n + 1}" for n in range(3)]
        + ["=========== 3 failed, 120 passed in 0.31s ==========="]
    )
    result = compress(text, budget_tokens=400, exit_code=1, count_tokens=calibrated_token_count)
    assert 0.9 * 400 <= result.compressed_tokens <= 400


def test_kept_blocks_of_several_lines_keep_a_marker_per_gap():
    # Four-line failure blocks read as separate records: one marker for all gaps would hide where they were cut.
    lines: list[str] = []
    for n in range(10):
        lines += [
            f"ERROR: upload of part {n} failed",
            f"  cause: connection reset by peer after {n * 3 + 2} retries",
            f"  target: s3://backups/db-{n:03d}.tar",
            f"  raised at tools/upload.py:{40 + n}",
            *[f"progress part {n}: {pct}% of 512 MiB sent in {pct // 10} s" for pct in (25, 50, 75)],
        ]
    result = compress("\n".join(lines) + "\n", budget_tokens=120, exit_code=1)
    markers = _marker_lines(result.text)
    assert len(markers) >= 9 and all("between the" not in line for line in markers), markers
