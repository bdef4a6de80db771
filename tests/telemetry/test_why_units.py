"""The fates a live session rarely reaches, on hand-made logs: ``why`` is a pure function of the events and the request.

A repeat stub standing for an output whose first showing was pruned, recall dropped by the
build's own yield, evidence shown only in one request's volatile tail, and an output that left the request with no recorded step (an answer
that must say so, not invent a cause).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

from contextwright.assembly.request import Message, NeutralRequest, TextPart, ToolCallPart, ToolResultPart
from contextwright.events.catalog import (
    AssistantMessage,
    Evidence,
    FrameRecorded,
    Pruned,
    RequestBuilt,
    ToolCall,
    ToolResult,
    UserMessage,
)
from contextwright.events.envelope import Event
from contextwright.telemetry._request_diff import diff_requests
from contextwright.telemetry.why import Explainer

SID = "units"
AT = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
OUTPUT = "status: DEGRADED-4471 on shard_7"


def _log(*payloads: object) -> list[Event]:
    names = {
        UserMessage: "message.user",
        AssistantMessage: "message.assistant",
        ToolResult: "tool.result",
        Pruned: "context.pruned",
        FrameRecorded: "context.frame.recorded",
        RequestBuilt: "context.request.built",
    }
    return [
        Event(session_id=SID, seq=seq, type=names[type(p)], payload=p, at=AT, payload_sha256="sha256:" + "0" * 64)
        for seq, p in enumerate(payloads, start=1)
    ]


def _built(index: int, upto: int, *, yields: tuple[str, ...] = ()) -> RequestBuilt:
    return RequestBuilt(
        epoch=1,
        request_index=index,
        prefix_sha256="sha256:" + "1" * 64,
        request_sha256="sha256:" + "2" * 64,
        provider="anthropic",
        total_tokens=100,
        tokens_by_class={},
        yields=yields,
        inputs={"upto_seq": upto},
    )


def _request(*messages: Message) -> NeutralRequest:
    return NeutralRequest(
        session_id=SID,
        epoch=1,
        model="claude-sonnet-4-6",
        provider="anthropic",
        max_output_tokens=1000,
        system=(),
        tools=(),
        messages=messages,
        prefix_sha256="sha256:" + "1" * 64,
        stable_messages=len(messages),
        cache_key="k",
    )


def _user(text: str, seq: int, suffix: str = "", *, budget_class: str = "history") -> TextPart:
    return TextPart(text=text, trust="user", source="user", ref=f"{SID}#{seq}{suffix}", budget_class=budget_class, layer="live")


def _exchange(call_id: str, seq: int) -> Message:
    return Message(role="assistant", parts=(ToolCallPart(id=call_id, name="grep", arguments={}, ref=f"{SID}#{seq}"),))


def _result(call_id: str, seq: int, text: str, *, budget_class: str = "tool_results") -> Message:
    part = ToolResultPart(
        call_id=call_id, name="grep", text=text, is_error=False, trust="tool", ref=f"{SID}#{seq}", budget_class=budget_class
    )
    return Message(role="user", parts=(part,))


def test_a_repeat_stub_for_a_pruned_output_reads_as_repeat_with_the_stub_left():
    events = _log(
        UserMessage(text="Check the status twice."),
        AssistantMessage(tool_calls=(ToolCall(id="c0", name="grep", arguments={}),)),
        ToolResult(call_id="c0", tool_name="grep", output=OUTPUT),
        AssistantMessage(tool_calls=(ToolCall(id="c1", name="grep", arguments={}),)),
        ToolResult(call_id="c1", tool_name="grep", output=OUTPUT),
        Pruned(epoch=1, upto_seq=3, call_ids=("c0",)),
        _built(0, 6),
    )
    stub = "[same output as call c0: same tool, same arguments, same output]"
    request = _request(
        Message(role="user", parts=(_user("Check the status twice.", 1),)),
        _exchange("c0", 2),
        _result("c0", 3, "[grep output (tool, 32 chars) removed from context; kept in the log]", budget_class="pointers"),
        _exchange("c1", 4),
        _result("c1", 5, stub, budget_class="pointers"),
    )
    answer = Explainer(events).why("DEGRADED-4471", request_index=0, request=request)
    assert answer.fate == "repeat" and answer.left == (stub,)
    assert answer.hidden_by is not None and answer.hidden_by.seq == 5
    # Check: the history names the pruning of the first showing too.
    assert [(s.seq, s.what) for s in answer.steps] == [(3, "entered"), (5, "entered"), (5, "repeat"), (6, "pruned")]


def test_recall_the_build_dropped_reads_as_trimmed_and_the_diff_names_the_yield():
    evidence = Evidence(id="ledger", text="The ledger owner is team KESTREL-204.")
    events = _log(
        UserMessage(text="Who owns the ledger?"),
        FrameRecorded(turn_seq=1, runtime="now", recall=(evidence,)),
        _built(0, 2),
        AssistantMessage(text="Let me look."),
        _built(1, 4, yields=("recall",)),
    )
    recalled = _user(evidence.text, 2, "/recall/ledger", budget_class="recall")
    shown = _request(Message(role="user", parts=(recalled, _user("Who owns the ledger?", 1))))
    dropped = _request(
        Message(role="user", parts=(_user("Who owns the ledger?", 1),)),
        Message(role="assistant", parts=(_user("Let me look.", 4),)),
    )
    explainer = Explainer(events)
    assert explainer.why("KESTREL-204", request_index=0, request=shown).fate == "shown"
    answer = explainer.why("KESTREL-204", request_index=1, request=dropped)
    assert answer.fate == "trimmed" and answer.hidden_by is not None and "'recall' yield" in answer.hidden_by.detail
    changes = diff_requests(dropped, shown, events, index=1)
    removed = [c for c in changes.changes if c.status == "removed"]
    assert [c.cause_kind for c in removed] == ["recall_yield"]


def test_an_output_gone_with_no_recorded_step_says_so_and_names_nothing():
    events = _log(
        UserMessage(text="Check the status."),
        AssistantMessage(tool_calls=(ToolCall(id="c0", name="grep", arguments={}),)),
        ToolResult(call_id="c0", tool_name="grep", output=OUTPUT),
        _built(0, 3),
    )
    request = _request(Message(role="user", parts=(_user("Check the status.", 1),)))
    answer = Explainer(events).why("DEGRADED-4471", request_index=0, request=request)
    assert answer.fate == "dropped" and not answer.hidden and answer.hidden_by is None
    assert "no recorded step explains it" in answer.summary
    assert answer.pointer == f"{SID}#3"


def test_evidence_shown_only_in_a_requests_volatile_tail_is_volatile_by_the_next():
    evidence = {"id": "deploy", "text": "Deploys freeze at FREEZE-0912 on Fridays.", "trust": "user", "source": "memory"}
    first_record = _built(0, 2)
    events = _log(
        UserMessage(text="Ship the fix."),
        FrameRecorded(turn_seq=1, runtime="now"),
        replace(first_record, inputs={"upto_seq": 2, "tail": {"evidence": [evidence]}}),
        AssistantMessage(text="Shipping."),
        _built(1, 4),
    )
    tail = TextPart(
        text=evidence["text"],
        trust="user",
        source="memory",
        ref=f"{SID}#tail@2/recall/deploy",
        budget_class="recall",
        layer="live",
        volatile=True,
    )
    first = _request(Message(role="user", parts=(_user("Ship the fix.", 1), tail)))
    later = _request(
        Message(role="user", parts=(_user("Ship the fix.", 1),)),
        Message(role="assistant", parts=(_user("Shipping.", 4),)),
    )
    explainer = Explainer(events)
    shown = explainer.why("FREEZE-0912", request_index=0, request=first)
    assert shown.fate == "shown" and shown.entered is not None and shown.entered.seq == 3
    assert shown.pointer == f"{SID}#3"
    gone = explainer.why("FREEZE-0912", request_index=1, request=later)
    assert gone.fate == "volatile" and gone.hidden_by is not None and gone.hidden_by.seq == 5
    assert "volatile tail of request 0" in gone.summary
