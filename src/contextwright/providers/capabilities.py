"""What a renderer may rely on for one model: cache limits and wire options, in one record.

Renderers read these fields instead of testing model names, so a new model or a
provider change of rules is one edit in :func:`capabilities_for` (or an override
with :func:`dataclasses.replace`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Final, Literal

from contextwright.errors import UsageError
from contextwright.models import ResolvedModel

__all__ = ["CacheTtl", "Provider", "ProviderCapabilities", "Retention", "capabilities_for"]

Provider = Literal["anthropic", "openai", "google"]
Retention = Literal["in_memory", "24h"]
CacheTtl = Literal["30m", "12h"]

ANTHROPIC_TTLS: Final[dict[str, timedelta]] = {"5m": timedelta(minutes=5), "1h": timedelta(hours=1)}
"""Anthropic's cache lifetimes, by the name a ``cache_control`` marker gives."""
OPENAI_IN_MEMORY_CAP: Final = timedelta(hours=1)
"""The longest an OpenAI cache entry lives in memory (it may go after 5 to 10 idle minutes)."""
OPENAI_EXTENDED_CAP: Final = timedelta(hours=24)
"""The longest an OpenAI cache entry lives with extended retention (``prompt_cache_retention="24h"``)."""
GEMINI_CACHE_LIFETIME: Final = timedelta(hours=1)
"""https://ai.google.dev/gemini-api/docs/caching: an explicit cache's TTL when none is set."""

# Model families that accept prompt_cache_retention="24h", as listed in
# https://developers.openai.com/api/docs/guides/prompt-caching (snapshot Aug-Sep 2026).
_RETENTION_24H = frozenset(
    {
        "gpt-4.1",
        "gpt-5",
        "gpt-5-codex",
        "gpt-5.1",
        "gpt-5.1-chat-latest",
        "gpt-5.1-codex",
        "gpt-5.1-codex-max",
        "gpt-5.1-codex-mini",
        "gpt-5.2",
        "gpt-5.4",
        "gpt-5.5",
        "gpt-5.5-pro",
    }
)
# The same guide says gpt-5.5 "and future models" support only 24h, so any later
# numbered release qualifies too.
_NUMBERED = re.compile(r"^gpt-(\d+)\.(\d+)(-pro)?$")
# Models that check the prefix of thinking blocks sent back, as listed (supportedModels) on
# https://platform.claude.com/docs/en/build-with-claude/preserved-thinking/prefix-checks.
_PREFIX_CHECKED = frozenset(
    {
        "claude-fable-5-2",
        "claude-mythos-5-2",
        "claude-fable-5-1",
        "claude-mythos-5-1",
        "claude-opus-5-5",
        "claude-sonnet-5-5",
        "claude-haiku-5-5",
    }
)
_DATED_SUFFIX_ANTHROPIC = re.compile(r"-\d{8}$")
_VERSION = re.compile(r"^gpt-(\d+)(?:\.(\d+))?(?:$|-)")
_DATED_SUFFIX = re.compile(r"-\d{4}-\d{2}-\d{2}$")
# Reasoning families (o-series, gpt-5 and later) take instructions as "developer"
# messages; "system" is kept for older chat models
# (https://platform.openai.com/docs/api-reference/chat/create, messages.role).
_DEVELOPER_ROLE = re.compile(r"^(o\d|gpt-[5-9]|gpt-\d\d)")


@dataclass(frozen=True, kw_only=True, slots=True)
class ProviderCapabilities:
    """Cache limits and wire options of one provider model, as the renderers use them."""

    provider: Provider
    """Which wire family the model speaks."""
    model: str
    """The model id these capabilities were resolved for."""
    max_breakpoints: int
    """Explicit cache markers allowed per request (Anthropic: 4; OpenAI automatic caching: 0)."""
    min_cacheable_tokens: int
    """Prefixes shorter than this are not cached by the provider."""
    ttls: tuple[str, ...]
    """Cache lifetimes the provider offers, shortest first."""
    supports_cache_key: bool
    """Whether requests may carry ``prompt_cache_key`` (OpenAI)."""
    lookback_blocks: int
    """Positions a breakpoint searches back, itself included (Anthropic: 20; 0 = no such rule)."""
    supports_cache_retention: bool = False
    """Whether the request may set ``prompt_cache_retention`` (OpenAI, listed models only)."""
    cache_retention: Retention = "24h"
    """The retention policy sent when :attr:`supports_cache_retention` is true."""
    supports_cache_options: bool = False
    """Whether the request may set ``prompt_cache_options`` (OpenAI gpt-5.6 and later)."""
    cache_ttl: CacheTtl = "12h"
    """The minimum cache lifetime sent as ``prompt_cache_options.ttl`` when :attr:`supports_cache_options` is true."""
    reasoning_items: bool = False
    """Whether answers carry reasoning items to send back (OpenAI reasoning models)."""
    thinking_prefix_check: bool = False
    """Whether the model rejects thinking whose earlier history changed (Anthropic preserved thinking)."""
    instruction_role: Literal["system", "developer"] = "system"
    """Role of the leading instruction message on OpenAI wires."""
    tokenizer: str | None = None
    """An exact offline encoding name, or None where none is public."""

    @property
    def history_cache_lifetime(self) -> timedelta:
        """How long after a request the provider may still hold the history it read or wrote.

        A request that starts later writes its whole history again, whatever relief it carries.
        Anthropic: the shortest TTL, the one every history marker carries (a hit restarts it).
        OpenAI: 24 hours with extended retention; in memory, entries go after 5 to 10 idle
        minutes and never last more than an hour. Gemini: implicit entries have no stated lifetime;
        the hour an explicit cache lives by default stands in.
        """
        if self.provider == "anthropic":
            return ANTHROPIC_TTLS[self.ttls[0]]
        if self.provider == "google":
            return GEMINI_CACHE_LIFETIME
        extended = self.supports_cache_retention and self.cache_retention == "24h"
        return OPENAI_EXTENDED_CAP if extended else OPENAI_IN_MEMORY_CAP

    def __post_init__(self) -> None:
        if self.max_breakpoints < 0 or self.lookback_blocks < 0 or self.min_cacheable_tokens < 0:
            raise UsageError(f"capabilities for {self.model}: limits must not be negative")
        if not self.ttls:
            raise UsageError(f"capabilities for {self.model}: at least one cache TTL is needed")


def capabilities_for(model: ResolvedModel, *, cache_retention: Retention = "24h") -> ProviderCapabilities:
    """Resolve the renderer capabilities of a model."""
    cache = model.cache
    if model.provider == "anthropic":
        return ProviderCapabilities(
            provider="anthropic",
            model=model.id,
            max_breakpoints=cache.max_breakpoints,
            min_cacheable_tokens=cache.min_cacheable_tokens,
            ttls=cache.ttls,
            supports_cache_key=cache.supports_cache_key,
            lookback_blocks=cache.lookback_blocks,
            thinking_prefix_check=_DATED_SUFFIX_ANTHROPIC.sub("", model.id) in _PREFIX_CHECKED,
            tokenizer=model.tokenizer,
        )
    if model.provider == "openai":
        family = _DATED_SUFFIX.sub("", model.id)
        _check_retention(family, cache_retention)
        return ProviderCapabilities(
            provider="openai",
            model=model.id,
            max_breakpoints=cache.max_breakpoints,
            min_cacheable_tokens=cache.min_cacheable_tokens,
            ttls=cache.ttls,
            supports_cache_key=cache.supports_cache_key,
            lookback_blocks=cache.lookback_blocks,
            supports_cache_retention=_has_retention(family),
            cache_retention=cache_retention,
            supports_cache_options=_has_cache_options(family),
            # The longest lifetime for the longest retention: OpenAI bills a cache write
            # at one rate whatever it asks for (see providers/usage.py).
            cache_ttl="12h" if cache_retention == "24h" else "30m",
            reasoning_items=_DEVELOPER_ROLE.match(family) is not None,
            instruction_role="developer" if _DEVELOPER_ROLE.match(family) else "system",
            tokenizer=model.tokenizer,
        )
    if model.provider == "google":
        # Implicit prefix caching, no markers (the gemini wire's own capabilities(), from the resolved model).
        return ProviderCapabilities(
            provider="google",
            model=model.id,
            max_breakpoints=0,
            min_cacheable_tokens=cache.min_cacheable_tokens,
            ttls=cache.ttls,
            supports_cache_key=False,
            lookback_blocks=0,
            tokenizer=model.tokenizer,
        )
    raise UsageError(f"no renderer capabilities for provider {model.provider!r}")


def _check_retention(family: str, retention: Retention) -> None:
    numbered = _NUMBERED.match(family)
    if retention == "in_memory" and numbered and (int(numbered[1]), int(numbered[2])) >= (5, 5):
        # https://developers.openai.com/api/docs/guides/prompt-caching: 24h only from gpt-5.5 on.
        raise UsageError(f"{family} accepts only prompt_cache_retention='24h'")


def _has_cache_options(family: str) -> bool:
    # openai 3.57, types/responses/response_create_params.py (PromptCacheOptions):
    # "Supported for gpt-5.6 and later models".
    version = _VERSION.match(family)
    if version is None:
        return False
    return (int(version[1]), int(version[2] or 0)) >= (5, 6)


def _has_retention(family: str) -> bool:
    if family in _RETENTION_24H:
        return True
    numbered = _NUMBERED.match(family)
    return numbered is not None and (int(numbered[1]), int(numbered[2])) >= (5, 5)
