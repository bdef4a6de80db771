"""Stages, artifacts, decision points and child runs: the layered style of agent.

An agent that works in stages (plan, implement, review) declares them, and the
engine turns each closed stage into a decision point, harvested from its events
by field extraction. A child run is another session on the same log, seeded from
a slice of this one; only its final result comes back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from contextwright.assembly.assemble import render_decision
from contextwright.canonical import canonical_json
from contextwright.derive._surface import DecisionEntry, UserTurn
from contextwright.errors import UsageError
from contextwright.events.catalog import (
    ArtifactDeclared,
    ArtifactPointer,
    ArtifactStep,
    ArtifactStored,
    ChildFinished,
    ChildStarted,
    DecisionGraduated,
    DecisionPoint,
    MemoryCandidates,
    StageClosed,
    StageOpened,
    WorkingStateUpdated,
)
from contextwright.events.envelope import Event
from contextwright.events.registry import encode_payload
from contextwright.models import ResolvedModel
from contextwright.runtime.core import SessionCore
from contextwright.runtime.memory_rules import withhold_erased
from contextwright.runtime.spec import AgentSpec
from contextwright.runtime.tool_calls import ToolCalls


class ChildSession(Protocol):
    """What stages need of a child run's session: its id, and a way to give it its first message."""

    @property
    def id(self) -> str: ...

    def user(self, text: str) -> Event: ...


ChildT = TypeVar("ChildT", bound=ChildSession)

ChildOpener = Callable[..., ChildT]
"""Opens a session on the same engine: ``open(session_id, agent=..., model=...)``."""


class Stages(Generic[ChildT]):
    """Stage, artifact and child-run operations of one session."""

    def __init__(self, core: SessionCore, tool_calls: ToolCalls, open_child: ChildOpener[ChildT]) -> None:
        self.core = core
        self.tool_calls = tool_calls
        self.open_child = open_child

    # -- stages ------------------------------------------------------------------------

    def open_stage(self, name: str, *, goal: str) -> str:
        """Begin a stage with a declared goal; returns its id. Only one stage is open at a time."""
        self.core.sync()
        if self.core.surface().open_stage is not None:
            raise UsageError("a stage is already open; close it first")
        stage_id = f"{name}-{self.core.facts().history.stages_opened + 1}"
        self.core.append([StageOpened(stage_id=stage_id, name=name, goal=goal)])
        return stage_id

    def close_stage(self, *, outcome: str, rationale: str = "") -> Event:
        """Close the open stage: record its outcome and its decision point (which replaces the stage in context)."""
        self.core.sync()
        stage = self.core.surface().open_stage
        if stage is None:
            raise UsageError("no stage is open")
        start = self.core.facts().history.stage_starts[stage.stage_id]
        inside = self.core.read_after(start)
        decision = harvest(stage, inside, outcome=outcome, rationale=rationale)
        stored = self.core.append([StageClosed(stage_id=stage.stage_id, outcome=outcome, rationale=rationale), decision])
        self._graduate_decisions()
        return stored[-1]

    def _graduate_decisions(self) -> None:
        """Under the session cap on L2, the oldest decision points become memory candidates and leave."""
        surface = self.core.surface()
        decisions = [e for e in surface.entries if isinstance(e, DecisionEntry)]
        sizes = [self.core.count(render_decision(d.decision)) for d in decisions]
        cap = self.core.budgets.decision_points_tokens
        leaving: list[DecisionEntry] = []
        while decisions and sum(sizes) > cap and len(decisions) > 1:
            leaving.append(decisions.pop(0))
            sizes.pop(0)
        if leaving:
            offered, withheld = withhold_erased(tuple(render_decision(d.decision) for d in leaving), self.core.erased_texts())
            self.core.append(
                [
                    DecisionGraduated(stage_ids=tuple(d.decision.stage_id for d in leaving)),
                    MemoryCandidates(facts=offered, withheld=withheld),
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
        self.core.sync()
        version = 1 + self.core.facts().history.artifact_versions.get(artifact_id, 0)
        ref = self.core.log.put_artifact(content, kind="artifact")
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
        return self.core.append([declared])[0]

    def advance_artifact(self, artifact_id: str, step: int) -> Event:
        """Move a chunked artifact's current step (0-based)."""
        self.core.sync()
        steps = self.core.facts().history.artifact_steps.get(artifact_id)
        if steps is None:
            raise UsageError(f"no artifact {artifact_id!r} in session {self.core.id!r}")
        if not 0 <= step < max(1, steps):
            raise UsageError(f"artifact {artifact_id!r} has {steps} steps; step {step} does not exist")
        return self.core.append([ArtifactStep(artifact_id=artifact_id, current_step=step)])[0]

    # -- child runs --------------------------------------------------------------------

    def start_child(
        self,
        purpose: str,
        *,
        task: str,
        call_id: str | None = None,
        pointers: tuple[str, ...] = (),
        include_working_state: bool = True,
        agent: AgentSpec | None = None,
        model: ResolvedModel | None = None,
    ) -> ChildT:
        """Start a child run in its own session (own plan and epoch, same log), seeded from a slice of this one."""
        self.core.sync()
        number = 1 + self.core.facts().history.children_started
        child_id = f"{self.core.id}/child-{number}"
        parts = [f"You are continuing part of a larger task as a sub-run: {purpose}", f"Task: {task}"]
        state = self.core.working_state()
        # The working state is not the user's voice (its facts may come from tool output):
        # it goes to the child as its working state, rendered as data, never into the seed text.
        carried = (
            [WorkingStateUpdated(state=state.to_dict(), source="runtime")]
            if include_working_state and not state.is_empty()
            else []
        )
        if pointers:
            # Name the read tool only to a child whose prefix pins it.
            read_tool = (agent or self.core.agent).prefix().read_tool()
            where = f"Material you can read with {read_tool}: " if read_tool else "Material kept in the session log: "
            parts.append(where + ", ".join(pointers))
        seed = "\n\n".join(parts)
        self.core.append([ChildStarted(child_session_id=child_id, purpose=purpose, call_id=call_id, seed=seed)])
        # Share the pointed-to artifacts with the child, at their original trust, before its first message.
        shown = (self.tool_calls.pointer(ref) for ref in pointers)
        shared: list[Any] = [ArtifactStored(pointer=p) for p in shown if p is not None] + carried
        if shared:
            log = self.core.log
            log.append(child_id, shared, expected_seq=log.last_seq(child_id))
        child = self.open_child(child_id, agent=agent or self.core.agent, model=model or self.core.model)
        child.user(seed)
        return child

    def escalate(self, *, call_id: str | None = None) -> ChildT:
        """Continue in a child run when compaction reached its depth cap.

        The child is seeded with the task, the working state and pointers to every
        compaction archive, so nothing is lost and nothing is summarised again.
        """
        self.core.sync()
        history = self.core.facts().history
        task = history.task or ""
        archives = tuple(history.archives)
        return self.start_child(
            "continue the session after its summary reached the depth cap", task=task, call_id=call_id, pointers=archives
        )

    def finish_child(self, child: ChildSession, result: str) -> list[Event]:
        """End a child run: only its final result returns, as the answer to the call that started it."""
        calls = self.core.facts().history.child_calls
        if child.id not in calls:
            raise UsageError(f"{child.id!r} is not a child of session {self.core.id!r}")
        call_id = calls[child.id]
        stored = self.core.append([ChildFinished(child_session_id=child.id, result=result, call_id=call_id)])
        if call_id is not None:
            stored.append(self.tool_calls.tool_result(call_id, result, trust="tool"))
        return stored

    # -- router view ---------------------------------------------------------------------

    def router_view(self) -> str:
        """A supervisor's context, rebuilt from the latest compressed-session snapshot (L2), not from the execution history."""
        self.core.sync()
        surface = self.core.surface()
        lines: list[str] = []
        for entry in surface.entries:
            if isinstance(entry, UserTurn) and entry.task:
                lines.append(f"Task: {entry.message.text}")
            elif isinstance(entry, DecisionEntry):
                lines.append(render_decision(entry.decision))
            elif isinstance(entry, UserTurn) and entry.message.steering:
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
