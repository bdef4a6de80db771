"""Every operation on a session, declared once: the forms that carry it are checked against this table.

A session is reached in four forms: the embedded :class:`~contextwright.runtime.session.Session`,
its async twin :class:`~contextwright.runtime.session.AsyncSession`, the remote
:class:`~contextwright.client.RemoteSession` and the service's HTTP routes under
``/v1/sessions/{session_id}``. Each :class:`SessionOperation` says, once, what the
operation takes and gives (as the embedded session spells it), whether it writes to the
log, its HTTP method and path, and which forms carry it. :func:`mismatches` and
:func:`route_mismatches` compare a form with the table, and ``tests/runtime/test_operations.py``
runs them on every form: a form that lacks a declared operation, has one the table does not
declare, or takes other parameters fails the test.

An operation is reached from a session by its spelling: its name, or ``home.name`` when it
lives on one of the session's parts (``session.tools.revoke``; ``runtime/session_parts.py``).
The session keeps the agent loop; :data:`MOVED` maps each name an operation had on the
session itself to its spelling now, and the embedded and remote sessions still answer the
old names, with a :class:`DeprecationWarning`, for one release.

Adding an operation: write its row here (the forms it belongs to included), then the
method in each of those forms (in the async twin, one line: ``name = _in_thread(Session.name)``
makes it from the embedded method); the test says what is missing where.

The remote form takes the same parameters, plus the write guarantees
(``idempotency_key``, ``expected_seq``) on an operation declared ``guaranteed``; where
it takes others (the wire a request is rendered for, on the service side), the row
spells the remote signature out. Its results are the JSON the service answers with, so
only names, kinds and defaults are compared there, and in the async form, whose SDK
callables are the async ones.
"""

from __future__ import annotations

import ast
import inspect
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

Form = Literal["local", "async", "remote", "http"]
Concern = Literal["setup", "log", "recording", "tools", "requests", "provider", "stages", "looking back"]

LOCAL: Final[frozenset[Form]] = frozenset({"local"})
EVERY_FORM: Final[frozenset[Form]] = frozenset({"local", "async", "remote", "http"})
SERVED: Final[frozenset[Form]] = frozenset({"local", "remote", "http"})
"""Embedded and over HTTP, not (yet) in the async twin."""
SERVICE_ONLY: Final[frozenset[Form]] = frozenset({"remote", "http"})

GUARANTEES: Final[str] = "*, idempotency_key: str | None = None, expected_seq: int | None = None"
"""What a guaranteed write takes besides its parameters in the remote form (see ``service/sessions.py``)."""

SESSION_ROUTES: Final[str] = "/v1/sessions/{session_id}"


@dataclass(frozen=True, kw_only=True, slots=True)
class Param:
    """One parameter: its name, kind, annotation (as written) and default (as written; None when required)."""

    name: str
    kind: str
    """``POSITIONAL_OR_KEYWORD``, ``KEYWORD_ONLY``, ``VAR_KEYWORD`` ... (:class:`inspect.Parameter` kinds, by name)."""
    annotation: str | None
    default: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class Http:
    """An operation's HTTP route: method, path under :data:`SESSION_ROUTES`, and the fields it takes."""

    method: Literal["GET", "POST"]
    path: str
    fields: tuple[str, ...] = ()
    """Body properties of a POST, query and path parameters of a GET (besides ``session_id``)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SessionOperation:
    """One operation on a session, as every form that carries it must take it."""

    name: str
    concern: Concern
    signature: str
    """``(params) -> result`` as the embedded session writes it; a property's is ``-> result``."""
    doc: str
    """One line: what the operation does."""
    forms: frozenset[Form] = LOCAL
    mutates: bool = False
    """It appends to the log (a POST route over HTTP)."""
    guaranteed: bool = False
    """A write whose remote form takes :data:`GUARANTEES` (the service holds it to them)."""
    http: Http | None = None
    remote: str | None = None
    """The remote form's signature, when it is not the embedded one's (plus :data:`GUARANTEES`)."""
    home: str | None = None
    """The part of the session that carries it (``session.tools``, ``session.history`` ...); None: the session itself."""
    was: str | None = None
    """The name it had on the session itself before it moved to :attr:`home` (still answered, with a warning)."""

    @property
    def spelling(self) -> str:
        """How a caller reaches it from a session: ``next_request``, ``tools.revoke``."""
        return self.name if self.home is None else f"{self.home}.{self.name}"

    @property
    def is_property(self) -> bool:
        """Read as an attribute, not called."""
        return self.signature.startswith("->")

    def parameters(self) -> tuple[Param, ...]:
        """The embedded form's parameters (``self`` left out)."""
        return () if self.is_property else parse(self.signature)[0]

    def result(self) -> str:
        """The embedded form's result type, as written."""
        return self.signature[2:].strip() if self.is_property else parse(self.signature)[1]

    def remote_parameters(self) -> tuple[Param, ...]:
        """The remote form's parameters."""
        if self.remote is not None:
            return parse(self.remote)[0]
        own = self.parameters()
        return (*own, *parse(f"({GUARANTEES}) -> None")[0]) if self.guaranteed else own


def parse(signature: str) -> tuple[tuple[Param, ...], str]:
    """The parameters and result type of ``(params) -> result``."""
    tree = ast.parse(f"def _{signature}: ...")
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    args = function.args
    params: list[Param] = []
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    for arg, default in zip(positional, defaults, strict=True):
        kind = "POSITIONAL_ONLY" if arg in args.posonlyargs else "POSITIONAL_OR_KEYWORD"
        params.append(_param(arg, kind, default))
    if args.vararg is not None:
        params.append(_param(args.vararg, "VAR_POSITIONAL", None))
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        params.append(_param(arg, "KEYWORD_ONLY", kw_default))
    if args.kwarg is not None:
        params.append(_param(args.kwarg, "VAR_KEYWORD", None))
    result = ast.unparse(function.returns) if function.returns is not None else "None"
    return tuple(params), result


def _param(arg: ast.arg, kind: str, default: ast.expr | None) -> Param:
    annotation = ast.unparse(arg.annotation) if arg.annotation is not None else None
    return Param(name=arg.arg, kind=kind, annotation=annotation, default=None if default is None else ast.unparse(default))


def _op(spelling: str, concern: Concern, signature: str, doc: str, **options: Any) -> SessionOperation:
    home, _, name = spelling.rpartition(".")
    was = next((old for old, new in MOVED.items() if new == spelling), None)
    return SessionOperation(name=name, concern=concern, signature=signature, doc=doc, home=home or None, was=was, **options)


MOVED: Final[Mapping[str, str]] = {
    # session.setup
    "log": "setup.log",
    "clock": "setup.clock",
    "secret": "setup.secret",
    "estimator": "setup.estimator",
    "budgets": "setup.budgets",
    "memory": "setup.memory",
    "recall": "setup.recall",
    "rounds": "setup.rounds",
    "compactor": "setup.compactor",
    "plan": "setup.plan",
    "edit_prefix": "setup.edit_prefix",
    # session.history
    "events": "history.events",
    "events_after": "history.after",
    "last_seq": "history.last_seq",
    "requests_built": "history.requests_built",
    "last_request": "history.last_request",
    "rebuild": "history.rebuild",
    "series": "history.series",  # the remote session's (a service-only operation)
    "read_artifact": "history.read_artifact",  # the remote session's (a service-only operation)
    # session.tools
    "revoke_tool": "tools.revoke",
    "restore_tool": "tools.restore",
    "force_revoke_tool": "tools.force_revoke",
    # session.memories
    "remember": "memories.remember",
    "correct_memory": "memories.correct",
    "forget": "memories.forget",
    # session.stages
    "open_stage": "stages.open",
    "close_stage": "stages.close",
    # session.artifacts
    "declare_artifact": "artifacts.declare",
    "advance_artifact": "artifacts.advance",
    # session.children
    "start_child": "children.start",
    "escalate": "children.escalate",
    "finish_child": "children.finish",
    "router_view": "children.router_view",
    "engine_session": "children.engine_session",
    # session.adapter
    "append": "adapter.append",
    "record_assistant": "adapter.record_assistant",
    "record_usage": "adapter.record_usage",
    "after_send_error": "adapter.after_send_error",
    "adopt_agent": "adapter.adopt_agent",
    "has_history": "adapter.has_history",
    "awaiting_model": "adapter.awaiting_model",
}
"""Operations that moved from the session itself to one of its parts: the old name, and its new spelling.

The embedded and remote sessions still answer the old names for one release, each with a
:class:`DeprecationWarning` naming the new spelling."""

_STATE = Http(method="GET", path="")
"""The session's state: last seq, requests built, whether a request can be built, pending tool calls."""

OPERATIONS: tuple[SessionOperation, ...] = (
    # -- setup
    _op("id", "setup", "-> str", "The session id.", forms=frozenset({"local", "remote"})),
    _op("setup.log", "setup", "-> EventLog", "The event log the session reads and appends to."),
    _op("agent", "setup", "-> AgentSpec", "The agent's setup (region A).", forms=frozenset({"local", "remote"})),
    _op("model", "setup", "-> ResolvedModel", "The model.", forms=frozenset({"local", "remote"})),
    _op("setup.clock", "setup", "-> Clock", "The clock that stamps frames and recall reads."),
    _op("setup.secret", "setup", "-> bytes", "The per-session envelope secret."),
    _op("setup.estimator", "setup", "-> TokenEstimator", "The token estimator."),
    _op("setup.budgets", "setup", "-> BudgetConfig", "The budgets a new plan is made with."),
    _op("setup.memory", "setup", "-> MemoryPort | None", "The memory port."),
    _op("setup.recall", "setup", "-> RecallPort | None", "The recall port."),
    _op("setup.rounds", "setup", "-> RoundPolicy", "Round governance."),
    _op("setup.compactor", "setup", "-> Compactor", "The compactor relief and compact use."),
    _op("aio", "setup", "-> AsyncSession", "The async twin of the session."),
    _op(
        "children.engine_session",
        "setup",
        "(session_id: str, **options: Any) -> Session",
        "Open another session on the same engine.",
    ),
    _op(
        "setup.edit_prefix",
        "setup",
        "(agent: AgentSpec, *, note: str) -> ContextPlan | None",
        "Change the agent's prefix on purpose: a new epoch.",
        mutates=True,
    ),
    _op(
        "adapter.adopt_agent",
        "setup",
        "(agent: AgentSpec) -> None",
        "Take an agent whose prefix the plan already holds as the setup, without an edit (for adapters).",
    ),
    # -- reading the log
    _op(
        "history.events",
        "log",
        "-> list[Event]",
        "All events of the session, in order.",
        forms=SERVED,
        http=Http(method="GET", path="/events", fields=("after_seq", "limit")),
    ),
    _op("history.after", "log", "(seq: int) -> list[Event]", "The events after a seq."),
    _op("history.last_seq", "log", "-> int", "The seq of the last event read.", forms=SERVED, http=_STATE),
    _op("history.requests_built", "log", "-> int", "How many requests were recorded."),
    _op("history.last_request", "log", "-> RequestBuilt | None", "The record of the last request built."),
    _op("setup.plan", "log", "-> ContextPlan | None", "The current plan."),
    _op("working_state", "log", "-> ws.WorkingState", "The working state as of now."),
    _op("adapter.has_history", "log", "-> bool", "True once the session's surface shows anything."),
    _op(
        "history.read_artifact",
        "log",
        "(ref: str) -> str",
        "A full text the session points at.",
        forms=SERVICE_ONLY,
        http=Http(method="GET", path="/artifacts/{ref}", fields=("ref",)),
    ),
    # -- recording what happens
    _op(
        "user",
        "recording",
        "(text: str, *, steering: bool = False, author: str = 'user') -> Event",
        "Record a user (or operator) message.",
        forms=EVERY_FORM,
        mutates=True,
        guaranteed=True,
        http=Http(method="POST", path="/messages", fields=("text", "steering", "author")),
    ),
    _op("memories.remember", "recording", "(memory_id: str, text: str) -> Event", "Write a memory item.", mutates=True),
    _op("memories.correct", "recording", "(memory_id: str, text: str) -> Event", "Correct a memory item.", mutates=True),
    _op("memories.forget", "recording", "(memory_id: str, *, reason: str = '') -> Event", "Erase a memory item.", mutates=True),
    _op("close", "recording", "() -> Event", "End the session, offering facts as memory candidates.", mutates=True),
    _op(
        "adapter.append",
        "recording",
        "(payloads: Sequence[Any]) -> list[Event]",
        "Append events of the caller's own (an adapter's bookkeeping) after the log's tail.",
        mutates=True,
    ),
    # -- tool calls
    _op(
        "adapter.record_assistant",
        "tools",
        "(message: AssistantMessage) -> list[Event]",
        "Record the model's answer.",
        forms=SERVED,
        mutates=True,
        guaranteed=True,
        http=Http(method="POST", path="/assistant", fields=("text", "tool_calls", "model", "stop_reason")),
    ),
    _op(
        "pending_tool_calls",
        "tools",
        "() -> list[ToolCall]",
        "Tool calls of the last answer that still need a result.",
        forms=EVERY_FORM,
        http=_STATE,
    ),
    _op(
        "tool_result",
        "tools",
        "(call_id: str, output: str, *, exit_code: int | None = None, is_error: bool | None = None, "
        "trust: TrustLevel = 'tool') -> Event",
        "Record the output of a tool call.",
        forms=EVERY_FORM,
        mutates=True,
        guaranteed=True,
        http=Http(method="POST", path="/tool-results", fields=("call_id", "output", "exit_code", "is_error", "trust")),
    ),
    _op("tools.revoke", "tools", "(name: str, *, reason: str = '') -> Event", "Stop a tool from being called.", mutates=True),
    _op("tools.restore", "tools", "(name: str) -> Event", "Allow a revoked tool again.", mutates=True),
    _op("tools.force_revoke", "tools", "(name: str) -> PlanDecision", "Take a tool out of the prefix now.", mutates=True),
    # -- building requests
    _op(
        "next_request",
        "requests",
        "() -> BuiltRequest",
        "Plan, build, relieve, validate and record the next request.",
        forms=EVERY_FORM,
        mutates=True,
        http=Http(method="POST", path="/requests", fields=("wire", "prefix_ttl", "expected_seq")),
        remote="(*, wire: str | None = None, prefix_ttl: str | None = None, expected_seq: int | None = None) -> RemoteRequest",
    ),
    _op("adapter.awaiting_model", "requests", "-> bool", "True when a request can be built now.", forms=SERVED, http=_STATE),
    _op(
        "compact",
        "requests",
        "(*, trigger: CompactionTrigger = 'manual') -> Event | None",
        "Fold history before the current run into a summary now.",
        forms=EVERY_FORM,
        mutates=True,
        http=Http(method="POST", path="/compact"),
        remote="() -> dict[str, Any] | None",
    ),
    _op(
        "renew_prefix",
        "requests",
        "(*, note: str = '', expected_seq: int | None = None) -> dict[str, Any]",
        "Pin the prefix as this release writes it, in a new epoch if it differs.",
        forms=SERVICE_ONLY,
        mutates=True,
        http=Http(method="POST", path="/prefix", fields=("note", "expected_seq")),
    ),
    # -- talking to a provider
    _op(
        "record",
        "provider",
        "(response: Any) -> list[Event]",
        "Record a provider response and its usage.",
        forms=EVERY_FORM,
        mutates=True,
        guaranteed=True,
        http=Http(method="POST", path="/responses", fields=("response",)),
    ),
    _op(
        "send",
        "provider",
        "(create: Callable[..., Any], request: BuiltRequest | None = None, *, wire: str | None = None, **extra: Any) -> Any",
        "Build (unless given), send with the SDK method, record the answer.",
        forms=frozenset({"local", "async", "remote"}),
        mutates=True,
    ),
    _op(
        "stream",
        "provider",
        "(open_stream: Callable[..., Any], request: BuiltRequest | None = None, *, wire: str | None = None, "
        "**extra: Any) -> RecordingStream",
        "Stream a model call, recording the final answer.",
        forms=frozenset({"local", "async", "remote"}),
        mutates=True,
    ),
    _op(
        "adapter.record_usage",
        "provider",
        "(usage: Usage, *, model: str | None = None) -> list[Event]",
        "Record usage for the last request built, as parsed already.",
        forms=SERVED,
        mutates=True,
        guaranteed=True,
        http=Http(
            method="POST",
            path="/usage",
            fields=(
                "input_tokens",
                "output_tokens",
                "cache_read_tokens",
                "cache_write_5m_tokens",
                "cache_write_1h_tokens",
                "model",
            ),
        ),
        remote=f"({GUARANTEES}, **usage: Any) -> dict[str, Any]",
    ),
    _op(
        "adapter.after_send_error",
        "provider",
        "(exc: Exception, request: BuiltRequest, attempt: int) -> BuiltRequest",
        "Translate a send error; on a first overflow relieve once and return the rebuilt request.",
        mutates=True,
    ),
    # -- stages, artifacts, child runs
    _op("stages.open", "stages", "(name: str, *, goal: str) -> str", "Begin a stage with a declared goal.", mutates=True),
    _op(
        "stages.close",
        "stages",
        "(*, outcome: str, rationale: str = '') -> Event",
        "Close the open stage with its decision point.",
        mutates=True,
    ),
    _op(
        "artifacts.declare",
        "stages",
        "(artifact_id: str, *, title: str, content: str, summary: str, steps: tuple[str, ...] | list[str] = (), "
        "current_step: int = 0) -> Event",
        "Store an artifact whole.",
        mutates=True,
    ),
    _op(
        "artifacts.advance", "stages", "(artifact_id: str, step: int) -> Event", "Move an artifact's current step.", mutates=True
    ),
    _op(
        "children.start",
        "stages",
        "(purpose: str, *, task: str, call_id: str | None = None, pointers: tuple[str, ...] = (), "
        "include_working_state: bool = True, agent: AgentSpec | None = None, model: ResolvedModel | None = None) -> Session",
        "Start a child run in its own session.",
        mutates=True,
    ),
    _op("children.escalate", "stages", "(*, call_id: str | None = None) -> Session", "Continue in a child run.", mutates=True),
    _op("children.finish", "stages", "(child: Session, result: str) -> list[Event]", "End a child run.", mutates=True),
    _op("children.router_view", "stages", "() -> str", "A supervisor's context from the latest compressed-session snapshot."),
    # -- looking back
    _op(
        "stats",
        "looking back",
        "() -> SessionSummary",
        "Telemetry of the session.",
        forms=SERVED,
        http=Http(method="GET", path="/stats"),
        remote="() -> dict[str, Any] | None",
    ),
    _op(
        "history.series",
        "looking back",
        "() -> list[dict[str, Any]]",
        "One point per request built.",
        forms=SERVICE_ONLY,
        http=Http(method="GET", path="/series"),
    ),
    _op("history.rebuild", "looking back", "(request_index: int) -> tuple[NeutralRequest, RequestBuilt]", "Rebuild a request."),
    _op(
        "inspect",
        "looking back",
        "(request_index: int) -> NeutralRequest",
        "Exactly what the model saw on a request, checked against its hash.",
        forms=SERVED,
        http=Http(method="GET", path="/requests/{index}", fields=("index", "wire", "prefix_ttl")),
        remote="(request_index: int, *, wire: str | None = None) -> dict[str, Any]",
    ),
    _op(
        "diff",
        "looking back",
        "(request_index: int, *, text_chars: int = 400) -> dict[str, Any]",
        "What changed from the request before.",
        forms=frozenset({"http"}),
        http=Http(method="GET", path="/requests/{index}/diff", fields=("index", "text_chars")),
    ),
    _op(
        "why",
        "looking back",
        "(text: str, *, request: int | None = None) -> dict[str, Any]",
        "Where a text entered the log and what hid it by a request.",
        forms=frozenset({"http"}),
        http=Http(method="GET", path="/why", fields=("text", "request")),
    ),
    _op(
        "misses",
        "looking back",
        "() -> dict[str, Any]",
        "Evidence the model asked for again after it was hidden.",
        forms=frozenset({"http"}),
        http=Http(method="GET", path="/misses"),
    ),
)

BY_NAME: Final[Mapping[str, SessionOperation]] = {op.spelling: op for op in OPERATIONS}
"""Each operation by its spelling from a session (``next_request``, ``tools.revoke``)."""


def in_form(form: Form) -> tuple[SessionOperation, ...]:
    """The operations ``form`` carries."""
    return tuple(op for op in OPERATIONS if form in op.forms)


def moved_names(form: Form) -> Mapping[str, str]:
    """The :data:`MOVED` names of the operations ``form`` carries: old name to new spelling."""
    return {op.was: op.spelling for op in in_form(form) if op.was is not None}


def mismatches(form: Literal["local", "async", "remote"], carrier: Any, *, own: frozenset[str] = frozenset()) -> list[str]:
    """How ``carrier`` (the form's class, or an instance for attributes set at init) differs from the table.

    ``own`` names public attributes the form has for itself (not operations: the async
    twin's ``sync``, the remote session's ``client``). An operation with a :attr:`~SessionOperation.home`
    is looked for on that part of the carrier: on a class, the part is the class its
    property is annotated to give; on an instance, the part itself."""
    problems: list[str] = []
    homes: dict[str | None, dict[str, SessionOperation]] = {}
    for op in in_form(form):
        homes.setdefault(op.home, {})[op.name] = op
    parts: dict[str | None, Any] = {None: carrier}
    for home in homes:
        if home is not None:
            part = _part(carrier, home)
            if part is None:
                problems.append(f"{form}: {home} is missing")
                homes[home] = {}
            else:
                parts[home] = part
    homes.setdefault(None, {})
    for home, part in parts.items():
        declared = homes[home]
        prefix = "" if home is None else f"{home}."
        public = {name for name in dir(part) if not name.startswith("_")} - (own if home is None else frozenset())
        for name in sorted(public - set(declared) - (set(parts) if home is None else set())):
            problems.append(f"{form}: {prefix}{name} is not declared in runtime/operations.py")
        for name, op in declared.items():
            try:
                member = inspect.getattr_static(part, name)
            except AttributeError:
                problems.append(f"{form}: {prefix}{name} is missing")
                continue
            problems += _compare(form, op, member)
    return problems


def _part(carrier: Any, home: str) -> Any:
    """The part ``home`` of ``carrier``: the class a class's property gives, or an instance's attribute."""
    try:
        member = inspect.getattr_static(carrier, home)
    except AttributeError:
        return None
    if not isinstance(carrier, type):
        return getattr(carrier, home)
    if not isinstance(member, property) or member.fget is None:
        return None
    result = typing.get_type_hints(member.fget).get("return")
    return result if isinstance(result, type) else None


def _compare(form: str, op: SessionOperation, member: Any) -> Iterator[str]:
    if op.is_property:
        if callable(member) and not isinstance(member, property):
            yield f"{form}: {op.spelling} is a method, declared a property"
        elif form == "local" and isinstance(member, property) and member.fget is not None:
            result = member.fget.__annotations__.get("return")
            if result != op.result():
                yield f"{form}: {op.spelling} gives {result}, declared {op.result()}"
        return
    if not callable(member) or isinstance(member, property):
        yield f"{form}: {op.spelling} is not a method"
        return
    function = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
    actual = [p for name, p in inspect.signature(function).parameters.items() if name != "self"]
    expected = op.remote_parameters() if form == "remote" else op.parameters()
    typed = form == "local"
    got = [_shape(p, typed=typed) for p in actual]
    want = [(p.name, p.kind, p.annotation if typed else None, p.default) for p in expected]
    if got != want:
        yield f"{form}: {op.spelling} takes {_render(got)}, declared {_render(want)}"
    if typed:
        result = inspect.signature(function).return_annotation
        if result != op.result():
            yield f"{form}: {op.spelling} gives {result}, declared {op.result()}"
    if form == "async" and op.name != "stream" and not inspect.iscoroutinefunction(function):
        yield f"async: {op.spelling} is not a coroutine function"


_Shape = tuple[str, str, str | None, str | None]


def _shape(p: inspect.Parameter, *, typed: bool) -> _Shape:
    annotation = None if not typed or p.annotation is inspect.Parameter.empty else str(p.annotation)
    default = None if p.default is inspect.Parameter.empty else repr(p.default)
    return (p.name, p.kind.name, annotation, default)


def _render(params: list[_Shape]) -> str:
    return "(" + ", ".join(f"{n}{'' if d is None else '=' + d}" for n, _, _, d in params) + ")"


def route_mismatches(openapi: Mapping[str, Any]) -> list[str]:
    """How the service's routes under :data:`SESSION_ROUTES` (its OpenAPI document) differ from the table."""
    problems: list[str] = []
    schemas = openapi.get("components", {}).get("schemas", {})
    served: dict[tuple[str, str], dict[str, Any]] = {}
    for path, methods in openapi["paths"].items():
        if path == SESSION_ROUTES or path.startswith(SESSION_ROUTES + "/"):
            for method, spec in methods.items():
                served[(method.upper(), path[len(SESSION_ROUTES) :])] = spec
    claimed: set[tuple[str, str]] = set()
    for op in in_form("http"):
        assert op.http is not None
        key = (op.http.method, op.http.path)
        claimed.add(key)
        if op.http.method != ("POST" if op.mutates else "GET"):
            problems.append(f"http: {op.name} is {op.http.method} but {'writes' if op.mutates else 'only reads'}")
        spec = served.get(key)
        if spec is None:
            problems.append(f"http: {op.name}: no route {op.http.method} {SESSION_ROUTES}{op.http.path}")
            continue
        taken = {p["name"] for p in spec.get("parameters", ()) if p["name"] != "session_id"}
        ref = spec.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {}).get("$ref")
        if ref is not None:
            taken |= set(schemas[ref.rsplit("/", 1)[1]].get("properties", {}))
        wanted = set(op.http.fields) | ({"idempotency_key", "expected_seq"} if op.guaranteed else set())
        if taken != wanted:
            problems.append(f"http: {op.name} takes {sorted(taken)}, declared {sorted(wanted)}")
    for method, path in sorted(set(served) - claimed):
        problems.append(f"http: {method} {SESSION_ROUTES}{path} is not declared in runtime/operations.py")
    return problems


__all__ = [
    "BY_NAME",
    "MOVED",
    "OPERATIONS",
    "Form",
    "Http",
    "Param",
    "SessionOperation",
    "in_form",
    "mismatches",
    "moved_names",
    "parse",
    "route_mismatches",
]
