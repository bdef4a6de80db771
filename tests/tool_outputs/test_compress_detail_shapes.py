"""Shapes of a failure's detail, of deep stacks and of lines that only look like diagnostics.

The outputs are hand-written in the shapes of real tools that have no rules of their own
(doctest, perl's Test::More, gdb, strace); the generic shapes have to carry them.
"""

from __future__ import annotations

import unseen_samples as unseen

from contextwright.tool_outputs.compressors import compress, normalize
from contextwright.tool_outputs.compressors.generic import is_exception_line, is_failure_line, is_location_line
from contextwright.tool_outputs.compressors.marks import MUST
from contextwright.tool_outputs.compressors.pipeline import analyse


def _shown(text: str) -> set[str]:
    return set(normalize(text).split("\n"))


def _protected(text: str) -> list[str]:
    lines = normalize(text).split("\n")
    marks, _, _ = analyse(lines, "generic", exit_code=None)
    return [line for line, priority in zip(lines, marks.priority, strict=True) if priority >= MUST]


def test_a_doctest_failure_keeps_its_expected_and_got_values():
    text, must = unseen.doctest_verbose_run()
    shown = _shown(compress(text, budget_tokens="auto", exit_code=1).text)
    assert not [line for line in must if line not in shown]
    for expected, got in (("    '12.50 EUR'", "    '12.5 EUR'"), ("    [2, 3]", "    [3, 2]")):
        assert expected in shown and got in shown


def test_the_next_record_after_a_failure_is_not_its_detail():
    # "Trying:" headed every example before the failure, so after "Got:" it starts the next one.
    text = "\n".join(
        [
            "Trying:",
            "    parse('7')",
            "Expecting:",
            "    7",
            "ok",
            "Trying:",
            "    parse('x')",
            "Expecting:",
            "    None",
            "*" * 70,
            'File "/srv/app/parse.py", line 9, in parse.parse',
            "Failed example:",
            "    parse('x')",
            "Expected:",
            "    None",
            "Got:",
            "    0",
            "Trying:",
            "    parse('8')",
            "Expecting:",
            "    8",
            "ok",
        ]
    )
    protected = _protected(text)
    assert protected[protected.index("Failed example:") :] == [
        "Failed example:",
        "    parse('x')",
        "Expected:",
        "    None",
        "Got:",
        "    0",
    ]


def test_a_count_header_may_put_words_before_its_noun():
    text = "\n".join(
        [
            "12 items passed all tests:",
            "   4 tests in shop.cart",
            "**********",
            "3 items had failures:",
            "   1 of   4 in shop.cart.total",
            "   2 of   5 in shop.cart.vat",
            "   1 of   2 in shop.money",
        ]
    )
    protected = _protected(text)
    assert "3 items had failures:" in protected
    assert "   2 of   5 in shop.cart.vat" in protected and "   1 of   2 in shop.money" in protected


def test_labelled_values_after_a_failed_test_are_its_detail():
    # perl's Test::More right-aligns its labels under the failure: "got" and "expected" both matter.
    text = "\n".join(
        [
            "#   Failed test 'rounds half up'",
            "#   at t/money.t line 14.",
            "#          got: '2.4'",
            "#     expected: '2.5'",
            "# Looks like you failed 1 test of 9.",
        ]
    )
    protected = _protected(text)
    assert "#          got: '2.4'" in protected and "#     expected: '2.5'" in protected


def test_a_deep_recursion_keeps_every_frame_down_to_main():
    text, must = unseen.gdb_recursion_backtrace(depth=60)
    shown = _shown(compress(text, budget_tokens="auto", exit_code=1).text)
    assert not [line for line in must if line not in shown]
    assert all(line in shown for line in text.split("\n") if line.startswith("#"))


def test_a_deep_python_recursion_keeps_the_outermost_own_frame():
    frames = ['  File "/srv/app/main.py", line 40, in <module>', "    run(config)"]
    frames += ['  File "/srv/app/main.py", line 31, in run', "    return walk(tree, 0)"]
    for _ in range(120):
        frames += ['  File "/srv/app/tree.py", line 12, in walk', "    return walk(node.child, depth + 1)"]
    lines = [
        *[f"loaded shard {n} of 400 from /srv/data/shard-{n}.bin" for n in range(60)],
        "Traceback (most recent call last):",
        *frames,
        "RecursionError: maximum recursion depth exceeded",
    ]
    shown = _shown(compress("\n".join(lines) + "\n", budget_tokens="auto", exit_code=1).text)
    assert '  File "/srv/app/main.py", line 40, in <module>' in shown
    assert '  File "/srv/app/main.py", line 31, in run' in shown
    assert "RecursionError: maximum recursion depth exceeded" in shown


def test_lines_that_start_with_a_process_id_are_not_section_headers():
    text, must = unseen.strace_failed_run()
    protected = _protected(text)
    assert not [line for line in protected if "openat(" in line and line.endswith("= 3")]
    result = compress(text, budget_tokens="auto", exit_code=1)
    assert not [line for line in must if line not in _shown(result.text)]


def test_documentation_that_names_an_exception_is_not_a_failure():
    for line in (":raises ValueError: if the amount is negative", '    "doc": ":raises KeyError: when the id is unknown",'):
        assert not is_exception_line(line) and not is_failure_line(line), line
    assert is_exception_line("ValueError: raises on a negative amount")


def test_a_quoted_source_line_with_a_caret_under_it_is_not_protected():
    # javac quotes the source without a gutter; the caret line under it says what it is.
    text, must = unseen.javac_lint_run()
    protected = _protected(text)
    assert not [line for line in protected if line.startswith("    static ")]
    assert "  symbol:   variable feeRate3" in protected
    result = compress(text, budget_tokens="auto", exit_code=1)
    assert not [line for line in must if line not in _shown(result.text)]
    assert result.compressed_tokens < 0.35 * result.original_tokens


def test_a_call_in_quoted_source_is_not_a_place():
    assert not is_location_line("    static List raw0() { List l = new ArrayList(); l.add(0); return l; }")
    assert is_location_line("Program.cs(12,34): error CS1002: ; expected")
    assert is_location_line("src/solver.f90(88): error #6404: This name does not have a type")


def test_a_yaml_block_under_a_failure_is_its_detail():
    # node --test's TAP reporter puts the assertion message under "error: |-", indented.
    text, must = unseen.node_test_tap_run()
    assert "        0.19 !== 0.07" in _protected(text)
    result = compress(text, budget_tokens="auto", exit_code=1)
    assert not [line for line in must if line not in _shown(result.text)]


def test_lines_that_say_what_went_wrong_in_plain_words_are_kept():
    # No severity tag, no exception name: the words themselves say it.
    lines = [f"step {n}: copied {n * 3} records to staging" for n in range(60)]
    said = {
        12: "wc: 'standard input': Is a directory",
        25: "Could not open file or uri for loading key from deploy.key",
        33: "-- Could NOT find LibXml2 (missing: LIBXML2_LIBRARY LIBXML2_INCLUDE_DIR)",
        41: "gmake[2]: Target 'all' not remade because of errors.",
        50: "sh: 1: jq: not found",
    }
    for index, line in said.items():
        lines[index] = line
    lines[20] = "2026-11-30 10:00:02 INFO retrying after error budget check"
    protected = _protected("\n".join(lines))
    assert all(line in protected for line in said.values())
    assert lines[20] not in protected  # a quiet log record that merely mentions an error


def test_findings_marked_by_a_glyph_a_label_or_a_would_are_kept():
    text = "\n".join(
        [
            "styles/app.css",
            "   4:12  ✖  Unexpected unit                      length-zero-no-unit",
            ">> Issue: [B602:subprocess_popen_with_shell_equals_true] subprocess call with shell=True",
            "would reformat /srv/app/billing/models.py",
            "Total lines of code: 4120",
            "LINE 3: SELECT totl FROM invoices;",
            "  12\tsubprocess.Popen(cmd, shell=True)",
        ]
    )
    protected = _protected(text)
    assert set(text.split("\n")[1:6]) <= set(protected)
    assert "  12\tsubprocess.Popen(cmd, shell=True)" not in protected  # a numbered source quote


def test_items_numbered_under_a_failing_count_are_kept():
    # mocha lists failed tests as "3) ..." in its progress and again before each failure's detail.
    lines = ["  invoice"]
    lines += [f"    ✔ totals line {n}" for n in range(30)]
    lines[7] = "    1) rounds half up"
    lines[19] = "    2) applies the reduced rate"
    lines += ["", "  28 passing (41ms)", "  2 failing", "", "  1) invoice", "       rounds half up:", ""]
    lines += ["  2) invoice", "       applies the reduced rate:", "", "  12) twelve items in the cart"]
    protected = _protected("\n".join(lines))
    for line in ("    1) rounds half up", "    2) applies the reduced rate", "  1) invoice", "  2) invoice"):
        assert line in protected
    assert "  12) twelve items in the cart" not in protected
