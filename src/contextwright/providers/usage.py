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
the OpenAI rows of :mod:`contextwright.providers.pricing`); the vendor's own split by
retention (``ttl_30m_tokens`` / ``ttl_12h_tokens``) is kept in ``provider_details``.

Parsers take a plain mapping, an SDK object (anything with ``model_dump()``), or a
whole response that carries a ``usage`` member.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from contextwright.errors import UsageError
from contextwright.providers.errors import MalformedProviderResponse

__all__ = [
    "Usage",
    "parse_anthropic_usage",
    "parse_openai_chat_usage",
    "parse_openai_responses_usage",
]


_COUNTS = (
    "input_tokens",
    "cache_read_tokens",
    "cache_write_5m_tokens",
    "cache_write_1h_tokens",
    "output_tokens",
    "reasoning_output_tokens",
)


@dataclass(frozen=True, kw_only=True, slots=True)
class Usage:
    """Token usage of one model request, split the same way for every provider."""

    input_tokens: int = 0
    """Input tokens neither read from nor written to a cache (billed at the base input rate)."""
    cache_read_tokens: int = 0
    """Input tokens served from a prompt cache."""
    cache_write_5m_tokens: int = 0
    """Input tokens written to a short-lived cache entry (Anthropic 5m; every OpenAI write)."""
    cache_write_1h_tokens: int = 0
    """Input tokens written to an Anthropic 1-hour cache entry."""
    output_tokens: int = 0
    """Generated tokens, reasoning/thinking included (what the provider bills as output)."""
    reasoning_output_tokens: int = 0
    """The part of :attr:`output_tokens` spent on reasoning or thinking, where the provider reports it."""
    provider_details: dict[str, Any] = field(default_factory=dict)
    """Vendor extras that have no common meaning (service tier, reasoning tokens, ...)."""

    def __post_init__(self) -> None:
        for name in _COUNTS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise UsageError(f"Usage.{name} must be a non-negative integer, got {value!r}", field=name)
        if self.reasoning_output_tokens > self.output_tokens:
            raise UsageError(
                f"Usage.reasoning_output_tokens ({self.reasoning_output_tokens}) is part of the output "
                f"and cannot exceed output_tokens ({self.output_tokens})",
                field="reasoning_output_tokens",
            )

    @property
    def cache_write_tokens(self) -> int:
        """All cache writes, whatever their TTL."""
        return self.cache_write_5m_tokens + self.cache_write_1h_tokens

    @property
    def total_input(self) -> int:
        """The whole prompt: uncached + cache read + cache writes."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    @property
    def cache_read_share(self) -> float:
        """Fraction of the prompt read from cache (0.0 for an empty prompt)."""
        total = self.total_input
        return self.cache_read_tokens / total if total else 0.0

    def __add__(self, other: Usage) -> Usage:
        """Sum two usages field by field; vendor details do not add up and are dropped."""
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_5m_tokens=self.cache_write_5m_tokens + other.cache_write_5m_tokens,
            cache_write_1h_tokens=self.cache_write_1h_tokens + other.cache_write_1h_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            reasoning_output_tokens=self.reasoning_output_tokens + other.reasoning_output_tokens,
        )


def parse_anthropic_usage(raw: Any) -> Usage:
    """Parse an Anthropic Messages ``usage`` (or a whole message) into :class:`Usage`.

    Reads the TTL split in ``cache_creation`` when present; the older shape with only
    ``cache_creation_input_tokens`` predates 1-hour entries being reported, so it is
    counted as 5-minute writes.
    """
    usage = _usage_mapping(raw, provider="anthropic", marker="input_tokens")
    input_tokens = _int(usage, "input_tokens", provider="anthropic", required=True)
    read = _int(usage, "cache_read_input_tokens", provider="anthropic")
    written_total = _int(usage, "cache_creation_input_tokens", provider="anthropic")
    split = usage.get("cache_creation")
    details: dict[str, Any] = {}
    if isinstance(split, Mapping):
        # https://github.com/anthropics/anthropic-sdk-python/blob/main/src/anthropic/types/usage.py:
        # cache_creation_input_tokens is the sum of the two TTL buckets.
        write_5m = _int(split, "ephemeral_5m_input_tokens", provider="anthropic")
        write_1h = _int(split, "ephemeral_1h_input_tokens", provider="anthropic")
        if written_total and written_total != write_5m + write_1h:
            details["cache_creation_input_tokens"] = written_total
    else:
        write_5m, write_1h = written_total, 0
    consumed = {
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
        "cache_creation",
    }
    details.update(_extras(usage, consumed))
    return Usage(
        input_tokens=input_tokens,
        cache_read_tokens=read,
        cache_write_5m_tokens=write_5m,
        cache_write_1h_tokens=write_1h,
        output_tokens=_int(usage, "output_tokens", provider="anthropic"),
        # The SDK's own tracing reads usage.output_tokens_details.thinking_tokens (anthropic/_tracing.py).
        reasoning_output_tokens=_nested_int(usage, "output_tokens_details", "thinking_tokens", provider="anthropic"),
        provider_details=details,
    )


def parse_openai_chat_usage(raw: Any) -> Usage:
    """Parse an OpenAI Chat Completions ``usage`` (or a whole completion) into :class:`Usage`."""
    usage = _usage_mapping(raw, provider="openai", marker="prompt_tokens")
    prompt = _int(usage, "prompt_tokens", provider="openai", required=True)
    details_in = usage.get("prompt_tokens_details")
    details_in = dict(details_in) if isinstance(details_in, Mapping) else {}
    # LiteLLM also reports an Anthropic model's reads and writes in Anthropic's own top-level
    # names; they stand in when the OpenAI-shaped details leave them out.
    for openai_name, anthropic_name in (
        ("cached_tokens", "cache_read_input_tokens"),
        ("cache_write_tokens", "cache_creation_input_tokens"),
    ):
        if details_in.get(openai_name) is None and usage.get(anthropic_name) is not None:
            details_in[openai_name] = usage[anthropic_name]
    return _openai_usage(
        prompt=prompt,
        input_details=details_in,
        output=_int(usage, "completion_tokens", provider="openai"),
        reasoning=_nested_int(usage, "completion_tokens_details", "reasoning_tokens", provider="openai"),
        extras=_extras(usage, {"prompt_tokens", "completion_tokens", "prompt_tokens_details"}),
    )


def parse_openai_responses_usage(raw: Any) -> Usage:
    """Parse an OpenAI Responses ``usage`` (or a whole response) into :class:`Usage`."""
    usage = _usage_mapping(raw, provider="openai", marker="input_tokens")
    prompt = _int(usage, "input_tokens", provider="openai", required=True)
    details_in = usage.get("input_tokens_details")
    details_in = details_in if isinstance(details_in, Mapping) else {}
    return _openai_usage(
        prompt=prompt,
        input_details=details_in,
        output=_int(usage, "output_tokens", provider="openai"),
        reasoning=_nested_int(usage, "output_tokens_details", "reasoning_tokens", provider="openai"),
        extras=_extras(usage, {"input_tokens", "output_tokens", "input_tokens_details"}),
    )


def _openai_usage(*, prompt: int, input_details: Mapping[str, Any], output: int, reasoning: int, extras: dict[str, Any]) -> Usage:
    # https://developers.openai.com/api/docs/guides/prompt-caching: the prompt count
    # includes cached and written tokens; older models report no writes (None -> 0).
    cached = _int(input_details, "cached_tokens", provider="openai")
    written = _int(input_details, "cache_write_tokens", provider="openai")
    if cached + written > prompt:
        raise _malformed(
            "openai",
            f"cached ({cached}) + cache_write ({written}) tokens exceed the prompt ({prompt})",
        )
    written_1h = _litellm_1h_writes(input_details, written)
    details = dict(extras)
    details.update(
        _extras(
            input_details,
            {"cached_tokens", "cache_write_tokens", "cache_write_tokens_details", "cache_creation_token_details"},
            prefix="input_",
        )
    )
    by_ttl = input_details.get("cache_write_tokens_details")
    if isinstance(by_ttl, Mapping):
        for key, value in by_ttl.items():
            if value is not None:
                details[f"cache_write_{key}"] = value
    return Usage(
        input_tokens=prompt - cached - written,
        cache_read_tokens=cached,
        cache_write_5m_tokens=written - written_1h,
        cache_write_1h_tokens=written_1h,
        output_tokens=output,
        reasoning_output_tokens=reasoning,
        provider_details=details,
    )


def _litellm_1h_writes(input_details: Mapping[str, Any], written: int) -> int:
    """The 1-hour part of the writes, from LiteLLM's Anthropic TTL split (0 when absent)."""
    split = input_details.get("cache_creation_token_details")
    if not isinstance(split, Mapping):
        return 0
    written_1h = _int(split, "ephemeral_1h_input_tokens", provider="litellm")
    if written_1h > written:
        raise _malformed("litellm", f"1-hour cache writes ({written_1h}) exceed all cache writes ({written})")
    return written_1h


def _nested_int(data: Mapping[str, Any], key: str, inner: str, *, provider: str) -> int:
    """An integer one level down (``usage[key][inner]``), 0 when either level is absent."""
    nested = data.get(key)
    return _int(nested, inner, provider=provider) if isinstance(nested, Mapping) else 0


def _usage_mapping(raw: Any, *, provider: str, marker: str) -> Mapping[str, Any]:
    data = _as_mapping(raw)
    if data is None:
        raise _malformed(provider, f"usage must be a mapping or an SDK object, got {type(raw).__name__}")
    if marker not in data and "usage" in data:
        data = _as_mapping(data["usage"])
        if data is None:
            raise _malformed(provider, "the response has no usage")
    return data


def _as_mapping(raw: Any) -> Mapping[str, Any] | None:
    if isinstance(raw, Mapping):
        return raw
    dump = getattr(raw, "model_dump", None)
    if callable(dump):
        dumped = dump()
        return dumped if isinstance(dumped, Mapping) else None
    return None


def _int(data: Mapping[str, Any], key: str, *, provider: str, required: bool = False) -> int:
    value = data.get(key)
    if value is None:
        if required:
            raise _malformed(provider, f"usage has no {key!r}")
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _malformed(provider, f"usage field {key!r} must be a non-negative integer, got {value!r}")
    return value


def _extras(data: Mapping[str, Any], consumed: set[str], *, prefix: str = "") -> dict[str, Any]:
    return {f"{prefix}{key}": value for key, value in data.items() if key not in consumed and value is not None}


def _malformed(provider: str, problem: str) -> MalformedProviderResponse:
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
