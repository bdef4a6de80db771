"""The gateway's HTTP app: the providers' own endpoints, forwarded, with conversations recorded on the side.

Routes by path: ``POST /v1/messages`` (Anthropic Messages), ``POST /v1/responses`` (OpenAI
Responses) and ``POST /v1/chat/completions`` (OpenAI Chat Completions) are conversations;
everything else (``count_tokens``, model lists, files) passes through unchanged, to the
Anthropic upstream when the request carries Anthropic's headers or path, to the OpenAI
one otherwise.

In observe mode a conversation request is sent upstream at once, unchanged; its new
turns are recorded beside it in a worker thread, and its answer (rebuilt from the bytes
that went to the client) after the last byte. The client waits for neither.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from contextwright.gateway.answers import AnswerReader
from contextwright.gateway.config import GatewayConfig
from contextwright.gateway.identity import session_key
from contextwright.gateway.recorder import KeyQueue, Recorder, Ticket
from contextwright.gateway.upstream import open_upstream, unreachable_body, upstream_url
from contextwright.gateway.wires import PROVIDER_OF, NotAConversation, WireName, parse_request
from contextwright.log import EventLog, open_log
from contextwright.runtime.engine import Engine

logger = logging.getLogger("contextwright.gateway")

KEY_HEADER = "x-contextwright-key"

_CONVERSATIONS: dict[str, WireName] = {
    "/v1/messages": "anthropic",
    "/v1/responses": "openai_responses",
    "/v1/chat/completions": "openai_chat",
}


class _TooLarge(Exception):
    pass


def create_gateway_app(config: GatewayConfig | None = None, *, log: EventLog | None = None) -> Starlette:
    """A gateway on the store of ``config`` (or on ``log``, which the caller keeps and closes)."""
    config = config or GatewayConfig()
    owned = log is None
    store = log if log is not None else open_log(config.store)
    recorder = Recorder(Engine(store))
    queue = KeyQueue()
    timeout = httpx2.Timeout(config.upstream_timeout, connect=min(30.0, config.upstream_timeout))
    state: dict[str, Any] = {}
    background: set[asyncio.Task[Any]] = set()

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        state["client"] = httpx2.AsyncClient(timeout=timeout, follow_redirects=False)
        try:
            yield
        finally:
            if background:
                await asyncio.wait(background, timeout=30)
            await state["client"].aclose()
            if owned:
                store.close()

    async def handle(request: Request) -> Response:
        if config.gateway_key is not None and not _key_matches(request.headers.get(KEY_HEADER), config.gateway_key):
            return _error(request, 401, "authentication_error", f"send the gateway key in the {KEY_HEADER} header")
        try:
            body = await _read_body(request, config.max_body_bytes)
        except _TooLarge:
            return _error(
                request,
                413,
                "request_too_large",
                f"the body is larger than this gateway accepts ({config.max_body_bytes:,} bytes)",
            )
        wire = _CONVERSATIONS.get(request.url.path.rstrip("/")) if request.method == "POST" else None
        provider = PROVIDER_OF[wire] if wire else _provider_of(request)
        base = config.anthropic_upstream if provider == "anthropic" else config.openai_upstream
        url = upstream_url(base, request.url.path, request.url.query)
        answer_sink = _recording(request, wire, body) if wire else None
        try:
            upstream = await open_upstream(state["client"], request.method, url, request.headers, body)
        except httpx2.HTTPError as exc:
            if answer_sink is not None:
                answer_sink[1].set_result(None)
            logger.warning("gateway: %s upstream unreachable: %s", provider, type(exc).__name__)
            message = f"the gateway could not reach {base}: {type(exc).__name__}"
            return Response(unreachable_body(provider, message), status_code=502, media_type="application/json")
        reader = None
        if answer_sink is not None:
            if 200 <= upstream.status < 300:
                streamed = "text/event-stream" in dict((k.lower(), v) for k, v in upstream.headers).get("content-type", "")
                reader = AnswerReader(answer_sink[0], streamed=streamed)
            else:
                answer_sink[1].set_result(None)
                answer_sink = None

        def on_chunk(chunk: bytes) -> None:
            if reader is not None:
                reader.feed(chunk)

        def on_end(complete: bool) -> None:
            if answer_sink is not None and not answer_sink[1].done():
                answer_sink[1].set_result(reader.answer() if complete and reader is not None else None)

        return StreamingResponse(
            upstream.body(on_chunk, on_end), status_code=upstream.status, headers=_header_dict(upstream.headers)
        )

    def _recording(
        request: Request, wire: WireName, body: bytes
    ) -> tuple[WireName, asyncio.Future[dict[str, Any] | None]] | None:
        """Queue the recording of this request and of its answer (the future the forwarder resolves)."""
        try:
            conversation = parse_request(wire, json.loads(body))
        except (ValueError, NotAConversation) as exc:
            logger.debug("gateway: not recorded: %s", exc)
            return None
        key, _ = session_key(conversation, request.headers, responses=recorder.responses)
        answer: asyncio.Future[dict[str, Any] | None] = asyncio.get_running_loop().create_future()
        ticket_task = queue.submit(key, lambda: asyncio.to_thread(recorder.record_request, key, conversation))

        async def record_answer() -> None:
            ticket: Ticket = await ticket_task
            try:
                # A response that never started (the client left first) resolves nothing: give up on it.
                result = await asyncio.wait_for(answer, timeout=config.upstream_timeout + 60)
            except TimeoutError:
                result = None
            await asyncio.to_thread(recorder.record_answer, ticket, result)

        task = queue.submit(key, record_answer)
        background.add(task)
        task.add_done_callback(background.discard)
        return wire, answer

    app = Starlette(
        routes=[Route("/{path:path}", handle, methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"])],
        lifespan=lifespan,
    )
    app.state.recorder = recorder
    app.state.log = store
    return app


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _TooLarge
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _key_matches(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def _provider_of(request: Request) -> str:
    """Whose API a request that is not a conversation is for: Anthropic's headers or path, else OpenAI."""
    headers = request.headers
    if "anthropic-version" in headers or "x-api-key" in headers or request.url.path.startswith("/v1/messages"):
        return "anthropic"
    return "openai"


def _header_dict(headers: list[tuple[str, str]]) -> dict[str, str]:
    # Starlette takes a mapping; repeated headers other than set-cookie are joined, as HTTP allows.
    merged: dict[str, str] = {}
    for name, value in headers:
        merged[name] = f"{merged[name]}, {value}" if name in merged else value
    return merged


def _error(request: Request, status: int, kind: str, message: str) -> Response:
    """An error of the gateway itself, in the shape of the provider the request was for."""
    if _provider_of(request) == "anthropic":
        document: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
    else:
        document = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return Response(json.dumps(document), status_code=status, media_type="application/json")
