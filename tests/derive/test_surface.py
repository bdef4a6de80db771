"""The history surface: atomic tool pairs, deferred messages, frames, compaction, pruning."""

from __future__ import annotations

import pytest

from contextwright.derive._surface import AssistantReply, Exchange, UserTurn, fold
from contextwright.errors import OrphanedToolPair
from contextwright.events import AssistantMessage, Compacted, FrameRecorded, Pruned, ToolCall, ToolResult, UserMessage
from contextwright.log import InMemoryEventLog
from contextwright.log._invariants import IndexChanges


def _log(*payloads):
    log = InMemoryEventLog()
    log.append("s", list(payloads), expected_seq=0)
    return log.read("s")


class _LogWithoutRules(InMemoryEventLog):
    """A log as stores written before the log checked session rules may hold it."""

    _check_rules = staticmethod(lambda session_id, events, reader, *, first_seq: IndexChanges())


def _unchecked_log(*payloads):
    log = _LogWithoutRules()
    log.append("s", list(payloads), expected_seq=0)
    return log.read("s")


def call(i):
    return ToolCall(id=f"c{i}", name="run", arguments={})


def result(i, text="ok"):
    return ToolResult(call_id=f"c{i}", tool_name="run", output=text)


def test_parallel_calls_and_their_results_are_one_unit():
    events = _log(
        UserMessage(text="go"),
        AssistantMessage(tool_calls=(call(1), call(2))),
        result(2),
        result(1),
        AssistantMessage(text="done"),
    )
    surface = fold("s", events)
    assert [type(e).__name__ for e in surface.entries] == ["UserTurn", "Exchange", "AssistantReply"]
    exchange = surface.entries[1]
    assert exchange.complete and {r.result.call_id for r in exchange.results} == {"c1", "c2"}


def test_a_user_message_during_an_open_exchange_is_placed_after_it():
    events = _log(
        UserMessage(text="go"), AssistantMessage(tool_calls=(call(1),)), UserMessage(text="also this", steering=True), result(1)
    )
    entries = fold("s", events).entries
    assert isinstance(entries[1], Exchange) and isinstance(entries[2], UserTurn) and entries[2].message.text == "also this"


def test_an_open_exchange_is_reported():
    surface = fold("s", _log(UserMessage(text="go"), AssistantMessage(tool_calls=(call(1), call(2))), result(1)))
    assert surface.open_exchange is not None and surface.open_exchange.missing == ("c2",)


@pytest.mark.parametrize(
    "payloads",
    [
        (UserMessage(text="go"), result(9)),
        (UserMessage(text="go"), AssistantMessage(tool_calls=(call(1),)), result(1), result(1)),
        (UserMessage(text="go"), AssistantMessage(tool_calls=(call(1),)), AssistantMessage(text="again")),
    ],
    ids=["result without call", "second result for one call", "model speaks before results"],
)
def test_orphans_are_typed_errors(payloads):
    # The log refuses orphaned results now; the fold still guards logs that hold them.
    with pytest.raises(OrphanedToolPair):
        fold("s", _unchecked_log(*payloads))


def test_frames_attach_to_their_turn_and_seed_is_the_last_real_user_message():
    events = _log(
        UserMessage(text="first"),
        FrameRecorded(turn_seq=1, runtime="Monday"),
        AssistantMessage(text="ok"),
        UserMessage(text="second"),
        UserMessage(text="note", steering=True),
    )
    surface = fold("s", events)
    assert surface.entries[0].frame.runtime == "Monday"
    assert surface.seed_seq == 4 and surface.current_turn().message.text == "second"


def test_compaction_replaces_history_but_keeps_the_task_and_steering_notes():
    events = _log(
        UserMessage(text="task"),
        UserMessage(text="keep this verbatim", steering=True),
        AssistantMessage(text="a"),
        UserMessage(text="next"),
        Compacted(epoch=1, upto_seq=3, summary="S", depth=1, source_event_seqs=(1, 2, 3)),
    )
    entries = fold("s", events).entries
    # The summary takes the place of what it folded; pinned entries keep theirs.
    assert [type(e).__name__ for e in entries] == ["UserTurn", "UserTurn", "Summary", "UserTurn"]
    assert [e.message.text for e in entries if isinstance(e, UserTurn)] == ["task", "keep this verbatim", "next"]
    assert entries[0].task and entries[0].pinned
    assert not any(isinstance(e, AssistantReply) for e in entries)


def test_pruned_results_are_marked():
    events = _log(
        UserMessage(text="go"),
        AssistantMessage(tool_calls=(call(1), call(2))),
        result(1),
        result(2),
        Pruned(epoch=1, upto_seq=4, call_ids=("c1",)),
    )
    exchange = fold("s", events).entries[1]
    assert [r.pruned for r in exchange.results] == [True, False]


def test_every_registered_event_type_is_in_the_payload_union_the_fold_matches():
    # The fold matches EventPayload exhaustively (assert_never), so a type missing from
    # the union would reach the fold unchecked; mypy then flags a union member with no rule.
    import typing

    from contextwright.events.catalog import EventPayload
    from contextwright.events.registry import known_types, payload_class

    registered = {payload_class(name) for name in known_types()}
    assert registered == set(typing.get_args(EventPayload))


def test_a_payload_outside_the_union_is_refused_by_the_fold():
    import dataclasses

    from contextwright.derive._surface import _Fold

    @dataclasses.dataclass(frozen=True)
    class Stray:
        note: str

    event = _log(UserMessage(text="go"))[0]
    stray = dataclasses.replace(event, payload=Stray(note="x"))
    with pytest.raises(AssertionError):
        _Fold(session_id="s").apply(stray)


def test_a_change_to_history_makes_only_the_reasoning_after_it_stale():
    from contextwright.events import ReasoningBlock

    def thinking(i):
        return (ReasoningBlock(provider="anthropic", block={"type": "thinking", "thinking": f"t{i}", "signature": f"s{i}"}),)

    events = _log(
        UserMessage(text="go"),
        AssistantMessage(tool_calls=(call(1),), reasoning=thinking(1)),
        result(1),
        AssistantMessage(tool_calls=(call(2),), reasoning=thinking(2)),
        result(2),
        AssistantMessage(tool_calls=(call(3),), reasoning=thinking(3)),
        result(3),
        Pruned(epoch=1, upto_seq=7, call_ids=("c2",)),
        AssistantMessage(text="done", reasoning=thinking(4)),
    )
    surface = fold("s", events)
    # Check: c2's result changed, so the answer after it (seq 6) is stale; the answers
    # before (seq 2) and c2's own call (seq 4, its thinking precedes the result) are not,
    # and neither is the answer produced after the change (seq 9).
    assert surface.stale_reasoning == frozenset({6})
