"""Repeat marking kept open across surfaces agrees with marking from scratch, event by event.

The fold marks again only the entries from the first one that changed (and the earlier
failures a new first success supersedes). These properties feed random event sequences
(parallel calls with few distinct tools, arguments and outputs, so duplicates and
superseded failures happen often; results arriving out of order and late; user messages
while calls wait; pruning; compaction) one event at a time and check every surface
against the from-scratch marking of the same entries.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextwright.derive._surface import Exchange, Folder, _mark_repeats, _with_pruned
from contextwright.events import AssistantMessage, Compacted, Pruned, ToolCall, ToolResult, UserMessage
from contextwright.log import InMemoryEventLog

call_spec = st.tuples(st.sampled_from(["run", "grep"]), st.integers(0, 2))
result_spec = st.tuples(st.integers(0, 2), st.sampled_from(["ok", "error", "denied"]))
step = st.one_of(
    st.tuples(st.just("user"), st.none()),
    st.tuples(st.just("reply"), st.none()),
    st.tuples(st.just("calls"), st.lists(st.tuples(call_spec, result_spec), min_size=1, max_size=3)),
    st.tuples(st.just("late"), st.lists(st.tuples(call_spec, result_spec), min_size=2, max_size=3)),
    st.tuples(st.just("prune"), st.integers(1, 3)),
    st.tuples(st.just("compact"), st.integers(1, 3)),
)


def payloads_for(steps):
    """Events of a session that always stays foldable, in order."""
    payloads = [UserMessage(text="task")]
    ids = 0
    call_ids: list[str] = []
    for kind, arg in steps:
        if kind == "user":
            payloads.append(UserMessage(text="more"))
        elif kind == "reply":
            payloads.append(AssistantMessage(text="noted"))
        elif kind in ("calls", "late"):
            calls = []
            for (name, args), _ in arg:
                ids += 1
                calls.append(ToolCall(id=f"c{ids}", name=name, arguments={"n": args}))
            payloads.append(AssistantMessage(text="working", tool_calls=tuple(calls)))
            results = []
            for call, (_, (output, status)) in zip(calls, arg, strict=True):
                results.append(
                    ToolResult(
                        call_id=call.id,
                        tool_name=call.name,
                        output=f"out {output}",
                        is_error=status != "ok",
                        denied=status == "denied",
                    )
                )
            if kind == "late":
                # The last result arrives after a user message, in reverse order.
                results.reverse()
                payloads += results[:-1]
                payloads.append(UserMessage(text="while waiting"))
                payloads.append(results[-1])
            else:
                payloads += results
            call_ids += [c.id for c in calls]
        elif kind == "prune" and call_ids:
            payloads.append(Pruned(epoch=1, upto_seq=len(payloads), call_ids=tuple(call_ids[-arg:])))
        elif kind == "compact" and len(payloads) > arg + 2:
            payloads.append(Compacted(epoch=1, upto_seq=len(payloads) - arg, summary="so far", depth=1, source_event_seqs=()))
    return payloads


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=30))
def test_marking_only_what_changed_agrees_with_marking_from_scratch(steps):
    log = InMemoryEventLog()
    log.append("s", payloads_for(steps), expected_seq=0)
    folder = Folder("s")
    for event in log.read("s"):
        folder.apply([event])
        surface = folder.surface()
        state = folder._state
        expected, hits = _mark_repeats([_with_pruned(e, state.pruned) for e in state.entries + state.deferred])
        assert list(surface.entries) == expected
        assert surface.dedupe_hits == hits + state.replaced_versions
        # The open exchange is the one incomplete exchange, wherever it stands.
        waiting = [e for e in surface.entries if isinstance(e, Exchange) and not e.complete]
        assert surface.open_exchange == (waiting[-1] if waiting else None)


def test_a_new_success_supersedes_an_earlier_failure_of_the_same_call():
    log = InMemoryEventLog()
    failed = ToolCall(id="c1", name="run", arguments={"n": 1})
    retried = ToolCall(id="c2", name="run", arguments={"n": 1})
    log.append(
        "s",
        [
            UserMessage(text="task"),
            AssistantMessage(tool_calls=(failed,)),
            ToolResult(call_id="c1", tool_name="run", output="boom", is_error=True),
            UserMessage(text="again"),
        ],
        expected_seq=0,
    )
    folder = Folder("s")
    folder.apply(log.read("s"))
    before = folder.surface()
    assert before.entries[1].results[0].superseded_by is None
    log.append(
        "s",
        [AssistantMessage(tool_calls=(retried,)), ToolResult(call_id="c2", tool_name="run", output="fine")],
        expected_seq=4,
    )
    folder.apply(log.read("s", after_seq=4))
    after = folder.surface()
    # Check: the earlier failure, before the changed entries, is marked again.
    assert after.entries[1].results[0].superseded_by == "c2"
    assert after.entries[0] is before.entries[0] and after.entries[2] is before.entries[2]
