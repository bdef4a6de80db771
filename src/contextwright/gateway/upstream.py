"""Forwarding to the provider: the client's request out, the provider's answer back chunk by chunk.

Headers go both ways unchanged except the hop-by-hop ones (RFC 9110 section 7.6.1), the
length and encoding the HTTP layers set again, and the gateway's own
``x-contextwright-*`` headers, which never leave it. The client's API key travels in
its own header (``x-api-key``, ``authorization``) to the provider and nowhere else. The
answer's body is passed on as it arrives (decoded: the gateway drops
``content-encoding`` rather than re-compress), so a stream reaches the client event by
event.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx2

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
_REQUEST_DROPPED = _HOP_BY_HOP | {"host", "content-length"}
_RESPONSE_DROPPED = _HOP_BY_HOP | {"content-length", "content-encoding"}
OWN_HEADER_PREFIX = "x-contextwright-"


def request_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The client's headers as they go upstream."""
    return {k: v for k, v in headers.items() if k.lower() not in _REQUEST_DROPPED and not k.lower().startswith(OWN_HEADER_PREFIX)}


def response_headers(headers: httpx2.Headers) -> list[tuple[str, str]]:
    """The provider's headers as they go back to the client (repeated ones kept)."""
    return [(k, v) for k, v in headers.multi_items() if k.lower() not in _RESPONSE_DROPPED]


def upstream_url(base: str, path: str, query: str) -> str:
    """The provider URL for a request path: ``base`` + path, a ``/v1`` in both said once."""
    base = base.rstrip("/")
    if base.endswith("/v1") and (path == "/v1" or path.startswith("/v1/")):
        path = path[3:]
    return f"{base}{path}" + (f"?{query}" if query else "")


@dataclass(frozen=True, kw_only=True, slots=True)
class Upstream:
    """An opened upstream answer: status, headers, and its body as it arrives."""

    status: int
    headers: list[tuple[str, str]]
    response: httpx2.Response

    async def body(self, on_chunk: Callable[[bytes], None], on_end: Callable[[bool], None]) -> AsyncIterator[bytes]:
        """The body, chunk by chunk; ``on_chunk`` sees each chunk, ``on_end(complete)`` runs once at the end."""
        complete = False
        try:
            async for chunk in self.response.aiter_bytes():
                on_chunk(chunk)
                yield chunk
            complete = True
        finally:
            await self.response.aclose()
            on_end(complete)


async def open_upstream(
    client: httpx2.AsyncClient, method: str, url: str, headers: Mapping[str, str], body: bytes | AsyncIterator[bytes]
) -> Upstream:
    """Send the request (a body given as chunks goes as they come) and wait for the answer's status and headers."""
    outgoing = request_headers(headers)
    declared = headers.get("content-length")
    if not isinstance(body, bytes) and declared is not None:
        outgoing["content-length"] = declared  # sent with the client's length, not re-framed as chunks
    request = client.build_request(method, url, headers=outgoing, content=body)
    response = await client.send(request, stream=True)
    return Upstream(status=response.status_code, headers=response_headers(response.headers), response=response)


def unreachable_body(provider: str, message: str) -> bytes:
    """An error body in the provider's own shape, for an upstream the gateway could not reach."""
    if provider == "anthropic":
        document: dict[str, Any] = {"type": "error", "error": {"type": "api_error", "message": message}}
    else:
        document = {"error": {"message": message, "type": "server_error", "param": None, "code": "upstream_unreachable"}}
    return json.dumps(document).encode()
