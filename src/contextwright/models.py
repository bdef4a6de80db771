"""Resolved models: what the planner must know about the model a session talks to.

``anthropic("claude-sonnet-4-6")``, ``openai("gpt-5")`` and ``gemini("gemini-2.5-flash")``
look a model up in a small, dated table (window, output limit, caching rules, tokenizer) and
return a :class:`ResolvedModel`. Every field can be overridden. A model the table does not know
takes its window and output limit from LiteLLM's maintained model map when LiteLLM is
installed (:mod:`contextwright._model_map`), and is otherwise accepted when its window is
given. Router prefixes (``anthropic/claude-sonnet-4-6``) are looked up without the route;
the id is kept as written. Figures as published by the providers on 2026-08-21; see docs
for sources.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

from contextwright import _model_map
from contextwright.errors import UsageError

Provider = Literal["anthropic", "openai", "google"]

DEFAULT_OUTPUT_RESERVE = 16_384
"""Tokens kept free for the model's answer when the caller does not say."""


@dataclass(frozen=True, kw_only=True, slots=True)
class CacheCapabilities:
    """How a provider's prompt cache works for one model."""

    max_breakpoints: int
    """Explicit cache markers allowed per request (0 for automatic prefix caching)."""
    min_cacheable_tokens: int
    """Prefixes shorter than this are never cached."""
    ttls: tuple[str, ...] = ("5m",)
    supports_cache_key: bool = False
    """Whether requests can carry a routing key (OpenAI ``prompt_cache_key``)."""
    lookback_blocks: int = 0
    """How many blocks back a breakpoint searches for an earlier entry (Anthropic: 20)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ResolvedModel:
    """A model with everything the plan and the budget need."""

    id: str
    provider: Provider
    context_window: int
    max_output_tokens: int
    output_reserve: int
    cache: CacheCapabilities
    tokenizer: str | None = None
    """An exact offline encoding name (``o200k_base``), or None where none is public."""
    token_family: str = "o200k"
    """Calibration profile of the heuristic estimator for this model."""

    def __post_init__(self) -> None:
        if self.context_window <= 0 or self.output_reserve < 0:
            raise UsageError(f"model {self.id}: context window and output reserve must be positive")
        if self.output_reserve >= self.context_window:
            raise UsageError(
                f"model {self.id}: output reserve {self.output_reserve:,} leaves nothing of the "
                f"{self.context_window:,}-token window for input"
            )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values, for the plan event."""
        return {
            "id": self.id,
            "provider": self.provider,
            "context_window": self.context_window,
            "max_output_tokens": self.max_output_tokens,
            "output_reserve": self.output_reserve,
            "tokenizer": self.tokenizer,
            "token_family": self.token_family,
            "cache": {
                "max_breakpoints": self.cache.max_breakpoints,
                "min_cacheable_tokens": self.cache.min_cacheable_tokens,
                "ttls": list(self.cache.ttls),
                "supports_cache_key": self.cache.supports_cache_key,
                "lookback_blocks": self.cache.lookback_blocks,
            },
        }

    @classmethod
    def from_dict(cls, data: Any) -> ResolvedModel:
        """Inverse of :meth:`to_dict`."""
        cache = data["cache"]
        return cls(
            id=data["id"],
            provider=data["provider"],
            context_window=data["context_window"],
            max_output_tokens=data["max_output_tokens"],
            output_reserve=data["output_reserve"],
            tokenizer=data["tokenizer"],
            token_family=data["token_family"],
            cache=CacheCapabilities(
                max_breakpoints=cache["max_breakpoints"],
                min_cacheable_tokens=cache["min_cacheable_tokens"],
                ttls=tuple(cache["ttls"]),
                supports_cache_key=cache["supports_cache_key"],
                lookback_blocks=cache["lookback_blocks"],
            ),
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class _Known:
    window: int
    max_output: int
    min_cacheable: int
    token_family: str
    tokenizer: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


_ANTHROPIC_CACHE = dict(max_breakpoints=4, ttls=("5m", "1h"), lookback_blocks=20)
_OPENAI_CACHE = dict(max_breakpoints=0, ttls=("5m", "24h"), supports_cache_key=True)
# Gemini caches repeated prefixes implicitly (no marker); explicit caches live 1 hour by default.
_GEMINI_CACHE = dict(max_breakpoints=0, ttls=("1h",))

# Anthropic: windows and minimum cacheable lengths per model (provider docs, 2026-08-21).
# Claude 4.7 and newer use a tokenizer that yields noticeably more tokens per character.
ANTHROPIC_MODELS: dict[str, _Known] = {
    "claude-opus-5": _Known(window=1_000_000, max_output=128_000, min_cacheable=512, token_family="claude-4.7"),
    "claude-sonnet-5": _Known(window=1_000_000, max_output=64_000, min_cacheable=1_024, token_family="claude-4.7"),
    "claude-opus-4-8": _Known(window=1_000_000, max_output=128_000, min_cacheable=1_024, token_family="claude-4.7"),
    "claude-opus-4-7": _Known(window=1_000_000, max_output=128_000, min_cacheable=2_048, token_family="claude-4.7"),
    "claude-opus-4-6": _Known(window=1_000_000, max_output=128_000, min_cacheable=4_096, token_family="claude"),
    "claude-sonnet-4-6": _Known(window=1_000_000, max_output=64_000, min_cacheable=1_024, token_family="claude"),
    "claude-opus-4-5": _Known(window=200_000, max_output=64_000, min_cacheable=4_096, token_family="claude"),
    "claude-sonnet-4-5": _Known(window=200_000, max_output=64_000, min_cacheable=1_024, token_family="claude"),
    "claude-haiku-4-5": _Known(window=200_000, max_output=64_000, min_cacheable=4_096, token_family="claude"),
    "claude-opus-4-1": _Known(window=200_000, max_output=32_000, min_cacheable=1_024, token_family="claude"),
    "claude-opus-4": _Known(window=200_000, max_output=32_000, min_cacheable=1_024, token_family="claude"),
    "claude-sonnet-4": _Known(window=200_000, max_output=64_000, min_cacheable=1_024, token_family="claude"),
    "claude-3-5-haiku": _Known(window=200_000, max_output=8_192, min_cacheable=2_048, token_family="claude"),
    # Retired, but still in recorded logs that replay and import read.
    "claude-3-7-sonnet": _Known(window=200_000, max_output=64_000, min_cacheable=1_024, token_family="claude"),
    "claude-3-5-sonnet": _Known(window=200_000, max_output=8_192, min_cacheable=1_024, token_family="claude"),
    "claude-3-opus": _Known(window=200_000, max_output=4_096, min_cacheable=1_024, token_family="claude"),
    "claude-3-haiku": _Known(window=200_000, max_output=4_096, min_cacheable=2_048, token_family="claude"),
}

# OpenAI: automatic prefix caching from 1,024 tokens; windows from the model pages.
OPENAI_MODELS: dict[str, _Known] = {
    "gpt-5.5": _Known(window=1_050_000, max_output=128_000, min_cacheable=2_048, token_family="o200k", tokenizer="o200k_base"),
    "gpt-5.4": _Known(window=1_050_000, max_output=128_000, min_cacheable=1_024, token_family="o200k", tokenizer="o200k_base"),
    "gpt-5.1": _Known(window=400_000, max_output=128_000, min_cacheable=1_024, token_family="o200k", tokenizer="o200k_base"),
    "gpt-5": _Known(window=400_000, max_output=128_000, min_cacheable=1_024, token_family="o200k", tokenizer="o200k_base"),
    "gpt-5-mini": _Known(window=400_000, max_output=128_000, min_cacheable=1_024, token_family="o200k", tokenizer="o200k_base"),
    "gpt-5-nano": _Known(window=400_000, max_output=128_000, min_cacheable=1_024, token_family="o200k", tokenizer="o200k_base"),
    "gpt-5.2": _Known(window=400_000, max_output=128_000, min_cacheable=1_024, token_family="o200k", tokenizer="o200k_base"),
    "gpt-4.1": _Known(window=1_047_576, max_output=32_768, min_cacheable=1_024, token_family="o200k", tokenizer="o200k_base"),
    "gpt-4.1-mini": _Known(
        window=1_047_576, max_output=32_768, min_cacheable=1_024, token_family="o200k", tokenizer="o200k_base"
    ),
    "gpt-4.1-nano": _Known(
        window=1_047_576, max_output=32_768, min_cacheable=1_024, token_family="o200k", tokenizer="o200k_base"
    ),
    "gpt-4o": _Known(window=128_000, max_output=16_384, min_cacheable=1_024, token_family="o200k", tokenizer="o200k_base"),
    "gpt-4o-mini": _Known(window=128_000, max_output=16_384, min_cacheable=1_024, token_family="o200k", tokenizer="o200k_base"),
    "gpt-4-turbo": _Known(window=128_000, max_output=4_096, min_cacheable=1_024, token_family="cl100k", tokenizer="cl100k_base"),
    # Reasoning models of the o series.
    "o4-mini": _Known(window=200_000, max_output=100_000, min_cacheable=1_024, token_family="o200k", tokenizer="o200k_base"),
    "o3": _Known(window=200_000, max_output=100_000, min_cacheable=1_024, token_family="o200k", tokenizer="o200k_base"),
    "o3-mini": _Known(window=200_000, max_output=100_000, min_cacheable=1_024, token_family="o200k", tokenizer="o200k_base"),
    "o1": _Known(window=200_000, max_output=100_000, min_cacheable=1_024, token_family="o200k", tokenizer="o200k_base"),
    # Open-weight models, served behind OpenAI-compatible APIs; their tokenizer extends o200k.
    "gpt-oss-120b": _Known(window=131_072, max_output=131_072, min_cacheable=1_024, token_family="o200k", tokenizer="o200k_base"),
    "gpt-oss-20b": _Known(window=131_072, max_output=131_072, min_cacheable=1_024, token_family="o200k", tokenizer="o200k_base"),
}


# Implicit caching: the smallest prompt that can hit, per model family (longest prefix wins).
# research/provider-caching.md G2 (Gemini API caching page, mid-2026 version: 2.5 Flash and
# 2.5 Pro 2,048; Gemini 3.1 Pro Preview and 3.5-3.8 Flash 4,096; an earlier version: 3 Flash
# Preview 1,024, 3 Pro Preview 4,096). A model not listed takes the largest documented minimum.
GEMINI_MIN_CACHEABLE_TOKENS: Final[dict[str, int]] = {
    "gemini-2.5-flash": 2_048,
    "gemini-2.5-pro": 2_048,
    "gemini-3-flash": 1_024,
    "gemini-3-pro": 4_096,
    "gemini-3.1-pro": 4_096,
    "gemini-3.5-flash": 4_096,
    "gemini-3.6-flash": 4_096,
    "gemini-3.7-flash": 4_096,
    "gemini-3.8-flash": 4_096,
}
_GEMINI_DEFAULT_MIN_CACHEABLE: Final = 4_096


def gemini_min_cacheable_tokens(model: str) -> int:
    """The smallest prompt implicit caching reads for ``model`` (``models/`` and router prefixes ignored)."""
    bare = model.rsplit("/", 1)[-1].lower()
    for family in sorted(GEMINI_MIN_CACHEABLE_TOKENS, key=len, reverse=True):
        if bare == family or bare.startswith(family + "-"):
            return GEMINI_MIN_CACHEABLE_TOKENS[family]
    return _GEMINI_DEFAULT_MIN_CACHEABLE


# Google Gemini: input window and output limit from the model pages
# (https://ai.google.dev/gemini-api/docs/models: 1,048,576 input tokens, 65,536 output tokens for
# every model listed); the minimum prefix implicit caching reads from the table above.
# No offline tokenizer is public; the estimator's o200k profile stands in.
GEMINI_MODELS: dict[str, _Known] = {
    name: _Known(window=1_048_576, max_output=65_536, min_cacheable=gemini_min_cacheable_tokens(name), token_family="o200k")
    for name in (
        "gemini-2.5-pro",
        "gemini-2.5-flash",
        "gemini-2.5-flash-lite",
        "gemini-3-pro",
        "gemini-3-flash",
        "gemini-3.1-pro",
    )
}

_PROVIDER_NAMES = {"anthropic": "anthropic", "openai": "openai", "google": "google", "gemini": "google"}


def anthropic(model_id: str, **overrides: Any) -> ResolvedModel:
    """Resolve an Anthropic model id (dated ids such as ``claude-sonnet-4-5-20250929`` work)."""
    return _resolve("anthropic", model_id, ANTHROPIC_MODELS, _ANTHROPIC_CACHE, overrides)


def openai(model_id: str, **overrides: Any) -> ResolvedModel:
    """Resolve an OpenAI model id."""
    return _resolve("openai", model_id, OPENAI_MODELS, _OPENAI_CACHE, overrides)


def gemini(model_id: str, **overrides: Any) -> ResolvedModel:
    """Resolve a Google Gemini model id (``gemini-2.5-flash``; ``models/`` and preview suffixes work)."""
    return _resolve("google", model_id, GEMINI_MODELS, _GEMINI_CACHE, overrides)


google = gemini
"""The provider's own name for :func:`gemini`."""


def resolve(provider: str, model_id: str, **overrides: Any) -> ResolvedModel:
    """Resolve a model of any known provider by name (``google`` and ``gemini`` are one provider)."""
    name = _PROVIDER_NAMES.get(provider)
    if name == "anthropic":
        return anthropic(model_id, **overrides)
    if name == "openai":
        return openai(model_id, **overrides)
    if name == "google":
        return gemini(model_id, **overrides)
    raise UsageError(f"unknown provider {provider!r}: use 'anthropic', 'openai' or 'google' (also 'gemini')")


def with_window(model: ResolvedModel, context_window: int) -> ResolvedModel:
    """The same model with a smaller (or larger) window, for tests and replays."""
    reserve = min(model.output_reserve, context_window // 4)
    return replace(model, context_window=context_window, output_reserve=reserve)


def _lookup(model_id: str, table: dict[str, _Known]) -> tuple[str, _Known] | None:
    # Longest known name that the id starts with: "gpt-5-mini" before "gpt-5",
    # and dated snapshots ("claude-opus-4-1-20250805") resolve to their family.
    # A router prefix ("anthropic/claude-...", "openai/gpt-5", "litellm_proxy/...") names the route, not the model.
    bare = model_id.rsplit("/", 1)[-1].lower()
    for name in sorted(table, key=len, reverse=True):
        if bare == name or bare.startswith(name + "-") or bare.startswith(name + "@"):
            return name, table[name]
    return None


def _resolve(
    provider: Provider, model_id: str, table: dict[str, _Known], cache: dict[str, Any], overrides: dict[str, Any]
) -> ResolvedModel:
    found = _lookup(model_id, table)
    allowed = {"context_window", "max_output_tokens", "output_reserve", "min_cacheable_tokens", "tokenizer", "token_family"}
    unknown = set(overrides) - allowed
    if unknown:
        raise UsageError(f"unknown model option(s): {', '.join(sorted(unknown))}; allowed: {', '.join(sorted(allowed))}")
    # LiteLLM files Google AI Studio models under "gemini/".
    mapped = _model_map.lookup(model_id, "gemini" if provider == "google" else provider) if found is None else None
    if found is None and "context_window" not in overrides and (mapped is None or mapped.max_input_tokens is None):
        raise UsageError(
            f"unknown {provider} model {model_id!r}: pass context_window=... or use one of {', '.join(sorted(table))}"
            + ("; LiteLLM's model map does not know it either" if _model_map.available() else "")
        )
    known = (
        found[1]
        if found
        else _Known(
            window=overrides.get("context_window") or (mapped.max_input_tokens if mapped else None) or 0,
            max_output=(mapped.max_output_tokens if mapped else None) or DEFAULT_OUTPUT_RESERVE,
            min_cacheable=4_096 if provider == "google" else 1_024,
            token_family="claude-4.7" if provider == "anthropic" else "o200k",
        )
    )
    max_output = overrides.get("max_output_tokens", known.max_output)
    window = overrides.get("context_window", known.window)
    return ResolvedModel(
        id=model_id,
        provider=provider,
        context_window=window,
        max_output_tokens=max_output,
        output_reserve=overrides.get("output_reserve", min(DEFAULT_OUTPUT_RESERVE, max_output, window // 4)),
        tokenizer=overrides.get("tokenizer", known.tokenizer),
        token_family=overrides.get("token_family", known.token_family),
        cache=CacheCapabilities(min_cacheable_tokens=overrides.get("min_cacheable_tokens", known.min_cacheable), **cache),
    )
