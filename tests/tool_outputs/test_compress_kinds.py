"""One behaviour per kind, on small outputs written for these tests."""

from __future__ import annotations

import json
import re

import pressure_samples as samples
import pytest

from contextwright.errors import UsageError
from contextwright.tool_outputs.compressors import (
    KINDS,
    LINE_MARKER_RE,
    compress,
    detect_kind,
    normalize,
)

ALL_BUILDERS = {
    "cargo_test": "cargo-test",
    "eslint_stylish": "lint",
    "generic_log": "generic",
    "git_blame_porcelain": "git-blame",
    "git_diff": "git-diff",
    "git_log": "git-log",
    "git_status": "git-status",
    "go_test_build_failure": "go-test",
    "go_test_json": "go-test",
    "go_test_verbose": "go-test",
    "golangci": "lint",
    "gradle_failure": "build",
    "grep_matches": "grep",
    "java_trace": "stack-trace",
    "jest_run": "jest",
    "jest_suite_failure": "jest",
    "json_response": "json",
    "ls_long": "dir-listing",
    "make_failure": "build",
    "msbuild_failure": "build",
    "mypy_errors": "typecheck",
    "npm_install": "package-install",
    "pip_install": "package-install",
    "pytest_collection_error": "pytest",
    "pytest_run": "pytest",
    "pytest_verbose": "pytest",
    "ps_aux": "process-list",
    "python_traceback": "stack-trace",
    "rubocop_offenses": "lint",
    "ruff_findings": "lint",
    "rustc_errors": "rustc",
    "scalatest_run": "scala-test",
    "tsc_errors": "typecheck",
    "vitest_run": "jest",
}


def _out_lines(text: str) -> list[str]:
    return text.split("\n")


def _markers(text: str) -> list[str]:
    return [line for line in _out_lines(text) if LINE_MARKER_RE.match(line)]


@pytest.mark.parametrize(("builder", "kind"), sorted(ALL_BUILDERS.items()))
def test_detection_and_must_lines_for_every_builder(builder, kind):
    text, must = getattr(samples, builder)()
    assert detect_kind(text) == kind
    for budget in (None, 150, 40):
        result = compress(text, budget_tokens=budget)
        assert result.kind == kind
        missing = [line for line in must if line not in _out_lines(result.text)]
        assert not missing, (budget, missing)
        assert len(result.text) <= len(text)


def test_every_kind_has_a_builder():
    assert set(ALL_BUILDERS.values()) == set(KINDS)


def test_pytest_drops_passed_lines_and_keeps_the_failures():
    text, _ = samples.pytest_verbose(passing=40)
    result = compress(text)
    assert "PASSED" not in result.text
    assert "tests/test_api.py::test_login FAILED" in result.text
    assert any("40× passed test" in marker for marker in _markers(result.text))


def test_pytest_tight_budget_keeps_summary_before_failure_bodies():
    text, must = samples.pytest_run(passing=60, failures=6)
    result = compress(text, budget_tokens=60)
    assert all(line in _out_lines(result.text) for line in must)
    assert result.over_budget  # six FAILED lines and the tally alone exceed 60 tokens
    roomy = compress(text, budget_tokens=800)
    # With room, failure detail comes back, assertion lines first.
    assert "E       ZeroDivisionError: division by zero" in roomy.text
    assert roomy.compressed_tokens <= 800


def test_go_test_verbose_drops_passing_tests():
    text, _ = samples.go_test_verbose(passing=30)
    result = compress(text)
    assert "--- PASS" not in result.text and "=== RUN   TestHandler" not in result.text
    assert "    config_test.go:41: expected port 8080, got 0" in result.text


def test_go_test_json_keeps_fail_events_and_drops_pass_events():
    text, _ = samples.go_test_json(passing=25)
    result = compress(text)
    assert '"Action":"pass"' not in result.text and '"Action":"run"' not in result.text
    assert "bad_test.go:9: want 1, got 2" in result.text


def test_cargo_test_keeps_left_right_and_drops_ok_lines():
    text, _ = samples.cargo_test(passing=30)
    result = compress(text)
    assert " ... ok" not in result.text
    assert "  left: 5" in _out_lines(result.text) and " right: 4" in _out_lines(result.text)


def test_jest_drops_passing_tests_and_keeps_the_failure_block():
    text, _ = samples.jest_run(passing=30)
    result = compress(text)
    assert "✓" not in result.text and "PASS src/utils" not in result.text
    assert "    > 41 |   expect(fetch).toHaveBeenCalledTimes(3);" in result.text


def test_vitest_alias_and_failure_lines():
    text, must = samples.vitest_run()
    result = compress(text, kind="vitest")
    assert result.kind == "jest"
    assert all(line in _out_lines(result.text) for line in must)
    assert " ✓ src/lib/math.test.ts > adds 3" not in result.text


def test_rustc_keeps_errors_with_their_location_and_ranks_a_warning_beside_them():
    # Issue 17: the error fails the build, so the warning beside it is not protected; as the
    # first of its kind it ranks high, shown with its location when the budget has room.
    text, must = samples.rustc_errors(noise=40)
    result = compress(text, budget_tokens=70)
    shown = _out_lines(result.text)
    assert all(line in shown for line in must)
    assert "   Compiling dep7 v0.7.0" not in shown
    shown = _out_lines(compress(text, budget_tokens=140).text)
    assert "warning: unused variable: `x`" in shown and " --> src/main.rs:3:9" in shown
    assert "   Compiling dep7 v0.7.0" not in shown
    # Alone, a warning is what the build reports: kept with its location under any budget.
    alone = text.replace("error[E0308]: mismatched types", "note: see the build log")
    shown = _out_lines(compress(alone, budget_tokens=70).text)
    assert "warning: unused variable: `x`" in shown and " --> src/main.rs:3:9" in shown


def test_typecheck_keeps_every_error():
    for build in (samples.tsc_errors, samples.mypy_errors):
        text, must = build()
        result = compress(text, budget_tokens=30)
        assert all(line in _out_lines(result.text) for line in must)
        # A note names a place in the diagnostic it belongs to: it stays, like the error.
        assert all(line in _out_lines(result.text) for line in text.split("\n") if ": note: " in line)


def test_lint_keeps_every_error_and_every_warning_that_fails_the_run():
    # Issue 17: the errors fail the run, so the warnings beside them fold into a marker that
    # names their rule; in a report of warnings alone the warnings fail it, and none is folded.
    text, must = samples.eslint_stylish(warnings=30)
    result = compress(text, budget_tokens=40)
    shown = _out_lines(result.text)
    assert all(line in shown for line in must)
    assert result.text.count("warning  Unexpected console statement  no-console") < 30
    assert any("warning no-console" in marker for marker in _markers(result.text))
    alone = "\n".join(line for line in text.split("\n") if "  error  " not in line)
    result = compress(alone, budget_tokens=40)
    assert result.text.count("warning  Unexpected console statement  no-console") == 30


def test_ruff_style_codes_group_and_real_findings_stay():
    text, must = samples.ruff_findings(style=30)
    result = compress(text)
    assert all(line in _out_lines(result.text) for line in must)
    assert result.text.count("E501") == 30  # every style finding keeps its location line
    assert not any("E501" in marker for marker in _markers(result.text))


def test_rubocop_keeps_warnings_and_groups_conventions():
    text, must = samples.rubocop_offenses(conventions=30)
    result = compress(text)
    assert all(line in _out_lines(result.text) for line in must)
    # Every convention keeps its location line; none is folded into a marker.
    assert not any("Line is too long" in marker for marker in _markers(result.text))
    assert "CCCC.CCCCW" not in result.text  # progress letters are noise


def test_git_status_drops_hints_keeps_conflicts():
    text, must = samples.git_status(modified=40)
    result = compress(text)
    assert '(use "git add' not in result.text
    assert all(line in _out_lines(result.text) for line in must)
    assert result.text.count("modified:") < 40


def test_git_diff_keeps_every_file_header_under_a_tight_budget():
    text, must = samples.git_diff(files=8, body=40)
    result = compress(text, budget_tokens=50)
    assert all(line in _out_lines(result.text) for line in must)


def test_git_log_budget_keeps_the_newest_commit():
    text, _ = samples.git_log(commits=60)
    result = compress(text, budget_tokens=120)
    assert result.text.startswith(f"commit {0:040x}")
    assert result.compressed_tokens <= 120


def test_grep_caps_matches_per_file_and_names_the_file():
    text, _ = samples.grep_matches(files=3, per_file=40)
    result = compress(text)
    for f in range(3):
        shown = [line for line in _out_lines(result.text) if line.startswith(f"src/pkg{f}/handler.go:")]
        assert 0 < len(shown) <= 15
    assert any("matches in src/pkg0/handler.go" in marker for marker in _markers(result.text))


def test_dir_listing_caps_entries_per_directory():
    text, _ = samples.ls_long(entries=200)
    result = compress(text)
    assert result.text.startswith("total 1600\n")
    assert sum(1 for line in _out_lines(result.text) if line.startswith("-rw-")) <= 50


def test_package_install_drops_download_noise_and_keeps_the_verdict():
    text, must = samples.pip_install(packages=25)
    result = compress(text)
    assert "Downloading" not in result.text and "Collecting" not in result.text
    assert all(line in _out_lines(result.text) for line in must)


def test_stack_trace_folds_recursion_and_keeps_both_exceptions():
    text, must = samples.python_traceback(depth=30)
    result = compress(text)
    assert all(line in _out_lines(result.text) for line in must)
    assert any("repeated" in marker for marker in _markers(result.text))
    assert result.text.count("return visit(node.child)") < 5


def test_java_trace_keeps_head_and_cause():
    text, must = samples.java_trace(frames=40)
    result = compress(text, budget_tokens=60)
    assert all(line in _out_lines(result.text) for line in must)


def _scalar_pairs(value, pairs: set[str]) -> set[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(item, (dict, list)):
                pairs.add(f"{json.dumps(key)}: {json.dumps(item)}")
            _scalar_pairs(item, pairs)
    elif isinstance(value, list):
        for item in value:
            _scalar_pairs(item, pairs)
    return pairs


def test_json_outline_keeps_structure_and_never_invents_values():
    text, must = samples.json_response(items=30)
    pairs = _scalar_pairs(json.loads(text), set())
    for budget in (None, 400, 120):
        result = compress(text, budget_tokens=budget)
        assert all(line in _out_lines(result.text) for line in must)
        assert "30 in total" in result.text  # the array length is stated
        assert '"id": 1000' in result.text  # the first item is shown
        # Every "key": scalar pair shown is a pair of the original document.
        for line in _out_lines(result.text):
            match = re.match(r'^\s*("[^"]+": (?:"[^"]*"|-?\d+(?:\.\d+)?|true|false|null)),?$', line)
            if match:
                assert match.group(1) in pairs, line


def test_json_error_body_is_flagged_failed_and_keeps_its_message():
    body = {
        "message": "Validation Failed " + "x" * 300,
        "errors": [{"field": f"f{n}", "code": "missing"} for n in range(30)],
        "documentation_url": "https://docs.example.com/rest",
    }
    text = json.dumps(body, indent=2)
    result = compress(text, budget_tokens=80)
    assert result.failed
    assert json.dumps(body["message"]) in result.text  # not clipped


def test_build_kinds_keep_errors_and_verdicts():
    for build in (samples.msbuild_failure, samples.gradle_failure, samples.make_failure):
        text, must = build()
        result = compress(text, budget_tokens=60)
        assert result.failed
        assert all(line in _out_lines(result.text) for line in must), build.__name__


def test_generic_groups_alike_lines_and_keeps_the_error():
    text, must = samples.generic_log(lines_count=80)
    result = compress(text)
    assert all(line in _out_lines(result.text) for line in must)
    assert any("INFO worker:" in marker for marker in _markers(result.text))
    assert result.failed


def test_scala_passing_specs_are_noise():
    text, _ = samples.scalatest_run(passing=40)
    result = compress(text)
    assert "- should compute line 7 totals" not in result.text


def test_git_blame_drops_repeated_metadata_and_keeps_code_lines():
    text, _ = samples.git_blame_porcelain(lines_count=40)
    result = compress(text)
    assert "committer-mail" not in result.text
    assert "\tline 39 of the billing module" in _out_lines(result.text)


def test_process_list_keeps_header_and_zombie_under_a_budget():
    text, _ = samples.ps_aux(processes=60)
    result = compress(text, budget_tokens=80)
    assert result.text.startswith("USER         PID")
    assert any("<defunct>" in line for line in _out_lines(result.text))
    assert result.text.count("[kworker/") < 60


def test_ansi_and_carriage_returns_are_normalised():
    progress = "\r".join(f"Downloading {n}%" for n in range(0, 101, 5))
    lines = [f"\x1b[32mCollecting pkg{n}\x1b[0m" for n in range(30)] + [
        progress,
        "\x1b[1mSuccessfully installed pkg\x1b[0m",
    ]
    text = "\n".join(lines) + "\n"
    result = compress(text)
    assert "\x1b" not in result.text and "\r" not in result.text
    assert "Successfully installed pkg" in _out_lines(result.text)
    assert normalize("abc\rxy") == "xyc"


def test_unknown_kind_and_bad_budget_are_usage_errors():
    with pytest.raises(UsageError):
        compress("x", kind="no-such-kind")
    with pytest.raises(UsageError):
        compress("x", budget_tokens=0)
    with pytest.raises(UsageError):
        compress("x", pointer="has space")
