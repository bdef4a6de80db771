"""Google Gemini ``generateContent``: render, answers, usage and errors of the ``google-genai`` SDK.

``render(request, caps)`` returns the keyword arguments of
``genai.Client().models.generate_content(**body)``: ``model``, ``contents`` and
``config``, as plain JSON the SDK validates into its own types
(``google/genai/types.py``: ``Content``, ``Part``, ``GenerateContentConfig``). The mapping:

* the system blocks, in assembly order, are the parts of ``config.system_instruction``
  (one text part per block, so the frozen prefix keeps its block boundaries); the tools are
  one ``config.tools`` entry of ``function_declarations`` (name, description, and the
  pinned JSON Schema as ``parameters_json_schema``, which takes any JSON Schema where
  ``parameters`` takes only the OpenAPI subset). Gemini renders both before the
  conversation, so they are the start of every cached prefix;
* the conversation goes in ``contents`` in log order, ``user`` and ``model`` turns, with
  consecutive messages of one role merged into one turn. An assistant message gives
  ``text`` and ``function_call`` parts (``id``, ``name``, canonical ``args``); tool results
  are ``function_response`` parts (``id``, ``name``, ``response``) that open the next user
  turn, before its text. ``response`` holds the enveloped result under ``output``, or under
  ``error`` when the tool failed: the two keys the API reads
  (``FunctionResponse.response`` in the SDK's types);
* Gemini 3 models refuse a history whose function calls lack the thought signature they
  came with ("Function call is missing a thought_signature"). The log keeps no Gemini
  signatures, so the first function call of each model turn carries the sentinel the API
  documents for histories it did not produce, ``skip_thought_signature_validator``
  (https://ai.google.dev/gemini-api/docs/thought-signatures);
* reasoning of other providers is never sent; empty and whitespace-only text is dropped.

Caching (https://ai.google.dev/gemini-api/docs/caching): Gemini 2.5 and newer cache
repeated prefixes implicitly, with no field in the request; the body keeps the prefix first
and byte-stable, which is all implicit caching asks. Explicit ``cachedContents`` are
resources created beforehand; a request that names one may not also send its own system
instruction or tools, so the engine's requests do not use them (the cache simulator
models both: :mod:`contextwright.pricing.cache_sim.gemini`).

Answers and usage: ``usage_metadata.prompt_token_count`` *includes*
``cached_content_token_count``; ``candidates_token_count`` excludes
``thoughts_token_count``, which is billed as output; ``tool_use_prompt_token_count`` is
input the API added for tool use. The REST JSON spells the same fields in camelCase; both
spellings are read.

Errors: ``google.genai.errors.APIError`` (``ClientError``, ``ServerError``) carries the
HTTP ``code``, the RPC ``status`` and the ``message``; they become the typed errors of
:mod:`contextwright.providers.errors` (a prompt over the window, "The input token count
(N) exceeds the maximum number of tokens allowed (M)", is a 400 ``INVALID_ARGUMENT`` and
becomes :class:`~contextwright.errors.ContextLengthExceeded` with both numbers).
"""

from __future__ import annotations

import hashlib
import inspect
import re
from collections.abc import Mapping
from typing import Any, Final, assert_never

from contextwright.assembly.request import (
    NeutralRequest,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolDefinition,
    ToolResultPart,
)
from contextwright.canonical import canonical_json
from contextwright.errors import ContextLengthExceeded, ProviderError, UsageError
from contextwright.events.catalog import AssistantMessage, ToolCall, Usage
from contextwright.models import GEMINI_MIN_CACHEABLE_TOKENS, gemini_min_cacheable_tokens
from contextwright.providers._render_common import RenderError, check_part_role, check_shape, is_blank, json_copy
from contextwright.providers.capabilities import ProviderCapabilities
from contextwright.providers.errors import (
    AuthenticationFailed,
    InvalidRequest,
    PermissionDenied,
    ProviderOverloaded,
    ProviderUnavailable,
    QuotaExceeded,
    RateLimited,
    RequestTooLarge,
)
from contextwright.providers.tool_names import wire_tool_name
from contextwright.providers.usage import as_mapping, count, malformed
from contextwright.providers.wire import Ttl, Wire

__all__ = [
    "MIN_CACHEABLE_TOKENS",
    "SIGNATURE_SENTINEL",
    "WIRE",
    "AsyncGeminiStream",
    "GeminiStream",
    "capabilities",
    "merge_chunks",
    "open_stream",
    "min_cacheable_tokens",
    "parse_answer",
    "parse_usage",
    "render",
    "translate_error",
]

PROVIDER: Final = "google"

SIGNATURE_SENTINEL: Final = "skip_thought_signature_validator"
"""The ``thoughtSignature`` the API accepts on a function call it did not produce (as the JSON carries it)."""

# Implicit caching's smallest prompt per model family is the models table's (models.py), one source for both.
MIN_CACHEABLE_TOKENS: Final = GEMINI_MIN_CACHEABLE_TOKENS
min_cacheable_tokens = gemini_min_cacheable_tokens


def capabilities(model: str) -> ProviderCapabilities:
    """What the renderer and the simulator rely on for a Gemini model: no markers, implicit prefix caching."""
    return ProviderCapabilities(
        provider=PROVIDER,
        model=model,
        max_breakpoints=0,
        min_cacheable_tokens=min_cacheable_tokens(model),
        # Explicit caches live 1 hour unless told otherwise; implicit entries have no stated lifetime.
        ttls=("1h",),
        supports_cache_key=False,
        lookback_blocks=0,
    )


# -- render -----------------------------------------------------------------------------------


def render(
    request: NeutralRequest,
    caps: ProviderCapabilities,
    *,
    previous: NeutralRequest | None = None,
    prefix_ttl: Ttl = "5m",
) -> dict[str, Any]:
    """Return the keyword arguments for ``genai.Client().models.generate_content(**body)``.

    Implicit caching needs no marker: neither the previous request nor a TTL changes the body.
    """
    check_shape(request, caps, provider=PROVIDER)
    contents: list[dict[str, Any]] = []
    for index, message in enumerate(request.messages):
        parts: list[dict[str, Any]] = []
        for part in message.parts:
            check_part_role(request, index, message, part)
            mapped = _map_part(part)
            if mapped is not None:
                parts.append(mapped)
        if message.role == "user":
            # Results answer the calls of the turn before: they open the user turn.
            parts.sort(key=lambda p: "function_response" not in p)
        if not parts:
            continue
        role = "model" if message.role == "assistant" else "user"
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})
    for turn in contents:
        if turn["role"] == "model":
            _sign_first_call(turn["parts"])
    if not contents:
        raise RenderError("the request has nothing to send", session_id=request.session_id)
    config: dict[str, Any] = {}
    system = [{"text": block.text} for block in request.system if not is_blank(block.text)]
    if system:
        config["system_instruction"] = {"parts": system}
    if request.tools:
        config["tools"] = [{"function_declarations": [_map_tool(tool) for tool in request.tools]}]
    config["max_output_tokens"] = request.max_output_tokens
    return {"model": request.model, "contents": contents, "config": config}


def _map_tool(tool: ToolDefinition) -> dict[str, Any]:
    out: dict[str, Any] = {"name": wire_tool_name(tool.name)}
    if tool.description:
        out["description"] = tool.description
    out["parameters_json_schema"] = json_copy(tool.input_schema)
    return out


def _map_part(part: Part) -> dict[str, Any] | None:
    match part:
        case TextPart():
            return None if is_blank(part.text) else {"text": part.text}
        case ToolCallPart():
            return {"function_call": {"id": part.id, "name": wire_tool_name(part.name), "args": json_copy(part.arguments)}}
        case ToolResultPart():
            key = "error" if part.is_error else "output"
            return {"function_response": {"id": part.call_id, "name": wire_tool_name(part.name), "response": {key: part.text}}}
        case ReasoningPart():
            return None  # no Gemini reasoning is kept in the log, and another provider's is never sent
        case _:
            assert_never(part)


def _sign_first_call(parts: list[dict[str, Any]]) -> None:
    # Parallel calls carry one signature, on the first call of the step.
    for part in parts:
        if "function_call" in part:
            # A string goes on the wire as it is (the SDK base64-encodes only bytes), and the body stays JSON.
            part["thought_signature"] = SIGNATURE_SENTINEL
            return


# -- answers and usage --------------------------------------------------------------------------


def _recognizes(data: Mapping[str, Any]) -> bool:
    return "candidates" in data or "usage_metadata" in data or "usageMetadata" in data


def parse_answer(data: Mapping[str, Any]) -> tuple[AssistantMessage, Usage | None]:
    """The assistant message and usage of a ``generateContent`` answer (an SDK object's dump or the REST JSON)."""
    answer = _snake(data)
    candidates = answer.get("candidates") or []
    texts: list[str] = []
    calls: list[ToolCall] = []
    stop_reason: str | None = None
    if candidates:
        candidate = candidates[0]
        stop_reason = candidate.get("finish_reason")
        for part in (candidate.get("content") or {}).get("parts") or ():
            if part.get("thought"):
                continue  # a thought summary, not the answer
            if part.get("text") is not None:
                texts.append(part["text"])
            call = part.get("function_call")
            if call:
                arguments = dict(call.get("args") or {})
                calls.append(
                    ToolCall(id=call.get("id") or _call_id(answer, len(calls), call), name=call["name"], arguments=arguments)
                )
    else:
        feedback = answer.get("prompt_feedback") or {}
        stop_reason = feedback.get("block_reason")  # the prompt was blocked: no candidate at all
    usage = parse_usage(answer["usage_metadata"]) if answer.get("usage_metadata") else None
    stop_reason = getattr(stop_reason, "value", stop_reason)  # the SDK's enums (FinishReason.STOP) hold the JSON name
    message = AssistantMessage(
        text="".join(texts),
        tool_calls=tuple(calls),
        model=answer.get("model_version"),
        stop_reason=str(stop_reason) if stop_reason is not None else None,
    )
    return message, usage


def _call_id(answer: Mapping[str, Any], index: int, call: Mapping[str, Any]) -> str:
    """An id for a function call the API sent without one: the same answer always gives the same id."""
    seed = canonical_json(
        {"response": answer.get("response_id"), "index": index, "name": call.get("name"), "args": call.get("args")}
    )
    return "gemini_" + hashlib.sha256(seed.encode()).hexdigest()[:16]


def parse_usage(raw: Any) -> Usage:
    """Parse a Gemini ``usage_metadata`` (or a whole answer) into :class:`Usage`."""
    data = as_mapping(raw)
    if data is None:
        raise malformed(PROVIDER, f"usage must be a mapping or an SDK object, got {type(raw).__name__}")
    data = _snake(data)
    usage = data.get("usage_metadata", data) if "prompt_token_count" not in data else data
    if not isinstance(usage, Mapping):
        raise malformed(PROVIDER, "the answer has no usage_metadata")
    prompt = count(usage, "prompt_token_count", provider=PROVIDER, required=True)
    cached = count(usage, "cached_content_token_count", provider=PROVIDER)
    if cached > prompt:
        raise malformed(PROVIDER, f"cached tokens ({cached}) exceed the prompt ({prompt})")
    thoughts = count(usage, "thoughts_token_count", provider=PROVIDER)
    return Usage(
        input_tokens=prompt - cached + count(usage, "tool_use_prompt_token_count", provider=PROVIDER),
        cache_read_tokens=cached,
        output_tokens=count(usage, "candidates_token_count", provider=PROVIDER) + thoughts,
        reasoning_output_tokens=thoughts,
    )


_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def _snake(value: Any) -> Any:
    """The REST JSON's camelCase keys as the SDK's snake_case ones (snake_case keys stay as they are)."""
    if isinstance(value, Mapping):
        return {_CAMEL.sub(r"_\1", key).lower() if isinstance(key, str) else key: _snake(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_snake(item) for item in value]
    return value


# -- errors ---------------------------------------------------------------------------------------

# The RPC status of the error body (https://ai.google.dev/gemini-api/docs/troubleshooting).
_BY_STATUS: Final[dict[str, type[ProviderError]]] = {
    "INVALID_ARGUMENT": InvalidRequest,
    "NOT_FOUND": InvalidRequest,
    "FAILED_PRECONDITION": QuotaExceeded,  # "free tier is not available in your country": enable billing
    "UNAUTHENTICATED": AuthenticationFailed,
    "PERMISSION_DENIED": PermissionDenied,
    "RESOURCE_EXHAUSTED": RateLimited,
    "INTERNAL": ProviderUnavailable,
    "UNAVAILABLE": ProviderOverloaded,  # "The service may be temporarily overloaded or down"
    "DEADLINE_EXCEEDED": ProviderUnavailable,
}
_BY_CODE: Final[dict[int, type[ProviderError]]] = {
    401: AuthenticationFailed,
    403: PermissionDenied,
    413: RequestTooLarge,
    429: RateLimited,
    503: ProviderOverloaded,
}
# ErrorInfo reasons whose status alone would mislead (an invalid key arrives as 400 INVALID_ARGUMENT).
_BY_REASON: Final[dict[str, type[ProviderError]]] = {
    "API_KEY_INVALID": AuthenticationFailed,
    "API_KEY_SERVICE_BLOCKED": PermissionDenied,
}
_TOO_LONG = re.compile(r"input token count \((\d+)\) exceeds the maximum number of tokens allowed \((\d+)\)", re.IGNORECASE)
_RETRYABLE = (RateLimited, ProviderUnavailable)


def translate_error(exc: BaseException, *, model: str | None = None, max_tokens: int | None = None) -> Exception | None:
    """The typed error for a ``google.genai.errors.APIError``, None for any other exception."""
    if not any(cls.__name__ == "APIError" and cls.__module__.startswith("google.genai") for cls in type(exc).__mro__):
        return None
    code = getattr(exc, "code", None)
    code = code if isinstance(code, int) and not isinstance(code, bool) else None
    status = getattr(exc, "status", None)
    status = status if isinstance(status, str) else None
    message = getattr(exc, "message", None)
    message = message if isinstance(message, str) else str(exc)
    details = _details(getattr(exc, "details", None))
    reason = next((d.get("reason") for d in details if isinstance(d.get("reason"), str)), None)
    extra: dict[str, Any] = {}
    cls: type[ProviderError] | None
    if match := _TOO_LONG.search(message):
        cls = ContextLengthExceeded
        extra = {"prompt_tokens": int(match[1]), "max_tokens": None, "limit_tokens": int(match[2])}
    else:
        cls = _BY_REASON.get(reason or "") or _BY_STATUS.get(status or "") or _BY_CODE.get(code or 0)
        if cls is None:
            cls = ProviderUnavailable if code is not None and code >= 500 else InvalidRequest if code else ProviderError
    if cls is RateLimited:
        extra["retry_after"] = _retry_delay(details)
    what = f"gemini error {code}" if code is not None else "gemini error"
    if status:
        what += f" ({status})"
    return cls(
        f"{what}: {message}",
        provider=PROVIDER,
        status=code,
        error_type=status,
        code=reason,
        provider_message=message,
        request_id=None,
        retryable=issubclass(cls, _RETRYABLE),
        **extra,
    )


def _details(body: Any) -> list[Mapping[str, Any]]:
    """The ``details`` entries of an error body (``{"error": {"details": [...]}}`` or the inner object)."""
    if isinstance(body, list) and len(body) == 1:
        body = body[0]
    if not isinstance(body, Mapping):
        return []
    inner = body.get("error", body)
    entries = inner.get("details") if isinstance(inner, Mapping) else None
    return [entry for entry in entries or () if isinstance(entry, Mapping)]


def _retry_delay(details: list[Mapping[str, Any]]) -> float | None:
    """``RetryInfo.retryDelay`` (``"21s"``) in seconds, when the error gives one."""
    for entry in details:
        delay = entry.get("retryDelay")
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return float(delay[:-1])
            except ValueError:
                return None
    return None


# -- streams ---------------------------------------------------------------------------------------

_STREAM_KEYS: Final = ("usage_metadata", "model_version", "response_id", "prompt_feedback")


def merge_chunks(chunks: list[Any]) -> dict[str, Any]:
    """The chunks of a ``generateContent`` stream as one answer, read like a whole one.

    Parts are kept in order (adjacent text of one kind joined); the finish reason is the last
    one sent; usage, model version and response id are the last chunk's that has them
    (Gemini's streamed usage is cumulative).
    """
    parts: list[dict[str, Any]] = []
    merged: dict[str, Any] = {}
    finish: Any = None
    seen_candidate = False
    for raw in chunks:
        chunk = _snake(as_mapping(raw) or {})
        for candidate in (chunk.get("candidates") or ())[:1]:
            seen_candidate = True
            for part in (candidate.get("content") or {}).get("parts") or ():
                kept = {key: value for key, value in part.items() if value is not None}
                if parts and _joins(parts[-1], kept):
                    parts[-1]["text"] += kept["text"]
                else:
                    parts.append(kept)
            finish = candidate.get("finish_reason") or finish
        merged.update({key: chunk[key] for key in _STREAM_KEYS if chunk.get(key)})
    if seen_candidate:
        merged["candidates"] = [{"content": {"role": "model", "parts": parts}, "finish_reason": finish, "index": 0}]
    return merged


def _joins(last: Mapping[str, Any], part: Mapping[str, Any]) -> bool:
    plain = {"text", "thought"}
    return (
        set(last) <= plain
        and set(part) <= plain
        and "text" in last
        and "text" in part
        and last.get("thought") == part.get("thought")
    )


def _check_final(final: Any) -> str | None:
    answer = as_mapping(final) or {}
    finished = any(candidate.get("finish_reason") for candidate in answer.get("candidates") or ())
    if finished or (answer.get("prompt_feedback") or {}).get("block_reason"):
        return None
    return "the Gemini stream ended before a chunk with a finish reason; nothing was recorded"


class GeminiStream:
    """``generate_content_stream``'s chunks, as the stream ``session.stream`` hands out: iterate it for the SDK's chunks.

    Entering reads the first chunk, so an error the API answers the request with (an
    overflow) is raised where ``session.stream`` recovers from it. ``get_final_response``
    reads what the caller left unread and returns the chunks merged (:func:`merge_chunks`).
    """

    def __init__(self, opened: Any) -> None:
        self._opened = opened
        self._chunks: list[Any] = []
        self._iterator: Any = None
        self._pending: list[Any] = []

    def __enter__(self) -> GeminiStream:
        self._iterator = iter(self._opened)
        self._pending = [chunk for chunk in (next(self._iterator, None),) if chunk is not None]
        return self

    def __exit__(self, *exc: object) -> None:
        close = getattr(self._iterator, "close", None)
        if close is not None:
            close()

    def __iter__(self) -> GeminiStream:
        return self

    def __next__(self) -> Any:
        chunk = self._pending.pop() if self._pending else next(self._iterator)
        self._chunks.append(chunk)
        return chunk

    def get_final_response(self) -> dict[str, Any]:
        """The whole answer: the chunks read so far and the rest of the stream, merged."""
        for _ in self:
            pass
        return merge_chunks(self._chunks)


class AsyncGeminiStream:
    """The async :class:`GeminiStream`, for ``client.aio.models.generate_content_stream``."""

    def __init__(self, opened: Any) -> None:
        self._opened = opened
        self._chunks: list[Any] = []
        self._iterator: Any = None
        self._pending: list[Any] = []

    async def __aenter__(self) -> AsyncGeminiStream:
        opened = await self._opened if inspect.isawaitable(self._opened) else self._opened
        self._iterator = opened.__aiter__()
        try:
            self._pending = [await self._iterator.__anext__()]
        except StopAsyncIteration:
            self._pending = []
        return self

    async def __aexit__(self, *exc: object) -> None:
        close = getattr(self._iterator, "aclose", None)
        if close is not None:
            await close()

    def __aiter__(self) -> AsyncGeminiStream:
        return self

    async def __anext__(self) -> Any:
        chunk = self._pending.pop() if self._pending else await self._iterator.__anext__()
        self._chunks.append(chunk)
        return chunk

    async def get_final_response(self) -> dict[str, Any]:
        """The whole answer: the chunks read so far and the rest of the stream, merged."""
        async for _ in self:
            pass
        return merge_chunks(self._chunks)


def open_stream(opened: Any) -> GeminiStream | AsyncGeminiStream:
    """What ``generate_content_stream`` returned (an iterator, or the async method's coroutine) as a stream manager."""
    if inspect.isawaitable(opened) or hasattr(opened, "__aiter__"):
        return AsyncGeminiStream(opened)
    if hasattr(opened, "__iter__"):
        return GeminiStream(opened)
    raise UsageError(
        f"session.stream on the gemini wire takes client.models.generate_content_stream; it returned {type(opened).__name__}"
    )


WIRE = Wire(
    name="gemini",
    providers=(PROVIDER,),
    render=render,
    recognizes=_recognizes,
    parse_response=parse_answer,
    parse_usage=parse_usage,
    sdk_resources=(("google.genai", ".models"),),
    sdk_calls="client.models.generate_content / client.models.generate_content_stream",
    translate_error=translate_error,
    check_final=_check_final,
    open_stream=open_stream,
    create_method="generate_content",
    stream_method="generate_content_stream",
)
"""The Google Gemini ``generateContent`` wire."""
