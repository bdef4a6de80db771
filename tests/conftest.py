"""Suite-wide settings: no network, PostgreSQL discovery, shared-corpus discovery."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator

import pytest

from contextwright.testing.corpus import corpus_path, missing_reason

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # the dev extra is absent: the property tests skip, each with the reason
    pass
else:
    # Timing is measured by the benchmarks, never asserted: no per-example deadline, so a
    # loaded CI machine cannot turn a slow example into a failure. In CI the examples are
    # derived from each test's name, so a run is repeatable; elsewhere they vary, and a
    # failure found there prints the example to add to tests/fuzz/corpus.
    settings.register_profile(
        "contextwright",
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
        derandomize=os.environ.get("CI", "").lower() in ("1", "true", "yes"),
    )
    settings.load_profile("contextwright")

POSTGRES_DSN = os.environ.get("CONTEXTWRIGHT_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

_real_connect = socket.socket.connect


def _guarded_connect(self: socket.socket, address: object) -> object:
    # Only loopback and Unix sockets: a test that reaches further is a bug.
    if isinstance(address, tuple) and address and isinstance(address[0], str):
        host = address[0]
        if not (host.startswith("127.") or host in ("localhost", "::1")):
            raise RuntimeError(f"network access to {address!r} is disabled in tests")
    return _real_connect(self, address)


@pytest.fixture(autouse=True)
def _prefix_stays_stable(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every request built anywhere in a test must keep one prefix hash per (session, epoch).

    A test that changes the prefix on purpose says why:
    ``@pytest.mark.moves_cache_prefix(reason="...")``.
    """
    from contextwright.log.base import EventLog
    from contextwright.telemetry._stability import find_drift

    built: dict[int, list] = {}
    real_append = EventLog.append

    def recording_append(self, session_id, events, *, expected_seq):
        stored = real_append(self, session_id, events, expected_seq=expected_seq)
        built.setdefault(id(self), []).extend(e for e in stored if e.type == "context.request.built")
        return stored

    monkeypatch.setattr(EventLog, "append", recording_append)
    yield
    marker = request.node.get_closest_marker("moves_cache_prefix")
    if marker is not None:
        if not marker.kwargs.get("reason"):
            pytest.fail("moves_cache_prefix needs a non-empty reason=")
        return
    drift = [d for events in built.values() for d in find_drift(events)]
    if drift:
        pytest.fail("prefix drift: " + "; ".join(d.describe() for d in drift))


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)


def _postgres_problem() -> str | None:
    try:
        import psycopg
    except ImportError:
        return 'psycopg is not installed (pip install "contextwright[postgres]")'
    try:
        with psycopg.connect(POSTGRES_DSN, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        return f"no PostgreSQL reachable at {POSTGRES_DSN}: {exc}".strip()
    return None


_PG_PROBLEM: list[str | None] = []


@pytest.fixture(scope="session")
def postgres_dsn() -> str:
    """The test database DSN; skips outside CI when no server answers, fails in CI."""
    if not _PG_PROBLEM:
        _PG_PROBLEM.append(_postgres_problem())
    problem = _PG_PROBLEM[0]
    if problem:
        if IN_CI:
            pytest.fail(f"PostgreSQL tests must run in CI: {problem}")
        pytest.skip(problem)
    return POSTGRES_DSN


@pytest.fixture
def postgres_schema(postgres_dsn: str) -> Iterator[str]:
    """A fresh schema name for one test, dropped afterwards."""
    import psycopg

    name = f"cw_test_{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


@pytest.fixture(scope="session")
def tool_outputs_dir():
    """shared/tool-outputs, or skip with the reason."""
    path = corpus_path("tool-outputs")
    if path is None:
        pytest.skip(missing_reason("tool-outputs"))
    return path


@pytest.fixture(scope="session")
def traces_dir():
    """shared/traces, or skip with the reason."""
    path = corpus_path("traces")
    if path is None:
        pytest.skip(missing_reason("traces"))
    return path
