"""Every sample of the shared tool-output corpus, with and without a 500-token budget.

Must lines are compared in display form (ANSI colour codes stripped, as the
compressor strips them): the corpus README allows a compressor to strip colour or
keep it, and the stack-trace sidecars list the coloured and plain spellings of the
same exception lines.
"""

from __future__ import annotations

import json
from functools import cache

import pytest

from contextwright.testing.corpus import corpus_path, missing_reason
from contextwright.tool_outputs.compressors import compress, detect_kind, normalize

pytestmark = pytest.mark.corpus

BUDGET = 500
FOLDER_KIND = {
    "build": "build",
    "cargo-test": "cargo-test",
    "dir-listing": "dir-listing",
    "dotnet": "build",
    "git-blame": "git-blame",
    "git-diff": "git-diff",
    "git-log": "git-log",
    "go-test": "go-test",
    "gradle": "build",
    "jest": "jest",
    "json-api": "json",
    "lint": "lint",
    "package-manager": "package-install",
    "process-list": "process-list",
    "pytest": "pytest",
    "rustc-build": "rustc",
    "scala-test": "scala-test",
    "search": "grep",
    "stack-trace": "stack-trace",
    "typecheck": "typecheck",
}


def _records() -> list[dict]:
    root = corpus_path("tool-outputs")
    if root is None:
        return []
    return json.loads((root / "manifest.json").read_text())


RECORDS = _records()


@cache
def _counter():
    pytest.importorskip("tiktoken")
    pytest.importorskip("bpe_openai")
    from contextwright.budget._tokenizers import exact_token_counter

    return exact_token_counter("o200k_base")


def _sample(record: dict) -> tuple[str, list[str]]:
    root = corpus_path("tool-outputs")
    if root is None:
        pytest.skip(missing_reason("tool-outputs"))
    text = (root / record["file"]).read_text(encoding="utf-8")
    must: list[str] = []
    if record["must_file"]:
        raw = (root / record["must_file"]).read_text(encoding="utf-8")
        must = [normalize(line) for line in raw.split("\n") if line]
    return text, must


def _ids(records: list[dict]) -> list[str]:
    return [record["file"] for record in records]


def test_corpus_is_present_or_skipped():
    if corpus_path("tool-outputs") is None:
        pytest.skip(missing_reason("tool-outputs"))
    assert RECORDS, "manifest.json lists no samples"


@pytest.mark.parametrize("record", RECORDS, ids=_ids(RECORDS))
def test_kind_is_detected(record):
    text, _ = _sample(record)
    assert detect_kind(text) == FOLDER_KIND[record["kind"]]


@pytest.mark.parametrize("budget", [None, BUDGET], ids=["no-budget", f"{BUDGET}-tokens"])
@pytest.mark.parametrize("record", RECORDS, ids=_ids(RECORDS))
def test_must_lines_survive_and_output_never_grows(record, budget):
    text, must = _sample(record)
    count = _counter()
    result = compress(text, budget_tokens=budget, count_tokens=count)
    shown = set(normalize(result.text).split("\n"))
    lost = [line for line in must if line not in shown]
    assert not lost, lost
    assert len(result.text) <= len(text)
    assert result.compressed_tokens <= result.original_tokens
    assert result.compressed_tokens == count(result.text)
    # Reruns give the same bytes.
    assert compress(text, budget_tokens=budget, count_tokens=count) == result
    if budget is not None and not result.over_budget:
        assert result.compressed_tokens <= budget


def test_corpus_totals_shrink_under_the_budget():
    if not RECORDS:
        pytest.skip(missing_reason("tool-outputs"))
    count = _counter()
    before = after = 0
    for record in RECORDS:
        text, _ = _sample(record)
        result = compress(text, budget_tokens=BUDGET, count_tokens=count)
        before += result.original_tokens
        after += result.compressed_tokens
    # The corpus is dominated by large listings and logs; a budgeted pass must cut it by far.
    assert after < before / 10
