"""The gate every ``/v1`` request passes before any route runs: key, rate, media type, size.

A pure ASGI middleware, so a request that fails here is answered before its body
is parsed or anything touches the engine: an unauthenticated or oversized request
cannot write, and cannot make the server buffer more than the limit.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio.to_thread

from contextwright.errors import ContextwrightError
from contextwright.service.limits import RateLimit, RateLimiter, retry_after
from contextwright.service.problems import MEDIA_TYPE, Problem, problem_for
from contextwright.service.store import ServiceStore

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

PROTECTED_PREFIX = "/v1/"
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


class Gate:
    """Authenticate, rate-limit and bound the body of every API request."""

    def __init__(self, app: ASGIApp, *, store: ServiceStore, limiter: RateLimiter, max_body_bytes: int) -> None:
        self.app = app
        self.store = store
        self.limiter = limiter
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(PROTECTED_PREFIX):
            await self.app(scope, receive, send)
            return
        try:
            principal = await self._authenticate(scope)
            wait = self.limiter.take(
                principal.key_id,
                RateLimit(
                    per_second=principal.rate_per_second or self.limiter.default.per_second,
                    burst=principal.burst or self.limiter.default.burst,
                ),
            )
            if wait > 0:
                raise Problem(
                    "rate-limited",
                    f"key {principal.key_id} is over its rate limit; retry in {wait:.2f} s",
                    headers={"Retry-After": retry_after(wait)},
                    retry_after_seconds=round(wait, 3),
                )
            if scope["method"] in _BODY_METHODS:
                self._check_media_type(scope)
                body = await self._read_body(scope, receive)
                receive = _replay(body, receive)
        except Problem as problem:
            await send_problem(send, problem, instance=scope["path"])
            return
        state = scope.setdefault("state", {})
        state["principal"] = principal
        await self.app(scope, receive, _noting_retries(state, send))

    async def _authenticate(self, scope: Scope) -> Any:
        header = _header(scope, b"authorization")
        scheme, _, token = (header or "").partition(" ")
        if header is None or scheme.lower() != "bearer" or not token.strip():
            raise Problem(
                "unauthenticated", "send an API key as 'Authorization: Bearer cw_...'", headers={"WWW-Authenticate": "Bearer"}
            )
        try:
            principal = await anyio.to_thread.run_sync(self.store.authenticate, token.strip())
        except ContextwrightError as exc:
            # A store that cannot answer (a lost connection) is a 503 to retry, not a crash of the gate.
            raise problem_for(exc) from exc
        if principal is None:
            raise Problem(
                "unauthenticated",
                "the API key is malformed, unknown or revoked",
                headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
            )
        return principal

    def _check_media_type(self, scope: Scope) -> None:
        declared = _header(scope, b"content-length")
        if declared == "0":
            return
        media = (_header(scope, b"content-type") or "").split(";")[0].strip().lower()
        if media != "application/json" and not (media.startswith("application/") and media.endswith("+json")):
            raise Problem("unsupported-media-type", f"the body must be JSON (application/json), not {media or 'untyped'}")

    async def _read_body(self, scope: Scope, receive: Receive) -> bytes:
        too_large = Problem(
            "payload-too-large",
            f"the body is larger than this service accepts ({self.max_body_bytes:,} bytes)",
            limit_bytes=self.max_body_bytes,
        )
        declared = _header(scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            raise too_large
        # Chunked bodies carry no length: count while reading, stop at the limit.
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                raise too_large
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)


def _noting_retries(state: MutableMapping[str, Any], send: Send) -> Send:
    """A send that adds ``Contextwright-Retries`` when the route retried its operation after losing a race."""

    async def noting(message: Message) -> None:
        retries = state.get("retries", 0)
        if message["type"] == "http.response.start" and retries:
            message = {**message, "headers": [*message.get("headers", ()), (b"contextwright-retries", str(retries).encode())]}
        await send(message)

    return noting


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that yields the buffered body once, then whatever the server says next."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


async def send_problem(send: Send, problem: Problem, *, instance: str) -> None:
    """Answer with a problem document straight on the ASGI channel."""
    body = json.dumps(problem.document(instance)).encode()
    headers = [(b"content-type", MEDIA_TYPE.encode()), (b"content-length", str(len(body)).encode())]
    headers += [(k.lower().encode(), v.encode()) for k, v in problem.headers.items()]
    await send({"type": "http.response.start", "status": problem.type.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
