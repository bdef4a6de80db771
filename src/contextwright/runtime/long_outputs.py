"""When an SDK refuses a non-streamed call because its output may take too long.

The anthropic SDK refuses a non-streamed ``messages.create`` before any HTTP call
(``ValueError: Streaming is required for operations that may take longer than
10 minutes``) when the caller set no timeout of its own, the client keeps the
SDK's default timeout, and either the expected time ``3600 s × max_tokens /
128,000`` exceeds 600 s (``max_tokens`` above 21,333) or the model has a smaller
non-streaming cap in the SDK's ``MODEL_NONSTREAMING_TOKENS`` (see
``anthropic._base_client.BaseClient._calculate_nonstreaming_timeout``). The
openai SDK has no such rule. The rule is reproduced here so that ``send()`` can
refuse with a typed error that names ``session.stream`` before anything is built.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from contextwright._optional import require
from contextwright.runtime.errors import StreamingRequired

MAXIMUM_SECONDS = 60 * 60
"""The longest a request may take, as the SDK assumes for 128,000 output tokens."""
DEFAULT_SECONDS = 60 * 10
"""The SDK's default timeout: a non-streamed call expected to take longer is refused."""
TOKENS_AT_MAXIMUM = 128_000

_MESSAGE_MARK = "Streaming is required"


def expected_seconds(max_tokens: int) -> float:
    """How long the anthropic SDK expects a call asking for ``max_tokens`` to take."""
    return MAXIMUM_SECONDS * max_tokens / TOKENS_AT_MAXIMUM


def streaming_required(max_tokens: int, *, nonstreaming_cap: int | None) -> bool:
    """The SDK's rule: too long for the default timeout, or above the model's non-streaming cap."""
    return expected_seconds(max_tokens) > DEFAULT_SECONDS or bool(nonstreaming_cap and max_tokens > nonstreaming_cap)


def check_non_streamed_call(
    call: Callable[..., Any], *, wire: str, model: str, max_tokens: int, extra: Mapping[str, Any]
) -> None:
    """Raise :class:`StreamingRequired` when the SDK would refuse this non-streamed ``call``."""
    if wire != "anthropic" or extra.get("stream") or "timeout" in extra:
        return
    client = getattr(getattr(call, "__self__", None), "_client", None)
    module = type(client).__module__ if client is not None else ""
    if not module.startswith("anthropic"):
        return  # not the SDK's own method (or a wrapper of it): the error is translated after the call
    constants = require("anthropic._constants", extra="anthropic", feature="sending through the anthropic SDK")
    if getattr(client, "timeout", None) != constants.DEFAULT_TIMEOUT:
        return  # the caller chose a timeout: the SDK trusts it
    cap = constants.MODEL_NONSTREAMING_TOKENS.get(model)
    if streaming_required(max_tokens, nonstreaming_cap=cap):
        raise _refusal(model=model, max_tokens=max_tokens)


def translate_refusal(exc: Exception, *, model: str, max_tokens: int) -> StreamingRequired | None:
    """The typed error for the SDK's own refusal (a bare ``ValueError``), when ``exc`` is one."""
    if isinstance(exc, ValueError) and _MESSAGE_MARK in str(exc):
        return _refusal(model=model, max_tokens=max_tokens)
    return None


def _refusal(*, model: str, max_tokens: int) -> StreamingRequired:
    return StreamingRequired(
        f"{model} may write up to {max_tokens:,} output tokens, which the anthropic SDK only accepts streamed "
        f"(about {expected_seconds(max_tokens) / 60:.0f} minutes at most): use "
        "`with session.stream(client.messages.stream) as stream:`, or pass an explicit timeout=, "
        "or lower the model's output_reserve",
        model=model,
        max_tokens=max_tokens,
    )
