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
import functools
import hmac
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Sequence
from concurrent.futures import Future
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple, TypeVar

from aiohttp import ClientSession
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
from contextwright.gateway.upstream import (
    BODY_METHODS,
    UnreachableError,
    Upstream,
    open_client,
    open_upstream,
    unreachable_body,
    upstream_url,
)
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


T = TypeVar("T")


class _TooLarge(Exception):
    pass


def create_gateway_app(config: GatewayConfig | None = None, *, log: EventLog | None = None) -> Starlette:
    """A gateway on the store of ``config`` (or on ``log``, which the caller keeps and closes)."""
    gateway = _Gateway(config or GatewayConfig(), log)
    app = Starlette(
        routes=[
            Route(
                "/{path:path}",
                functools.partial(_route, gateway),
                methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"],
            )
        ],
        lifespan=gateway.lifespan,
    )
    app.state.recorder = gateway.recorder
    app.state.log = gateway.store
    return app


# -- what every route shares ------------------------------------------------------------


class _Managed(NamedTuple):
    """A conversation request the engine built the body for (manage mode)."""

    ticket: Ticket
    client: dict[str, Any]
    """The client's body, read as JSON (the engine's request keeps its other options)."""
    body: bytes
    """The engine's body, as it goes upstream."""


class _Gateway:
    """One gateway's state: its configuration, its store and recorder, the upstream client, the background jobs."""

    client: ClientSession
    """The upstream client, open while the app runs (see :meth:`lifespan`)."""

    def __init__(self, config: GatewayConfig, log: EventLog | None) -> None:
        self.config = config
        self.manage = config.mode == "manage"
        self.owned = log is None
        """The store was opened here (and is closed here at the end)."""
        self.store = log if log is not None else open_log(config.store)
        self.registry = open_registry(config.store, config.tenant)
        self.recorder = Recorder(Engine(self.store), registry=self.registry, manage=self.manage)
        self.recorder.answer_wait = config.answer_wait
        self.queue = KeyQueue()
        self.background: set[asyncio.Task[Any]] = set()
        """Recording jobs still running (waited for, up to 30 seconds, at shutdown)."""

    @asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        """The upstream client while the app runs; at the end, the recordings under way, then the stores, closed."""
        self.client = open_client(self.config.upstream_timeout)
        try:
            yield
        finally:
            if self.background:
                await asyncio.wait(self.background, timeout=30)
            await self.client.close()
            if self.registry is not None:
                self.registry.close()
            if self.owned:
                self.store.close()

    def keep(self, task: asyncio.Task[Any]) -> None:
        """Hold a background job until it ends."""
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    async def open(self, method: str, url: str, headers: Any, content: bytes | AsyncIterator[bytes]) -> Upstream:
        """Send a request upstream and wait for the answer's status and headers."""
        return await open_upstream(self.client, method, url, headers, content)

    def session_key(self, conversation: Conversation, headers: Any) -> str:
        """The session key of a conversation request (see :mod:`~contextwright.gateway.identity`)."""
        key, _ = session_key(conversation, headers, responses=self.recorder.responses)
        return key

    def queue_recording(
        self,
        key: str,
        conversation: Any,
        answer: asyncio.Future[Answered | None],
        client: Received | None = None,
        *,
        render: tuple[WireName, dict[str, Any]] | None = None,
    ) -> asyncio.Task[tuple[Ticket, bytes | None]]:
        """Queue the recording of a request and then of its answer (once ``answer`` resolves) behind the key's earlier jobs.

        The task gives the request's ticket and, with ``render`` (manage mode: the client's wire and
        body), the engine's body for it, rendered in the same worker thread as the recording."""
        recorder = self.recorder

        def record() -> tuple[Ticket, bytes | None]:
            ticket = recorder.record_request(key, conversation, client, render=render)
            return ticket, ticket.body

        recorded = self.queue.submit(key, lambda: asyncio.to_thread(record))

        async def record_answer() -> None:
            ticket, _ = await recorded
            await self.record_answer(ticket, answer)

        self.keep(self.queue.submit(key, record_answer))
        return recorded

    def read_and_record(self, wire: WireName, raw: bytes, headers: Any) -> _Read:
        """Manage mode, in a worker thread: the body read, and its request recorded and rendered there too when
        no earlier job of its session key is queued or running (one trip to a thread instead of two).

        Raises what :func:`_read` raises for a body that is no conversation (nothing is taken then)."""
        client, conversation = _read(wire, raw)
        key = self.session_key(conversation, headers)
        claim = self.queue.claim(key)
        if claim is None:
            return _Read(client, conversation, key, None, None)
        try:
            ticket = self.recorder.record_request(key, conversation, render=(wire, client))
        except BaseException:
            self.queue.release(key, claim)
            raise
        return _Read(client, conversation, key, claim, ticket)

    def hand_over(self, read: _Read, answer: asyncio.Future[Answered | None]) -> None:
        """The answer's recording as the next job of a key :meth:`read_and_record` took (the key is free after it)."""
        if read.claim is not None and read.ticket is not None:
            ticket = read.ticket
            self.keep(self.queue.submit_claimed(read.key, read.claim, lambda: self.record_answer(ticket, answer)))

    async def record_answer(self, ticket: Ticket, answer: asyncio.Future[Answered | None]) -> None:
        """Record the answer to ``ticket``'s request once ``answer`` resolves (nothing of it after the upstream's timeout)."""
        try:
            result = await asyncio.wait_for(answer, timeout=self.config.upstream_timeout + 60)
        except TimeoutError:
            result = None
        if isinstance(result, tuple):
            await asyncio.to_thread(self.recorder.record_answer, ticket, result[0], seen=result[1])
        else:
            await asyncio.to_thread(self.recorder.record_answer, ticket, result)

    async def recovered(self, upstream: Upstream, managed: _Managed, wire: WireName, url: str, headers: Any) -> Upstream:
        """After a refusal of the engine's request: when it says the request is too long, relieve once and send again.

        Any other refusal, or one relief cannot help, goes back to the client as it came."""
        upstream = await upstream.whole()
        error_body = await upstream.read()
        ticket, client, _ = managed
        rebuilt = await asyncio.to_thread(self.recorder.recover, ticket, upstream.status, error_body)
        body = await asyncio.to_thread(self.recorder.managed_body, rebuilt, wire, client) if rebuilt is not None else None
        if body is None:
            return upstream
        return await self.open("POST", url, headers, body)


@dataclass(frozen=True, kw_only=True, slots=True)
class _Exchange:
    """One client request on its way: its body, where it goes, and what is recorded of its answer once known."""

    request: Request
    body: _Body
    arrived: tuple[datetime, float]
    """When it arrived: on the engine's clock, and on the monotonic one (for the time to first byte)."""
    provider: str
    base: str
    """The upstream it goes to; ``url``, the address there."""
    url: str
    too_large: Response
    """The answer to a body past the limit."""
    answer: asyncio.Future[Answered | None]
    """What is recorded of the answer (None: nothing)."""

    async def guarded(self, opening: Awaitable[T]) -> T | Response:
        """What ``opening`` gives (the request read and sent upstream), or the gateway's error when that failed.

        A body past the limit gets 413; an upstream the gateway could not reach, 502 in the provider's shape."""
        try:
            return await opening
        except _TooLarge:
            return self.too_large
        except UnreachableError as exc:
            if self.body.overflowed:
                return self.too_large  # the client's body passed the limit while it was forwarded
            if not self.answer.done():
                self.answer.set_result(None)
            logger.warning("gateway: %s upstream unreachable: %s", self.provider, type(exc).__name__)
            message = f"the gateway could not reach {self.base}: {type(exc).__name__}"
            return Response(unreachable_body(self.provider, message), status_code=502, media_type="application/json")


async def _route(gateway: _Gateway, request: Request) -> Response:
    """Every request: its key and size checked, then handed to its route family.

    A conversation (see :func:`_conversation`), ``count_tokens`` in manage mode (:func:`_count_tokens`),
    anything else passed through (:func:`_pass_through`)."""
    config = gateway.config
    if config.gateway_key is not None and not _key_matches(request.headers.get(KEY_HEADER), config.gateway_key):
        return _error(request, 401, "authentication_error", f"send the gateway key in the {KEY_HEADER} header")
    too_large = _error(
        request, 413, "request_too_large", f"the body is larger than this gateway accepts ({config.max_body_bytes:,} bytes)"
    )
    body = _Body(request, config.max_body_bytes)
    arrived = (gateway.recorder.engine.clock.now(), time.monotonic())
    if body.declared_too_large:
        return too_large
    path = request.url.path.rstrip("/")
    wire = _CONVERSATIONS.get(path) if request.method == "POST" else None
    provider = PROVIDER_OF[wire] if wire else _provider_of(request)
    base = config.anthropic_upstream if provider == "anthropic" else config.openai_upstream
    exchange = _Exchange(
        request=request,
        body=body,
        arrived=arrived,
        provider=provider,
        base=base,
        url=upstream_url(base, request.url.path, request.url.query),
        too_large=too_large,
        answer=asyncio.get_running_loop().create_future(),
    )
    if wire is not None:
        return await _conversation(gateway, exchange, wire)
    if gateway.manage and request.method == "POST" and path == COUNT_PATH:
        return await _count_tokens(gateway, exchange)
    return await _pass_through(gateway, exchange)


# -- conversations: /v1/messages, /v1/responses, /v1/chat/completions -------------------


async def _conversation(gateway: _Gateway, exchange: _Exchange, wire: WireName) -> Response:
    """A conversation request, sent upstream (the engine's request in manage mode) and its answer passed back.

    An answer to the engine's request that only reads back is continued here (:class:`_ReadBacks`);
    any other is passed on as it comes and read on the side (:class:`_Tap`)."""
    opened = await exchange.guarded(_send_conversation(gateway, exchange, wire))
    if isinstance(opened, Response):
        return opened
    upstream, managed, passed = opened
    streamed = "text/event-stream" in dict((k.lower(), v) for k, v in upstream.headers).get("content-type", "")
    if managed and 200 <= upstream.status < 300 and gateway.recorder.reads_back(managed.ticket):
        return await _with_read_backs(gateway, exchange, upstream, managed, wire, streamed=streamed)
    reader = AnswerReader(wire, streamed=streamed) if 200 <= upstream.status < 300 else None
    tap = _Tap(exchange, reader)
    if gateway.config.mode == "observe":
        gateway.keep(asyncio.create_task(_record_observed(gateway, exchange, wire, tap)))
    return _passed_on(upstream, upstream.body(tap.on_chunk, tap.on_end), extra=_mode_headers(passed))


async def _send_conversation(
    gateway: _Gateway, exchange: _Exchange, wire: WireName
) -> tuple[Upstream, _Managed | None, str | None]:
    """Send the request upstream: the upstream's answer, the engine's request when it went, and why not (manage mode)."""
    managed: _Managed | None = None
    passed: str | None = None
    if gateway.manage:
        # The engine builds what goes upstream: record first, then send its request.
        managed, passed = await _manage(gateway, exchange, wire, await exchange.body.read())
    content = managed.body if managed else await exchange.body.as_sent()
    request = exchange.request
    upstream = await gateway.open(request.method, exchange.url, request.headers, content)
    if managed and upstream.status in (400, 413):
        upstream = await gateway.recovered(upstream, managed, wire, exchange.url, request.headers)
    return upstream, managed, passed


async def _manage(gateway: _Gateway, exchange: _Exchange, wire: WireName, raw: bytes) -> tuple[_Managed | None, str | None]:
    """Record the request's new turns, queue its answer's recording, and give the engine's body for it.

    Without one (the client's body goes as it is), why instead: the body is no conversation the
    gateway reads (``unreadable``), the run reached its round cap (``round_cap``, recorded in
    the run), the engine built or rendered no request (``not_built``). The answer is recorded either way."""
    # The answer is recorded after the request, whether or not this coroutine lives to hand it over.
    reading = asyncio.ensure_future(asyncio.to_thread(gateway.read_and_record, wire, raw, exchange.request.headers))
    reading.add_done_callback(lambda done: gateway.hand_over(done.result(), exchange.answer) if _succeeded(done) else None)
    try:
        read = await asyncio.shield(reading)
    except (ValueError, NotAConversation) as exc:
        logger.debug("gateway: not managed: %s", exc)
        return None, "unreadable"
    if read.ticket is not None:
        ticket, engine_body = read.ticket, read.ticket.body
    else:
        ticket, engine_body = await gateway.queue_recording(
            read.key, read.conversation, exchange.answer, render=(wire, read.client)
        )
    if engine_body is None:
        return None, ticket.passed or "not_built"
    return _Managed(ticket, read.client, engine_body), None


def _succeeded(done: asyncio.Future[Any]) -> bool:
    return not done.cancelled() and done.exception() is None


async def _with_read_backs(
    gateway: _Gateway, exchange: _Exchange, upstream: Upstream, managed: _Managed, wire: WireName, *, streamed: bool
) -> Response:
    """The answer to the engine's request, its read-backs answered here: streamed as it comes, or joined whole."""
    reads = _ReadBacks(gateway, upstream, managed, wire, exchange.url, exchange.request.headers, streamed=streamed)
    if streamed:
        return _passed_on(upstream, reads.stream(exchange.answer))
    whole = b"".join([chunk async for chunk in reads.stream(exchange.answer)])
    failed = reads.refused
    if failed is not None:
        return Response(failed[1], status_code=failed[0].status, headers=dict(failed[0].headers))
    response = Response(whole, status_code=upstream.status)
    response.raw_headers = _raw_headers(upstream.headers)
    response.headers["content-length"] = str(len(whole))
    return response


class _ReadBacks:
    """One client answer in manage mode, read-backs answered here (see :mod:`~contextwright.gateway.readback`)."""

    def __init__(
        self,
        gateway: _Gateway,
        upstream: Upstream,
        managed: _Managed,
        wire: WireName,
        url: str,
        headers: Any,
        *,
        streamed: bool,
    ) -> None:
        self.gateway = gateway
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
                    async for chunk in upstream.chunks():
                        reader.feed(chunk)
                        out = joiner.feed(chunk)
                        if out:
                            seen.feed(out)
                            yield out
                finally:
                    upstream.close()
                part = reader.answer()
                if part is None:
                    return  # cut before its end: nothing is recorded
                parts.append(part)
                following = await self._following(ticket, client, part, len(parts))
                if following is None:
                    end = joiner.finish(parts)
                    seen.feed(end)
                    yield end
                    visible = seen.answer()
                    result = (part, visible) if visible is not None else None
                    return
                ticket, body = following
                upstream = await self.gateway.open("POST", self.url, self.headers, body)
                if upstream.status in (400, 413):
                    upstream = await self.gateway.recovered(
                        upstream, _Managed(ticket, client, body), self.wire, self.url, self.headers
                    )
                if not 200 <= upstream.status < 300:
                    error_body = await upstream.read()
                    self.refused = (upstream, error_body)
                    logger.warning("gateway: the provider refused a read-back's continuation: %d", upstream.status)
                    yield joiner.failed(upstream.status, error_body)
                    return
                joiner.next_part()
        finally:
            if not answer.done():
                answer.set_result(result)

    async def _following(
        self, ticket: Ticket, client: dict[str, Any], part: dict[str, Any], count: int
    ) -> tuple[Ticket, bytes] | None:
        """After the ``count``-th part: when it only reads back (within :data:`MAX_READ_BACKS`), the request that continues it."""
        recorder = self.gateway.recorder
        following = None
        if reads_only(self.wire, part) and count <= MAX_READ_BACKS:
            following = await asyncio.to_thread(recorder.read_back, ticket, part)
        if following is None:
            return None
        body = await asyncio.to_thread(recorder.managed_body, following, self.wire, client)
        return (following, body) if body is not None else None


class _Tap:
    """An answer passed on as it comes, read on the side: when its first byte went, and what is recorded of it."""

    def __init__(self, exchange: _Exchange, reader: AnswerReader | None) -> None:
        self.exchange = exchange
        self.reader = reader
        """Reads a successful answer (None for an error: nothing is recorded of it)."""
        self.forwarded = asyncio.Event()
        """Set once the first chunk (or the end) has gone to the client."""
        self.first_byte_ms: int | None = None

    def on_chunk(self, chunk: bytes) -> None:
        if self.first_byte_ms is None:
            self.first_byte_ms = round(1000 * (time.monotonic() - self.exchange.arrived[1]))
        self.forwarded.set()
        if self.reader is not None:
            self.reader.feed(chunk)

    def on_end(self, complete: bool) -> None:
        self.forwarded.set()
        answer = self.exchange.answer
        if not answer.done():
            answer.set_result(self.reader.answer() if complete and self.reader is not None else None)


async def _record_observed(gateway: _Gateway, exchange: _Exchange, wire: WireName, tap: _Tap) -> None:
    """Queue the recording of a request and of its answer, once the client has the answer's first byte.

    The body as sent is recorded too (when it arrived, and the time to the answer's first byte
    once it came), so what the client changed between requests can be named later.

    Nothing of the recording runs before that byte has gone: the time to first byte is the
    provider's. Requests of one conversation follow each other (the next is sent once the
    answer is read), so each one's jobs are queued behind the previous one's."""
    # A response that never starts (the client left first) gives up after the upstream's timeout.
    limit = gateway.config.upstream_timeout + 60
    try:
        await asyncio.wait_for(tap.forwarded.wait(), timeout=limit)
    except TimeoutError:
        return
    body = exchange.body
    if not body.complete:
        return  # the provider answered before the whole request was sent: nothing to read it from
    try:
        raw, conversation = await asyncio.to_thread(_read, wire, body.whole())
    except (ValueError, NotAConversation) as exc:
        logger.debug("gateway: not recorded: %s", exc)
        return
    key = gateway.session_key(conversation, exchange.request.headers)
    client = Received(wire=wire, body=raw, at=exchange.arrived[0], first_byte_ms=tap.first_byte_ms)
    gateway.queue_recording(key, conversation, exchange.answer, client)


# -- count_tokens in manage mode --------------------------------------------------------


async def _count_tokens(gateway: _Gateway, exchange: _Exchange) -> Response:
    """``count_tokens`` in manage mode: the engine's request for the conversation counted, else the client's as it came."""
    opened = await exchange.guarded(_send_count(gateway, exchange))
    if isinstance(opened, Response):
        return opened
    upstream, passed = opened
    return _passed_on(upstream, upstream.body(_ignore, _ignore), extra=_mode_headers(passed))


async def _send_count(gateway: _Gateway, exchange: _Exchange) -> tuple[Upstream, str | None]:
    """Send the engine's request to be counted, or the client's and why not its (``unreadable``, ``not_built``)."""
    request = exchange.request
    counted, passed = await _counted(gateway, request.headers, await exchange.body.read())
    if counted is not None:
        return await gateway.open("POST", exchange.url, request.headers, counted), None
    return await _send_as_is(gateway, exchange), passed


async def _counted(gateway: _Gateway, headers: Any, raw: bytes) -> tuple[bytes | None, str | None]:
    """The engine's request for the conversation, built and not recorded.

    Without one (the client's body is counted), why instead: ``unreadable``, ``not_built``."""
    try:
        client, conversation = await asyncio.to_thread(_read, "anthropic", raw)
    except (ValueError, NotAConversation) as exc:
        logger.debug("gateway: not counted as the engine's request: %s", exc)
        return None, "unreadable"
    key = gateway.session_key(conversation, headers)
    counted = await asyncio.to_thread(gateway.recorder.counted_body, key, conversation, client)
    return (counted, None) if counted is not None else (None, "not_built")


# -- everything else --------------------------------------------------------------------


async def _pass_through(gateway: _Gateway, exchange: _Exchange) -> Response:
    """Any other request (model lists, files; ``count_tokens`` in observe mode), passed on both ways unchanged."""
    opened = await exchange.guarded(_send_as_is(gateway, exchange))
    if isinstance(opened, Response):
        return opened
    return _passed_on(opened, opened.body(_ignore, _ignore))


async def _send_as_is(gateway: _Gateway, exchange: _Exchange) -> Upstream:
    """Send the client's request upstream as it came."""
    request = exchange.request
    return await gateway.open(request.method, exchange.url, request.headers, await exchange.body.as_sent())


class _Body:
    """A request body read once, within the limit, as it arrives; kept for recording."""

    def __init__(self, request: Request, limit: int) -> None:
        self.request = request
        self.limit = limit
        declared = request.headers.get("content-length")
        self.declared_too_large = declared is not None and declared.isdigit() and int(declared) > limit
        self.complete = False
        self.overflowed = False
        """The body passed the limit as it arrived."""
        self._parts: list[bytes] = []

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body chunk by chunk; :class:`_TooLarge` past the limit (a body without a declared length)."""
        size = 0
        async for chunk in self.request.stream():
            size += len(chunk)
            if size > self.limit:
                self.overflowed = True
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

    async def as_sent(self) -> bytes | AsyncIterator[bytes]:
        """The body as it goes upstream unchanged: whole once read, else as it arrives (a method with a body)."""
        if self.complete:
            return self.whole()  # read to be managed, and not managed after all: it goes as it came
        # The provider reads the start while the client still sends the end.
        return self.chunks() if self.request.method in BODY_METHODS else await self.read()


class _Read(NamedTuple):
    """A manage-mode body read in a worker thread, and its request's ticket when it was recorded there too."""

    client: Any
    conversation: Conversation
    key: str
    claim: Future[None] | None
    """The session key, taken for this request until its answer is recorded (:meth:`KeyQueue.claim`)."""
    ticket: Ticket | None


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
    response.raw_headers = _raw_headers([*upstream.headers, *extra])
    return response


def _raw_headers(headers: Sequence[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    """Headers as the HTTP layer sends them: lowercase names, in order, repeated ones kept."""
    return [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers]


def _mode_headers(passed: str | None) -> list[tuple[str, str]]:
    """The gateway's header on an answer to a request sent as the client sent it (manage mode): why it went so."""
    return [(MODE_HEADER, f"passthrough; reason={passed}")] if passed else []


def _error(request: Request, status: int, kind: str, message: str) -> Response:
    """An error of the gateway itself, in the shape of the provider the request was for."""
    if _provider_of(request) == "anthropic":
        document: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
    else:
        document = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return Response(json.dumps(document), status_code=status, media_type="application/json")
