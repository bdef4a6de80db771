"""One usage shape for every provider, and the parsers that normalise into it.

The providers disagree on what "input tokens" means, so :class:`Usage` keeps the
parts apart and never double counts:

* Anthropic's ``input_tokens`` already excludes cache reads and cache writes; the
  total prompt is ``input_tokens + cache_read_input_tokens + cache_creation_input_tokens``
  (https://platform.claude.com/docs/en/build-with-claude/prompt-caching).
* OpenAI's ``prompt_tokens`` (Chat Completions) and ``input_tokens`` (Responses)
  include the cached tokens and, on models that report them, the cache writes; the
  uncached part is ``input - cached - cache_write``
  (https://developers.openai.com/api/docs/guides/prompt-caching).

So :attr:`Usage.input_tokens` is always the uncached, unwritten remainder, and
:attr:`Usage.total_input` is always the whole prompt.

OpenAI bills every cache write at one rate whatever its retention, so OpenAI writes
go into :attr:`Usage.cache_write_5m_tokens` (the "ordinary write" slot, priced by
the OpenAI rows of the price table). :class:`Usage` is the one usage type
(:class:`contextwright.events.catalog.Usage`, re-exported here): what a wire parses is
what a ``model.response`` event records, so nothing copies usage field by field.
Vendor extras with no common meaning (service tier, the split of writes by retention)
are not kept: the log has no place for them.

Each wire parses its own usage (``WIRE.parse_usage`` of the modules in
:mod:`contextwright.providers.wires`) with the helpers here: a parser takes a plain
mapping, an SDK object (anything with ``model_dump()``), or a whole response that carries
its usage member.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contextwright.events.catalog import Usage
from contextwright.providers.errors import MalformedProviderResponse

__all__ = ["Usage", "as_mapping", "count", "malformed", "nested_count", "usage_mapping"]


def nested_count(data: Mapping[str, Any], key: str, inner: str, *, provider: str) -> int:
    """An integer one level down (``usage[key][inner]``), 0 when either level is absent."""
    nested = data.get(key)
    return count(nested, inner, provider=provider) if isinstance(nested, Mapping) else 0


def usage_mapping(raw: Any, *, provider: str, marker: str, member: str = "usage") -> Mapping[str, Any]:
    """The usage member of an answer (or ``raw`` itself when it holds ``marker``) as a mapping."""
    data = as_mapping(raw)
    if data is None:
        raise malformed(provider, f"usage must be a mapping or an SDK object, got {type(raw).__name__}")
    if marker not in data and member in data:
        data = as_mapping(data[member])
        if data is None:
            raise malformed(provider, "the response has no usage")
    return data


def as_mapping(raw: Any) -> Mapping[str, Any] | None:
    """``raw`` as a mapping: itself, or an SDK object's ``model_dump()``; None otherwise."""
    if isinstance(raw, Mapping):
        return raw
    dump = getattr(raw, "model_dump", None)
    if callable(dump):
        dumped = dump()
        return dumped if isinstance(dumped, Mapping) else None
    return None


def count(data: Mapping[str, Any], key: str, *, provider: str, required: bool = False) -> int:
    """A token count of a usage mapping: a non-negative integer, 0 when absent (unless required)."""
    value = data.get(key)
    if value is None:
        if required:
            raise malformed(provider, f"usage has no {key!r}")
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise malformed(provider, f"usage field {key!r} must be a non-negative integer, got {value!r}")
    return value


def malformed(provider: str, problem: str) -> MalformedProviderResponse:
    """The error for a usage of an unexpected shape."""
    return MalformedProviderResponse(
        f"{provider} usage: {problem}",
        provider=provider,
        status=None,
        error_type=None,
        code=None,
        provider_message=None,
        request_id=None,
        retryable=False,
    )
