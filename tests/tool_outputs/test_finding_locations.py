"""Every linter finding and every pytest failure keeps its location line at default settings."""

from __future__ import annotations

from contextwright.tool_outputs.compressors import compress


def _kept(text: str) -> set[str]:
    return set(text.split("\n"))


def test_each_ruff_style_finding_keeps_its_location_line():
    lines = [f"src/pkg/mod{i}.py:{i + 1}:1: D100 Missing docstring in public module" for i in range(60)]
    lines += [f"src/pkg/mod{i}.py:{i + 3}:8: E401 Multiple imports on one line" for i in range(60)]
    lines.append("Found 120 errors.")
    result = compress("\n".join(lines) + "\n", budget_tokens="auto", exit_code=1)
    kept = _kept(result.text)
    assert not [line for line in lines if line not in kept]


def test_each_ruff_full_format_style_finding_keeps_its_header_and_arrow():
    lines: list[str] = []
    for i in range(40):
        lines += [
            "D103 Missing docstring in public function",
            f"  --> src/app/views{i}.py:{i + 10}:5",
            "   |",
            f"{i + 10} | def handler_{i}(request):",
            "   |     ^^^^^^^^^",
            "   |",
            "",
        ]
    lines.append("Found 40 errors.")
    result = compress("\n".join(lines) + "\n", budget_tokens="auto", exit_code=1)
    kept = _kept(result.text)
    arrows = [line for line in lines if "-->" in line]
    assert not [line for line in arrows if line not in kept]
    assert "Found 40 errors." in kept


def test_each_rubocop_convention_keeps_its_location_line():
    lines = ["Inspecting 30 files", "", "Offenses:", ""]
    lines += [f"app/models/m{i}.rb:{i + 2}:3: C: Style/StringLiterals: Prefer single quotes." for i in range(50)]
    lines += ["", "30 files inspected, 50 offenses detected"]
    result = compress("\n".join(lines) + "\n", budget_tokens="auto", exit_code=1)
    kept = _kept(result.text)
    assert not [line for line in lines if line.startswith("app/") and line not in kept]
    assert "30 files inspected, 50 offenses detected" in kept


def test_eslint_style_warnings_keep_their_file_header_and_line():
    lines: list[str] = []
    for i in range(20):
        lines += [f"/repo/src/c{i}.js", f"  {i + 1}:5  warning  Unexpected console statement  no-console", ""]
    lines.append("✖ 20 problems (0 errors, 20 warnings)")
    result = compress("\n".join(lines) + "\n", budget_tokens="auto", exit_code=1)
    kept = _kept(result.text)
    assert not [line for line in lines if line.strip() and line not in kept]


def test_each_pytest_failure_keeps_its_location_and_first_e_line():
    lines = ["============================= test session starts ==============================", ""]
    lines.append("=================================== FAILURES ===================================")
    for i in range(30):
        lines += [
            f"_________________________________ test_case_{i} _________________________________",
            "",
            f"    def test_case_{i}():",
            f">       assert compute({i}) == {i + 1}",
            f"E       assert {i} == {i + 1}",
            f"E        +  where {i} = compute({i})",
            "",
            f"tests/test_compute.py:{i * 3 + 4}: AssertionError",
        ]
    lines.append("=========================== short test summary info ============================")
    lines += [f"FAILED tests/test_compute.py::test_case_{i} - assert {i} == {i + 1}" for i in range(30)]
    lines.append("============================== 30 failed in 0.40s ==============================")
    result = compress("\n".join(lines) + "\n", budget_tokens="auto", exit_code=1)
    kept = _kept(result.text)
    needed = [line for line in lines if line.endswith(": AssertionError") or line.startswith("E       assert")]
    assert len(needed) == 60
    assert not [line for line in needed if line not in kept]


def test_a_short_traceback_failure_keeps_its_last_frame():
    lines = ["=================================== FAILURES ==================================="]
    for i in range(30):
        lines += [
            f"_________________________________ test_case_{i} _________________________________",
            f"tests/test_compute.py:{i + 4}: in test_case_{i}",
            f"    assert compute({i}) == {i + 1}",
            f"E   assert {i} == {i + 1}",
        ]
    lines += [f"FAILED tests/test_compute.py::test_case_{i} - assert {i} == {i + 1}" for i in range(30)]
    lines.append("============================== 30 failed in 0.40s ==============================")
    result = compress("\n".join(lines) + "\n", budget_tokens="auto", exit_code=1)
    kept = _kept(result.text)
    assert not [line for line in lines if ": in test_case_" in line and line not in kept]
