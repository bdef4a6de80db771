"""``contextwright compress`` with default settings, binary input, ``--save`` and ``show-artifact``."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from typer.testing import CliRunner

from contextwright.cli import app
from contextwright.tool_outputs.compressors import LINE_MARKER_RE, calibrated_token_count, default_token_count

sys.path.insert(0, str(Path(__file__).parent / "tool_outputs"))
import pressure_samples as samples
import unseen_samples as unseen

runner = CliRunner()


def _lines(output: str) -> list[str]:
    return output.split("\n")


def test_no_options_keep_the_content_and_a_budget_cuts_it():
    # 44 failures, each with its traceback: all of it is content, so the default keeps every line.
    text, must = samples.pytest_run(passing=300, failures=44)
    result = runner.invoke(app, ["compress", "--exit-code", "1"], input=text)
    assert result.exit_code == 1, result.output
    assert set(_lines(text)) <= set(_lines(result.output))
    # --budget asks for a lossy cut; each failure keeps its first E line and its location all the same.
    cut = runner.invoke(app, ["compress", "--exit-code", "1", "--budget", "500"], input=text)
    assert cut.exit_code == 1, cut.output
    assert default_token_count(cut.output) <= 0.6 * default_token_count(text)
    assert not [line for line in must if line not in _lines(cut.output)]
    assert sum(line.endswith(": ZeroDivisionError") for line in _lines(cut.output)) == 44


def test_the_default_drops_noise_only_where_a_kind_prints_it():
    # A verbose pytest run: the passing tests are noise, the failure and the summary are kept.
    lines = ["============================= test session starts =============================="]
    lines += [f"tests/test_calc.py::test_ok_{n} PASSED{' ' * 20}[{n // 4:3d}%]" for n in range(400)]
    lines += [
        "tests/test_calc.py::test_div FAILED                                      [100%]",
        "=================================== FAILURES ===================================",
        "E       ZeroDivisionError: division by zero",
        "tests/test_calc.py:12: ZeroDivisionError",
        "FAILED tests/test_calc.py::test_div - ZeroDivisionError: division by zero",
        "========================= 1 failed, 400 passed in 0.42s ==========================",
    ]
    run = "\n".join(lines) + "\n"
    out = runner.invoke(app, ["compress", "--exit-code", "1"], input=run).output
    assert len(out) < len(run) / 4
    assert set(lines[-6:]) <= set(_lines(out))
    # A colourised, redrawn log that repeats itself: colour, redraws and repeats go, every distinct line stays.
    log = "".join(f"\x1b[32mINFO\x1b[0m worker {n % 7} ready\r\x1b[32mINFO\x1b[0m worker {n % 7} ready\n" * 5 for n in range(60))
    kept = runner.invoke(app, ["compress", "--kind", "generic"], input=log).output
    assert "\x1b" not in kept and len(kept) < len(log) / 3
    assert {f"INFO worker {n} ready" for n in range(7)} <= set(_lines(kept))
    assert "previous line repeated 4 more times" in kept


def test_help_names_the_default_budget():
    result = runner.invoke(app, ["compress", "--help"])
    assert result.exit_code == 0
    flat = " ".join(result.output.replace("│", " ").split())
    assert "'keep' (the default) keeps the content" in flat
    assert "A number asks for a lossy cut" in flat and "kept at every setting" in flat
    assert "--save" in flat and "show-artifact" in flat


def test_budget_none_and_numbers_and_bad_values():
    text, _ = samples.pytest_run(passing=300, failures=2)
    none = runner.invoke(app, ["compress", "--budget", "none", "--json"], input=text)
    keep = runner.invoke(app, ["compress", "--json"], input=text)
    auto = runner.invoke(app, ["compress", "--budget", "auto", "--json"], input=text)
    fixed = runner.invoke(app, ["compress", "--budget", "900", "--json"], input=text)
    assert json.loads(none.output)["budget_tokens"] is None
    assert json.loads(none.output)["text"] == json.loads(keep.output)["text"]  # 'none' is the old spelling of keep
    assert json.loads(fixed.output)["budget_tokens"] == 900
    assert json.loads(auto.output)["tokens_after"] < json.loads(fixed.output)["tokens_after"]
    bad = runner.invoke(app, ["compress", "--budget", "lots"], input=text)
    assert bad.exit_code == 1 and bad.output.startswith("error:") and "--budget" in bad.output


def test_the_command_status_passes_through():
    # `cmd > out.txt; contextwright compress out.txt --exit-code $?` stands in for cmd in `&&` chains and CI steps.
    text, _ = samples.pytest_run(passing=300, failures=2)
    for given, expected in ((None, 0), (0, 0), (1, 1), (2, 2), (137, 137), (256, 1), (-1, 1)):
        args = ["compress"] if given is None else ["compress", "--exit-code", str(given)]
        result = runner.invoke(app, args, input=text)
        assert result.exit_code == expected, (given, result.output)
        assert "FAILED" in result.output
    as_json = runner.invoke(app, ["compress", "--json", "--exit-code", "3"], input=text)
    assert as_json.exit_code == 3 and json.loads(as_json.output)["failed"] is True
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 40
    assert runner.invoke(app, ["compress", "--exit-code", "2"], input=png).exit_code == 2
    flat = " ".join(runner.invoke(app, ["compress", "--help"]).output.replace("│", " ").split())
    assert "is this command's own exit status too" in flat


def test_binary_input_is_described_not_printed():
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 40
    result = runner.invoke(app, ["compress"], input=png)
    assert result.exit_code == 0
    assert result.output == f"[... binary input not shown: {len(png):,} bytes, PNG image ...]\n"
    assert "\ufffd" not in result.output
    data = json.loads(runner.invoke(app, ["compress", "--json"], input=png).output)
    assert data["kind"] == "binary" and data["bytes_before"] == len(png)


def test_save_keeps_the_original_and_show_artifact_prints_it_back(tmp_path):
    text, must = unseen.cargo_build_error(crates=140)
    store = tmp_path / "outputs"
    result = runner.invoke(app, ["compress", "--exit-code", "1", "--save", str(store)], input=text)
    assert result.exit_code == 1, result.output
    digest = hashlib.sha256(text.encode()).hexdigest()
    saved = store / digest
    assert saved.read_bytes() == text.encode()
    # Check that the first marker names the saved file, so `cat` can follow it.
    markers = [line for line in _lines(result.output) if LINE_MARKER_RE.match(line)]
    assert markers and f"full output: {saved}" in markers[0]
    assert all(line in _lines(result.output) for line in must)
    # The whole original, by hash prefix or by the path the marker gives.
    whole = runner.invoke(app, ["show-artifact", str(store), digest[:10]])
    assert whole.exit_code == 0 and whole.output == text
    assert runner.invoke(app, ["show-artifact", str(store), str(saved)]).output == text
    assert runner.invoke(app, ["show-artifact", str(store), f"sha256:{digest}"]).output == text
    # The lines a marker says were omitted, by its own numbers.
    match = LINE_MARKER_RE.match(markers[0])
    first, last = int(match["first"]), int(match["last"] or match["first"])
    part = runner.invoke(app, ["show-artifact", str(store), digest[:8], "--lines", f"{first}:{last}"])
    assert part.exit_code == 0
    assert part.output.split("\n")[:-1] == text.split("\n")[first - 1 : last]
    numbered = runner.invoke(app, ["show-artifact", str(store), digest[:8], "-l", str(first), "--numbered"])
    assert numbered.output.split() == [str(first), *text.split("\n")[first - 1].split()]


def test_save_directory_from_the_environment(tmp_path):
    text, _ = samples.pytest_run(passing=300, failures=2)
    store = tmp_path / "env-store"
    result = runner.invoke(app, ["compress", "--json"], input=text, env={"CONTEXTWRIGHT_SAVE_DIR": str(store)})
    data = json.loads(result.output)
    assert data["saved"] == str(store / data["pointer"].removeprefix("sha256:"))
    assert Path(data["saved"]).read_text() == text


def test_binary_input_saved_is_named_in_its_description(tmp_path):
    blob = b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4
    result = runner.invoke(app, ["compress", "--save", str(tmp_path)], input=blob)
    path = tmp_path / hashlib.sha256(blob).hexdigest()
    assert path.read_bytes() == blob
    assert f"full output: {path}" in result.output and "ELF" in result.output


def test_show_artifact_mistakes_are_one_line_errors(tmp_path):
    text, _ = samples.pytest_run(passing=300, failures=2)
    runner.invoke(app, ["compress", "--save", str(tmp_path)], input=text)
    digest = hashlib.sha256(text.encode()).hexdigest()
    (tmp_path / ("0" * 64)).write_text("other")
    cases = [
        ["show-artifact", str(tmp_path / "missing"), digest],
        ["show-artifact", str(tmp_path), "f" * 64],
        ["show-artifact", str(tmp_path), "abc"],
        ["show-artifact", str(tmp_path), "not-a-hash!"],
        ["show-artifact", str(tmp_path), digest, "--lines", "9:3"],
        ["show-artifact", str(tmp_path), digest, "--lines", "100000:"],
        ["show-artifact", str(tmp_path), digest, "--lines", "x-y"],
    ]
    for args in cases:
        result = runner.invoke(app, args)
        assert result.exit_code == 1, (args, result.output)
        assert result.output.startswith("error:") and "Traceback" not in result.output, (args, result.output)
    file_instead = tmp_path / "plain.txt"
    file_instead.write_text("x")
    result = runner.invoke(app, ["compress", "--save", str(file_instead)], input=text)
    assert result.exit_code == 1 and result.output.startswith("error:")


def test_a_long_git_log_is_kept_by_default_and_shrinks_with_a_budget():
    log = "".join(f"{n:07x}{n:033x}"[:7] + f" Refactor module {n % 97}: split the loader and add tests\n" for n in range(3_000))
    result = runner.invoke(app, ["compress"], input=log)
    assert result.exit_code == 0
    assert result.output == log  # every commit is content: nothing goes unless a size is asked for
    cut = runner.invoke(app, ["compress", "--budget", "auto"], input=log)
    assert default_token_count(cut.output) <= 0.05 * default_token_count(log)
    assert cut.output.split("\n")[0] == log.split("\n")[0]  # the newest commit stays


def test_the_budget_is_counted_with_the_calibrated_estimator():
    # JSON is denser in tokens than four characters each: counted as characters/4,
    # an aim of 300 came out far above 300 real tokens.
    packages = [
        {"metadata": {"name": f"pkg{n}", "version": f"1.{n}.0", "requires_dist": [f"dep{n}>=2.{n}", "typing-extensions"]}}
        for n in range(150)
    ]
    text = json.dumps({"version": "1", "installed": packages}, indent=2)
    result = runner.invoke(app, ["compress", "--json", "--budget", "300"], input=text)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["tokens_before"] == calibrated_token_count(text) > default_token_count(text)
    assert report["tokens_after"] == calibrated_token_count(report["text"]) <= 300


def test_help_says_how_tokens_are_counted():
    result = runner.invoke(app, ["compress", "--help"])
    flat = " ".join(result.output.replace("│", " ").split())
    assert "calibrated estimate for o200k models" in flat


def test_text_with_a_few_nul_bytes_is_compressed_with_them_escaped():
    # A test runner can print a test name holding a NUL; one such byte used to make the whole output "binary".
    text, must = samples.pytest_verbose(passing=200)
    raw = text.replace("test_endpoint_17 PASSED", "test_endpoint_17[a\x00b] PASSED").encode()
    raw = raw.replace(b"test_endpoint_18 PASSED", b"test_endpoint_18[\x00\x01] PASSED")
    assert raw.count(b"\x00") == 2
    result = runner.invoke(app, ["compress", "--exit-code", "1"], input=raw)
    assert result.exit_code == 1
    assert "binary input not shown" not in result.output
    assert "\x00" not in result.output and "\x01" not in result.output
    assert not [line for line in must if line not in result.output]
    whole = runner.invoke(app, ["compress", "--budget", "100000"], input=raw).output
    assert "test_endpoint_17[a\\x00b] PASSED" in whole and "test_endpoint_18[\\x00\\x01] PASSED" in whole
