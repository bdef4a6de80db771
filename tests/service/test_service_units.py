"""The service's small parts on their own: token buckets, the error map, the guarded log, settings."""

from __future__ import annotations

import pytest

from tests.service.conftest import NEEDS

pytest.importorskip("fastapi", reason=NEEDS)
pytest.importorskip("uvicorn", reason=NEEDS)
pytest.importorskip("httpx2", reason=NEEDS)

import contextwright.errors as errors
from contextwright.errors import ContextwrightError, SeqConflict, UsageError
from contextwright.events import UserMessage
from contextwright.log import InMemoryEventLog
from contextwright.service import create_app
from contextwright.service import sessions as service_sessions
from contextwright.service.config import ServiceConfig
from contextwright.service.limits import RateLimit, RateLimiter, retry_after
from contextwright.service.problems import PROBLEM_TYPES, problem_for
from contextwright.service.sessions import Guarantees, GuardedLog, guarantees
from contextwright.service.store import Principal


class Ticks:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_token_bucket_allows_its_burst_then_refills_at_its_rate():
    ticks = Ticks()
    limiter = RateLimiter(RateLimit(per_second=2.0, burst=3), monotonic=ticks)
    assert [limiter.take("k") for _ in range(3)] == [0.0, 0.0, 0.0]
    wait = limiter.take("k")
    assert wait == pytest.approx(0.5) and retry_after(wait) == "1"
    ticks.now += 0.5
    assert limiter.take("k") == 0.0
    # Check: buckets are per key, and a key's own shape wins over the default.
    assert limiter.take("other") == 0.0
    assert limiter.take("slow", RateLimit(per_second=0.1, burst=1)) == 0.0
    assert limiter.take("slow", RateLimit(per_second=0.1, burst=1)) == pytest.approx(10.0)
    # Check: a long pause never fills a bucket beyond its burst.
    ticks.now += 3600
    assert [limiter.take("k") for _ in range(4)][-1] > 0


def test_a_look_at_a_bucket_takes_nothing_and_the_buckets_kept_are_bounded():
    ticks = Ticks()
    limiter = RateLimiter(RateLimit(per_second=1.0, burst=2), monotonic=ticks, max_keys=3)
    assert limiter.wait("a") == 0.0 and len(limiter) == 0  # an unknown key has a full bucket; none is made
    assert [limiter.take("a"), limiter.take("a")] == [0.0, 0.0]
    assert limiter.wait("a") == pytest.approx(1.0) and limiter.wait("a") == pytest.approx(1.0)
    # Check: one bucket per key at most max_keys, the least recently used dropped (clients pick the keys).
    for address in ("b", "c", "d"):
        limiter.take(address)
    assert len(limiter) == 3
    assert limiter.wait("a") == 0.0  # "a" was dropped: it starts full again
    for n in range(10_000):
        limiter.take(f"10.0.{n // 256}.{n % 256}")
    assert len(limiter) == 3


def _subclasses(cls: type) -> set[type]:
    out: set[type] = set()
    for sub in cls.__subclasses__():
        out |= {sub, *_subclasses(sub)}
    return out


# Errors that mean the server or its store is broken, not the request (an internal problem is
# right), the client's own error for a problem document, and errors of streaming from a
# provider, which happens in the caller's process, never in a service request.
SERVER_SIDE = {
    "ContextwrightError",
    "LogError",
    "StorageError",
    "StoreNotFound",
    "NotAStore",
    "SchemaTooNew",
    "CheckpointRejected",
    "StoreReadOnly",
}
SERVER_SIDE |= {
    "MissingDependencyError",
    "ServiceError",
    "KeyNotFound",
    "StreamIncomplete",
    "WorkingStateError",
    "TranscriptError",
    "PrefixUnstable",
    "ServiceProblem",
    # Raised by a model-backed compactor and caught by relief, which adopts the extractive summary.
    "SummaryUnavailable",
}


def test_every_engine_error_maps_to_a_deliberate_problem_type():
    import contextwright.importers.errors  # registers its error classes
    import contextwright.providers.errors
    import contextwright.runtime.errors
    import contextwright.service.errors
    import contextwright.telemetry._stability  # noqa: F401

    unmapped = []
    for cls in {ContextwrightError, *_subclasses(ContextwrightError)}:
        error = cls.__new__(cls)
        ContextwrightError.__init__(error, "x", actual_seq=3, expected_seq=1)
        slug = problem_for(error).type.slug
        assert slug in PROBLEM_TYPES
        if slug == "internal" and cls.__name__ not in SERVER_SIDE:
            unmapped.append(cls.__name__)
    assert unmapped == []
    conflict = problem_for(SeqConflict("s", expected_seq=1, actual_seq=4))
    assert conflict.type.status == 409 and conflict.extensions == {"current_seq": 4, "expected_seq": 1}
    assert problem_for(errors.StorageUnavailable("down")).headers == {"Retry-After": "1"}
    assert problem_for(errors.StorageError("disk on fire")).detail == "an internal error occurred"


def test_a_compaction_refused_by_a_store_outage_is_answered_as_the_outage():
    # Nothing was compacted, so the client may retry: 503 with Retry-After, not a stopped run.
    try:
        try:
            raise errors.StorageUnavailable("terminating connection")
        except errors.StorageUnavailable as cause:
            raise errors.ArchiveFailed("the compaction archive could not be written", session_id="s") from cause
    except errors.ArchiveFailed as refused:
        answer = problem_for(refused)
    assert answer.type.slug == "storage-unavailable" and answer.headers == {"Retry-After": "1"}
    assert problem_for(errors.ArchiveFailed("no room", session_id="s")).type.slug == "run-stopped"


def test_the_guarded_log_checks_the_first_append_and_keys_every_event():
    inner = InMemoryEventLog()
    inner.append("s", [UserMessage(text="one")], expected_seq=0)
    log = GuardedLog(inner)
    with (
        pytest.raises(SeqConflict) as caught,
        log.guarding(guarantees("user", {"text": "two"}, expected_seq=0, idempotency_key=None)),
    ):
        log.append("s", [UserMessage(text="two")], expected_seq=1)
    assert caught.value.fields == {"session_id": "s", "expected_seq": 0, "actual_seq": 1}
    assert inner.last_seq("s") == 1

    guard = guarantees("user", {"text": "two"}, expected_seq=1, idempotency_key="k1")
    with log.guarding(guard):
        first = log.append("s", [UserMessage(text="two")], expected_seq=1)
        second = log.append("s", [UserMessage(text="three"), UserMessage(text="four")], expected_seq=2)
    # Check: outside an operation the log adds nothing.
    [plain] = log.append("s", [UserMessage(text="five")], expected_seq=4)
    assert plain.idempotency_key is None
    assert [e.idempotency_key for e in first + second] == [
        f"{guard.key_base}#1.0",
        f"{guard.key_base}#2.0",
        f"{guard.key_base}#2.1",
    ]
    # Check: the fingerprint covers the body, not the guarantee fields.
    assert (
        guard.fingerprint
        == guarantees("user", {"text": "two", "expected_seq": 9}, expected_seq=9, idempotency_key="k1").fingerprint
    )
    assert guard.fingerprint != guarantees("user", {"text": "2"}, expected_seq=1, idempotency_key="k1").fingerprint


def test_an_operation_is_bound_to_one_sessions_guarded_log_and_reaches_no_other(tmp_path):
    app, record = _one_session(tmp_path)
    sessions = app.state.sessions
    other, _ = sessions.open(
        Principal(tenant="acme", key_id="k"),
        "other",
        {"policy": "Be careful."},
        {"provider": "anthropic", "id": "claude-sonnet-4-6"},
    )
    guard = guarantees("user", {"text": "one"}, expected_seq=None, idempotency_key="k1")
    with sessions.operation(record, guard) as (session, operation):
        # Check: the session appends through the log the operation is bound to, and it is not shared.
        assert isinstance(session.setup.log, GuardedLog) and session.setup.log.operation is operation
        with sessions.session(other) as unrelated:
            assert unrelated.setup.log is not session.setup.log and unrelated.setup.log.operation is not operation
            plain = unrelated.user("not this operation's")
        keyed = session.user("one")
        # Check: a second operation on the same log while one is bound is refused, not mixed in.
        with pytest.raises(UsageError, match="already in progress"), session.setup.log.guarding(Guarantees()):
            pass
    assert keyed.idempotency_key == f"{guard.key_base}#1.0" and plain.idempotency_key is None
    assert session.setup.log.operation is None
    app.state.store.close()


def test_settings_travel_to_workers_through_the_environment():
    config = ServiceConfig(
        store="postgresql://h/db?schema=x",
        max_body_bytes=2048,
        rate_limit=RateLimit(per_second=2.5, burst=7),
        auth_failure_limit=RateLimit(per_second=0.25, burst=4),
        cache_events=1234,
    )
    assert ServiceConfig.from_env(config.to_env()) == config
    with pytest.raises(UsageError):
        ServiceConfig.from_env({"CONTEXTWRIGHT_SERVICE_BURST": "many"})
    with pytest.raises(UsageError):
        ServiceConfig(max_body_bytes=10)


def _one_session(tmp_path):
    app = create_app(ServiceConfig(store=f"sqlite:///{tmp_path}/s.db", rate_limit=RateLimit(per_second=10_000, burst=10_000)))
    key, _ = app.state.store.create_key("acme")
    principal = Principal(tenant="acme", key_id=key.key_id)
    record, _ = app.state.sessions.open(
        principal, "s", {"policy": "Be careful."}, {"provider": "anthropic", "id": "claude-sonnet-4-6"}
    )
    return app, record


def _losing(times: int, *, append_first: bool = False):
    """An action that loses the seq race ``times`` times (after storing a message, with ``append_first``)."""
    lost = 0

    def action(session):
        nonlocal lost
        if lost < times:
            lost += 1
            if append_first:
                session.user(f"stored before the race was lost ({lost})")
            raise SeqConflict(session.id, expected_seq=session.history.last_seq, actual_seq=session.history.last_seq + 1)
        return "stored"

    return action


def test_a_write_without_a_seq_outlasts_a_long_run_of_lost_races(tmp_path, monkeypatch):
    # Two workers writing one session flat out made a write lose 5 to 7 times in a row routinely;
    # a 409 the client did not ask for (it named no seq) would only make it retry itself.
    monkeypatch.setattr(service_sessions.time, "sleep", lambda seconds: None)
    app, record = _one_session(tmp_path)
    sessions = app.state.sessions
    assert sessions.run(record, Guarantees(), _losing(40)) == ("stored", 40)
    # Check the races still end: past the budget the client gets the conflict.
    with pytest.raises(SeqConflict):
        sessions.run(record, Guarantees(), _losing(service_sessions.MAX_CONFLICT_RETRIES + 1))
    # Check a write that named a seq, or stored part of itself, is never run again.
    with pytest.raises(SeqConflict):
        sessions.run(record, Guarantees(expected_seq=0), _losing(1))
    with pytest.raises(SeqConflict):
        sessions.run(record, Guarantees(), _losing(1, append_first=True))
    app.state.store.close()


def test_the_worker_keeps_cached_sessions_bounded_by_the_events_they_hold(tmp_path):
    # Count alone did not bound memory: 256 long sessions hold their whole folds.
    app, _ = _one_session(tmp_path)
    sessions = app.state.sessions
    sessions.cache_events = 25
    principal = Principal(tenant="acme", key_id="k")
    spec = ({"policy": "Be careful."}, {"provider": "anthropic", "id": "claude-sonnet-4-6"})
    records = [sessions.open(principal, f"long-{i}", *spec)[0] for i in range(4)]
    for record in records:
        with sessions.session(record) as session:
            for n in range(10):
                session.user(f"message {n}")
    # Check: at most 25 events held (each session holds 10), the most recently used kept.
    held = sessions.cached()
    assert held == [r.log_session_id for r in records[-2:]]
    # Check: a session that grows is weighed again when its operation ends; one larger than
    # the whole bound is still kept (the last used always is).
    with sessions.session(records[-1]) as session:
        for n in range(20):
            session.user(f"more {n}")
    assert sessions.cached() == [records[-1].log_session_id]
    app.state.store.close()


@pytest.mark.parametrize("fast", [True, False], ids=["orjson", "standard-library"])
def test_the_gate_finds_values_with_no_canonical_form_with_either_parser(monkeypatch, fast):
    from contextwright import canonical
    from contextwright.service import gate
    from contextwright.service.problems import Problem

    if not fast:
        monkeypatch.setattr(canonical, "_orjson", None)  # the gate's fast parser is canonical's
    elif not canonical.fast_encoder_available():
        pytest.skip("the fast parser is the `fast` extra")
    for body, where, kind in (
        (b'{"a": [1, {"b": NaN}]}', ["body", "a", "1", "b"], "finite_number"),
        (b'{"a": -1e400}', ["body", "a"], "finite_number"),
        (b'{"t": "x \\udc00"}', ["body", "t"], "unicode_text"),
    ):
        with pytest.raises(Problem) as refused:
            gate.check_json_values(body)
        assert refused.value.type.slug == "invalid-request" and refused.value.extensions["errors"][0]["loc"] == where
        assert refused.value.extensions["errors"][0]["type"] == kind
    # Check: valid JSON, huge integers, surrogate pairs and bodies that are not JSON pass (the route answers those).
    for body in (b'{"n": 1e308, "t": "NaN \\ud83d\\ude00"}', b'{"n": 1' + b"0" * 400 + b"}", b"{not json", b""):
        gate.check_json_values(body)
