"""A Python client for the HTTP service that mirrors the embedded engine's session API.

Switching an agent from embedded to remote changes one line::

    engine = cw.Engine.open("sqlite:///agent.db")
    engine = Client("http://127.0.0.1:8700", api_key)      # the same loop runs unchanged

Writes carry an idempotency key (a random one unless given) and are retried when the
reply was lost or the service asked to wait (429, 503): a retry never stores twice.
Problem documents come back as typed errors (:class:`SeqConflict` for a stale
``expected_seq``, :class:`ServiceProblem` for the rest).
"""

from __future__ import annotations

import time
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from contextwright._optional import require
from contextwright.errors import ContextwrightError, SeqConflict, UsageError
from contextwright.events.catalog import AssistantMessage, ToolCall
from contextwright.models import ResolvedModel
from contextwright.plan.plan import DEFAULT_CACHE_TTL
from contextwright.runtime.operations import moved_names
from contextwright.runtime.spec import AgentSpec

__all__ = ["Client", "RemoteAdapter", "RemoteHistory", "RemoteRequest", "RemoteSession", "ServiceProblem"]

_RETRY_STATUSES = frozenset({429, 503})
_MOVED = moved_names("remote")
"""Names the remote session answered itself before they moved to a part (see ``runtime/operations.py``)."""


class ServiceProblem(ContextwrightError):
    """The service answered with a problem document (RFC 9457); ``problem`` holds all of it."""


class Client:
    """A connection to a Contextwright service, holding one tenant's API key."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 60.0,
        retries: int = 3,
        transport: Any = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        httpx = require("httpx2", extra="client", feature="the Contextwright client")
        self.base_url = base_url.rstrip("/")
        self.retries = retries
        self._sleep = sleep
        self._http = httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {api_key}", "Accept": "application/json"},
            timeout=timeout,
            transport=transport,
        )
        self._transport_errors: tuple[type[BaseException], ...] = (httpx.TransportError,)

    def session(self, session_id: str, *, agent: AgentSpec, model: ResolvedModel) -> RemoteSession:
        """Open or resume a session (the same id with another spec is refused with ``session-exists``)."""
        body = {"session_id": session_id, "agent": agent_json(agent), "model": model_json(model)}
        data = self.call("POST", "/v1/sessions", body, retry_safe=True)
        return RemoteSession(self, data["session_id"], agent=agent, model=model)

    def sessions(self) -> list[dict[str, Any]]:
        """This tenant's sessions."""
        return list(self.call("GET", "/v1/sessions")["sessions"])

    def call(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        *,
        retry_safe: bool = False,
        session_id: str | None = None,
        **params: Any,
    ) -> Any:
        """One API call; problem documents raise. ``retry_safe`` calls are retried after a lost reply."""
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                response = self._http.request(
                    method, path, json=body, params={k: v for k, v in params.items() if v is not None} or None
                )
            except self._transport_errors:
                if retry_safe and not last:
                    self._sleep(min(2.0, 0.1 * 2**attempt))
                    continue
                raise
            if response.status_code in _RETRY_STATUSES and not last:
                self._sleep(min(10.0, float(response.headers.get("Retry-After", "1"))))
                continue
            if response.status_code >= 400:
                raise _problem(response, session_id)
            return response.json()
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RemoteSession:
    """One session on the service, with the methods of :class:`contextwright.Session`."""

    def __init__(self, client: Client, session_id: str, *, agent: AgentSpec, model: ResolvedModel) -> None:
        self.client = client
        self.id = session_id
        self.agent = agent
        self.model = model
        self._path = f"/v1/sessions/{quote(session_id, safe='')}"
        self.history = RemoteHistory(self)
        """Events, last seq, series and artifacts, read back from the service."""
        self.adapter = RemoteAdapter(self)
        """An answer or usage the caller parsed itself, and whether a request can be built now."""

    if not TYPE_CHECKING:
        # The names it answered itself before still answer at run time, with a warning; a type checker flags them.

        def __getattr__(self, name: str) -> Any:
            # Only reached when normal lookup fails: a name that moved to one of the parts above.
            new = _MOVED.get(name)
            if new is None:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            warnings.warn(f"RemoteSession.{name} is deprecated: use session.{new}", DeprecationWarning, stacklevel=2)
            home, _, attribute = new.partition(".")
            return getattr(getattr(self, home), attribute)

    # -- recording ---------------------------------------------------------------------

    def _write(
        self, path: str, body: dict[str, Any], idempotency_key: str | None, expected_seq: int | None
    ) -> list[dict[str, Any]]:
        body = {**body, "idempotency_key": idempotency_key or uuid.uuid4().hex}
        if expected_seq is not None:
            body["expected_seq"] = expected_seq
        return list(self.client.call("POST", self._path + path, body, retry_safe=True, session_id=self.id)["events"])

    def user(
        self,
        text: str,
        *,
        steering: bool = False,
        author: str = "user",
        idempotency_key: str | None = None,
        expected_seq: int | None = None,
    ) -> dict[str, Any]:
        """Record a user (or operator) message; returns the stored event."""
        body = {"text": text, "steering": steering, "author": author}
        return self._write("/messages", body, idempotency_key, expected_seq)[0]

    def record(
        self, response: Any, *, idempotency_key: str | None = None, expected_seq: int | None = None
    ) -> list[dict[str, Any]]:
        """Record a provider response (SDK object or its JSON), usage included."""
        data = response.model_dump(mode="json") if hasattr(response, "model_dump") else dict(response)
        return self._write("/responses", {"response": data}, idempotency_key, expected_seq)

    def tool_result(
        self,
        call_id: str,
        output: str,
        *,
        exit_code: int | None = None,
        is_error: bool | None = None,
        trust: str = "tool",
        idempotency_key: str | None = None,
        expected_seq: int | None = None,
    ) -> dict[str, Any]:
        """Record a tool's output (stored whole; the model sees a bounded view); returns the tool.result event."""
        body = {"call_id": call_id, "output": output, "exit_code": exit_code, "is_error": is_error, "trust": trust}
        return self._write("/tool-results", body, idempotency_key, expected_seq)[-1]

    # -- state ---------------------------------------------------------------------------

    def _state(self) -> dict[str, Any]:
        return dict(self.client.call("GET", self._path))

    def pending_tool_calls(self) -> list[ToolCall]:
        """Tool calls of the last answer that still need a result."""
        return [ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"]) for c in self._state()["pending_tool_calls"]]

    # -- requests --------------------------------------------------------------------------

    def next_request(
        self, *, wire: str | None = None, prefix_ttl: str | None = None, expected_seq: int | None = None
    ) -> RemoteRequest:
        """Build, record and render the next request (for ``wire``; the model's provider by default).

        The prefix is cached for the agent's ``cache_ttl`` unless ``prefix_ttl`` overrides it.
        """
        body: dict[str, Any] = {"wire": wire}
        if prefix_ttl is not None:
            body["prefix_ttl"] = prefix_ttl
        if expected_seq is not None:
            body["expected_seq"] = expected_seq
        built = self.client.call("POST", self._path + "/requests", body, session_id=self.id)
        return RemoteRequest(self, built, prefix_ttl=prefix_ttl)

    def send(
        self, create: Callable[..., Any], request: RemoteRequest | None = None, *, wire: str | None = None, **extra: Any
    ) -> Any:
        """Build (unless given), send with ``create`` (e.g. ``client.messages.create``), record the answer.

        The wire is read from the SDK method, as the embedded session does; ``wire=`` overrides it.
        """
        wire = wire or _wire_of(create)
        request = request or self.next_request(wire=wire)
        response = create(**request.body(wire), **extra)
        self.record(response)
        return response

    @contextmanager
    def stream(
        self, open_stream: Callable[..., Any], request: RemoteRequest | None = None, *, wire: str | None = None, **extra: Any
    ) -> Iterator[Any]:
        """``with session.stream(client.messages.stream) as stream:`` gives the SDK's own stream.

        The final answer is recorded from the SDK's accumulator when the block exits
        normally; a block that raises records nothing.
        """
        wire = wire or _wire_of(open_stream)
        request = request or self.next_request(wire=wire)
        with open_stream(**request.body(wire), **extra) as stream:
            yield stream
            accumulate = next((getattr(stream, n) for n in _ACCUMULATORS if hasattr(stream, n)), None)
            if accumulate is None:
                raise UsageError(f"{type(stream).__name__} is not an SDK stream: open it with the SDK's .stream() method")
            final = accumulate()
        self.record(final)

    def inspect(self, request_index: int, *, wire: str | None = None) -> dict[str, Any]:
        """What the model saw on request ``request_index``, rebuilt by the service; raises if its hash does not match."""
        data = dict(self.client.call("GET", f"{self._path}/requests/{request_index}", wire=wire))
        if not data["verified"]:
            from contextwright.errors import StorageCorrupted

            raise StorageCorrupted(
                f"session {self.id!r} request {request_index}: rebuilt {data['rebuilt_sha256']}, recorded {data['recorded_sha256']}",
                session_id=self.id,
                request_index=request_index,
            )
        return data

    def renew_prefix(self, *, note: str = "", expected_seq: int | None = None) -> dict[str, Any]:
        """Pin the session's prefix as this release writes it, in a new epoch if it differs (the way on
        after a ``session-state`` problem saying the prefix differs from its epoch's)."""
        body: dict[str, Any] = {"note": note}
        if expected_seq is not None:
            body["expected_seq"] = expected_seq
        return dict(self.client.call("POST", self._path + "/prefix", body, retry_safe=True, session_id=self.id))

    def compact(self) -> dict[str, Any] | None:
        """Manual compaction: archive first, or refuse. Returns the event, or None when there was nothing to fold."""
        event = self.client.call("POST", self._path + "/compact")["event"]
        return None if event is None else dict(event)

    # -- reading back ----------------------------------------------------------------------

    def stats(self) -> dict[str, Any] | None:
        """The session summary: requests, tokens, cache-read share, cost, relief, epochs."""
        summary = self.client.call("GET", self._path + "/stats")["summary"]
        return None if summary is None else dict(summary)


class RemoteHistory:
    """``remote.history``: the session's log read back from the service (as ``session.history`` embedded)."""

    def __init__(self, session: RemoteSession) -> None:
        self._session = session

    @property
    def events(self) -> list[dict[str, Any]]:
        """Every event of the session, in order (read page by page)."""
        out: list[dict[str, Any]] = []
        after: int | None = 0
        while after is not None:
            page = self._session.client.call("GET", self._session._path + "/events", after_seq=after, limit=1000)
            out.extend(page["events"])
            after = page["next_after_seq"]
        return out

    @property
    def last_seq(self) -> int:
        """The session's last seq."""
        return int(self._session._state()["last_seq"])

    def series(self) -> list[dict[str, Any]]:
        """One point per request built (what the console charts)."""
        return list(self._session.client.call("GET", self._session._path + "/series")["points"])

    def read_artifact(self, ref: str) -> str:
        """A full text this session points at."""
        return str(self._session.client.call("GET", f"{self._session._path}/artifacts/{quote(ref, safe=':')}")["content"])


class RemoteAdapter:
    """``remote.adapter``: what an integration records itself (as ``session.adapter`` embedded)."""

    def __init__(self, session: RemoteSession) -> None:
        self._session = session

    def record_assistant(
        self, message: AssistantMessage, *, idempotency_key: str | None = None, expected_seq: int | None = None
    ) -> list[dict[str, Any]]:
        """Record the model's complete answer (a streamed one once it is complete)."""
        body = {
            "text": message.text,
            "tool_calls": [{"id": c.id, "name": c.name, "arguments": dict(c.arguments)} for c in message.tool_calls],
            "model": message.model,
            "stop_reason": message.stop_reason,
        }
        return self._session._write("/assistant", body, idempotency_key, expected_seq)

    def record_usage(
        self, *, idempotency_key: str | None = None, expected_seq: int | None = None, **usage: Any
    ) -> dict[str, Any]:
        """Record provider usage for the last request (``input_tokens``, ``output_tokens``, ``cache_read_tokens``, ...)."""
        return self._session._write("/usage", dict(usage), idempotency_key, expected_seq)[0]

    @property
    def awaiting_model(self) -> bool:
        """True when a request can be built now."""
        return bool(self._session._state()["awaiting_model"])


class RemoteRequest:
    """A request the service built and recorded, rendered for the wire that was asked for."""

    def __init__(self, session: RemoteSession, data: Mapping[str, Any], *, prefix_ttl: str | None = None) -> None:
        self.session = session
        self.index: int = data["index"]
        self.wire: str = data["wire"]
        self.prefix_sha256: str = data["prefix_sha256"]
        self.request_sha256: str = data["request_sha256"]
        self.total_tokens: int = data["total_tokens"]
        self.tokens_by_class: dict[str, int] = dict(data["tokens_by_class"])
        self.yields: tuple[str, ...] = tuple(data["yields"])
        self._prefix_ttl = prefix_ttl or session.agent.cache_ttl
        """The TTL the body was rendered with: the one asked for, else the agent's."""
        self._bodies: dict[str, dict[str, Any]] = {self.wire: dict(data["body"])}

    def render(self, wire: str, *, prefix_ttl: str | None = None) -> dict[str, Any]:
        """Keyword arguments for the SDK call of ``wire`` (other wires are rendered by the service from the log)."""
        ttl = prefix_ttl or self._prefix_ttl
        if wire not in self._bodies or ttl != self._prefix_ttl:
            data = self.session.client.call("GET", f"{self.session._path}/requests/{self.index}", wire=wire, prefix_ttl=ttl)
            if ttl != self._prefix_ttl:
                return dict(data["body"])
            self._bodies[wire] = dict(data["body"])
        return dict(self._bodies[wire])

    def body(self, wire: str | None = None) -> dict[str, Any]:
        """The body for ``wire``; the one built for by default."""
        return self.render(wire or self.wire)

    def anthropic(self, *, prefix_ttl: str | None = None) -> dict[str, Any]:
        """Keyword arguments for ``anthropic.Anthropic().messages.create``."""
        return self.render("anthropic", prefix_ttl=prefix_ttl)

    def openai_chat(self) -> dict[str, Any]:
        """Keyword arguments for ``openai.OpenAI().chat.completions.create``."""
        return self.render("openai_chat")

    def openai_responses(self) -> dict[str, Any]:
        """Keyword arguments for ``openai.OpenAI().responses.create``."""
        return self.render("openai_responses")


_ACCUMULATORS = ("get_final_message", "get_final_completion", "get_final_response")


def _wire_of(call: Callable[..., Any]) -> str | None:
    from contextwright.providers.wires import inferred_wire

    return inferred_wire(call)


def agent_json(agent: AgentSpec) -> dict[str, Any]:
    """The JSON the service takes for an agent spec (per-tool output policies stay with the service's defaults)."""
    data: dict[str, Any] = {
        "policy": agent.policy,
        "instructions": agent.instructions,
        "tools": [{"name": t.name, "description": t.description, "input_schema": dict(t.input_schema)} for t in agent.tools],
        "framing": agent.framing,
        "control_tools": agent.control_tools,
    }
    # Sent only when it is not the default, so a service that predates the field still opens the others.
    if agent.cache_ttl != DEFAULT_CACHE_TTL:
        data["cache_ttl"] = agent.cache_ttl
    return data


def model_json(model: ResolvedModel) -> dict[str, Any]:
    """The JSON the service takes for a model: the id and every figure that may differ from the dated table."""
    return {
        "provider": model.provider,
        "id": model.id,
        "context_window": model.context_window,
        "max_output_tokens": model.max_output_tokens,
        "output_reserve": model.output_reserve,
        "min_cacheable_tokens": model.cache.min_cacheable_tokens,
        "tokenizer": model.tokenizer,
        "token_family": model.token_family,
    }


def _problem(response: Any, session_id: str | None) -> ContextwrightError:
    try:
        problem = response.json()
    except ValueError:
        problem = {
            "type": "about:blank",
            "title": response.reason_phrase,
            "status": response.status_code,
            "detail": response.text[:500],
        }
    detail = str(problem.get("detail") or problem.get("title") or f"HTTP {response.status_code}")
    if problem.get("type") == "/problems/seq-conflict":
        return SeqConflict(
            session_id or str(problem.get("instance", "")),
            expected_seq=int(problem.get("expected_seq", -1)),
            actual_seq=int(problem["current_seq"]),
        )
    return ServiceProblem(
        f"{detail} ({problem.get('type')}, HTTP {response.status_code})",
        status=response.status_code,
        problem_type=problem.get("type"),
        problem=problem,
    )
