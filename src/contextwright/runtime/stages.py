"""Stages, artifacts, decision points and child runs: the layered style of agent.

These are methods of :class:`~contextwright.runtime.session.Session` kept in their
own module (a mixin) because they are a separate concern: an agent that works in
stages (plan, implement, review) declares them, and the engine turns each closed
stage into a decision point, harvested from its events by field extraction.
"""

from __future__ import annotations

from typing import Any

from contextwright.assembly.assemble import render_decision
from contextwright.canonical import canonical_json
from contextwright.derive.surface import DecisionEntry
from contextwright.errors import UsageError
from contextwright.events.catalog import (
    ArtifactDeclared,
    ArtifactPointer,
    ArtifactStep,
    ChildFinished,
    ChildStarted,
    DecisionGraduated,
    DecisionPoint,
    MemoryCandidates,
    StageClosed,
    StageOpened,
)
from contextwright.events.envelope import Event
from contextwright.events.registry import encode_payload


class StagesMixin:
    """Stage, artifact and child-run operations of a session."""

    # -- stages ------------------------------------------------------------------------

    def open_stage(self, name: str, *, goal: str) -> str:
        """Begin a stage with a declared goal; returns its id. Only one stage is open at a time."""
        self._sync()  # type: ignore[attr-defined]
        if self._surface().open_stage is not None:  # type: ignore[attr-defined]
            raise UsageError("a stage is already open; close it first")
        stage_id = f"{name}-{sum(1 for e in self._events if e.type == 'stage.opened') + 1}"  # type: ignore[attr-defined]
        self._append([StageOpened(stage_id=stage_id, name=name, goal=goal)])  # type: ignore[attr-defined]
        return stage_id

    def close_stage(self, *, outcome: str, rationale: str = "") -> Event:
        """Close the open stage: record its outcome and its decision point (which replaces the stage in context)."""
        self._sync()  # type: ignore[attr-defined]
        events = self._events  # type: ignore[attr-defined]
        stage = self._surface().open_stage  # type: ignore[attr-defined]
        if stage is None:
            raise UsageError("no stage is open")
        start = max(e.seq for e in events if e.type == "stage.opened" and e.payload.stage_id == stage.stage_id)
        inside = [e for e in events if e.seq > start]
        decision = harvest(stage, inside, outcome=outcome, rationale=rationale)
        stored = self._append([StageClosed(stage_id=stage.stage_id, outcome=outcome, rationale=rationale), decision])  # type: ignore[attr-defined]
        self._graduate_decisions()
        return stored[-1]

    def _graduate_decisions(self) -> None:
        """Under the session cap on L2, the oldest decision points become memory candidates and leave."""
        surface = self._surface()  # type: ignore[attr-defined]
        decisions = [e for e in surface.entries if isinstance(e, DecisionEntry)]
        sizes = [self._count(render_decision(d.decision)) for d in decisions]  # type: ignore[attr-defined]
        cap = self.budgets.decision_points_tokens  # type: ignore[attr-defined]
        leaving: list[DecisionEntry] = []
        while decisions and sum(sizes) > cap and len(decisions) > 1:
            leaving.append(decisions.pop(0))
            sizes.pop(0)
        if leaving:
            self._append(
                [  # type: ignore[attr-defined]
                    DecisionGraduated(stage_ids=tuple(d.decision.stage_id for d in leaving)),
                    MemoryCandidates(facts=tuple(render_decision(d.decision) for d in leaving)),
                ]
            )

    # -- artifacts ---------------------------------------------------------------------

    def declare_artifact(
        self,
        artifact_id: str,
        *,
        title: str,
        content: str,
        summary: str,
        steps: tuple[str, ...] | list[str] = (),
        current_step: int = 0,
    ) -> Event:
        """Store an artifact whole (a plan, a checklist); a new version replaces the old one in context."""
        if steps and not 0 <= current_step < len(steps):
            raise UsageError(f"current_step must be between 0 and {len(steps) - 1}")
        self._sync()  # type: ignore[attr-defined]
        version = 1 + sum(1 for e in self._events if e.type == "artifact.declared" and e.payload.artifact_id == artifact_id)  # type: ignore[attr-defined]
        ref = self.log.put_artifact(content, kind="artifact")  # type: ignore[attr-defined]
        pointer = ArtifactPointer(ref=ref, trust="user", size_chars=len(content), kind="artifact")
        declared = ArtifactDeclared(
            artifact_id=artifact_id,
            version=version,
            title=title,
            summary=summary,
            pointer=pointer,
            steps=tuple(steps),
            current_step=current_step,
        )
        return self._append([declared])[0]  # type: ignore[attr-defined]

    def advance_artifact(self, artifact_id: str, step: int) -> Event:
        """Move a chunked artifact's current step (0-based)."""
        self._sync()  # type: ignore[attr-defined]
        declared = [e.payload for e in self._events if e.type == "artifact.declared" and e.payload.artifact_id == artifact_id]  # type: ignore[attr-defined]
        if not declared:
            raise UsageError(f"no artifact {artifact_id!r} in session {self.id!r}")  # type: ignore[attr-defined]
        if not 0 <= step < max(1, len(declared[-1].steps)):
            raise UsageError(f"artifact {artifact_id!r} has {len(declared[-1].steps)} steps; step {step} does not exist")
        return self._append([ArtifactStep(artifact_id=artifact_id, current_step=step)])[0]  # type: ignore[attr-defined]

    # -- child runs --------------------------------------------------------------------

    def start_child(
        self,
        purpose: str,
        *,
        task: str,
        call_id: str | None = None,
        pointers: tuple[str, ...] = (),
        include_working_state: bool = True,
        agent: Any = None,
        model: Any = None,
    ) -> Any:
        """Start a child run in its own session (own plan and epoch, same log), seeded from a slice of this one."""
        self._sync()  # type: ignore[attr-defined]
        number = 1 + sum(1 for e in self._events if e.type == "child.started")  # type: ignore[attr-defined]
        child_id = f"{self.id}/child-{number}"  # type: ignore[attr-defined]
        parts = [f"You are continuing part of a larger task as a sub-run: {purpose}", f"Task: {task}"]
        state = self.working_state  # type: ignore[attr-defined]
        if include_working_state and not state.is_empty():
            parts.append(state.render())
        if pointers:
            parts.append("Material you can read with context_read_artifact: " + ", ".join(pointers))
        seed = "\n\n".join(parts)
        self._append([ChildStarted(child_session_id=child_id, purpose=purpose, call_id=call_id, seed=seed)])  # type: ignore[attr-defined]
        child = self.engine_session(child_id, agent=agent or self.agent, model=model or self.model)  # type: ignore[attr-defined]
        for pointer in pointers:
            # Share the pointed-to artifacts with the child, at their original trust.
            parent_pointer = self._pointer(pointer)  # type: ignore[attr-defined]
            if parent_pointer is not None:
                child._append([_shared(parent_pointer)])
        child.user(seed)
        return child

    def escalate(self, *, call_id: str | None = None) -> Any:
        """Continue in a child run when compaction reached its depth cap.

        The child is seeded with the task, the working state and pointers to every
        compaction archive, so nothing is lost and nothing is summarised again.
        """
        self._sync()  # type: ignore[attr-defined]
        task = next(
            (
                e.payload.text
                for e in self._events
                if e.type == "message.user" and e.payload.author == "user" and not e.payload.steering
            ),
            "",
        )  # type: ignore[attr-defined]
        archives = tuple(
            e.payload.archive.ref
            for e in self._events
            if e.type == "context.compacted" and e.payload.archive is not None  # type: ignore[attr-defined]
        )
        return self.start_child(
            "continue the session after its summary reached the depth cap", task=task, call_id=call_id, pointers=archives
        )

    def finish_child(self, child: Any, result: str) -> list[Event]:
        """End a child run: only its final result returns, as the answer to the call that started it."""
        started = [e.payload for e in self._events if e.type == "child.started" and e.payload.child_session_id == child.id]  # type: ignore[attr-defined]
        if not started:
            raise UsageError(f"{child.id!r} is not a child of session {self.id!r}")  # type: ignore[attr-defined]
        call_id = started[-1].call_id
        stored = self._append([ChildFinished(child_session_id=child.id, result=result, call_id=call_id)])  # type: ignore[attr-defined]
        if call_id is not None:
            stored.append(self.tool_result(call_id, result, trust="tool"))  # type: ignore[attr-defined]
        return stored

    # -- router view ---------------------------------------------------------------------

    def router_view(self) -> str:
        """A supervisor's context, rebuilt from the latest compressed-session snapshot (L2), not from the execution history."""
        self._sync()  # type: ignore[attr-defined]
        surface = self._surface()  # type: ignore[attr-defined]
        lines: list[str] = []
        for entry in surface.entries:
            if getattr(entry, "task", False):
                lines.append(f"Task: {entry.message.text}")
            elif isinstance(entry, DecisionEntry):
                lines.append(render_decision(entry.decision))
            elif getattr(entry, "pinned", False) and hasattr(entry, "message") and entry.message.steering:
                lines.append(f"User steering: {entry.message.text}")
        if surface.open_stage is not None:
            lines.append(f"Current stage: {surface.open_stage.name} (goal: {surface.open_stage.goal})")
        return "\n\n".join(lines)


def harvest(stage: StageOpened, events: list[Event], *, outcome: str, rationale: str) -> DecisionPoint:
    """A decision point from a stage's events, by field extraction only (no model call)."""
    artifacts = [f"{e.payload.title} v{e.payload.version}: {e.payload.summary}" for e in events if e.type == "artifact.declared"]
    steering = [e.payload.text for e in events if e.type == "message.user" and e.payload.steering]
    calls: dict[str, tuple[str, str]] = {}
    for e in events:
        if e.type == "message.assistant":
            for call in e.payload.tool_calls:
                calls[call.id] = (call.name, canonical_json(encode_payload(call.arguments)))
    succeeded = {
        calls[e.payload.call_id]
        for e in events
        if e.type == "tool.result" and not e.payload.is_error and e.payload.call_id in calls
    }
    failures = []
    for e in events:
        if e.type == "tool.result" and e.payload.is_error and not e.payload.denied and e.payload.call_id in calls:
            key = calls[e.payload.call_id]
            if key not in succeeded:
                code = f" (exit {e.payload.exit_code})" if e.payload.exit_code is not None else ""
                failures.append(f"{key[0]}{code}")
    return DecisionPoint(
        stage_id=stage.stage_id,
        name=stage.name,
        goal=stage.goal,
        outcome=outcome,
        rationale=rationale,
        artifacts=tuple(dict.fromkeys(artifacts)),
        steering=tuple(steering),
        failures=tuple(dict.fromkeys(failures)),
        source_event_seqs=tuple(e.seq for e in events),
    )


def _shared(pointer: ArtifactPointer) -> Any:
    from contextwright.events.catalog import ArtifactStored

    return ArtifactStored(pointer=pointer)
