"""The typed interface every wire module implements, and the errors a wire's SDK rules raise.

A wire is one request/response format of one SDK (Anthropic Messages, OpenAI Chat
Completions, OpenAI Responses, LiteLLM's ``completion``, Google Gemini
``generateContent``). Everything the engine knows about it lives in one module of this
package, which exports one :class:`Wire` named ``WIRE``:

* ``render``: a neutral request as the SDK call's keyword arguments;
* ``recognizes`` / ``parse_response``: the SDK's answer (an SDK object or its JSON) as the
  neutral assistant message and the one :class:`~contextwright.events.catalog.Usage`;
* ``parse_usage``: the answer's usage alone;
* ``sdk_resources``: which SDK methods speak it (read from the method's resource module);
* ``check_call``: the SDK's own rules, checked before anything is sent;
* ``translate_error``: the SDK's exceptions as the typed errors of
  :mod:`contextwright.providers.errors` (None for an exception that is not its SDK's);
* ``stream_options`` / ``check_final``: what a streamed call needs to report usage, and
  whether the SDK's accumulated answer is complete;
* ``open_stream``: what the SDK's stream method returned, as the context manager
  ``session.stream`` enters (the SDK's own stream manager as it is, or the wire's
  accumulating wrapper for an SDK whose streams are plain iterators);
* ``create_method`` / ``stream_method``: the SDK method names of a whole and a streamed call.

:mod:`contextwright.providers.wires` finds the wire modules and keeps them in one registry,
so a new wire is one module here plus its tests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from contextwright.assembly.request import NeutralRequest
from contextwright.errors import UsageError
from contextwright.events.catalog import AssistantMessage, Usage
from contextwright.providers.capabilities import ProviderCapabilities

__all__ = [
    "CheckCall",
    "Render",
    "StreamingRequired",
    "ThinkingBudgetInvalid",
    "Ttl",
    "Wire",
    "WireMismatch",
    "no_call_rules",
    "no_errors",
    "no_stream_options",
    "sdk_stream_manager",
    "whole_answer",
]

Ttl = Literal["5m", "1h"]
"""The cache lifetime a prefix asks for (Anthropic's names; other wires take or ignore it)."""


class WireMismatch(UsageError):
    """The wire format chosen (or inferred from the SDK method) does not fit the session's model."""


class StreamingRequired(UsageError):
    """The output reserve is above what the SDK allows without streaming: use ``session.stream``."""


class ThinkingBudgetInvalid(UsageError):
    """A manual thinking budget the API would refuse: below 1,024 tokens, or not below the request's ``max_tokens``."""


class Render(Protocol):
    """``render(request, caps, *, previous, prefix_ttl) -> dict``: keyword arguments for the SDK call."""

    def __call__(
        self,
        request: NeutralRequest,
        caps: ProviderCapabilities,
        *,
        previous: NeutralRequest | None = None,
        prefix_ttl: Ttl = "5m",
    ) -> dict[str, Any]: ...


class CheckCall(Protocol):
    """The SDK's rules for one call, checked before anything is built or sent; raises a typed error."""

    def __call__(
        self, call: Callable[..., Any], *, model: str, max_tokens: int, extra: Mapping[str, Any], streamed: bool
    ) -> None: ...


def no_call_rules(call: Callable[..., Any], *, model: str, max_tokens: int, extra: Mapping[str, Any], streamed: bool) -> None:
    """A wire whose SDK refuses nothing before the call."""


def no_errors(exc: BaseException, *, model: str | None = None, max_tokens: int | None = None) -> Exception | None:
    """A wire that translates no exception (another wire's SDK raises what it sends)."""
    return None


def no_stream_options(extra: Mapping[str, Any]) -> dict[str, Any]:
    """A streamed call of this wire needs nothing added to report its usage."""
    return dict(extra)


def sdk_stream_manager(opened: Any) -> Any:
    """The SDK's stream method returned its own stream manager (``with ... as stream``, ``get_final_*``): kept as it is."""
    return opened


def whole_answer(final: Any) -> str | None:
    """No check of the accumulated answer: the SDK raises itself when its stream ended early."""
    return None


@dataclass(frozen=True, kw_only=True, slots=True)
class Wire:
    """One wire format: how a neutral request renders to it and how its SDK's answers, usage and errors read."""

    name: str
    """The registry name (``anthropic``, ``openai_chat``, ...)."""
    providers: tuple[str, ...]
    """The providers whose models speak it (a session's model must be one of theirs)."""
    render: Render
    """A neutral request as the SDK call's keyword arguments."""
    recognizes: Callable[[Mapping[str, Any]], bool]
    """Whether an answer (as JSON) is this wire's; a wire whose answers another wire reads says False."""
    parse_response: Callable[[Mapping[str, Any]], tuple[AssistantMessage, Usage | None]]
    """The neutral assistant message and the usage of one answer (as JSON)."""
    parse_usage: Callable[[Any], Usage]
    """The usage of an answer, or the usage member alone (a mapping or an SDK object)."""
    sdk_resources: tuple[tuple[str, str], ...] = ()
    """``(module prefix, dotted part of the module)`` of the SDK resources whose methods speak it."""
    sdk_calls: str = ""
    """The SDK calls that speak it, for messages (``client.messages.create / client.messages.stream``)."""
    check_call: CheckCall = no_call_rules
    """The SDK's own rules for a call, checked before anything is sent."""
    translate_error: Callable[..., Exception | None] = no_errors
    """``translate_error(exc, *, model, max_tokens)``: the typed error for the SDK's exception, None if not its SDK's."""
    stream_options: Callable[[Mapping[str, Any]], dict[str, Any]] = no_stream_options
    """The caller's keywords for a streamed call, plus what the stream needs to report usage."""
    check_final: Callable[[Any], str | None] = whole_answer
    """Why the SDK's accumulated answer is incomplete (nothing is recorded then), or None."""
    open_stream: Callable[[Any], Any] = sdk_stream_manager
    """What the SDK's stream method returned, as a context manager (sync or async) whose stream has ``get_final_response``."""
    create_method: str = "create"
    """The SDK method of a whole answer (``send`` refuses the stream method)."""
    stream_method: str = "stream"
    """The SDK method of a streamed answer (``session.stream`` refuses the create method)."""
