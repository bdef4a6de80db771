"""Offline exact tokenizers: verified ranks, built once, with tiktoken's modules left alone."""

from __future__ import annotations

import threading
import types
from typing import Any

import pytest

pytest.importorskip("tiktoken", reason="exact token counts need the tiktoken extra")
pytest.importorskip("bpe_openai", reason="offline ranks need the tiktoken extra")

import tiktoken_ext.openai_public as openai_public

from contextwright.budget import _tokenizers as tokenizers


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty encoding memo, restored afterwards."""
    monkeypatch.setattr(tokenizers, "_BUILT", {})


def test_known_token_ids() -> None:
    # Reference ids from tiktoken's own documentation and tests.
    assert tokenizers.encoding("cl100k_base").encode("hello world") == [15339, 1917]
    assert tokenizers.exact_token_counter("o200k_base")("hello world") == 2


def test_building_writes_no_module_global(fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    writes: list[str] = []

    class Watched(types.ModuleType):
        def __setattr__(self, name: str, value: Any) -> None:
            writes.append(name)
            super().__setattr__(name, value)

    monkeypatch.setattr(openai_public, "__class__", Watched)
    writes.clear()
    enc = tokenizers.encoding("o200k_base")
    assert enc.encode("hello world") == tokenizers.encoding("o200k_base").encode("hello world")
    # Check: the registry module was never written to while building.
    assert writes == []


def test_concurrent_first_calls_build_once(fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    builds: list[str] = []
    real = tokenizers._build

    def counting(name: str) -> Any:
        builds.append(name)
        return real(name)

    monkeypatch.setattr(tokenizers, "_build", counting)
    start = threading.Barrier(8)
    results: list[Any] = []

    def ask() -> None:
        start.wait()
        results.append(tokenizers.encoding("cl100k_base"))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert builds == ["cl100k_base"]
    assert len(results) == 8 and all(r is results[0] for r in results)


def test_unknown_encoding_is_refused() -> None:
    with pytest.raises(ValueError, match="no offline ranks"):
        tokenizers.encoding("p50k_base")
