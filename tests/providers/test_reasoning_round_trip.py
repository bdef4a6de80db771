"""Thinking and reasoning round-trip (issue 12, item 2) through the official SDKs on a mock transport.

Anthropic ``thinking`` (with its ``signature``) and ``redacted_thinking`` blocks, and
OpenAI Responses ``reasoning`` items (``encrypted_content``), are recorded verbatim
with the answer and sent back exactly as received, in the place they had, on their
own provider's wire only. Rules checked here, with their sources:

* the assistant turn that ended in ``tool_use`` carries its thinking blocks, complete
  and unmodified, when its results go back; ``redacted_thinking`` is echoed too
  (https://platform.claude.com/docs/build-with-claude/thinking-tool-workflows);
* a thinking block is never moved or left out between others (prefix check of
  https://platform.claude.com/docs/build-with-claude/preserved-thinking);
* ``cache_control`` never sits on a thinking block
  (https://platform.claude.com/docs/en/build-with-claude/prompt-caching);
* ``budget_tokens`` stays below ``max_tokens`` (extended-thinking docs);
* a stateless Responses body asks for ``include: ["reasoning.encrypted_content"]``
  (openai 3.57 ``types/responses/response_includable.py``; reasoning guide).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("anthropic", reason="needs the anthropic and openai SDKs (the anthropic and openai extras)")
pytest.importorskip("httpx2", reason="needs the anthropic and openai SDKs (the anthropic and openai extras)")
pytest.importorskip("openai", reason="needs the anthropic and openai SDKs (the anthropic and openai extras)")

import anthropic
import httpx2
import openai

from contextwright.budget._reconcile import Reconciler
from contextwright.budget.estimator import HeuristicEstimator
from contextwright.canonical import to_plain
from contextwright.clock import FixedClock
from contextwright.events import AssistantMessage, ReasoningBlock
from contextwright.models import openai as openai_model
from contextwright.providers.capabilities import capabilities_for
from contextwright.providers.wires import openai_chat, openai_responses
from contextwright.runtime.engine import Engine
from contextwright.testing.fakes import TEST_SECRET, open_session, sample_agent, sample_model
from contextwright.testing.sse import stream_bytes

THINKING = {"type": "enabled", "budget_tokens": 2048}
USAGE = {"input_tokens": 120, "output_tokens": 80, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}


def thinking(text: str, signature: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": signature}


def anthropic_answer(index: int, content: list[dict[str, Any]], stop: str = "tool_use") -> dict[str, Any]:
    return {
        "id": f"msg_{index:02d}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": USAGE,
    }


class Wire:
    """A mock transport that answers from a script and keeps every JSON body sent."""

    def __init__(self, answers: list[dict[str, Any]]) -> None:
        self.answers: Iterator[dict[str, Any]] = iter(answers)
        self.bodies: list[dict[str, Any]] = []
        self.raw: list[bytes] = []

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        self.raw.append(request.content)
        self.bodies.append(json.loads(request.content))
        return httpx2.Response(200, json=next(self.answers))

    def anthropic(self) -> anthropic.Anthropic:
        return anthropic.Anthropic(
            api_key="test", max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(self.handler))
        )

    def openai(self) -> openai.OpenAI:
        return openai.OpenAI(
            api_key="test", max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(self.handler))
        )


def check_anthropic_thinking_rules(body: dict[str, Any]) -> None:
    """The body-level rules that hold for every request of a thinking conversation."""
    marks = [block for block in _all_blocks(body) if "cache_control" in block]
    assert len(marks) <= 4
    assert not any(block["type"] in ("thinking", "redacted_thinking") for block in marks)
    assert body["thinking"]["budget_tokens"] < body["max_tokens"]
    # Every assistant turn that ends in tool_use opens with its thinking.
    for message in body["messages"]:
        content = message["content"]
        if message["role"] == "assistant" and content[-1]["type"] == "tool_use":
            assert content[0]["type"] in ("thinking", "redacted_thinking")


def _all_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = list(body.get("tools", [])) + list(body.get("system", []))
    return blocks + [block for message in body["messages"] for block in message["content"]]


def assistant_turns(body: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """Assistant blocks as sent, without cache markers (a request setting the renderer places, not content)."""
    return [
        [{k: v for k, v in block.items() if k != "cache_control"} for block in m["content"]]
        for m in body["messages"]
        if m["role"] == "assistant"
    ]


def test_a_three_round_tool_loop_sends_every_signed_thinking_block_back_byte_identical() -> None:
    # Check: round 1 thinks, says something and calls a tool; round 2 thinks again after
    # the result (interleaved) and calls another; round 3 thinks and answers.
    first = [thinking("The failing test is in auth; read it first.", "sig-A" * 40)]
    first += [
        {"type": "text", "text": "Reading the test."},
        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "t.py"}},
    ]
    second = [thinking("The assertion compares naive and aware datetimes.", "sig-B" * 40)]
    second += [{"type": "tool_use", "id": "toolu_2", "name": "run_tests", "input": {"k": "auth"}}]
    third = [thinking("Tests pass now.", "sig-C" * 40), {"type": "text", "text": "Fixed: compare aware datetimes."}]
    wire = Wire([anthropic_answer(1, first), anthropic_answer(2, second), anthropic_answer(3, third, "end_turn")])
    client = wire.anthropic()
    _, session, _ = open_session()
    session.user("Fix the failing auth test.")
    session.send(client.messages.create, thinking=THINKING)
    session.tool_result("toolu_1", "def test_expiry(): assert token.expires > now")
    session.send(client.messages.create, thinking=THINKING)
    session.tool_result("toolu_2", "1 passed")
    session.send(client.messages.create, thinking=THINKING)

    assert len(wire.bodies) == 3
    for body in wire.bodies:
        check_anthropic_thinking_rules(body)
    # Check: request 2 carries round 1's assistant turn exactly as received, block for block.
    assert assistant_turns(wire.bodies[1]) == [first]
    # Check: request 3 carries both earlier turns exactly, each block's bytes unchanged.
    assert assistant_turns(wire.bodies[2]) == [first, second]
    for block in (first[0], second[0]):
        assert _canonical_bytes(block) in wire.raw[2]
    # Check: the final answer's thinking is on the record too, verbatim.
    answers = [e.payload for e in session.history.events if e.type == "message.assistant"]
    assert [to_plain(a.reasoning[0].block) for a in answers] == [first[0], second[0], third[0]]
    # Check: thinking is counted in the budget of the requests that carry it.
    built = [e.payload for e in session.history.events if e.type == "context.request.built"]
    assert "reasoning" not in built[0].tokens_by_class
    assert built[1].tokens_by_class["reasoning"] > 0
    assert built[2].tokens_by_class["reasoning"] > built[1].tokens_by_class["reasoning"]


def _canonical_bytes(block: dict[str, Any]) -> bytes:
    return json.dumps(dict(sorted(block.items())), separators=(",", ":")).encode()


def test_the_bytes_sent_are_the_same_after_the_log_is_reopened() -> None:
    # Check: a request rebuilt from the stored log renders the same thinking bytes.
    first = [thinking("plan", "sig-1" * 30), {"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {"q": "x"}}]
    wire = Wire([anthropic_answer(1, first), anthropic_answer(2, [{"type": "text", "text": "done"}], "end_turn")])
    engine, session, _ = open_session()
    session.user("Find x.")
    session.send(wire.anthropic().messages.create, thinking=THINKING)
    session.tool_result("toolu_1", "a.py:3: x")
    built = session.next_request()
    reopened = engine.session(session.id, agent=sample_agent(), model=session.model)
    rebuilt, _ = reopened.history.rebuild(built.index)
    assert rebuilt.sha256() == built.neutral.sha256()
    assert json.dumps(anthropic_render(rebuilt)) == json.dumps(built.anthropic())
    assert assistant_turns(built.anthropic()) == [first]


def anthropic_render(neutral: Any) -> dict[str, Any]:
    from contextwright.providers.wires import anthropic as renderer
    from contextwright.testing.fakes import sample_model

    return renderer.render(neutral, capabilities_for(sample_model()))


def test_redacted_thinking_is_echoed_in_place() -> None:
    redacted = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT" * 8}
    first = [thinking("first part", "sig-R" * 30), redacted]
    first += [{"type": "tool_use", "id": "toolu_9", "name": "read_file", "input": {"path": "a.py"}}]
    wire = Wire([anthropic_answer(1, first), anthropic_answer(2, [{"type": "text", "text": "ok"}], "end_turn")])
    _, session, _ = open_session()
    session.user("Read a.py.")
    client = wire.anthropic()
    session.send(client.messages.create, thinking=THINKING)
    session.tool_result("toolu_9", "print('hi')")
    session.send(client.messages.create, thinking=THINKING)
    check_anthropic_thinking_rules(wire.bodies[1])
    assert assistant_turns(wire.bodies[1]) == [first]


def test_parallel_tool_calls_with_interleaved_thinking_keep_their_order() -> None:
    first = [thinking("Two independent reads.", "sig-P" * 30), {"type": "text", "text": "Reading both."}]
    first += [
        {"type": "tool_use", "id": "toolu_a", "name": "read_file", "input": {"path": "a.py"}},
        {"type": "tool_use", "id": "toolu_b", "name": "read_file", "input": {"path": "b.py"}},
    ]
    second = [thinking("b.py imports a.py; run the tests.", "sig-Q" * 30)]
    second += [{"type": "tool_use", "id": "toolu_c", "name": "run_tests", "input": {}}]
    wire = Wire(
        [
            anthropic_answer(1, first),
            anthropic_answer(2, second),
            anthropic_answer(3, [{"type": "text", "text": "green"}], "end_turn"),
        ]
    )
    _, session, _ = open_session()
    client = wire.anthropic()
    session.user("Compare a.py and b.py.")
    session.send(client.messages.create, thinking=THINKING)
    session.tool_result("toolu_b", "import a")
    session.tool_result("toolu_a", "X = 1")
    session.send(client.messages.create, thinking=THINKING)
    session.tool_result("toolu_c", "2 passed")
    session.send(client.messages.create, thinking=THINKING)
    for body in wire.bodies:
        check_anthropic_thinking_rules(body)
    body = wire.bodies[2]
    assert assistant_turns(body) == [first, second]
    # Check: both results answer the parallel calls in one user turn, in call order.
    results = [m["content"] for m in body["messages"] if m["role"] == "user" and m["content"][0]["type"] == "tool_result"]
    assert [b["tool_use_id"] for b in results[0]] == ["toolu_a", "toolu_b"]


def test_thinking_is_not_sent_on_other_wires() -> None:
    first = [thinking("secret plan", "sig-O" * 30), {"type": "text", "text": "Looking."}]
    first += [{"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {"q": "x"}}]
    wire = Wire([anthropic_answer(1, first)])
    _, session, _ = open_session()
    session.user("Find x.")
    session.send(wire.anthropic().messages.create, thinking=THINKING)
    session.tool_result("toolu_1", "none")
    neutral = session.next_request().neutral
    gpt = capabilities_for(openai_model("gpt-5.1"))
    for body in (openai_chat.render(neutral, gpt), openai_responses.render(neutral, gpt)):
        text = json.dumps(body)
        assert "secret plan" not in text and "sig-O" not in text
        assert "toolu_1" in text  # the call itself still goes


def test_compaction_and_pruning_never_separate_thinking_from_its_tool_call() -> None:
    _, session, _ = open_session()
    answers = []
    for index in range(6):
        answers.append(
            anthropic_answer(
                index,
                [
                    thinking(f"step {index} reasoning", f"sig-{index}-" * 20),
                    {"type": "tool_use", "id": f"toolu_{index}", "name": "read_file", "input": {"path": f"f{index}.py"}},
                ],
            )
        )
    wire = Wire(answers + [anthropic_answer(99, [{"type": "text", "text": "done"}], "end_turn")])
    client = wire.anthropic()
    session.user("Read every file.")
    for index in range(6):
        session.send(client.messages.create, thinking=THINKING)
        session.tool_result(f"toolu_{index}", f"content of f{index}.py " * 50)
    assert session.compact() is not None
    body = session.next_request().anthropic()
    # Check: every tool_use still sent opens with its own thinking, untouched; folded
    # rounds took both with them, and the summary quotes no thinking.
    sent = {block["id"]: turn for turn in assistant_turns(body) for block in turn if block["type"] == "tool_use"}
    assert sent, "the compactor keeps the latest exchanges verbatim"
    for call_id, turn in sent.items():
        index = int(call_id.split("_")[1])
        assert turn == answers[index]["content"]
    folded = set(range(6)) - {int(c.split("_")[1]) for c in sent}
    assert folded
    text = json.dumps(body)
    assert not any(f"step {i} reasoning" in text or f"sig-{i}-" in text for i in folded)


def test_a_streamed_answer_records_the_same_events_as_the_same_answer_unstreamed() -> None:
    content = [thinking("Let me check.", "sig-S" * 30), {"type": "text", "text": "Calling grep."}]
    content += [{"type": "tool_use", "id": "toolu_s", "name": "grep", "input": {"q": "TODO"}}]
    message = anthropic_answer(1, content)

    def stream_handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=stream_bytes(message))

    client = anthropic.Anthropic(
        api_key="test", max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(stream_handler))
    )
    _, streamed, _ = open_session()
    streamed.user("Find TODOs.")
    body = streamed.next_request().anthropic()
    with client.messages.stream(**body, thinking=THINKING) as stream:
        final = stream.get_final_message()
    streamed.record(final)
    _, plain, _ = open_session()
    plain.user("Find TODOs.")
    plain.next_request()
    plain.record(anthropic.types.Message.model_validate(message))
    recorded = ("message.assistant", "model.response")
    assert [e.payload for e in streamed.history.events if e.type in recorded] == [
        e.payload for e in plain.history.events if e.type in recorded
    ]
    assert to_plain(streamed.history.events[-2].payload.reasoning[0].block) == content[0]


# --- OpenAI Responses -------------------------------------------------------------------


def responses_answer(index: int, output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": f"resp_{index:02d}",
        "object": "response",
        "created_at": 1_764_400_000,
        "model": "gpt-5.1-2025-11-13",
        "status": "completed",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 900,
            "input_tokens_details": {"cached_tokens": 512},
            "output_tokens": 60,
            "output_tokens_details": {"reasoning_tokens": 40},
            "total_tokens": 960,
        },
    }


def reasoning_item(index: int) -> dict[str, Any]:
    return {
        "id": f"rs_{index:02d}",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": f"Plan {index}."}],
        "encrypted_content": f"gAAAAAB-encrypted-{index}-" * 10,
    }


def test_responses_reasoning_items_round_trip_with_encrypted_content() -> None:
    first = [
        reasoning_item(1),
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "grep",
            "arguments": '{"q":"TODO"}',
            "status": "completed",
        },
    ]
    message = {
        "type": "message",
        "id": "msg_2",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Two TODOs.", "annotations": []}],
    }
    second = [reasoning_item(2), message]
    wire = Wire([responses_answer(1, first), responses_answer(2, second)])
    engine, _, _ = open_session()
    session = engine.session("oa", agent=sample_agent(), model=openai_model("gpt-5.1"))
    client = wire.openai()
    session.user("Find the TODOs.")
    session.send(client.responses.create, wire="openai_responses")
    session.tool_result("call_1", "a.py:1: TODO\nb.py:2: TODO")
    session.send(client.responses.create, wire="openai_responses")
    for body in wire.bodies:
        assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
        assert "prompt_cache_retention" not in body
    # Check: the reasoning item goes back verbatim, directly before the call it led to.
    items = wire.bodies[1]["input"]
    at = items.index(reasoning_item(1))
    assert items[at + 1]["type"] == "function_call" and items[at + 1]["call_id"] == "call_1"
    assert items[at + 2] == {"type": "function_call_output", "call_id": "call_1", "output": items[at + 2]["output"]}
    # Check: the final answer keeps its reasoning on the record for the next turn.
    last = [e.payload for e in session.history.events if e.type == "message.assistant"][-1]
    assert [(r.provider, to_plain(r.block), r.position) for r in last.reasoning] == [("openai", reasoning_item(2), 0)]
    # Check: the next request carries it; the chat wire has nowhere to put it and leaves it out.
    session.user("Fix them.")
    following = session.next_request()
    assert reasoning_item(2) in following.openai_responses()["input"]
    assert "encrypted" not in json.dumps(following.openai_chat())


def test_prompt_cache_options_replace_the_deprecated_retention_on_newer_models() -> None:
    # openai 3.57: prompt_cache_options is "Supported for gpt-5.6 and later models".
    from openai.types.responses.response_create_params import PromptCacheOptions

    engine, _, _ = open_session()
    session = engine.session("o6", agent=sample_agent(), model=openai_model("gpt-5.6", context_window=400_000))
    session.user("hello")
    body = session.next_request().openai_responses()
    assert body["prompt_cache_options"] == {"ttl": "12h"}
    assert set(body["prompt_cache_options"]) <= set(PromptCacheOptions.__annotations__)
    assert "prompt_cache_retention" not in body
    wire = Wire([responses_answer(1, [])])
    wire.openai().responses.create(**body)
    assert wire.bodies[0]["prompt_cache_options"] == {"ttl": "12h"}


@pytest.mark.parametrize(
    "block",
    [
        {"type": "text", "text": "not reasoning"},
        {"thinking": "no type"},
    ],
)
def test_a_block_that_is_not_reasoning_is_refused(block: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        ReasoningBlock(provider="anthropic", block=block)


def test_reasoning_positions_must_fit_the_message() -> None:
    block = ReasoningBlock(provider="anthropic", block=thinking("x", "s"), position=2)
    with pytest.raises(ValueError):
        AssistantMessage(text="only text", reasoning=(block,))


def test_on_a_model_that_checks_the_prefix_thinking_made_stale_by_relief_is_left_out() -> None:
    # Prefix checks (platform.claude.com .../preserved-thinking/prefix-checks): a change to
    # earlier history voids the thinking already after it; later thinking stays valid.
    from contextwright.models import anthropic as anthropic_model

    model = anthropic_model("claude-opus-5-5", context_window=1_000_000)
    assert capabilities_for(model).thinking_prefix_check
    engine, _, _ = open_session()
    session = engine.session("checked", agent=sample_agent(), model=model)
    answers = [
        anthropic_answer(
            index,
            [
                thinking(f"step {index} reasoning", f"sig-{index}-" * 20),
                {"type": "tool_use", "id": f"toolu_{index}", "name": "read_file", "input": {"path": f"f{index}.py"}},
            ],
        )
        for index in range(7)
    ]
    wire = Wire(answers)
    client = wire.anthropic()
    session.user("Read every file.")
    for index in range(6):
        session.send(client.messages.create, thinking=THINKING)
        session.tool_result(f"toolu_{index}", f"content of f{index}.py " * 50)
    before = session.next_request().anthropic()
    assert all(turn[0]["type"] == "thinking" for turn in assistant_turns(before))
    assert session.compact() is not None
    after = session.next_request().anthropic()
    kept = assistant_turns(after)
    assert kept, "the compactor keeps the latest exchanges verbatim"
    # Check: every kept turn lost its (now stale) thinking and kept its call untouched.
    assert all([block["type"] for block in turn] == ["tool_use"] for turn in kept)
    # Check: thinking produced after the compaction is sent back again.
    session.send(client.messages.create, thinking=THINKING)
    session.tool_result("toolu_6", "content of f6.py")
    latest = assistant_turns(session.next_request().anthropic())
    assert latest[-1] == answers[6]["content"]
    assert all([block["type"] for block in turn] == ["tool_use"] for turn in latest[:-1])
    # Check: a model without the check gets every block back (the API itself filters).
    unchecked = capabilities_for(sample_model())
    assert not unchecked.thinking_prefix_check
    from contextwright.providers.wires import anthropic as renderer

    neutral = session.next_request().neutral
    full = renderer.render(neutral, unchecked)
    assert all(turn[0]["type"] == "thinking" for turn in assistant_turns(full))


def test_the_scripted_provider_answers_with_the_thinking_it_was_given() -> None:
    from contextwright.events import ToolCall
    from contextwright.testing.provider import ScriptedProvider

    block = ReasoningBlock(provider="anthropic", block=thinking("scripted", "sig-X" * 20), position=1)
    answer = AssistantMessage(
        text="Looking.", tool_calls=(ToolCall(id="toolu_1", name="grep", arguments={}),), reasoning=(block,)
    )
    engine, session, clock = open_session()
    provider = ScriptedProvider([answer, AssistantMessage(text="done")], clock=clock)
    client = anthropic.Anthropic(
        api_key="test", max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(provider.handler))
    )
    session.user("Find it.")
    session.send(client.messages.create, thinking=THINKING)
    session.tool_result("toolu_1", "none")
    session.send(client.messages.create, thinking=THINKING)
    turn = assistant_turns(provider.bodies[-1])[0]
    assert [b["type"] for b in turn] == ["text", "thinking", "tool_use"] and turn[1] == thinking("scripted", "sig-X" * 20)


def test_pressure_relief_keeps_each_thinking_block_with_its_tool_call() -> None:
    # A small window: old results are pruned to pointers (and history compacted) as the loop grows.
    rounds = 30  # results are bounded at entry to the room their share has left: it takes more rounds to fill the window
    answers = [
        anthropic_answer(
            index,
            [
                thinking(f"round {index}: read the next log", f"sig-{index}-" * 20),
                {"type": "tool_use", "id": f"toolu_{index}", "name": "read_file", "input": {"path": f"log{index}.txt"}},
            ],
        )
        for index in range(rounds)
    ]
    wire = Wire(answers)
    client = wire.anthropic()
    # The scripted usage is a constant placeholder (120 input tokens), not a measurement:
    # keep estimates uncorrected, or the reconciler would take it at its word.
    engine = Engine.open(
        "memory://", clock=FixedClock(), secret=TEST_SECRET, estimator=HeuristicEstimator(reconciler=Reconciler(min_factor=1.0))
    )
    session = engine.session("s1", agent=sample_agent(), model=sample_model(24_000))
    session.user("Read the logs one by one.")
    for index in range(rounds):
        session.send(client.messages.create, thinking=THINKING)
        session.tool_result(f"toolu_{index}", "\n".join(f"{index}:{line} ERROR something failed here" for line in range(120)))
    relief = {e.type for e in session.history.events} & {"context.pruned", "context.compacted"}
    assert "context.pruned" in relief
    for body in wire.bodies:
        check_anthropic_thinking_rules(body)
        # Check: every call still sent is preceded, in its own turn, by exactly its own thinking.
        for turn in assistant_turns(body):
            calls = [block["id"] for block in turn if block["type"] == "tool_use"]
            index = int(calls[0].split("_")[1])
            assert turn == answers[index]["content"]


def test_parse_response_reads_reasoning_from_plain_json_and_from_sdk_objects() -> None:
    from openai.types.responses import Response

    from contextwright.providers.responses import parse_response

    redacted = {"type": "redacted_thinking", "data": "opaque"}
    content = [thinking("a", "s1"), {"type": "text", "text": "Two calls."}, redacted]
    content += [{"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {}}]
    for raw in (anthropic_answer(1, content), anthropic.types.Message.model_validate(anthropic_answer(1, content))):
        message, _ = parse_response(raw)
        assert [(r.kind, r.position) for r in message.reasoning] == [("thinking", 0), ("redacted_thinking", 1)]
        assert [to_plain(r.block) for r in message.reasoning] == [content[0], redacted]
    output = [reasoning_item(1), {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "grep", "arguments": "{}"}]
    data = responses_answer(1, output)
    data["usage"]["input_tokens_details"]["cache_write_tokens"] = 0
    for raw in (data, Response.model_validate(data)):
        message, usage = parse_response(raw)
        assert [(r.provider, to_plain(r.block), r.position) for r in message.reasoning] == [("openai", reasoning_item(1), 0)]
        assert usage is not None and usage.reasoning_output_tokens == 40
