"""The token floor never counts more than o200k does, so a marker it places covers at least what it says."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextwright.providers.token_floor import token_floor
from contextwright.testing.corpus import corpus_path


@pytest.fixture(scope="module")
def o200k():
    pytest.importorskip("tiktoken", reason="exact token counts need the tiktoken extra")
    pytest.importorskip("bpe_openai", reason="exact token counts need the tiktoken extra")
    from contextwright.budget._tokenizers import exact_token_counter

    return exact_token_counter("o200k_base")


def test_pieces_that_tokenizers_never_merge():
    assert token_floor("") == 0
    assert token_floor("hello world") == 2
    assert token_floor("don't stop") == 2  # the contraction stays in its word's pre-token
    assert token_floor("x1234567") == 4  # digits split from letters, three at a time
    assert token_floor("foo_bar.baz(qux)") == 4
    assert token_floor("café au lait") == 3
    assert token_floor("a b c d e f", enough=3) == 3  # counting stops once enough is reached


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=300))
def test_never_above_o200k_on_any_text(o200k, text):
    assert token_floor(text) <= o200k(text)


def test_never_above_o200k_on_the_shared_corpus(o200k):
    roots = [p for p in (corpus_path("traces"), corpus_path("tool-outputs")) if p is not None]
    if not roots:
        pytest.skip("the shared corpus is not available")
    chunks = 0
    for root in roots:
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            text = path.read_text(encoding="utf-8", errors="replace")
            for start in range(0, min(len(text), 60_000), 3_000):
                chunk = text[start : start + 3_000]
                assert token_floor(chunk) <= o200k(chunk), (path.name, start)
                chunks += 1
    assert chunks > 100
