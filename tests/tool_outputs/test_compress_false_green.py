"""A failed command never reads as green after compression.

The failure shapes here are the ones deterministic filters are known to get wrong: a
collection error that looks like "no tests", a Go package that does not compile, a
jest suite that fails before any test runs, and a failed command whose output has
no recognisable failure line at all.
"""

from __future__ import annotations

import re

import pressure_samples as samples
import pytest

from contextwright.tool_outputs.compressors import LINE_MARKER_RE, compress

# A line that, on its own, would tell a reader the run went fine.
PASS_ONLY = re.compile(
    r"(?i)\b(?:all tests passed|no tests (?:collected|found|ran)|no issues found|0 failed|passed!|build succeeded|^ok\s)"
)

FAILURE = re.compile(r"FAIL|failed|\berror\b|Error|●|panicked|Interrupted|\"Action\":\"fail\"")

FAILED_RUNS = {
    "pytest failures": samples.pytest_run(passing=120, failures=3),
    "pytest collection error": samples.pytest_collection_error(),
    "go test failure": samples.go_test_verbose(passing=60),
    "go build failure": samples.go_test_build_failure(),
    "go test -json failure": samples.go_test_json(passing=40),
    "jest failure": samples.jest_run(passing=60),
    "jest suite failed to run": samples.jest_suite_failure(passing=60),
    "cargo test failure": samples.cargo_test(passing=60),
}


@pytest.mark.parametrize("name", sorted(FAILED_RUNS))
@pytest.mark.parametrize("budget", [None, 200, 20])
def test_failed_runs_keep_failure_lines_verbatim(name, budget):
    text, must = FAILED_RUNS[name]
    result = compress(text, budget_tokens=budget, exit_code=1)
    shown = result.text.split("\n")
    assert result.failed
    missing = [line for line in must if line not in shown]
    assert not missing, missing
    # The failure is visible in the text itself, not only in a marker or a flag.
    content = [line for line in shown if not LINE_MARKER_RE.match(line)]
    assert any(FAILURE.search(line) for line in content)
    # Any pass-looking line shown is a line the tool printed; nothing green is made up.
    original = set(text.split("\n"))
    assert all(line in original for line in content if PASS_ONLY.search(line))


@pytest.mark.parametrize("budget", [None, 60])
def test_failed_command_without_a_failure_line_keeps_its_tail(budget):
    lines = [f"step {n}: copying shard {n} to the staging area" for n in range(200)]
    lines += ["step 200: copying shard 200 to the stag", "Killed"]
    text = "\n".join(lines) + "\n"
    result = compress(text, budget_tokens=budget, exit_code=137)
    shown = result.text.split("\n")
    assert result.failed
    assert "Killed" in shown and "step 200: copying shard 200 to the stag" in shown


def test_the_same_output_with_exit_code_zero_may_drop_that_tail():
    lines = [f"step {n}: copying shard {n} to the staging area" for n in range(200)] + ["done"]
    text = "\n".join(lines) + "\n"
    green = compress(text, budget_tokens=40, exit_code=0)
    red = compress(text, budget_tokens=40, exit_code=1)
    assert not green.failed and red.failed
    assert red.kept_must_lines > green.kept_must_lines


def test_exit_code_alone_marks_the_run_failed():
    text, _ = samples.pip_install(packages=20)
    assert not compress(text).failed
    assert compress(text, exit_code=2).failed


@pytest.mark.parametrize("budget", [None, 500, 50])
def test_a_verbose_pytest_listing_without_its_header_keeps_its_one_failure(budget):
    # Cut from its header and summary, `path::test PASSED` lines once read as grep matches
    # and the single FAILED line among them was folded away with the passes.
    lines = [f"tests/test_mod{i // 20}.py::test_case_{i} PASSED" for i in range(3000)]
    lines[1700] = "tests/test_mod85.py::test_case_1700 FAILED"
    result = compress("\n".join(lines) + "\n", budget_tokens=budget)
    assert result.kind == "pytest"
    assert "tests/test_mod85.py::test_case_1700 FAILED" in result.text.splitlines()
