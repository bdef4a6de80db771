"""Issue 17: compression works with default settings and on formats no rule was written for.

The unseen formats come from ``unseen_samples`` (hand-written in the real tools' shapes);
the leave-one-kind-out check runs the shared corpus with detection barred from each
sample's own kind, so the rest of the pipeline has to cope as with an unknown tool.
"""

from __future__ import annotations

import json

import pressure_samples as samples
import pytest
import unseen_samples as unseen

from contextwright.testing.corpus import corpus_path
from contextwright.tool_outputs.arrival import ToolOutputPolicy, prepare_output
from contextwright.tool_outputs.compressors import LINE_MARKER_RE, auto_budget, compress, detect_kind, normalize
from contextwright.tool_outputs.compressors.binary import escape_controls, sniff_binary
from contextwright.tool_outputs.compressors.pipeline import AUTO_MAX_TOKENS, AUTO_MIN_TOKENS

POINTER = "sha256:" + "ab" * 32

# Outputs made of findings alone: every line is a warning, a location or a total, so
# nothing may go and the reduction target does not apply to them.
FINDINGS_ONLY = {"eslint_compact_run", "eslint_warnings", "go_vet", "hadolint_run", "reek_report"}


def _shown(text: str) -> set[str]:
    return set(normalize(text).split("\n"))


def test_auto_budget_is_a_fifth_of_the_output_within_bounds():
    assert auto_budget(100) == AUTO_MIN_TOKENS
    assert auto_budget(1_000) == 200
    assert auto_budget(100_000) == AUTO_MAX_TOKENS


def test_default_budget_compresses_a_failing_test_run():
    # The headline: a 44-failure pytest run went in and came out unchanged.
    text, must = samples.pytest_run(passing=300, failures=44)
    result = compress(text, budget_tokens="auto", exit_code=1)
    assert result.budget_tokens == auto_budget(result.original_tokens)
    # Each of the 44 failures keeps its first E line and its location, so the floor is higher.
    assert result.compressed_tokens <= 0.6 * result.original_tokens
    assert not [line for line in must if line not in _shown(result.text)]
    assert sum(line.endswith(": ZeroDivisionError") for line in _shown(result.text)) == 44


def test_a_cargo_build_with_many_compiling_lines_is_not_a_git_status():
    text, must = unseen.cargo_build_error(crates=140)
    assert sum(line.startswith("   Compiling ") for line in text.split("\n")) >= 100
    assert detect_kind(text) != "git-status"
    result = compress(text, budget_tokens="auto", exit_code=1)
    shown = _shown(result.text)
    assert "error[E0308]: mismatched types" in shown and "  --> src/main.rs:42:23" in shown
    assert not [line for line in must if line not in shown]
    # Even when told it is a git status, the error and its location survive.
    forced = _shown(compress(text, kind="git-status", budget_tokens="auto", exit_code=1).text)
    assert "error[E0308]: mismatched types" in forced and "  --> src/main.rs:42:23" in forced


def test_a_reek_report_keeps_every_warning_and_its_total():
    text, must = unseen.reek_report()
    assert must[-1].endswith("total warnings")
    result = compress(text, budget_tokens="auto", exit_code=1)
    assert not [line for line in must if line not in _shown(result.text)]


def test_go_vet_findings_are_not_read_as_grep_matches():
    text, must = unseen.go_vet()
    assert detect_kind(text) != "grep"
    result = compress(text, budget_tokens=40, exit_code=1)
    assert not [line for line in must if line not in _shown(result.text)]


@pytest.mark.parametrize("name", sorted(unseen.UNSEEN))
def test_unseen_formats_keep_every_failure_location_and_total_with_defaults(name):
    text, must = unseen.UNSEEN[name]()
    result = compress(text, budget_tokens="auto", exit_code=1, pointer=POINTER)
    lost = [line for line in must if line not in _shown(result.text)]
    assert not lost, (result.kind, lost)
    # Nothing is made up: every line is a line of the input or a marker.
    original = set(normalize(text).split("\n"))
    assert all(line in original or LINE_MARKER_RE.match(line) for line in result.text.split("\n"))


@pytest.mark.parametrize("name", sorted(unseen.UNSEEN))
def test_unseen_formats_survive_their_own_kind_being_left_out(name):
    text, must = unseen.UNSEEN[name]()
    own = detect_kind(text)
    result = compress(text, budget_tokens="auto", exit_code=1, exclude_kinds={own})
    assert result.kind != own or own == "generic"
    lost = [line for line in must if line not in _shown(result.text)]
    assert not lost, (own, result.kind, lost)


def test_unseen_formats_shrink_by_three_quarters():
    before = after = 0
    for name, build in unseen.UNSEEN.items():
        if name in FINDINGS_ONLY:
            continue
        text, _ = build()
        result = compress(text, budget_tokens="auto", exit_code=1)
        before += result.original_tokens
        after += result.compressed_tokens
    # Every linter finding, every frame of a failure's stack (a 300-frame gdb backtrace among
    # them) and every line that says error, failed, cannot... is kept: 59% here, not 75%.
    assert after <= 0.45 * before, f"{1 - after / before:.1%} fewer tokens"


def test_warnings_are_kept_in_an_unknown_format():
    lines = [f"2026-11-30 08:00:{n % 60:02d} INFO processed shard {n} of 400" for n in range(300)]
    lines[120] = "2026-11-30 08:02:00 WARN disk usage at 91% on /var/lib/data"
    lines[200] = "  warning: config key 'retries' is deprecated; use 'retry.max'"
    lines.append("2 warnings")
    text = "\n".join(lines) + "\n"
    shown = _shown(compress(text, budget_tokens="auto").text)
    assert {lines[120], lines[200], "2 warnings"} <= shown


def test_the_item_list_under_a_counting_header_is_kept():
    lines = ["Checking 180 files..."] + [f"ok   lib/file_{n}.ex" for n in range(180)]
    lines += [
        "lib/shop/cart.ex -- 2 issues:",
        "  [14]: Pipe chain should start with a raw value",
        "  [31]: Function is too complex (12)",
        "",
    ]
    lines += ["Done."]
    text = "\n".join(lines) + "\n"
    shown = _shown(compress(text, budget_tokens="auto", exit_code=1).text)
    assert {
        "lib/shop/cart.ex -- 2 issues:",
        "  [14]: Pipe chain should start with a raw value",
        "  [31]: Function is too complex (12)",
    } <= shown


def test_a_failing_frame_in_the_projects_own_code_is_kept_after_library_frames():
    lines = [f"[{n:04d}] GET /api/items/{n} 200 {3 + n % 7}ms" for n in range(200)]
    lines += [
        "TypeError: Cannot read properties of undefined (reading 'price')",
        "    at sum (/app/node_modules/lodash/sum.js:12:9)",
        "    at cartTotal (/app/src/cart.js:41:17)",
        "    at handler (/app/src/routes/cart.js:9:12)",
    ]
    text = "\n".join(lines) + "\n"
    shown = _shown(compress(text, budget_tokens="auto", exit_code=1).text)
    assert "    at cartTotal (/app/src/cart.js:41:17)" in shown


def test_json_lines_with_a_failed_status_field_are_kept():
    events = [json.dumps({"time": f"08:00:{n % 60:02d}", "status": "ok", "step": n}) for n in range(300)]
    events[150] = json.dumps({"time": "08:02:30", "status": "failed", "step": 150, "error": "timeout"})
    text = "\n".join(events) + "\n"
    shown = _shown(compress(text, budget_tokens="auto").text)
    assert events[150] in shown


def test_commit_messages_that_mention_errors_stay_data():
    text, _ = samples.git_log(commits=60)
    text = text.replace("    Change number 30:", "    Fix error in the retry loop (FAILED builds on arm64):")
    assert "Fix error in the retry loop" in text
    result = compress(text, budget_tokens=120)
    assert result.kind == "git-log"
    assert "Fix error in the retry loop" not in result.text  # a message is not a failure of this command


def test_binary_bytes_are_recognised_by_signature_and_by_content():
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8
    assert sniff_binary(png) is not None and sniff_binary(png).guess == "PNG image"
    elf = b"\x7fELF\x02\x01\x01" + b"\x00" * 200
    assert "ELF" in sniff_binary(elf).guess
    noise = bytes((n * 7919) % 256 for n in range(4_000))
    assert sniff_binary(noise).guess == "unrecognised binary data"
    described = sniff_binary(noise).describe("out/abc")
    assert described.startswith("[... ") and described.endswith(" ...]") and "4,000 bytes" in described
    # Text with colours, tabs, non-ASCII letters and a cut multi-byte character is text.
    text = "\x1b[31mFAILED\x1b[0m\tcafé ✓ naïve\r\n".encode() * 200
    assert sniff_binary(text) is None
    assert sniff_binary(text[:-1] + "é".encode()[:1]) is None
    assert sniff_binary(b"MZ is a postcode area in the UK\n") is None


def test_auto_budget_aims_command_outputs_at_the_command_lines_default():
    text, must = samples.pytest_run(passing=300, failures=4)

    def count(s: str) -> int:
        return len(s) // 4

    auto = ToolOutputPolicy(auto_budget=True)
    run = prepare_output(text, ref=POINTER, trust="tool", exit_code=1, policy=auto, count_tokens=count)
    assert count(run.text) <= 0.7 * count(text)  # each failure keeps its header, > and E lines and location
    assert all(line in run.text.split("\n") for line in must)
    # A file read is not a command output: only budget_tokens and the cap bound it.
    source = "".join(f"def f_{i}(value):\n    return value * {i}\n\n" for i in range(200))
    assert prepare_output(source, ref=POINTER, trust="tool", exit_code=0, policy=auto, count_tokens=count).text == source
    # Sessions keep content by default: the aim is opt-in; the default filters only a test run's noise (none here).
    assert not ToolOutputPolicy().auto_budget
    plain = prepare_output(text, ref=POINTER, trust="tool", exit_code=1, policy=ToolOutputPolicy(), count_tokens=count)
    assert len(run.text) < len(plain.text) <= len(text)
    assert all(line in plain.text.split("\n") for line in must)
    bounded = ToolOutputPolicy(auto_budget=True, budget_tokens=80)
    tight = prepare_output(text, ref=POINTER, trust="tool", exit_code=1, policy=bounded, count_tokens=count)
    assert len(tight.text) <= len(run.text)


def _corpus_records() -> list[dict]:
    root = corpus_path("tool-outputs")
    return json.loads((root / "manifest.json").read_text()) if root is not None else []


FOLDER_KIND = {
    "dotnet": "build",
    "gradle": "build",
    "json-api": "json",
    "package-manager": "package-install",
    "rustc-build": "rustc",
    "search": "grep",
}


@pytest.mark.corpus
@pytest.mark.parametrize("record", _corpus_records() or [None], ids=lambda r: r["file"] if r else "corpus-absent")
def test_leave_one_kind_out_keeps_every_must_line(tool_outputs_dir, record):
    # Detection may not choose the sample's own kind: what an unseen tool would get.
    if record is None or not record["must_file"]:
        pytest.skip("no must-line sidecar")
    text = (tool_outputs_dir / record["file"]).read_text(encoding="utf-8")
    must = [normalize(line) for line in (tool_outputs_dir / record["must_file"]).read_text(encoding="utf-8").split("\n") if line]
    own = FOLDER_KIND.get(record["kind"], record["kind"])
    exit_code = 1 if record["has_error_signal"] else None
    result = compress(text, budget_tokens="auto", exit_code=exit_code, exclude_kinds={own})
    assert result.kind != own
    lost = [line for line in must if line not in _shown(result.text)]
    assert not lost, (result.kind, lost)


@pytest.mark.corpus
def test_default_settings_cut_the_shared_corpus_by_three_quarters(tool_outputs_dir):
    before = after = 0
    for record in _corpus_records():
        text = (tool_outputs_dir / record["file"]).read_text(encoding="utf-8")
        result = compress(text, budget_tokens="auto", exit_code=1 if record["has_error_signal"] else None)
        before += result.original_tokens
        after += result.compressed_tokens
    assert after <= 0.25 * before


def test_letters_that_grow_when_lowered_do_not_shift_which_lines_are_read():
    # "İ".lower() is two characters: line offsets must come from the lowered lines.
    lines = [f"İstanbul şube {n}: İİİİİİİİ senkron tamam" for n in range(200)]
    lines[150] = "İstanbul şube 150: İİİİİİİİ senkron FAILED (replica-2 refused)"
    text = "\n".join(lines) + "\n"
    assert lines[150] in _shown(compress(text, budget_tokens="auto").text)


def test_the_first_frame_in_project_code_is_kept_after_framework_frames():
    lines = [f"[INFO] Running com.shop.Test{n}" for n in range(150)]
    lines += [
        "org.opentest4j.AssertionFailedError: expected: <119.00> but was: <100.00>",
        "\tat org.junit.jupiter.api.AssertionFailureBuilder.build(AssertionFailureBuilder.java:151)",
        "\tat org.junit.jupiter.api.AssertEquals.assertEquals(AssertEquals.java:197)",
        "\tat com.shop.orders.PricingTest.appliesVat(PricingTest.java:33)",
        "\tat java.base/java.lang.reflect.Method.invoke(Method.java:580)",
        *[f"\tat org.junit.platform.engine.support.Node{n}.execute(Node{n}.java:{100 + n})" for n in range(8)],
    ]
    text = "\n".join(lines) + "\n"
    shown = _shown(compress(text, kind="generic", budget_tokens=60, exit_code=1).text)
    assert "\tat com.shop.orders.PricingTest.appliesVat(PricingTest.java:33)" in shown


def test_pre_commit_hook_verdicts_are_not_read_as_file_headers():
    lines = [f"hook {n:02d}..................................................................Passed" for n in range(12)]
    lines += [
        "black....................................................................Failed",
        "- hook id: black",
        "- files were modified by this hook",
        "",
        "reformatted src/app.py",
        "1 file reformatted, 40 files left unchanged.",
        "",
        "flake8...................................................................Failed",
        "- hook id: flake8",
        "- exit code: 1",
        "",
        "src/app.py:12:1: F401 'os' imported but unused",
        *[f"src/m{n}.py:1:80: E501 line too long (88 > 79 characters)" for n in range(30)],
    ]
    text = "\n".join(lines) + "\n"
    shown = _shown(compress(text, budget_tokens="auto", exit_code=1).text)
    assert {lines[12], lines[17], lines[19], "src/app.py:12:1: F401 'os' imported but unused"} <= shown


def test_locations_behind_a_url_scheme_and_kotlin_severity_letters_are_kept():
    words = ["resolve", "fetch", "unpack", "link", "index", "verify", "cache", "stage", "copy", "sign", "pack"]
    chatter = [f"{words[n % len(words)]} shard {n} of 400 in {n % 9} ms" for n in range(400)]
    lines = [
        *chatter[:160],
        "e: file:///src/app/src/main/kotlin/shop/Cart.kt:42:13 Unresolved reference: totl",
        *chatter[160:300],
        "     AssertionError: Timed out retrying after 4000ms",
        "      at Context.eval (webpack://shop/./cypress/e2e/checkout.cy.ts:31:8)",
        *chatter[300:],
    ]
    text = "\n".join(lines) + "\n"
    shown = _shown(compress(text, kind="generic", budget_tokens="auto", exit_code=1).text)
    assert "e: file:///src/app/src/main/kotlin/shop/Cart.kt:42:13 Unresolved reference: totl" in shown
    assert "      at Context.eval (webpack://shop/./cypress/e2e/checkout.cy.ts:31:8)" in shown


def test_the_compilers_tally_behind_a_maven_info_tag_is_kept():
    # javac's count of errors is printed as an [INFO] line, among lines that are only grouped.
    lines = [f"[INFO] Copying {n} resources from src/main/resources/mod{n} to target/classes/mod{n}" for n in range(80)]
    lines += [
        "[INFO] --- maven-compiler-plugin:3.13.0:compile (default-compile) @ shop ---",
        "[INFO] Compiling 13 source files with javac [debug target 17] to target/classes",
        "[INFO] -------------------------------------------------------------",
        "[ERROR] COMPILATION ERROR : ",
        "[INFO] -------------------------------------------------------------",
        *[f"[ERROR] /srv/shop/src/main/java/com/shop/Cart.java:[{n},21] cannot find symbol" for n in range(10, 40)],
        "[INFO] 30 errors ",
        "[INFO] -------------------------------------------------------------",
        "[INFO] BUILD FAILURE",
        "[INFO] Total time:  12.811 s",
        "[INFO] Finished at: 2026-11-30T16:55:55Z",
        "[ERROR] Failed to execute goal org.apache.maven.plugins:maven-compiler-plugin:3.13.0:compile on project shop",
        "[ERROR] -> [Help 1]",
        "[ERROR] Re-run Maven using the -X switch to enable full debug logging.",
    ]
    text = "\n".join(lines) + "\n"
    result = compress(text, budget_tokens="auto", exit_code=1)
    assert result.kind == "build"
    assert "[INFO] 30 errors " in _shown(result.text)


def test_a_few_nul_bytes_leave_text_text_and_binaries_stay_binary():
    text = "".join(f"tests/test_names.py::test_case_{n} PASSED\n" for n in range(200)).encode()
    with_nuls = text.replace(b"test_case_7 ", b"test_case_7[\x00] ").replace(b"test_case_9 ", b"test_case_9[\x00\x00] ")
    assert sniff_binary(with_nuls) is None
    assert sniff_binary(b"name\x00with a nul\n") is None
    # UTF-16 text without a byte-order mark is a NUL every other byte: not text to print.
    assert sniff_binary("FAILED tests/test_x.py::test_y\n".encode("utf-16-le") * 40) is not None
    # Records packed with NULs, an ELF object and an image keep being described.
    assert sniff_binary(b"rec\x00\x00\x00\x01" * 500) is not None
    assert "ELF" in sniff_binary(b"\x7fELF\x02\x01\x01" + b"\x00" * 200).guess
    assert sniff_binary(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8).guess == "PNG image"


def test_stray_controls_are_escaped_and_the_terminals_own_left_alone():
    assert escape_controls("a\x00b\x07c\x7f") == "a\\x00b\\x07c\\x7f"
    kept = "tab\tnew\ncr\rff\x0cbs\x08esc\x1b[31m"
    assert escape_controls(kept) is kept
