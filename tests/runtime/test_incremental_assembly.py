"""Incremental assembly agrees with assembly from scratch, byte for byte, on random sessions.

A session folds only the events it has not seen and reuses what it rendered for
entries that did not change. These properties drive random event sequences (user
messages, answers, parallel tool calls with repeated and failing results, compaction,
pruning, another writer appending, reopening the session, pastes shown bounded) and check after every
request that the incremental request equals the one rebuilt from the log alone,
that a fresh session on the same log folds the same surface, and that the rendered
bodies are the same bytes.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace

import pytest

pytest.importorskip("hypothesis", reason='property tests need hypothesis: pip install "contextwright[dev]"')
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextwright.assembly.assemble import _account
from contextwright.derive._surface import fold
from contextwright.errors import SharedBodyChanged
from contextwright.events import AssistantMessage, ToolCall, UserMessage
from contextwright.events.catalog import Pruned, ReasoningBlock
from contextwright.providers.capabilities import capabilities_for
from contextwright.providers.wires import anthropic
from contextwright.runtime.session import Session
from contextwright.testing.fakes import open_session, sample_agent, sample_model

OUTPUTS = ("ok", "2 passed", "FAILED test_a", "ok")
"""Few distinct outputs, so repeated and superseded results happen often."""

step = st.one_of(
    st.tuples(st.just("user"), st.integers(0, 3)),
    st.tuples(st.just("steer"), st.integers(0, 3)),
    st.tuples(st.just("reply"), st.integers(0, 3)),
    st.tuples(st.just("think"), st.integers(0, 3)),
    st.tuples(st.just("tools"), st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3)), min_size=1, max_size=3)),
    st.tuples(st.just("compact"), st.just(0)),
    st.tuples(st.just("prune"), st.integers(1, 3)),
    st.tuples(st.just("other_writer"), st.integers(0, 3)),
    st.tuples(st.just("reopen"), st.just(0)),
    st.tuples(st.just("paste"), st.integers(0, 3)),
)
PASTE_LINE = "a line of the pasted build log, numbered {n} and {arg}, verbose enough to be long\n"
"""A paste of 3,000 such lines is over the item cap of a 200k window: it is shown bounded (assembly/bounded.py)."""


def reopen(engine, session: Session) -> Session:
    return engine.session(session.id, agent=session.agent, model=sample_model(200_000))


def check_request(engine, session: Session, bodies: list[str]) -> None:
    """Build incrementally, then check it against a rebuild from the log and against a fresh session's fold."""
    built = session.next_request()
    rebuilt = session.inspect(built.index)  # raises when the rebuilt request hashes differently
    assert rebuilt == built.neutral
    assert built.event.payload.request_sha256 == rebuilt.sha256() == built.neutral.sha256()
    fresh = reopen(engine, session)
    assert fresh._core.surface() == fold(session.id, session.history.events) == session._core.surface()
    # Check: the sums kept from request to request equal the sums of this request's messages from scratch.
    core = session._core
    counter = core.body_estimate(built.plan)
    messages = built.neutral.messages
    assert _account(messages, counter, core.render_memo) == _account(messages, counter)
    assert _account(messages, counter)[2] == built.result.body_tokens
    body = json.dumps(built.anthropic(), sort_keys=True)
    again = json.dumps(built.anthropic(), sort_keys=True)
    assert body == again  # rendering twice (with its memoized layout) gives the same bytes
    # Check: the layout mapped from the previous request's equals one mapped from scratch, and so do the bytes.
    caps = capabilities_for(built.plan.model)
    kept = anthropic._layout(built.neutral, caps)
    scratch = anthropic._map_layout(built.neutral, caps, None)
    assert kept == scratch
    assert (kept.ends_at, kept.history_position, kept.size) == (scratch.ends_at, scratch.history_position, scratch.size)
    assert kept.settled_positions == scratch.settled_positions  # taken over from the previous layout when it can be
    previous = anthropic._map_layout(built.previous, caps, None) if built.previous is not None else None
    marks = anthropic._plan(scratch, caps, prefix_ttl=built.plan.cache_ttl, previous=previous)
    assert json.dumps(anthropic._assemble(built.neutral, scratch, marks), sort_keys=True) == body
    bodies.append(body)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=25))
def test_incremental_and_from_scratch_assembly_agree(steps):
    engine, session, _ = open_session("prop")
    bodies: list[str] = []
    calls = 0
    session.user("Fix the failing billing tests.")
    check_request(engine, session, bodies)
    for kind, arg in steps:
        if session.pending_tool_calls() or not session.adapter.awaiting_model:
            # Close what is open first, so every step starts from a state the API accepts.
            for call in session.pending_tool_calls():
                session.tool_result(call.id, "late result")
        if kind == "user":
            session.user(f"Now look at module {arg}.")
        elif kind == "steer":
            session.user(f"Keep the public API of module {arg}.", steering=True)
        elif kind == "reply":
            if session.adapter.awaiting_model:
                session.adapter.record_assistant(AssistantMessage(text=f"Done with step {arg}."))
            session.user(f"Thanks, next {arg}.")
        elif kind == "think":
            # Signed reasoning: a later compaction or pruning makes it stale, which changes how it renders.
            if session.adapter.awaiting_model:
                block = ReasoningBlock(
                    provider="anthropic", block={"type": "thinking", "thinking": f"step {arg}", "signature": f"sig{arg}"}
                )
                call = ToolCall(id=f"t{len(session.history.events)}", name="read_file", arguments={"path": f"src/m{arg}.py"})
                session.adapter.record_assistant(AssistantMessage(text="Thinking.", tool_calls=(call,), reasoning=(block,)))
                session.tool_result(call.id, OUTPUTS[arg])
        elif kind == "tools":
            if not session.adapter.awaiting_model:
                session.user("Go on.")
            tool_calls = []
            for path, _output in arg:
                calls += 1
                tool_calls.append(ToolCall(id=f"c{calls}", name="read_file", arguments={"path": f"src/m{path}.py"}))
            session.adapter.record_assistant(AssistantMessage(text="Reading.", tool_calls=tuple(tool_calls)))
            for call, (_, output) in zip(tool_calls, arg, strict=True):
                failed = OUTPUTS[output].startswith("FAILED")
                session.tool_result(call.id, OUTPUTS[output], exit_code=1 if failed else 0)
        elif kind == "paste":
            # An oversized message: its bounded view is rendered through the memo like any other entry.
            session.user("Here is the log:\n" + "".join(PASTE_LINE.format(n=n, arg=arg) for n in range(3_000)))
        elif kind == "compact":
            session.compact()
        elif kind == "prune":
            ids = [c.id for e in session.history.events if e.type == "message.assistant" for c in e.payload.tool_calls][-arg:]
            if ids and session.setup.plan is not None:
                session.setup.log.append(
                    session.id,
                    [
                        Pruned(
                            epoch=session.setup.plan.epoch,
                            upto_seq=session.history.last_seq,
                            call_ids=tuple(ids),
                            trigger="manual",
                        )
                    ],
                    expected_seq=session.history.last_seq,
                )
        elif kind == "other_writer":
            # Another process appends behind this session's back; it notices by seq.
            session.setup.log.append(
                session.id, [UserMessage(text=f"From elsewhere: {arg}.")], expected_seq=session.setup.log.last_seq(session.id)
            )
        elif kind == "reopen":
            session = reopen(engine, session)
        if session.adapter.awaiting_model:
            check_request(engine, session, bodies)
    # Check: a new process (a fresh session on the same log) rebuilds every request to the recorded hash.
    fresh = reopen(engine, session)
    recorded = [e.payload for e in fresh.history.events if e.type == "context.request.built"]
    for index, record in enumerate(recorded):
        assert fresh.inspect(index).sha256() == record.request_sha256


def test_a_caller_changing_a_rendered_body_changes_no_later_render():
    # Bodies share their messages with later renders: the body and its lists are the caller's,
    # the messages, blocks and values in them refuse changes in place, and a deep copy is plain.
    engine, session, _ = open_session("mutate")
    session.user("Read the billing module.")
    session.next_request()
    call = ToolCall(id="c1", name="read_file", arguments={"path": "src/billing.py", "lines": [1, 2]})
    session.adapter.record_assistant(AssistantMessage(text="Reading.", tool_calls=(call,)))
    session.tool_result("c1", "def total(): ...")
    built = session.next_request()
    body = built.anthropic()
    expected = json.dumps(body, sort_keys=True)
    for message in body["messages"]:
        with pytest.raises(SharedBodyChanged):
            message["role"] = "assistant"
        with pytest.raises(SharedBodyChanged):
            message["content"].append({"type": "text", "text": "more"})
        for block in message["content"]:
            with pytest.raises(SharedBodyChanged):
                block["text"] = "changed"
            with pytest.raises(TypeError):  # also a TypeError, as for any read-only container
                block.pop("type")
            if block.get("type") == "tool_use":
                with pytest.raises(SharedBodyChanged):
                    block["input"]["path"] = "elsewhere"
                with pytest.raises(SharedBodyChanged):
                    block["input"]["lines"].append(3)
    with pytest.raises(SharedBodyChanged):
        body["system"][0]["text"] = "changed"
    # The body and its lists are the caller's own.
    body["messages"].append({"role": "user", "content": "appended"})
    body["messages"][0] = {"role": "user", "content": "replaced"}
    body["system"].clear()
    body["model"] = "another"
    # A deep copy changes freely, as the shared body never does.
    copied = copy.deepcopy(built.anthropic())
    for message in copied["messages"]:
        for block in message["content"]:
            block["text"] = "changed"
            if block.get("type") == "tool_use":
                block["input"]["path"] = "elsewhere"
                block["input"]["lines"].append(3)
    copied["system"][0]["text"] = "changed"
    assert json.dumps(built.anthropic(), sort_keys=True) == expected
    session.adapter.record_assistant(AssistantMessage(text="Done."))
    session.user("Thanks.")
    later = session.next_request().anthropic()
    tool_use = [b for m in later["messages"] for b in m["content"] if b.get("type") == "tool_use"]
    assert tool_use[0]["input"] == {"lines": [1, 2], "path": "src/billing.py"}


def test_a_new_epoch_renders_the_same_history_objects_with_their_reasoning_stale():
    # The history entries stay the very same objects across an epoch change; only their reasoning goes stale.
    engine, session, _ = open_session("epoch")
    session.user("Fix the failing billing tests.")
    session.next_request()
    block = ReasoningBlock(provider="anthropic", block={"type": "thinking", "thinking": "plan", "signature": "sig"})
    call = ToolCall(id="c1", name="read_file", arguments={"path": "src/billing.py"})
    session.adapter.record_assistant(AssistantMessage(text="Reading.", tool_calls=(call,), reasoning=(block,)))
    session.tool_result("c1", "def total(): ...")
    session.next_request()
    session.setup.edit_prefix(replace(sample_agent(), instructions="Keep changes small and tested."), note="stricter")
    built = session.next_request()
    assert any(getattr(part, "stale", False) for message in built.neutral.messages for part in message.parts)
    assert session.inspect(built.index) == built.neutral
    engine.close()


def test_a_steering_note_before_the_task_moves_out_of_the_live_layer_once_the_run_starts():
    # Before any task the run's seed is 0 and every entry is "live"; once the task arrives, the note
    # lies before the seed and is "stage_local". A memo that kept its "live" rendering would build
    # a request that its own rebuild from the log does not match.
    engine, session, _ = open_session("steer-first")
    session.user("Keep the public API as it is.", steering=True)
    first = session.next_request()
    assert first.neutral.messages[0].parts[0].layer == "live"
    session.adapter.record_assistant(AssistantMessage(text="Noted."))
    session.user("Fix the failing billing tests.")
    built = session.next_request()
    assert built.neutral.messages[0].parts[0].layer == "stage_local"
    assert session.inspect(built.index) == built.neutral
