"""Every form of a session carries exactly the operations runtime/operations.py declares for it, as declared."""

from __future__ import annotations

import pytest

from contextwright.runtime.operations import OPERATIONS, SessionOperation, in_form, mismatches, parse, route_mismatches
from contextwright.runtime.session import AsyncSession, Session


def test_the_table_declares_each_operation_once_and_every_route_with_its_http_form():
    names = [op.name for op in OPERATIONS]
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
