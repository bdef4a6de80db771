"""Compression as the command line runs it (``budget_tokens="auto"``, ``exit_code=1``, no kind), for tests."""

from __future__ import annotations

from contextwright.tool_outputs.compressors import compress, normalize


def shown(text: str) -> set[str]:
    """The lines the compressed output shows, trailing spaces dropped."""
    result = compress(text, budget_tokens="auto", exit_code=1)
    return {line.rstrip() for line in normalize(result.text).splitlines()}


def reduction(text: str) -> float:
    """The share of tokens the compression took away."""
    result = compress(text, budget_tokens="auto", exit_code=1)
    return 1 - result.compressed_tokens / result.original_tokens
