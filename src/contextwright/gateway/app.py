"""The gateway's HTTP app: the providers' own endpoints, forwarded, with conversations recorded on the side.

Routes by path: ``POST /v1/messages`` (Anthropic Messages), ``POST /v1/responses`` (OpenAI
Responses) and ``POST /v1/chat/completions`` (OpenAI Chat Completions) are conversations;
everything else (model lists, files; ``count_tokens`` in observe mode) passes through unchanged, to the
Anthropic upstream when the request carries Anthropic's headers or path, to the OpenAI
one otherwise.

In observe mode a conversation request is sent upstream at once, unchanged; its new
turns are recorded beside it in a worker thread, and its answer (rebuilt from the bytes
that went to the client) after the last byte. The client waits for neither.

In manage mode the engine's request goes instead (see :mod:`~contextwright.gateway.recorder`
and :mod:`~contextwright.gateway.readback`), and ``count_tokens`` counts what the engine
would send for the conversation, built on a scratch copy of its run. A request sent as the
client sent it carries ``x-contextwright-mode: passthrough; reason=<why>`` on its answer.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
from collections.abc import AsyncIterator, Sequence
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
from contextwright.gateway.readback import MAX_READ_BACKS, Joiner, reads_only
from contextwright.gateway.recorder import KeyQueue, Received, Recorder, Ticket, loads
from contextwright.gateway.tenancy import open_registry
from contextwright.gateway.upstream import Upstream, open_upstream, unreachable_body, upstream_url
from contextwright.gateway.wires import PROVIDER_OF, Conversation, NotAConversation, WireName, parse_request
from contextwright.log import EventLog, open_log
from contextwright.runtime.engine import Engine

logger = logging.getLogger("contextwright.gateway")

KEY_HEADER = "x-contextwright-key"
COUNT_PATH = "/v1/messages/count_tokens"
MODE_HEADER = "x-contextwright-mode"
"""Manage mode: on an answer to a request sent as the client sent it, ``passthrough; reason=<why>``."""

_CONVERSATIONS: dict[str, WireName] = {
    "/v1/messages": "anthropic",
    "/v1/responses": "openai_responses",
    "/v1/chat/completions": "openai_chat",
}


Answered = dict[str, Any] | tuple[dict[str, Any], dict[str, Any]]
"""What is recorded of an answer: the provider's, or the last part of it and the answer as the client got it."""


class _TooLarge(Exception):
    pass


def create_gateway_app(config: GatewayConfig | None = None, *, log: EventLog | None = None) -> Starlette:
    """A gateway on the store of ``config`` (or on ``log``, which the caller keeps and closes)."""
    config = config or GatewayConfig()
    owned = log is None
    store = log if log is not None else open_log(config.store)
    registry = open_registry(config.store, config.tenant)
    recorder = Recorder(Engine(store), registry=registry, manage=config.mode == "manage")
    recorder.answer_wait = config.answer_wait
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
            if registry is not None:
                registry.close()
            if owned:
                store.close()

    async def handle(request: Request) -> Response:
        if config.gateway_key is not None and not _key_matches(request.headers.get(KEY_HEADER), config.gateway_key):
            return _error(request, 401, "authentication_error", f"send the gateway key in the {KEY_HEADER} header")
        too_large = _error(
            request, 413, "request_too_large", f"the body is larger than this gateway accepts ({config.max_body_bytes:,} bytes)"
        )
        body = _Body(request, config.max_body_bytes)
        arrived = (recorder.engine.clock.now(), time.monotonic())
        if body.declared_too_large:
            return too_large
        wire = _CONVERSATIONS.get(request.url.path.rstrip("/")) if request.method == "POST" else None
        provider = PROVIDER_OF[wire] if wire else _provider_of(request)
        base = config.anthropic_upstream if provider == "anthropic" else config.openai_upstream
        url = upstream_url(base, request.url.path, request.url.query)
        answer: asyncio.Future[Answered | None] = asyncio.get_running_loop().create_future()
        managed: tuple[Ticket, dict[str, Any], bytes] | None = None
        passed: str | None = None
        try:
            if wire is not None and config.mode == "manage":
                # The engine builds what goes upstream: record first, then send its request.
                managed, passed = await _manage(request.headers, wire, await body.read(), answer)
            elif config.mode == "manage" and request.method == "POST" and request.url.path.rstrip("/") == COUNT_PATH:
                counted, passed = await _counted(request.headers, await body.read())
                if counted is not None:
                    upstream = await open_upstream(state["client"], "POST", url, request.headers, counted)
                    return _passed_on(upstream, upstream.body(_ignore, _ignore))
            # In observe mode the body goes upstream as it arrives: the provider reads the start while
            # the client still sends the end.
            if managed:
                content: Any = managed[2]
            elif body.complete:
                content = body.whole()  # read to be managed, and not managed after all: it goes as it came
            else:
                content = body.chunks() if request.method in _BODY_METHODS else await body.read()
            upstream = await open_upstream(state["client"], request.method, url, request.headers, content)
            if managed and wire and upstream.status in (400, 413):
                upstream = await _recovered(upstream, managed, wire, url, request.headers)
        except _TooLarge:
            return too_large
        except httpx2.HTTPError as exc:
            if isinstance(exc.__cause__, _TooLarge) or isinstance(exc.__context__, _TooLarge):
                return too_large
            if not answer.done():
                answer.set_result(None)
            logger.warning("gateway: %s upstream unreachable: %s", provider, type(exc).__name__)
            message = f"the gateway could not reach {base}: {type(exc).__name__}"
            return Response(unreachable_body(provider, message), status_code=502, media_type="application/json")
        mode = [(MODE_HEADER, f"passthrough; reason={passed}")] if passed else []
        if wire is None:
            return _passed_on(upstream, upstream.body(_ignore, _ignore), extra=mode)
        streamed = "text/event-stream" in dict((k.lower(), v) for k, v in upstream.headers).get("content-type", "")
        if managed and 200 <= upstream.status < 300 and recorder.reads_back(managed[0]):
            reads = _ReadBacks(upstream, managed, wire, url, request.headers, streamed=streamed)
            if streamed:
                return _passed_on(upstream, reads.stream(answer))
            whole = b"".join([chunk async for chunk in reads.stream(answer)])
            failed = reads.refused
            if failed is not None:
                return Response(failed[1], status_code=failed[0].status, headers=dict(failed[0].headers))
            response = Response(whole, status_code=upstream.status)
            response.raw_headers = [(n.lower().encode("latin-1"), v.encode("latin-1")) for n, v in upstream.headers]
            response.headers["content-length"] = str(len(whole))
            return response
        reader = None
        if 200 <= upstream.status < 300:
            reader = AnswerReader(wire, streamed=streamed)
        forwarded = asyncio.Event()
        first_byte: list[int] = []

        def on_chunk(chunk: bytes) -> None:
            if not first_byte:
                first_byte.append(round(1000 * (time.monotonic() - arrived[1])))
            forwarded.set()
            if reader is not None:
                reader.feed(chunk)

        def on_end(complete: bool) -> None:
            forwarded.set()
            if not answer.done():
                answer.set_result(reader.answer() if complete and reader is not None else None)

        if config.mode == "observe":
            timing = (arrived[0], first_byte)
            _keep(asyncio.create_task(_record(request.headers, wire, body, forwarded, answer, timing)))
        return _passed_on(upstream, upstream.body(on_chunk, on_end), extra=mode)

    async def _manage(
        headers: Any, wire: WireName, raw: bytes, answer: asyncio.Future[Answered | None]
    ) -> tuple[tuple[Ticket, dict[str, Any], bytes] | None, str | None]:
        """Record the request's new turns, queue its answer's recording, and give the engine's body for it.

        Without one (the client's body goes as it is), why instead: the body is no conversation the
        gateway reads (``unreadable``), the run reached its round cap (``round_cap``, recorded in
        the run), the engine built or rendered no request (``not_built``). The answer is recorded either way."""
        try:
            client, conversation = await asyncio.to_thread(_read, wire, raw)
        except (ValueError, NotAConversation) as exc:
            logger.debug("gateway: not managed: %s", exc)
            return None, "unreadable"
        key, _ = session_key(conversation, headers, responses=recorder.responses)
        ticket = await _queue(key, conversation, answer)
        engine_body = await asyncio.to_thread(recorder.managed_body, ticket, wire, client)
        if engine_body is None:
            return None, ticket.passed or "not_built"
        return (ticket, client, engine_body), None

    async def _counted(headers: Any, raw: bytes) -> tuple[bytes | None, str | None]:
        """``count_tokens`` in manage mode: the engine's request for the conversation, built and not recorded.

        Without one (the client's body is counted), why instead: ``unreadable``, ``not_built``."""
        try:
            client, conversation = await asyncio.to_thread(_read, "anthropic", raw)
        except (ValueError, NotAConversation) as exc:
            logger.debug("gateway: not counted as the engine's request: %s", exc)
            return None, "unreadable"
        key, _ = session_key(conversation, headers, responses=recorder.responses)
        counted = await asyncio.to_thread(recorder.counted_body, key, conversation, client)
        return (counted, None) if counted is not None else (None, "not_built")

    async def _recovered(
        upstream: Upstream, managed: tuple[Ticket, dict[str, Any], bytes], wire: WireName, url: str, headers: Any
    ) -> Upstream:
        """After a refusal of the engine's request: when it says the request is too long, relieve once and send again.

        Any other refusal, or one relief cannot help, goes back to the client as it came."""
        error_body = await upstream.response.aread()
        ticket, client, _ = managed
        rebuilt = await asyncio.to_thread(recorder.recover, ticket, upstream.status, error_body)
        body = await asyncio.to_thread(recorder.managed_body, rebuilt, wire, client) if rebuilt is not None else None
        if body is None:
            return upstream
        await upstream.response.aclose()
        return await open_upstream(state["client"], "POST", url, headers, body)

    class _ReadBacks:
        """One client answer in manage mode, read-backs answered here (see :mod:`~contextwright.gateway.readback`)."""

        def __init__(
            self,
            upstream: Upstream,
            managed: tuple[Ticket, dict[str, Any], bytes],
            wire: WireName,
            url: str,
            headers: Any,
            *,
            streamed: bool,
        ) -> None:
            self.upstream, self.managed, self.wire, self.url, self.headers = upstream, managed, wire, url, headers
            self.streamed = streamed
            self.refused: tuple[Upstream, bytes] | None = None
            """A continuation the provider refused, with its body (a non-streamed answer passes it on as it came)."""

        async def stream(self, answer: asyncio.Future[Answered | None]) -> AsyncIterator[bytes]:
            """The client's answer, chunk by chunk; ``answer`` resolves to what is recorded of it."""
            joiner = Joiner(self.wire, streamed=self.streamed)
            seen = AnswerReader(self.wire, streamed=self.streamed)
            upstream, (ticket, client, _) = self.upstream, self.managed
            parts: list[dict[str, Any]] = []
            result: Answered | None = None
            try:
                while True:
                    reader = AnswerReader(self.wire, streamed=self.streamed)
                    try:
                        async for chunk in upstream.response.aiter_bytes():
                            reader.feed(chunk)
                            out = joiner.feed(chunk)
                            if out:
                                seen.feed(out)
                                yield out
                    finally:
                        await upstream.response.aclose()
                    part = reader.answer()
                    if part is None:
                        return  # cut before its end: nothing is recorded
                    parts.append(part)
                    following = None
                    if reads_only(self.wire, part) and len(parts) <= MAX_READ_BACKS:
                        following = await asyncio.to_thread(recorder.read_back, ticket, part)
                    body = None
                    if following is not None:
                        body = await asyncio.to_thread(recorder.managed_body, following, self.wire, client)
                    if following is None or body is None:
                        end = joiner.finish(parts)
                        seen.feed(end)
                        yield end
                        visible = seen.answer()
                        result = (part, visible) if visible is not None else None
                        return
                    ticket = following
                    upstream = await open_upstream(state["client"], "POST", self.url, self.headers, body)
                    if upstream.status in (400, 413):
                        upstream = await _recovered(upstream, (ticket, client, body), self.wire, self.url, self.headers)
                    if not 200 <= upstream.status < 300:
                        error_body = await upstream.response.aread()
                        await upstream.response.aclose()
                        self.refused = (upstream, error_body)
                        logger.warning("gateway: the provider refused a read-back's continuation: %d", upstream.status)
                        yield joiner.failed(upstream.status, error_body)
                        return
                    joiner.next_part()
            finally:
                if not answer.done():
                    answer.set_result(result)

    def _queue(
        key: str, conversation: Any, answer: asyncio.Future[Answered | None], client: Received | None = None
    ) -> asyncio.Task[Ticket]:
        """Queue the recording of a request and then of its answer (once ``answer`` resolves) behind the key's earlier jobs."""
        limit = config.upstream_timeout + 60
        ticket_task = queue.submit(key, lambda: asyncio.to_thread(recorder.record_request, key, conversation, client))

        async def record_answer() -> None:
            ticket: Ticket = await ticket_task
            try:
                result = await asyncio.wait_for(answer, timeout=limit)
            except TimeoutError:
                result = None
            if isinstance(result, tuple):
                await asyncio.to_thread(recorder.record_answer, ticket, result[0], seen=result[1])
            else:
                await asyncio.to_thread(recorder.record_answer, ticket, result)

        _keep(queue.submit(key, record_answer))
        return ticket_task

    async def _record(
        headers: Any,
        wire: WireName,
        body: _Body,
        forwarded: asyncio.Event,
        answer: asyncio.Future[Answered | None],
        timing: tuple[Any, list[int]],
    ) -> None:
        """Queue the recording of a request and of its answer, once the client has the answer's first byte.

        The body as sent is recorded too (``timing``: when it arrived, and the time to the
        answer's first byte once it came), so what the client changed between requests can be
        named later.

        Nothing of the recording runs before that byte has gone: the time to first byte is the
        provider's. Requests of one conversation follow each other (the next is sent once the
        answer is read), so each one's jobs are queued behind the previous one's."""
        # A response that never starts (the client left first) gives up after the upstream's timeout.
        limit = config.upstream_timeout + 60
        try:
            await asyncio.wait_for(forwarded.wait(), timeout=limit)
        except TimeoutError:
            return
        if not body.complete:
            return  # the provider answered before the whole request was sent: nothing to read it from
        try:
            raw = json.loads(body.whole())
            conversation = await asyncio.to_thread(parse_request, wire, raw)
        except (ValueError, NotAConversation) as exc:
            logger.debug("gateway: not recorded: %s", exc)
            return
        key, _ = session_key(conversation, headers, responses=recorder.responses)
        at, first_byte = timing
        client = Received(wire=wire, body=raw, at=at, first_byte_ms=first_byte[0] if first_byte else None)
        _queue(key, conversation, answer, client)

    def _keep(task: asyncio.Task[Any]) -> None:
        background.add(task)
        task.add_done_callback(background.discard)

    app = Starlette(
        routes=[Route("/{path:path}", handle, methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"])],
        lifespan=lifespan,
    )
    app.state.recorder = recorder
    app.state.log = store
    return app


_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


class _Body:
    """A request body read once, within the limit, as it arrives; kept for recording."""

    def __init__(self, request: Request, limit: int) -> None:
        self.request = request
        self.limit = limit
        declared = request.headers.get("content-length")
        self.declared_too_large = declared is not None and declared.isdigit() and int(declared) > limit
        self.complete = False
        self._parts: list[bytes] = []

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body chunk by chunk; :class:`_TooLarge` past the limit (a body without a declared length)."""
        size = 0
        async for chunk in self.request.stream():
            size += len(chunk)
            if size > self.limit:
                raise _TooLarge
            self._parts.append(chunk)
            if chunk:
                yield chunk
        self.complete = True

    async def read(self) -> bytes:
        """The whole body at once."""
        async for _ in self.chunks():
            pass
        return self.whole()

    def whole(self) -> bytes:
        """What was read, joined."""
        return b"".join(self._parts)


def _read(wire: WireName, raw: bytes) -> tuple[Any, Conversation]:
    """A body read as JSON and as a conversation (in one worker thread)."""
    client = loads(raw)
    return client, parse_request(wire, client)


def _key_matches(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def _provider_of(request: Request) -> str:
    """Whose API a request that is not a conversation is for: Anthropic's headers or path, else OpenAI."""
    headers = request.headers
    if "anthropic-version" in headers or "x-api-key" in headers or request.url.path.startswith("/v1/messages"):
        return "anthropic"
    return "openai"


def _ignore(*_: Any) -> None:
    pass


def _passed_on(upstream: Upstream, body: AsyncIterator[bytes], *, extra: Sequence[tuple[str, str]] = ()) -> StreamingResponse:
    """The provider's answer as the client gets it: its status, its headers as they came (repeated ones too), its body.

    ``extra``: the gateway's own headers, after the provider's."""
    response = StreamingResponse(body, status_code=upstream.status)
    headers = [*upstream.headers, *extra]
    response.raw_headers = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers]
    return response


def _error(request: Request, status: int, kind: str, message: str) -> Response:
    """An error of the gateway itself, in the shape of the provider the request was for."""
    if _provider_of(request) == "anthropic":
        document: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
    else:
        document = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return Response(json.dumps(document), status_code=status, media_type="application/json")
