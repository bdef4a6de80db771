"""History facts followed one event at a time equal a scan of the whole log, and survive a checkpoint."""

from __future__ import annotations

import contextlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextwright.canonical import canonical_json, parse_canonical
from contextwright.errors import ContextwrightError
from contextwright.events import AssistantMessage, ToolCall
from contextwright.items.region_a import MemoryFact
from contextwright.runtime.facts import LogFacts
from contextwright.runtime.history_facts import HistoryFacts
from contextwright.runtime.memory_rules import erased_texts
from contextwright.testing.fakes import open_session

step = st.one_of(
    st.tuples(st.just("turn"), st.integers(0, 2)),
    st.tuples(st.just("steer"), st.integers(0, 2)),
    st.tuples(st.just("stage"), st.integers(0, 2)),
    st.tuples(st.just("artifact"), st.integers(0, 2)),
    st.tuples(st.just("advance"), st.integers(0, 2)),
    st.tuples(st.just("memory"), st.integers(0, 2)),
    st.tuples(st.just("forget"), st.integers(0, 2)),
    st.tuples(st.just("compact"), st.integers(0, 2)),
    st.tuples(st.just("child"), st.integers(0, 2)),
)

SNAPSHOT = (MemoryFact(id="m0", text="Remembered fact 0, from the snapshot."),)


def scanned(events, refs):
    """The facts as a scan of every event gives them."""

    def of(kind):
        return [e for e in events if e.type == kind]

    shown = {}
    for event in events:
        if event.type == "artifact.stored":
            pointers = (event.payload.pointer,)
        elif event.type == "context.compacted":
            pointers = (*event.payload.elided, *((event.payload.archive,) if event.payload.archive else ()))
        else:
            continue
        for pointer in pointers:
            shown.setdefault(pointer.ref, pointer)
    declared = of("artifact.declared")
    return {
        "stages_opened": len(of("stage.opened")),
        "stage_starts": {e.payload.stage_id: e.seq for e in of("stage.opened")},
        "versions": {
            a: sum(1 for e in declared if e.payload.artifact_id == a) for a in {e.payload.artifact_id for e in declared}
        },
        "steps": {e.payload.artifact_id: len(e.payload.steps) for e in declared},
        "children": len(of("child.started")),
        "child_calls": {e.payload.child_session_id: e.payload.call_id for e in of("child.started")},
        "task": next((e.payload.text for e in of("message.user") if e.payload.author == "user" and not e.payload.steering), None),
        "archives": [e.payload.archive.ref for e in of("context.compacted") if e.payload.archive is not None],
        "pointers": {ref: [p for full, p in shown.items() if full.startswith(ref)] for ref in refs},
        "erased": erased_texts(events, SNAPSHOT),
    }


def followed(facts: LogFacts, refs):
    history = facts.history
    return {
        "stages_opened": history.stages_opened,
        "stage_starts": history.stage_starts,
        "versions": history.artifact_versions,
        "steps": history.artifact_steps,
        "children": history.children_started,
        "child_calls": history.child_calls,
        "task": history.task,
        "archives": history.archives,
        "pointers": {ref: [p for full, p in history.pointers.items() if full.startswith(ref)] for ref in refs},
        "erased": history.erased_texts(facts.erased_memory, SNAPSHOT),
    }


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=14))
def test_history_facts_equal_a_scan_of_the_log_and_come_back_from_a_checkpoint(steps):
    engine, session, _ = open_session("history")
    facts = LogFacts()
    for turn, (kind, arg) in enumerate(steps):
        with contextlib.suppress(ContextwrightError):  # a step the session refuses (no stage open, ...) changes nothing
            if kind in ("turn", "steer"):
                session.user(f"Turn {turn}: module {arg}.", steering=kind == "steer")
                session.next_request()
                call = ToolCall(id=f"c{turn}", name="run_tests", arguments={"arg": arg})
                session.adapter.record_assistant(AssistantMessage(text="Running.", tool_calls=(call,)))
                session.tool_result(call.id, f"{arg} passed\n" * 30)
                session.next_request()
                session.adapter.record_assistant(AssistantMessage(text="Done."))
            elif kind == "stage":
                if session._core.surface().open_stage is None:
                    session.stages.open(f"stage{arg}", goal=f"goal {arg}")
                else:
                    session.stages.close(outcome=f"outcome {arg}")
            elif kind == "artifact":
                session.artifacts.declare(
                    f"a{arg}", title="Plan", content=f"Plan {turn}", summary="A plan.", steps=("one", "two")[: arg + 1]
                )
            elif kind == "advance":
                session.artifacts.advance(f"a{arg}", arg)
            elif kind == "memory":
                session.memories.remember(f"m{arg}", f"Remembered fact {arg}.")
                session.memories.correct(f"m{arg}", f"Remembered fact {arg}, corrected at {turn}.")
            elif kind == "forget":
                session.memories.forget(f"m{arg}")
            elif kind == "compact":
                session.compact()
            elif kind == "child":
                child = session.children.start(f"purpose {arg}", task=f"Task {arg}.", call_id=None)
                session.children.finish(child, f"Result {arg}.")
        events = [e for e in session.history.events]
        refs = ["sha256:", *{p.ref[:19] for e in events if e.type == "artifact.stored" for p in (e.payload.pointer,)}]
        facts.follow(events)
        # Check: followed in steps of any size, the facts are the scan's.
        assert followed(facts, refs) == scanned(events, refs)
        # Check: written down and read back, they are the same facts.
        restored = LogFacts.restore(parse_canonical(canonical_json(facts.snapshot())))
        assert followed(restored, refs) == followed(facts, refs)
        assert restored.snapshot() == facts.snapshot()
    assert isinstance(facts.history, HistoryFacts)
    engine.close()
