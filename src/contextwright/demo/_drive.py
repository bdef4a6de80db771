"""Play a scripted session through a real :class:`~contextwright.runtime.Session`.

The script provides both sides of the conversation; this driver asks the
session for a request before every scripted model answer, exactly as an agent
loop would before calling the provider, and feeds tool outputs back. When the
engine says the session's summary reached its depth cap
(:class:`~contextwright.runtime.errors.EscalationRequired`), the driver does what the
engine asks: it continues in a child run (:meth:`Session.escalate`) and plays the
rest of the script there; at the end each child's last answer returns to its parent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from contextwright.clock import FixedClock
from contextwright.demo.script import DemoStep
from contextwright.runtime.errors import EscalationRequired
from contextwright.runtime.session import BuiltRequest, Session
from contextwright.testing.provider import ScriptedProvider


@dataclass(kw_only=True, slots=True)
class DriveReport:
    """What happened while driving a session."""

    requests: list[BuiltRequest] = field(default_factory=list)
    forced_compactions: int = 0
    denied_calls: int = 0
    turns: int = 0
    sessions: list[Session] = field(default_factory=list)
    """The driven session, then each child run it continued in, in order."""

    @property
    def session(self) -> Session:
        """The session the script ended in."""
        return self.sessions[-1]


def drive(
    session: Session,
    steps: Iterable[DemoStep],
    *,
    clock: FixedClock,
    force_compaction_at: Iterable[int] = (),
    on_request: Callable[[BuiltRequest], None] | None = None,
    on_step: Callable[[DemoStep], None] | None = None,
    provider: ScriptedProvider | None = None,
    wire: str | None = None,
) -> DriveReport:
    """Drive ``session`` through ``steps``; compact by hand before the turns in ``force_compaction_at``.

    With a ``provider``, every model answer goes through :meth:`Session.send` (render,
    send, record usage), as in a real agent loop; without one, the answer is recorded
    directly after the request is built.
    """
    report = DriveReport(sessions=[session])
    forced = set(force_compaction_at)
    for step in steps:
        clock.advance(step.after_seconds)
        session = report.session
        match step.kind:
            case "user":
                if report.turns in forced and _escalating(report, lambda s: s.compact(trigger="manual")) is not None:
                    report.forced_compactions += 1
                report.turns += 1
                session = report.session
                session.user(step.payload.text)
            case "assistant":
                request = _escalating(report, lambda s: s.next_request())
                session = report.session
                report.requests.append(request)
                if on_request is not None:
                    on_request(request)
                if provider is None:
                    session.adapter.record_assistant(step.payload)
                else:
                    provider.push(step.payload)
                    session.send(provider.create, request, wire=wire)
            case "tool":
                pending = {c.id for c in session.pending_tool_calls()}
                if step.payload.call_id in pending:
                    session.tool_result(step.payload.call_id, step.payload.output, exit_code=step.payload.exit_code)
                else:
                    report.denied_calls += 1  # answered by the session itself (revoked tool or control tool)
            case "revoke_tool":
                session.tools.revoke(step.detail["tool"], reason="revoked during the session")
            case "memory_write":
                session.memories.remember(step.detail["id"], step.detail["text"])
            case "memory_correct":
                session.memories.correct(step.detail["id"], step.detail["text"])
        if on_step is not None:
            on_step(step)
    _finish_children(report)
    return report


def _escalating(report: DriveReport, act: Callable[[Session], Any]) -> Any:
    """Run ``act`` on the current session; when the engine asks for a child run, continue in one and retry there."""
    while True:
        try:
            return act(report.session)
        except EscalationRequired:
            report.sessions.append(report.session.children.escalate())


def _finish_children(report: DriveReport) -> None:
    # Only a child's final answer returns to its parent, innermost first.
    for parent, child in reversed(list(zip(report.sessions, report.sessions[1:], strict=False))):
        answers = [e.payload.text for e in child.history.events if e.type == "message.assistant" and e.payload.text]
        parent.children.finish(child, answers[-1] if answers else "The child run ended without a final answer.")
