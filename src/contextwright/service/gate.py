"""The gate every ``/v1`` request passes before any route runs: key, rate, media type, size.

A pure ASGI middleware, so a request that fails here is answered before its body
is parsed or anything touches the engine: an unauthenticated or oversized request
cannot write, and cannot make the server buffer more than the limit.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio.to_thread

from contextwright.canonical import fast_parser_accepts, has_surrogate
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

    def __init__(
        self, app: ASGIApp, *, store: ServiceStore, limiter: RateLimiter, max_body_bytes: int, failures: RateLimiter | None = None
    ) -> None:
        self.app = app
        self.store = store
        self.limiter = limiter
        self.failures = failures
        """Buckets by client address, taken from by each request that fails to authenticate."""
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(PROTECTED_PREFIX):
            await self.app(scope, receive, send)
            return
        try:
            principal = await self._authenticate_limited(scope)
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
                check_json_values(body)
                receive = _replay(body, receive)
        except Problem as problem:
            await send_problem(send, problem, instance=scope["path"])
            return
        state = scope.setdefault("state", {})
        state["principal"] = principal
        await self.app(scope, receive, _noting_retries(state, send))

    async def _authenticate_limited(self, scope: Scope) -> Any:
        """The principal; an address whose requests keep failing to authenticate is refused before the store is asked."""
        if self.failures is None:
            return await self._authenticate(scope)
        address = _client_address(scope)
        wait = self.failures.wait(address)
        if wait > 0:
            raise Problem(
                "rate-limited",
                f"too many requests without a valid API key from {address}; retry in {wait:.2f} s",
                headers={"Retry-After": retry_after(wait)},
                retry_after_seconds=round(wait, 3),
            )
        try:
            return await self._authenticate(scope)
        except Problem as problem:
            if problem.type.slug == "unauthenticated":
                self.failures.take(address)
            raise

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


def check_json_values(body: bytes) -> None:
    """Refuse a JSON body holding a non-finite number or a lone surrogate, with a 422 naming where.

    The route's parser would take ``NaN``, ``Infinity`` and ``1e400`` as floats (and the
    schema's JSON form would turn them into null), and ``"\\ud800"`` as a string that has no
    UTF-8 form: neither may reach the engine. A body that is not JSON passes, for the route
    to answer. The fast parser refuses all three itself, so only a body it refuses (or every
    body, without it) is parsed again here to say what and where.
    """
    if fast_parser_accepts(body):
        return
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return
    found = _bad_value(value)
    if found is None:
        return
    loc, msg, kind = found
    where = ".".join(["body", *loc])
    raise Problem("invalid-request", f"{where}: {msg}", errors=[{"loc": ["body", *loc], "msg": msg, "type": kind}])


def _bad_value(value: Any) -> tuple[list[str], str, str] | None:
    """The path, message and error type of the first value with no canonical form, or None."""
    stack: list[tuple[Any, list[str]]] = [(value, [])]
    while stack:
        item, path = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            what = "NaN" if math.isnan(item) else "an infinite number (or one too large for a 64-bit float, such as 1e400)"
            return path, f"{what} has no JSON form; send finite numbers", "finite_number"
        if isinstance(item, str) and has_surrogate(item):
            return path, "holds a lone surrogate, which is not valid Unicode text", "unicode_text"
        if isinstance(item, dict):
            for key, child in reversed(item.items()):
                if has_surrogate(key):
                    return (
                        [*path, key.encode("utf-8", "backslashreplace").decode()],
                        "the key holds a lone surrogate",
                        "unicode_text",
                    )
                stack.append((child, [*path, key]))
        elif isinstance(item, list):
            stack.extend((child, [*path, str(index)]) for index, child in reversed(list(enumerate(item))))
    return None


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


def _client_address(scope: Scope) -> str:
    """The client's host (after the server's proxy-header handling, when it is configured)."""
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


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
