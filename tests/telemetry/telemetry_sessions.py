"""Sessions for the telemetry and report tests, driven through the real runtime."""

from __future__ import annotations

from dataclasses import dataclass

from contextwright.clock import FixedClock
from contextwright.demo._drive import DriveReport, drive
from contextwright.demo.script import DemoStep, demo_script
from contextwright.events.catalog import ModelResponse, UsageRecord
from contextwright.events.envelope import Event
from contextwright.runtime.ports import InMemoryMemory
from contextwright.runtime.session import BuiltRequest
from contextwright.testing.fakes import open_session, sample_model

WINDOW = 20_000
"""Small enough that relief runs: tool results are bounded at entry, so a roomier window never fills."""
ROTATED_WINDOW = 40_000
TURNS = 12
ROTATE_AT_TURN = 9
UNINDEXED_RESPONSE_AT = 3


@dataclass
class Driven:
    """A finished session: its events and what the driver saw."""

    events: list[Event]
    report: DriveReport


def reported_usage(request: BuiltRequest) -> UsageRecord:
    """The usage the fake provider reports for a request: half of it read from cache.

    The total is the request's uncorrected size (exact part plus raw estimate): a fixed truth,
    so the reconciled factor does not feed on its own corrections."""
    built = request.event.payload
    total = built.exact_tokens + built.raw_estimate_tokens
    return UsageRecord(
        input_tokens=total - total // 2 - 100, cache_read_tokens=total // 2, cache_write_5m_tokens=100, output_tokens=150
    )


def drive_session(session_id: str = "telemetry", *, responses: bool = True, rotate: bool = True) -> Driven:
    """Drive the demo script; the provider answers even requests (and one without an index); the model changes once."""
    clock = FixedClock("2026-03-01T22:30:00Z")
    memory = InMemoryMemory({"mem-style": "Billing code uses Decimal for money amounts."})
    engine, session, _ = open_session(session_id, clock=clock, window=WINDOW, memory=memory)
    rotated = False

    def on_request(request: BuiltRequest) -> None:
        if not responses or (request.index % 2 and request.index != UNINDEXED_RESPONSE_AT):
            return
        index = None if request.index == UNINDEXED_RESPONSE_AT else request.index
        clock.advance(3)
        response = ModelResponse(
            provider="anthropic", model=request.plan.model.id, usage=reported_usage(request), request_index=index
        )
        session.setup.log.append(session.id, [response], expected_seq=session.setup.log.last_seq(session.id))

    def on_step(step: DemoStep) -> None:
        nonlocal rotated
        if rotate and not rotated and step.kind == "user" and report_turns() == ROTATE_AT_TURN:
            # A model change (here: a larger window) is what rotates an epoch in a live session.
            session.model = sample_model(ROTATED_WINDOW)
            rotated = True

    def report_turns() -> int:
        return sum(1 for e in session.history.events if e.type == "message.user")

    try:
        report = drive(
            session, demo_script(turns=TURNS), clock=clock, force_compaction_at=[8], on_request=on_request, on_step=on_step
        )
        session.close()
        return Driven(events=session.history.events, report=report)
    finally:
        engine.close()
