"""G1, the gate: a scripted fifty-turn session through the real log.

The clock crosses midnight, a tool is revoked mid-session, memory is written and
corrected, parallel tool calls happen, and compaction is forced. The session
must show exactly one prefix hash for its one epoch, no orphaned tool pair in any
request, every request within budget, and every request rebuilt from the log
byte for byte. The second half of this file breaks one property at a time and
checks that the gate notices.
"""

from __future__ import annotations

import os
import uuid

import pytest

from contextwright.assembly.request import ToolCallPart, ToolResultPart
from contextwright.assembly.validate import validate
from contextwright.budget.allocator import allocate
from contextwright.clock import FixedClock
from contextwright.demo._drive import drive
from contextwright.demo.script import demo_script
from contextwright.errors import ContextwrightError
from contextwright.runtime.ports import InMemoryMemory
from contextwright.telemetry._stability import find_drift
from contextwright.testing.fakes import open_session

WINDOW = 64_000


def run_gate(url: str, *, turns: int = 50, session_id: str = "gate") -> None:
    """Drive the scripted session and assert every gate property."""
    clock = FixedClock("2026-03-01T23:30:00Z")
    memory = InMemoryMemory({"mem-style": "Billing code uses Decimal for money amounts."})
    engine, session, _ = open_session(session_id, url=url, clock=clock, window=WINDOW, memory=memory)
    try:
        report = drive(session, demo_script(turns=turns), clock=clock, force_compaction_at=[turns * 3 // 5])
        events = session.history.events
        types = [e.type for e in events]

        # The script did what the gate requires.
        frames = [e.payload.runtime for e in events if e.type == "context.frame.recorded"]
        assert len({f.split(",")[1].split()[0] for f in frames}) >= 2, "the clock never crossed midnight"
        assert "tool.revoked" in types and "memory.written" in types and "memory.corrected" in types
        assert report.forced_compactions == 1 and "context.compacted" in types
        assert any(sum(isinstance(p, ToolCallPart) for p in m.parts) > 1 for r in report.requests for m in r.neutral.messages)

        # Exactly one epoch and one prefix hash for it.
        built = [e.payload for e in events if e.type == "context.request.built"]
        assert len(built) == len(report.requests) > turns
        assert {b.epoch for b in built} == {1}
        assert len({b.prefix_sha256 for b in built}) == 1, find_drift(events)
        assert not find_drift(events)

        for request in report.requests:
            neutral, plan = request.neutral, request.plan
            # No orphaned tool pair.
            validate(neutral, plan)
            calls = [p.id for m in neutral.messages for p in m.parts if isinstance(p, ToolCallPart)]
            results = [p.call_id for m in neutral.messages for p in m.parts if isinstance(p, ToolResultPart)]
            assert sorted(calls) == sorted(results)
            # Within budget: prefix plus the body with its safety margin fits the input limit.
            allocation = allocate(plan)
            assert allocation.prefix_tokens + allocation.with_margin(request.result.body_tokens) <= allocation.input_limit
            # Rebuilt from the log alone, byte for byte.
            rebuilt, record = session.history.rebuild(request.index)
            assert rebuilt.canonical() == neutral.canonical()
            assert rebuilt.sha256() == record.request_sha256 == neutral.sha256()
    finally:
        engine.close()


def test_gate_on_sqlite(tmp_path):
    run_gate(f"sqlite:///{tmp_path / 'gate.db'}")


@pytest.mark.postgres
def test_gate_on_postgres(postgres_dsn, postgres_schema):
    run_gate(f"{postgres_dsn}?schema={postgres_schema}")


# -- the gate must notice each of these defects -------------------------------------

MUTATION_TURNS = 20


@pytest.mark.moves_cache_prefix(reason="puts a timestamp into the prefix on purpose")
def test_gate_fails_with_a_timestamp_in_the_prefix(monkeypatch):
    import contextwright.assembly.assemble as assemble
    from contextwright.assembly.prefix import PrefixTexts

    real = assemble.render_prefix
    clock_state = {"n": 0}

    def with_timestamp(prefix, *, session_id, secret):
        texts = real(prefix, session_id=session_id, secret=secret)
        clock_state["n"] += 1
        return PrefixTexts(
            policy=texts.policy + f"\nRequest time: {clock_state['n']}",
            framing=texts.framing,
            instructions=texts.instructions,
            tools=texts.tools,
            memory=texts.memory,
        )

    monkeypatch.setattr(assemble, "render_prefix", with_timestamp)
    with pytest.raises((AssertionError, ContextwrightError)):
        run_gate("memory://", turns=MUTATION_TURNS)


@pytest.mark.moves_cache_prefix(reason="random nonces change the rendered memory snapshot")
def test_gate_fails_with_random_nonces(monkeypatch):
    import contextwright.assembly.envelope as envelope

    monkeypatch.setattr(envelope, "nonce", lambda secret, ref, digits=16: os.urandom(8).hex()[:digits])
    with pytest.raises((AssertionError, ContextwrightError)):
        run_gate("memory://", turns=MUTATION_TURNS)


@pytest.mark.moves_cache_prefix(reason="revocation rewrites the prefix on purpose")
def test_gate_fails_when_revocation_removes_the_tool_from_the_prefix(monkeypatch):
    from contextwright.runtime.session_parts import SessionTools

    monkeypatch.setattr(SessionTools, "revoke", lambda self, name, reason="": self.force_revoke(name))
    with pytest.raises((AssertionError, ContextwrightError)):
        run_gate("memory://", turns=MUTATION_TURNS)


def test_gate_fails_with_an_orphaned_tool_result(monkeypatch):
    from contextwright.assembly.assemble import _Assembler

    real = _Assembler._exchange

    def drop_first_call(self, entry):
        before = len(self.messages)
        real(self, entry)
        assistant = self.messages[before]
        self.messages[before] = type(assistant)(
            role=assistant.role,
            parts=tuple(p for p in assistant.parts if not isinstance(p, ToolCallPart) or p.id != entry.calls[0].id)
            or assistant.parts[:1],
        )

    monkeypatch.setattr(_Assembler, "_exchange", drop_first_call)
    with pytest.raises((AssertionError, ContextwrightError)):
        run_gate("memory://", turns=MUTATION_TURNS, session_id=f"orphan-{uuid.uuid4().hex[:6]}")


def test_the_unbroken_gate_passes_at_the_mutation_size():
    run_gate("memory://", turns=MUTATION_TURNS)
