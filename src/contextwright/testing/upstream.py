"""A fake provider over real HTTP: the providers' endpoints on a loopback port, answering from a script.

For tests and benchmarks of anything that sits between a client and a provider (the
gateway). :class:`FakeUpstream` is an ASGI app (serve it with
:func:`contextwright.testing.service.serving`): every request is kept as received
(:attr:`FakeUpstream.received`, headers and raw body), and each conversation request
(``/v1/messages``, ``/v1/responses``, ``/v1/chat/completions``) is answered by the
script, a function of the request that returns a :class:`Reply`. A reply is the JSON a
provider returns for a non-streamed call; when the request asks for a stream it goes
out as that provider's server-sent events (:mod:`contextwright.testing.sse`), one
network write per event, ``event_delay`` seconds apart. A reply with an error status
goes out as given, never streamed. Other paths answer ``{"path": ...}`` with status 200
(``count_tokens`` answers ``{"input_tokens": 42}``).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from contextwright.testing.sse import sse_events


@dataclass(frozen=True, kw_only=True, slots=True)
class Reply:
    """One scripted answer: a status and the provider's JSON (streamed when the request asks for a stream)."""

    body: dict[str, Any]
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    cut_after: int | None = None
    """Streamed: end the body after this many events, as a connection cut midway would."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Received:
    """One request as the fake provider received it."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


Script = Callable[[Received], Reply]


_numbers = itertools.count(1)


def anthropic_message(
    *content: dict[str, Any],
    stop_reason: str = "end_turn",
    usage: dict[str, int] | None = None,
    model: str = "claude-sonnet-4-5",
    message_id: str | None = None,
) -> dict[str, Any]:
    """An Anthropic Messages answer with these content blocks (a fresh id unless given: clients tell answers apart by it)."""
    return {
        "id": message_id or f"msg_fake{next(_numbers):04d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": list(content),
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage
        or {"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
    }


def anthropic_error(status: int, kind: str, message: str) -> Reply:
    """An Anthropic error answer (``overloaded_error``, ``invalid_request_error``, ...)."""
    return Reply(status=status, body={"type": "error", "error": {"type": kind, "message": message}})


def responses_answer(*output: dict[str, Any], response_id: str = "resp_fake", model: str = "gpt-5") -> dict[str, Any]:
    """An OpenAI Responses answer with these output items."""
    return {
        "id": response_id,
        "object": "response",
        "created_at": 1_700_000_000,
        "status": "completed",
        "model": model,
        "output": list(output),
        "usage": {
            "input_tokens": 100,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 20,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 120,
        },
    }


def chat_answer(text: str, *, model: str = "gpt-4o") -> dict[str, Any]:
    """An OpenAI chat completion answering ``text``."""
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }


def _default(received: Received) -> Reply:
    if received.path.endswith("/responses"):
        message = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed"}
        return Reply(body=responses_answer({**message, "content": [{"type": "output_text", "text": "ok", "annotations": []}]}))
    if received.path.endswith("/chat/completions"):
        return Reply(body=chat_answer("ok"))
    return Reply(body=anthropic_message({"type": "text", "text": "ok"}))


class FakeUpstream:
    """An ASGI app playing a provider: records every request, answers conversations from ``script``."""

    def __init__(self, script: Script | None = None, *, event_delay: float = 0.0) -> None:
        self.script = script or _default
        self.event_delay = event_delay
        self.received: list[Received] = []

    @property
    def conversations(self) -> list[Received]:
        """The conversation requests received so far (not ``count_tokens`` or other paths)."""
        return [r for r in self.received if r.path.rstrip("/").endswith(("/messages", "/responses", "/chat/completions"))]

    async def __call__(self, scope: dict[str, Any], receive: Callable[[], Any], send: Callable[[Any], Any]) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        received = Received(
            method=scope["method"], path=scope["path"], query=scope["query_string"].decode(), headers=headers, body=body
        )
        self.received.append(received)
        path = received.path.rstrip("/")
        if path.endswith("/count_tokens"):
            await _send_json(send, 200, {"input_tokens": 42}, {})
            return
        if not path.endswith(("/messages", "/responses", "/chat/completions")):
            await _send_json(send, 200, {"path": received.path}, {})
            return
        reply = self.script(received)
        streamed = bool(body) and bool(json.loads(body).get("stream"))
        if reply.status >= 400 or not streamed:
            await _send_json(send, reply.status, reply.body, reply.headers)
            return
        stream_options = json.loads(body).get("stream_options") or {}
        frames = sse_events(reply.body, include_usage=bool(stream_options.get("include_usage", True)))
        frames = frames[: reply.cut_after] if reply.cut_after is not None else frames
        start_headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
        start_headers += [(k.encode(), v.encode()) for k, v in reply.headers.items()]
        await send({"type": "http.response.start", "status": reply.status, "headers": start_headers})
        async for frame in _paced(frames, self.event_delay):
            await send({"type": "http.response.body", "body": frame, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _paced(frames: list[bytes], delay: float) -> AsyncIterator[bytes]:
    for frame in frames:
        if delay:
            await asyncio.sleep(delay)
        yield frame


async def _send_json(send: Callable[[Any], Any], status: int, document: Any, headers: dict[str, str]) -> None:
    body = json.dumps(document).encode()
    start = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    start += [(k.encode(), v.encode()) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": start})
    await send({"type": "http.response.body", "body": body})
