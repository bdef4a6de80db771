"""Tool calls: results from the caller, answers the engine gives itself, call-time policy."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from contextwright.budget.allocator import allocate
from contextwright.canonical import canonical_json
from contextwright.derive import _working_state as ws
from contextwright.derive._surface import Entry, Exchange, Surface
from contextwright.errors import (
    ArtifactNotFound,
    UsageError,
)
from contextwright.events.catalog import (
    ArtifactPointer,
    ArtifactStored,
    AssistantMessage,
    ToolCall,
    ToolRestored,
    ToolResult,
    ToolRevoked,
    TrustLevel,
    WorkingStateUpdated,
)
from contextwright.events.envelope import Event
from contextwright.log.base import artifact_ref
from contextwright.planner import PlanDecision
from contextwright.policy.tools import denial_for
from contextwright.providers.tool_names import recorded_names
from contextwright.runtime.core import SessionCore
from contextwright.runtime.errors import (
    ToolCallUnknown,
)
from contextwright.runtime.limits import (
    ENVELOPE_TOKENS,
    FORCED_REVOCATION,
    RESULT_FLOOR_TOKENS,
    UNTRUSTED,
)
from contextwright.runtime.per_entry import PerEntry
from contextwright.tool_outputs.arrival import (
    READ_TOOL_NAME,
    ToolOutputPolicy,
    prepare_output,
    read_slice,
)

_FRAMED = 2 * ENVELOPE_TOKENS
"""What a result costs besides its text: the envelope and the result block around it (about 90 tokens)."""


class ToolCalls:
    """Tool calls of one session: results from the caller, answers the engine gives itself, call-time policy."""

    def __init__(self, core: SessionCore) -> None:
        self.core = core
        self._untrusted = PerEntry(_untrusted_seq)

    def record_assistant(self, message: AssistantMessage) -> list[Event]:
        """Record the model's answer; control-tool calls and calls to revoked tools are answered here."""
        self.core.sync()
        surface = self.core.surface()
        if surface.open_exchange is not None:
            raise UsageError(
                f"tool calls {', '.join(surface.open_exchange.missing)} still need results before the model can speak again"
            )
        stored = self.core.append([self._with_recorded_names(message)])
        message = stored[0].payload
        policy = self.core.facts().policy
        automatic: list[Any] = []
        state = self.core.working_state()
        tainted = self._untrusted_in_run(surface)
        for call in message.tool_calls:
            denial = denial_for(call, policy)
            if denial is not None:
                automatic.append(denial)
            elif call.name == READ_TOOL_NAME:
                automatic.append(self._read_artifact(call))
            elif call.name == ws.TOOL_NAME:
                try:
                    state = ws.apply_update(
                        state,
                        call.arguments,
                        count_tokens=self.core.count,
                        limits=ws.Limits(tokens=self.core.budgets.working_state_tokens),
                        tainted=tainted,
                    )
                except ws.WorkingStateError as exc:
                    automatic.append(
                        ToolResult(
                            call_id=call.id,
                            tool_name=call.name,
                            output=f"Not saved: {exc.message}",
                            is_error=True,
                            trust="platform",
                        )
                    )
                else:
                    automatic.append(
                        ToolResult(call_id=call.id, tool_name=call.name, output="Working state saved.", trust="platform")
                    )
                    automatic.append(WorkingStateUpdated(state=state.to_dict(), source="tool", call_id=call.id))
        if automatic:
            stored += self.core.append(automatic)
        return stored

    def _with_recorded_names(self, message: AssistantMessage) -> AssistantMessage:
        """Calls made under a name the wire was sent instead of a recorded one are recorded under that one."""
        if not message.tool_calls:
            return message
        recorded = self.core.facts().called_names
        back = recorded_names(recorded)
        if not any(call.name in back for call in message.tool_calls):
            return message
        calls = tuple(replace(call, name=back.get(call.name, call.name)) for call in message.tool_calls)
        return replace(message, tool_calls=calls)

    def _output_policy(self, tool_name: str) -> ToolOutputPolicy:
        """The tool's policy, with the allowance of a new result set from the room the window gives.

        A new result is new content at the end of the request, so bounding it costs no cache
        read; it is decided once, here. The results of the latest exchange are the last to yield,
        so together they may take the whole tool-result share (B2): a new result's allowance is
        what the share has left beyond the results of its exchange that arrived before it, split
        evenly among the calls still waiting. Older results make room for it by becoming pointers
        (runtime/relief.py): what older outputs hold never cuts the newest, the one the model reads next.
        """
        policy = self.core.agent.output_policy(tool_name)
        plan = self.core.planner().current
        if plan is None:
            return policy
        share = allocate(plan).tool_results
        exchange = self.core.surface().open_exchange
        held, waiting = 0, 1
        if exchange is not None:
            estimate = self.core.body_estimate(plan)
            held = sum(estimate(r.result.output) + _FRAMED for r in exchange.results if not r.pruned)
            waiting = max(1, len(exchange.missing))
        limit_tokens = max(RESULT_FLOOR_TOKENS, (share - held) // waiting - _FRAMED)
        # Three characters per token is a conservative conversion for code and logs.
        return replace(
            policy,
            max_chars=min(policy.max_chars, limit_tokens * 3),
            budget_tokens=min(policy.budget_tokens or limit_tokens, limit_tokens),
        )

    def _read_artifact(self, call: ToolCall) -> ToolResult:
        """Answer a ``context_read_artifact`` call; the text keeps its original trust level."""
        ref = call.arguments.get("ref")
        message = self._message_text(ref) if isinstance(ref, str) else None
        if message is not None:
            # A message shown bounded (assembly/bounded.py) names its own event: page it from the log.
            text, trust = message
            try:
                return ToolResult(call_id=call.id, tool_name=call.name, output=read_slice(text, call.arguments), trust=trust)
            except UsageError as exc:
                return ToolResult(
                    call_id=call.id,
                    tool_name=call.name,
                    output=f"Cannot read {ref}: {exc.message}",
                    is_error=True,
                    trust="platform",
                )
        pointer = self.pointer(ref) if isinstance(ref, str) else None
        if pointer is None:
            return ToolResult(
                call_id=call.id,
                tool_name=call.name,
                output=f"Unknown pointer {ref!r}: use a ref shown in this session.",
                is_error=True,
                trust="platform",
            )
        try:
            text = read_slice(self.core.log.get_artifact(pointer.ref), call.arguments)
        except (UsageError, ArtifactNotFound) as exc:
            return ToolResult(
                call_id=call.id, tool_name=call.name, output=f"Cannot read {ref}: {exc.message}", is_error=True, trust="platform"
            )
        trust = pointer.trust
        if pointer.kind == "compaction_archive" and trust == "platform":
            # Archives written before they carried their content's trust hold tool output too.
            trust = "tool"
        return ToolResult(call_id=call.id, tool_name=call.name, output=text, trust=trust)

    def _message_text(self, ref: str) -> tuple[str, TrustLevel] | None:
        """The whole text of a message event of this session named ``<session>#<seq>``, with its trust level."""
        session_id, _, seq = ref.rpartition("#")
        event = self.core.event_at(int(seq)) if session_id == self.core.id and seq.isdigit() else None
        if event is None:
            return None
        if event.type == "message.user":
            return event.payload.text, event.payload.author
        if event.type == "message.assistant":
            calls = [f"{c.name} {canonical_json(c.arguments)}" for c in event.payload.tool_calls]
            return "\n".join([event.payload.text, *calls]).strip("\n"), "tool"
        return None

    def pointer(self, ref: str) -> ArtifactPointer | None:
        """The pointer the model was shown in this session (never another session's).

        A unique prefix of at least 12 hex digits (as summaries show) is enough."""
        if not ref.startswith("sha256:") or len(ref) < len("sha256:") + 12:
            return None
        return self.core.facts().history.pointer(ref)

    def pending_tool_calls(self) -> list[ToolCall]:
        """Tool calls of the last model answer that still need a result from the caller."""
        self.core.sync()
        exchange = self.core.surface().open_exchange
        if exchange is None:
            return []
        missing = set(exchange.missing)
        return [call for call in exchange.calls if call.id in missing]

    def tool_result(
        self,
        call_id: str,
        output: str,
        *,
        exit_code: int | None = None,
        is_error: bool | None = None,
        trust: TrustLevel = "tool",
    ) -> Event:
        """Record the output of a tool call the model made (at any trust but the platform's)."""
        if trust == "platform":
            # Platform text is shown without an envelope, in the platform's voice: a tool's output never is.
            raise UsageError(
                f"tool result {call_id!r}: a tool's output cannot carry 'platform' trust; "
                "use 'tool' (the default), 'external_untrusted', 'user' or 'operator'",
                call_id=call_id,
            )
        pending = {c.id: c for c in self.pending_tool_calls()}
        call = pending.get(call_id)
        if call is None:
            raise ToolCallUnknown(
                f"no pending tool call {call_id!r} in session {self.core.id!r}"
                + (f"; pending: {', '.join(pending)}" if pending else "; nothing is pending"),
                session_id=self.core.id,
                call_id=call_id,
            )
        failed = is_error if is_error is not None else (exit_code not in (None, 0))
        if not isinstance(output, str):
            raise UsageError(f"tool output must be text, not {type(output).__name__}")
        # The original is stored whole under its content address; the model sees a bounded view of it.
        # The view is made before the store copies the original, so the compressor's working set
        # and the store's copies of a huge output are never alive at once.
        ref = artifact_ref(output)
        prepared = prepare_output(
            output,
            ref=ref,
            trust=trust,
            exit_code=exit_code if exit_code is not None else (1 if failed else None),
            policy=self._output_policy(call.name),
            count_tokens=self.core.count,
        )
        self.core.log.put_artifact(output, kind="tool_output")
        result = ToolResult(
            call_id=call_id,
            tool_name=call.name,
            output=prepared.text,
            is_error=failed,
            exit_code=exit_code,
            trust=trust,
            artifact=prepared.pointer,
        )
        return self.core.append([ArtifactStored(pointer=prepared.pointer, source_call_id=call_id), result])[-1]

    def revoke_tool(self, name: str, *, reason: str = "") -> Event:
        """Stop a tool from being called; it stays in the prefix and calls are denied."""
        return self.core.append([ToolRevoked(tool=name, reason=reason)])[0]

    def restore_tool(self, name: str) -> Event:
        """Allow a revoked tool again."""
        return self.core.append([ToolRestored(tool=name)])[0]

    def force_revoke_tool(self, name: str) -> PlanDecision:
        """Operator-forced immediate revocation: the tool leaves the prefix and a new epoch starts."""
        self.core.sync()
        decision = self.core.planner().force_revocation(name)
        self.core.append([*(e.payload for e in decision.events), ToolRevoked(tool=name, reason=FORCED_REVOCATION)])
        return decision

    def _untrusted_in_run(self, surface: Surface) -> bool:
        # Whether an exchange of the run (from the seed on) shows an untrusted result.
        return max(self._untrusted.values(surface), default=-1) >= surface.seed_seq


def _untrusted_seq(entry: Entry) -> int:
    """The seq of an exchange that shows an untrusted result (not a denial); -1 for any other entry."""
    if isinstance(entry, Exchange) and any(r.result.trust in UNTRUSTED and not r.result.denied for r in entry.results):
        return entry.seq
    return -1
