"""Exact token counts for OpenAI encodings, offline ([tiktoken] extra).

tiktoken downloads its BPE rank files on first use, which fails without a network.
The ``bpe-openai`` wheel ships the same rank files (gzipped); their SHA-256 equals
the hash tiktoken expects, which is checked here before use. tiktoken's own encoding
constructors (regex, special tokens) are reused so nothing is copied by hand: each
runs as a private copy whose rank loader returns the verified local ranks, so no
module global is ever patched and other threads see tiktoken untouched.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import threading
import types
from collections.abc import Callable
from importlib import resources
from typing import Any

from contextwright._optional import require

# Encodings available offline, with the SHA-256 of the uncompressed rank file that
# tiktoken's registry (tiktoken_ext/openai_public.py) pins for each.
_EXPECTED_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}

OFFLINE_ENCODINGS: tuple[str, ...] = tuple(sorted(_EXPECTED_SHA256))

_BUILT: dict[str, Any] = {}
_BUILDING = threading.Lock()  # one build per encoding, however many threads ask at once


def encoding(name: str = "o200k_base") -> Any:
    """Return a ``tiktoken.Encoding`` for ``name``, built once without any network access."""
    if name not in _EXPECTED_SHA256:
        raise ValueError(f"no offline ranks for encoding {name!r}; choose one of {OFFLINE_ENCODINGS}")
    built = _BUILT.get(name)
    if built is None:
        with _BUILDING:
            built = _BUILT.get(name)
            if built is None:
                built = _BUILT[name] = _build(name)
    return built


def _build(name: str) -> Any:
    tiktoken = require("tiktoken", extra="tiktoken", feature="exact token counting")
    require("bpe_openai", extra="tiktoken", feature="offline tokenizer ranks")
    openai_public = require("tiktoken_ext.openai_public", extra="tiktoken", feature="exact token counting")

    ranks = _load_ranks(name)
    registry_constructor = getattr(openai_public, name)
    # The registry constructor calls load_tiktoken_bpe(url, expected_hash=...). Run a copy
    # of it whose globals name our loader instead, so the module itself stays as it is.
    scope = {**vars(openai_public), "load_tiktoken_bpe": lambda *_args, **_kwargs: ranks}
    constructor = types.FunctionType(registry_constructor.__code__, scope, registry_constructor.__name__)
    spec = constructor()
    return tiktoken.Encoding(
        name=spec["name"],
        pat_str=spec["pat_str"],
        mergeable_ranks=spec["mergeable_ranks"],
        special_tokens=spec["special_tokens"],
    )


def exact_token_counter(name: str = "o200k_base") -> Callable[[str], int]:
    """Return ``text -> token count`` for the encoding; special-token text counts as plain text."""
    enc = encoding(name)

    def count(text: str) -> int:
        return len(enc.encode(text, disallowed_special=()))

    return count


def _load_ranks(name: str) -> dict[bytes, int]:
    blob = resources.files("bpe_openai.data").joinpath(f"{name}.tiktoken.gz").read_bytes()
    raw = gzip.decompress(blob)
    digest = hashlib.sha256(raw).hexdigest()
    if digest != _EXPECTED_SHA256[name]:
        raise ValueError(
            f"{name} ranks shipped by bpe-openai have sha256 {digest}, expected {_EXPECTED_SHA256[name]}; refusing to use them"
        )
    ranks: dict[bytes, int] = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks
