"""An incoming message list against the log: which run it continues, and what in it is new.

A client sends its whole history on every request. The gateway keeps, per run, the
fingerprints of the turns it recorded (``framework.history.seen`` events, the same
bookkeeping the client adapters keep), and the agent the run was opened with (system
text, tools, model). A request continues the run whose recorded turns are the start
of its own and whose agent is the same; the turns after that start are new and are
recorded once. So a client retry (the same history again, while the run waits for the
answer) records nothing.

A request that continues a run's recorded turns with the same provider and model, but
with other tools or system text, is the client changing its prefix mid-session (a mode
switch, a tool it enables): the run goes on in a new epoch, recorded with a note of what
changed (:func:`prefix_change_note`), the same as an explicit prefix edit on a session.

Anything else is a client that rewrote its history (its own compaction, ``/clear``, an
edited or dropped message, another model) or a side conversation that
shares the session's key (a title request, a quick check): it starts a new run of the
session, ``<key>~2``, ``<key>~3``, ..., with the whole history it sent. The runs before
it stay in the log as they were, never edited: they are the archive. Later requests go
to whichever run they continue, so a main conversation and its side requests do not
push each other into new runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from contextwright.canonical import content_hash, to_plain
from contextwright.gateway.wires import Turn
from contextwright.items.region_a import READ_TOOL_NAME, ToolSpec
from contextwright.runtime.errors import ToolCallUnknown
from contextwright.runtime.session import Session
from contextwright.runtime.spec import AgentSpec

RUN_SEPARATOR = "~"


@dataclass(kw_only=True, slots=True)
class Run:
    """One run of a session in the log, as the gateway tracks it."""

    session_id: str
    agent: str
    """A hash of the system text, the tools and the model the run was opened with."""
    session: Session
    fingerprints: list[str] = field(default_factory=list)
    """The turns recorded so far, in order."""
    awaiting: bool = False
    """A request was built for the last turns and its answer is not recorded yet."""
    request: Any = None
    """The engine's request built for the last turns (a retry sends it again in manage mode)."""
    last_response: str | None = None
    """The id of the last answer recorded, when the provider gave one (OpenAI Responses)."""
    unsent: tuple[str, ...] = ()
    """Kinds of what the run's recorded answers held that the log keeps nothing of (a hosted tool's call), sorted:
    a client chaining on a stored response (``previous_response_id``) does not send them again, so its requests
    go as they came."""


def agent_signature(provider: str, model: str, system: str, tools: Sequence[ToolSpec]) -> str:
    """What must stay the same for requests to belong to one run: provider, model, system text and tools.

    The same from a request's conversation and from a run read back from the log (its plan): the
    engine's read tool, which manage mode pins after the client's tools, does not count."""
    listed = [tool_row(t) for t in tools if t.name != READ_TOOL_NAME]
    return content_hash({"provider": provider, "model": model, "system": system, "tools": listed})


def tool_row(tool: ToolSpec) -> list[Any]:
    """A tool as a run's signature lists it: name, description, schema, and its native declaration where it has one."""
    return [
        tool.name,
        tool.description,
        to_plain(tool.input_schema),
        *([to_plain(tool.native)] if tool.native is not None else []),
    ]


def run_id(key: str, number: int) -> str:
    """The session id of a key's ``number``-th run (the first run is the key itself)."""
    return key if number == 1 else f"{key}{RUN_SEPARATOR}{number}"


def run_number(key: str, session_id: str) -> int | None:
    """Which run of ``key`` the session id ``session_id`` is, or None when it is not one of them."""
    if session_id == key:
        return 1
    head, sep, tail = session_id.rpartition(RUN_SEPARATOR)
    if sep and head == key and tail.isdigit() and int(tail) >= 2:
        return int(tail)
    return None


def continued_run(runs: Sequence[Run], fingerprints: Sequence[str], agent: str) -> Run | None:
    """The run these turns continue: same agent, its recorded turns a start of them (the longest such), or None.

    A run whose turns are all of them continues only while it waits for its answer (a retry);
    once answered, the same history again is a new conversation from that point."""
    best: Run | None = None
    for run in runs:
        recorded = run.fingerprints
        if run.agent != agent or list(fingerprints[: len(recorded)]) != recorded:
            continue
        if len(fingerprints) == len(recorded) and not run.awaiting:
            continue
        if best is None or len(recorded) > len(best.fingerprints):
            best = run
    return best


def changed_prefix_run(runs: Sequence[Run], fingerprints: Sequence[str], provider: str, model: str) -> Run | None:
    """The run these turns continue with another agent prefix (same provider and model), or None.

    Its recorded turns are a strict start of them (the longest such), and it is not waiting
    for an answer: the client changed its tools or system text between two requests of one
    conversation."""
    best: Run | None = None
    for run in runs:
        recorded = run.fingerprints
        if run.awaiting or not recorded or len(fingerprints) <= len(recorded):
            continue
        if run.session.model.provider != provider or run.session.model.id != model:
            continue
        if list(fingerprints[: len(recorded)]) != recorded:
            continue
        if best is None or len(recorded) > len(best.fingerprints):
            best = run
    return best


def prefix_change_note(old: AgentSpec, new: AgentSpec) -> str:
    """What changed between two agent prefixes of a run, by tool name, for the new epoch's record.

    The engine's read tool, which the gateway pins itself, is not named."""
    before = {t.name: t for t in old.tools if t.name != READ_TOOL_NAME}
    after = {t.name: t for t in new.tools if t.name != READ_TOOL_NAME}
    changes: list[str] = []
    added = [name for name in after if name not in before]
    removed = [name for name in before if name not in after]
    changed = [name for name in after if name in before and _tool_plain(after[name]) != _tool_plain(before[name])]
    if added:
        changes.append("tools added: " + ", ".join(added))
    if removed:
        changes.append("tools removed: " + ", ".join(removed))
    if changed:
        changes.append("tools changed: " + ", ".join(changed))
    if [n for n in before if n in after] != [n for n in after if n in before]:
        changes.append("tools reordered")
    if old.instructions != new.instructions:
        changes.append("system text changed")
    return "the client changed its prefix: " + ("; ".join(changes) or "tools rewritten")


def _tool_plain(tool: ToolSpec) -> Any:
    return [tool.description, to_plain(tool.input_schema)]


def record_turns(session: Session, turns: Sequence[Turn]) -> None:
    """Record turns through the session's public API: user text, answers, tool results."""
    for turn in turns:
        if turn.kind == "user":
            session.user(turn.text, author=turn.author)
        elif turn.kind == "assistant":
            assert turn.message is not None
            session.adapter.record_assistant(turn.message)
        else:
            for result in turn.results:
                try:
                    session.tool_result(result.call_id, result.output, is_error=result.is_error)
                except ToolCallUnknown:
                    # The engine answered that call itself (a revoked tool), or no call of this run
                    # asked for it; the turn's fingerprint still records that it was seen. (Asked of
                    # the session, not looked up first: the result's recording looks it up anyway.)
                    pass
