"""``keep_content``: nothing of the content goes, only what carries none and the noise of noisy kinds.

Over the shared tool outputs, every must line (in display form, as
``test_compress_corpus`` compares them) is kept at the command line's default and at
every budget; and for the kinds that print no noise, every line of content is kept.
"""

from __future__ import annotations

import json

import pytest

from contextwright.errors import UsageError
from contextwright.testing.corpus import corpus_path, missing_reason
from contextwright.tool_outputs.compressors import calibrated_token_count, compress, normalize
from contextwright.tool_outputs.compressors.pipeline import NOISY_KINDS

SETTINGS = ("keep", "auto", 100, 500, 2_000)


def _records() -> list[dict]:
    root = corpus_path("tool-outputs")
    return [] if root is None else json.loads((root / "manifest.json").read_text())


RECORDS = _records()


def _run(text: str, setting: str | int, *, failed: bool):
    exit_code = 1 if failed else None
    if setting == "keep":
        return compress(text, keep_content=True, exit_code=exit_code, count_tokens=calibrated_token_count)
    return compress(text, budget_tokens=setting, exit_code=exit_code, count_tokens=calibrated_token_count)


def _sample(record: dict) -> tuple[str, list[str]]:
    root = corpus_path("tool-outputs")
    if root is None:
        pytest.skip(missing_reason("tool-outputs"))
    text = (root / record["file"]).read_text(encoding="utf-8")
    must = []
    if record["must_file"]:
        must = [normalize(line) for line in (root / record["must_file"]).read_text(encoding="utf-8").split("\n") if line]
    return text, must


@pytest.mark.corpus
@pytest.mark.skipif(not RECORDS, reason=missing_reason("tool-outputs"))
@pytest.mark.parametrize("setting", SETTINGS, ids=str)
def test_every_failure_line_is_kept_at_every_setting(setting):
    lost = {}
    kept = total = 0
    for record in RECORDS:
        text, must = _sample(record)
        if not must:
            continue
        shown = set(normalize(_run(text, setting, failed=record["has_error_signal"]).text).split("\n"))
        missing = [line for line in must if line not in shown]
        total += len(must)
        kept += len(must) - len(missing)
        if missing:
            lost[record["file"]] = missing[:3]
    assert total > 300
    assert not lost, f"{kept}/{total} must lines kept at {setting}; lost: {lost}"


@pytest.mark.corpus
@pytest.mark.skipif(not RECORDS, reason=missing_reason("tool-outputs"))
def test_kinds_without_noise_keep_every_line_of_content():
    checked = 0
    for record in RECORDS:
        text, _ = _sample(record)
        result = _run(text, "keep", failed=record["has_error_signal"])
        assert len(result.text) <= len(text)
        if result.kind in NOISY_KINDS:
            continue
        checked += 1
        shown = {line.rstrip() for line in normalize(result.text).split("\n")}
        content = {line.rstrip() for line in normalize(text).split("\n")}
        assert not content - shown, (record["file"], sorted(content - shown)[:3])
    assert checked >= 30


def test_keep_content_folds_what_carries_nothing():
    text = "".join(f"\x1b[1mstep {n}\x1b[0m   \n" + "waiting for lock\n" * 30 for n in range(20))
    result = compress(text, kind="generic", keep_content=True)
    assert "\x1b" not in result.text and "   \n" not in result.text
    assert result.text.count("waiting for lock\n") == 20
    assert result.text.count("previous line repeated 29 more times") == 20
    assert {f"step {n}" for n in range(20)} <= set(result.text.split("\n"))


def test_keep_content_leaves_json_and_short_outputs_whole():
    document = json.dumps({"items": [{"id": n, "state": "open"} for n in range(200)]}, indent=2)
    assert compress(document, kind="json", keep_content=True).text == document
    assert compress("ok\n", keep_content=True).text == "ok\n"


def test_keep_content_takes_no_budget():
    with pytest.raises(UsageError, match="keep_content"):
        compress("x\n" * 400, keep_content=True, budget_tokens=100)
