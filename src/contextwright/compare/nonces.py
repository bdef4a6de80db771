"""Envelope secrets for reproducible runs (replay, demo, comparisons), derived from their own inputs.

A store normally draws a random secret, so nobody can predict its envelope nonces.
Offline runs should instead give the same bytes for the same input: their secret
is a hash of the whole input (transcript bytes, or the demo's settings) and a seed.
There is no public constant: predicting a nonce takes the whole input, which the
author of one message or tool output inside it does not control.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable

from contextwright.importers.model import Transcript

__all__ = ["reproducible_secret", "transcript_digest"]


def reproducible_secret(kind: str, digests: Iterable[str], *, seed: int = 0) -> bytes:
    """A 32-byte secret from a run kind, the digests of its inputs and a seed."""
    h = hashlib.sha256(f"contextwright {kind} envelope secret\0seed={seed}\0".encode())
    for digest in digests:
        h.update(digest.encode() + b"\0")
    return h.digest()


def transcript_digest(transcript: Transcript) -> str:
    """SHA-256 of a transcript's content (everything but the path it was read from)."""
    plain = dataclasses.asdict(transcript)
    plain.pop("source", None)
    text = json.dumps(plain, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
