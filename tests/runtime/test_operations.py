"""Every form of a session carries exactly the operations runtime/operations.py declares for it, as declared."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from contextwright.runtime.operations import (
    MOVED,
    OPERATIONS,
    SessionOperation,
    in_form,
    mismatches,
    moved_names,
    parse,
    route_mismatches,
)
from contextwright.runtime.session import AsyncSession, Session
from contextwright.testing.fakes import open_session, sample_agent


def test_the_table_declares_each_operation_once_and_every_route_with_its_http_form():
    names = [op.spelling for op in OPERATIONS]
    assert len(names) == len(set(names))
    assert all(("http" in op.forms) == (op.http is not None) for op in OPERATIONS)
    # A write the service holds to expected_seq and idempotency keys is a write.
    assert all(op.mutates for op in OPERATIONS if op.guaranteed)
    # Each signature parses, and its result is named.
    assert all(op.result() for op in OPERATIONS)


def test_the_embedded_session_has_every_declared_operation_with_its_signature():
    assert mismatches("local", Session) == []


def test_the_async_twin_has_its_declared_operations_with_the_same_parameters():
    assert mismatches("async", AsyncSession, own=frozenset({"sync"})) == []


def test_the_remote_session_has_its_declared_operations_with_the_guarantees_on_writes():
    pytest.importorskip("httpx", reason='the remote client needs its extra: pip install "contextwright[client]"')
    from contextwright import models
    from contextwright.client import RemoteSession
    from contextwright.testing.fakes import sample_agent

    # An instance, so that attributes set when it is made count (no call is made).
    remote = RemoteSession(None, "s", agent=sample_agent(), model=models.resolve("anthropic", "claude-sonnet-4-6"))  # type: ignore[arg-type]
    assert mismatches("remote", remote, own=frozenset({"client"})) == []


def test_the_service_routes_are_the_declared_http_operations(tmp_path):
    pytest.importorskip("fastapi", reason='the service needs its extras: pip install "contextwright[service]"')
    from contextwright.service import ServiceConfig, create_app

    app = create_app(ServiceConfig(store=f"sqlite:///{tmp_path}/routes.db"))
    try:
        assert route_mismatches(app.openapi()) == []
    finally:
        app.state.store.close()


def test_a_form_that_drifts_from_the_table_is_told_what_differs():
    # Check the checks can fail: a form without an operation, with an undeclared one, or with other parameters.
    class Drifted:
        def user(self, text: str, *, steering: bool = True) -> None: ...

        def shout(self) -> None: ...

    problems = mismatches("async", Drifted)
    assert "async: shout is not declared in runtime/operations.py" in problems
    assert "async: next_request is missing" in problems
    assert any(p.startswith("async: user takes (text, steering=True)") for p in problems)
    assert "async: user is not a coroutine function" in problems
    declared = {op.name for op in in_form("async")}
    assert {p.split(" ")[1] for p in problems if p.endswith("is missing")} == declared - {"user"}


def test_a_route_that_drifts_from_the_table_is_told_what_differs():
    openapi = {
        "paths": {
            "/v1/sessions/{session_id}/messages": {"post": {"parameters": [{"name": "session_id"}]}},
            "/v1/sessions/{session_id}/shout": {"get": {}},
        }
    }
    problems = route_mismatches(openapi)
    assert "http: GET /v1/sessions/{session_id}/shout is not declared in runtime/operations.py" in problems
    assert "http: user takes [], declared ['author', 'expected_seq', 'idempotency_key', 'steering', 'text']" in problems
    assert "http: record: no route POST /v1/sessions/{session_id}/responses" in problems


def test_a_signature_is_read_as_python_reads_it():
    params, result = parse("(a: int, b: str = 'x', *rest: Any, c: bool = False, **extra: Any) -> list[Event]")
    assert [(p.name, p.kind, p.annotation, p.default) for p in params] == [
        ("a", "POSITIONAL_OR_KEYWORD", "int", None),
        ("b", "POSITIONAL_OR_KEYWORD", "str", "'x'"),
        ("rest", "VAR_POSITIONAL", "Any", None),
        ("c", "KEYWORD_ONLY", "bool", "False"),
        ("extra", "VAR_KEYWORD", "Any", None),
    ]
    assert result == "list[Event]"
    guarded = next(op for op in OPERATIONS if op.name == "user")
    assert isinstance(guarded, SessionOperation)
    assert [p.name for p in guarded.remote_parameters()] == ["text", "steering", "author", "idempotency_key", "expected_seq"]


def test_every_moved_name_is_an_operation_of_its_new_home_and_no_longer_the_sessions_own():
    assert {op.was: op.spelling for op in OPERATIONS if op.was is not None} == dict(MOVED)
    for old, new in moved_names("local").items():
        assert old not in vars(Session)
        home, name = new.split(".")
        assert name in vars(type(getattr(_session(), home)))


def test_a_part_the_carrier_lacks_is_told_missing():
    class Flat:
        def user(self) -> None: ...

    problems = mismatches("remote", Flat())
    assert "remote: history is missing" in problems and "remote: adapter is missing" in problems


def _session() -> Session:
    return open_session("s")[1]


def test_an_old_name_still_works_and_warns_with_the_new_spelling():
    session = _session()
    legacy: Any = session  # code written against the names the session had before
    session.user("fix the build")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        events = legacy.events
        seq = legacy.last_seq
        legacy.revoke_tool("run_tests", reason="flaky")
        legacy.budgets = session.setup.budgets
    assert [str(w.message) for w in caught] == [
        "Session.events is deprecated: use session.history.events",
        "Session.last_seq is deprecated: use session.history.last_seq",
        "Session.revoke_tool is deprecated: use session.tools.revoke",
        "Session.budgets is deprecated: use session.setup.budgets",
    ]
    # Each warning points at the caller's line, not at the session.
    assert all(w.category is DeprecationWarning and w.filename == __file__ for w in caught)
    assert events == session.history.events[:1] and seq == 1
    assert session.history.events[-1].type == "tool.revoked"
    assert "budgets" not in vars(session)  # the setter reached the part, not a new attribute


def test_the_remote_session_answers_its_old_names_with_the_same_warning():
    pytest.importorskip("httpx", reason='the remote client needs its extra: pip install "contextwright[client]"')
    from contextwright import models
    from contextwright.client import RemoteSession

    remote: Any = RemoteSession(None, "s", agent=sample_agent(), model=models.resolve("anthropic", "claude-sonnet-4-6"))  # type: ignore[arg-type]
    with pytest.warns(
        DeprecationWarning, match=r"RemoteSession.record_assistant is deprecated: use session.adapter.record_assistant"
    ):
        method = remote.record_assistant
    assert method == remote.adapter.record_assistant
    with pytest.raises(AttributeError, match="shout"):
        remote.shout  # noqa: B018


def test_a_name_that_never_existed_is_still_an_attribute_error():
    legacy: Any = _session()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match="'Session' object has no attribute 'revoke'"):
            legacy.revoke  # noqa: B018
