"""OpenHands: recorded completion calls and event streams."""

from __future__ import annotations

import json
from typing import Any

import pytest

from contextwright.importers import TranscriptError, load_transcript, load_transcripts

TOOLS = [{"type": "function", "function": {"name": "execute_bash", "parameters": {"type": "object"}}}]


def call(call_id: str, command: str, name: str = "execute_bash") -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps({"command": command})},
    }


def completion(**overrides: Any) -> dict[str, Any]:
    document = {
        "messages": [
            {
                "role": "system",
                "content": [
                    {
                        "type": "text",
                        "text": "You are an agent.",
                        "cache_control": {"type": "ephemeral"},
                    }
                ],
            },
            {"role": "user", "content": [{"type": "text", "text": "Fix the bug."}]},
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "Looking."}],
                "tool_calls": [call("c1", "ls")],
            },
            {
                "role": "tool",
                "tool_call_id": "c1",
                "name": "execute_bash",
                "content": [{"type": "text", "text": "a.py"}],
            },
        ],
        "response": {
            "id": "r1",
            "model": "test-model",
            "choices": [
                {
                    "message": {
                        "role": "assistant",
                        "content": "Done.",
                        "tool_calls": [call("c2", "", "finish")],
                    }
                }
            ],
            "usage": {"prompt_tokens": 120, "completion_tokens": 8},
        },
        "kwargs": {"tools": TOOLS},
        "timestamp": 1733339462.5,
        "cost": 0.01,
    }
    document.update(overrides)
    return document


def test_a_completion_call_becomes_history_plus_the_response(write_json):
    transcript = load_transcript(write_json("django__django-1.json", completion()))
    assert transcript.format == "openhands-llm-completions"
    assert transcript.session_id == "django__django-1"
    assert transcript.system == "You are an agent."
    assert transcript.tools == tuple(TOOLS)
    assert transcript.task == "Fix the bug."
    assert [m.role for m in transcript.messages] == ["user", "assistant", "tool", "assistant"]
    assert transcript.messages[1].tool_calls[0].arguments == {"command": "ls"}
    final = transcript.messages[-1]
    # Check: the response carries the call's usage, model and the file's time; its
    # `finish` call has no recorded result, so it is dropped and counted.
    assert (final.text, final.model) == ("Done.", "test-model")
    assert final.usage == {"prompt_tokens": 120, "completion_tokens": 8}
    assert final.at == "2024-12-04T19:11:02.500000Z"
    assert final.tool_calls == ()
    assert transcript.dropped_tool_calls == 1
    assert final.source_line == 5


def test_a_completion_call_with_a_bad_message_names_its_index(write_json):
    document = completion()
    document["messages"].append({"role": "robot", "content": "beep"})
    path = write_json("c.json", document)
    with pytest.raises(TranscriptError, match=r"c\.json:5: messages\[4\] has unknown role 'robot'"):
        load_transcript(path)
    assert load_transcript(path, lenient=True).skipped == 1


def event(event_id: int, source: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": event_id,
        "timestamp": f"2025-04-30T16:45:{event_id:02d}.5",
        "source": source,
        "message": "",
        **fields,
    }


def action(event_id: int, kind: str, call_id: str | None, response: dict[str, Any] | None, **args: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {"action": kind, "args": args}
    if call_id is not None:
        fields["tool_call_metadata"] = {
            "function_name": "execute_bash",
            "tool_call_id": call_id,
            "model_response": response,
            "total_calls_in_response": len(response["choices"][0]["message"]["tool_calls"]) if response else 1,
        }
    return event(event_id, "agent", **fields)


def response(response_id: str, content: str, *calls: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": response_id,
        "model": "llama-test",
        "choices": [{"message": {"role": "assistant", "content": content, "tool_calls": list(calls)}}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 5},
    }


def observation(event_id: int, cause: int | None, kind: str, content: str, **extras: Any) -> dict[str, Any]:
    return event(event_id, "agent", observation=kind, cause=cause, content=content, extras=extras)


def stream() -> list[dict[str, Any]]:
    both = response("r1", "Two commands.", call("t1", "ls"), call("t2", "pwd"))
    return [
        event(0, "agent", action="system", args={"content": "System prompt.", "tools": TOOLS}),
        event(1, "user", action="message", args={"content": "Rename the file.", "image_urls": None}),
        event(2, "user", action="recall", args={"query": "Rename the file."}),
        observation(3, 2, "recall", "Added workspace context"),
        action(4, "run", "t1", both, command="ls", thought="Two commands."),
        action(5, "run", "t2", both, command="pwd", thought="Two commands."),
        observation(6, 4, "run", "a.py", metadata={"exit_code": 0}),
        observation(7, 5, "run", "/work", metadata={"exit_code": 2}),
        observation(8, None, "error", "Parameter 'command' is missing."),
        action(9, "think", None, None, thought="Let me think."),
        observation(10, 9, "think", "Your thought has been logged."),
        observation(11, None, "agent_state_changed", ""),
        action(
            12,
            "finish",
            "t3",
            response("r2", "All done.", call("t3", "", "finish")),
            final_thought="done",
        ),
    ]


def test_an_event_stream_maps_actions_and_observations(write_json):
    transcript = load_transcript(write_json("basic.json", stream()))
    assert transcript.format == "openhands-events"
    assert transcript.system == "System prompt."
    assert transcript.tools == tuple(TOOLS)
    roles = [(m.role, m.meta) for m in transcript.messages]
    assert roles == [
        ("user", False),
        ("assistant", False),
        ("tool", False),
        ("tool", False),
        ("user", True),
        ("assistant", False),
        ("tool", False),
        ("assistant", False),
    ]
    both = transcript.messages[1]
    # Check: two actions from one model response share one assistant message.
    assert [c.id for c in both.tool_calls] == ["t1", "t2"]
    assert both.tool_calls[1].arguments == {"command": "pwd"}
    assert (both.text, both.model, both.usage) == (
        "Two commands.",
        "llama-test",
        {"prompt_tokens": 50, "completion_tokens": 5},
    )
    assert both.at == "2025-04-30T16:45:04.500000Z"
    assert [r.exit_code for r in transcript.messages[3].tool_results] == [2]
    # Check: an action without tool_call_metadata gets an id from its event id, and
    # its arguments from the action (the thought is the text, not an argument).
    think = transcript.messages[5]
    assert think.tool_calls[0].id == "event-9"
    assert (think.tool_calls[0].name, think.tool_calls[0].arguments, think.text) == (
        "think",
        {},
        "Let me think.",
    )
    assert transcript.messages[6].tool_results[0].call_id == "event-9"
    assert transcript.dropped_tool_calls == 1
    assert transcript.messages[-1].text == "All done."


def test_an_evaluation_record_uses_its_instance_id_and_jsonl_holds_several(write_jsonl, write_json):
    record = {
        "instance_id": "pony-1",
        "instruction": "Rename the file.",
        "history": stream(),
        "metrics": {},
    }
    transcript = load_transcript(write_json("eval.json", record))
    assert transcript.session_id == "pony-1"
    second = dict(record, instance_id="pony-2")
    transcripts = load_transcripts(write_jsonl("output.jsonl", [record, second]))
    assert [t.session_id for t in transcripts] == ["pony-1", "pony-2"]


def test_a_malformed_event_is_reported_with_its_index(write_json):
    events = stream()
    events.insert(2, {"id": 99, "source": "agent", "timestamp": "2025-04-30T16:45:00"})
    path = write_json("bad.json", events)
    with pytest.raises(TranscriptError, match=r"bad\.json:3: event 2: has neither 'action' nor 'observation'"):
        load_transcript(path)
    transcript = load_transcript(path, lenient=True)
    assert transcript.skipped == 1 and len(transcript.messages) == 8


def test_an_observation_answering_a_call_twice_is_malformed(write_json):
    events = stream()
    events.insert(8, observation(20, 4, "run", "again"))
    path = write_json("twice.json", events)
    with pytest.raises(
        TranscriptError,
        match=r"twice\.json:9: tool result for call 't1', which was answered already",
    ):
        load_transcript(path)
    assert load_transcript(path, lenient=True).skipped == 1
