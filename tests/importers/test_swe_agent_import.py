"""SWE-agent trajectories: history first, trajectory steps to complete or replace it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from contextwright.importers import TranscriptError, load_transcript


def step(action: str, observation: str, thought: str) -> dict[str, Any]:
    return {
        "action": action,
        "observation": observation,
        "thought": thought,
        "response": thought,
        "state": "{}",
    }


STEPS = [
    step("ls\n", "a.py", "Look around."),
    step("open a.py\n", "1:print(1)", "Open it."),
    step("submit\n", "diff --git a/a.py", "Submit."),
]


def text_history() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are a programmer.", "agent": "primary"},
        {
            "role": "user",
            "content": "DEMONSTRATION: how it is done",
            "is_demo": True,
            "agent": "primary",
        },
        {"role": "user", "content": "Solve the issue.", "agent": "primary"},
        {
            "role": "assistant",
            "content": "Look around.\n```\nls\n```",
            "thought": "Look around.",
            "action": "ls\n",
        },
        {"role": "user", "content": "a.py\n(Open file: n/a)\nbash-$"},
        {
            "role": "assistant",
            "content": "Open it.\n```\nopen a.py\n```",
            "thought": "Open it.",
            "action": "open a.py\n",
        },
        {"role": "user", "content": "1:print(1)\n(Open file: a.py)\nbash-$"},
        {
            "role": "assistant",
            "content": "Submit.\n```\nsubmit\n```",
            "thought": "Submit.",
            "action": "submit\n",
        },
    ]


def test_a_text_mode_history_becomes_calls_and_results(write_text):
    path = write_text("run.traj", json.dumps({"history": text_history(), "trajectory": STEPS, "info": {}}))
    transcript = load_transcript(path)
    assert transcript.format == "swe-agent-traj"
    assert transcript.session_id == "run"
    assert transcript.system == "You are a programmer."
    # Check: the demonstration is skipped and the task is the first real user message.
    assert transcript.task == "Solve the issue."
    assert [m.role for m in transcript.messages] == ["user"] + ["assistant", "tool"] * 3
    first = transcript.messages[1]
    assert first.text == "Look around."
    assert (first.tool_calls[0].id, first.tool_calls[0].name, first.tool_calls[0].arguments) == (
        "step-1",
        "bash",
        {"command": "ls"},
    )
    # Check: observations are what the model saw (with the shell state) ...
    assert transcript.messages[2].tool_results[0].output == "a.py\n(Open file: n/a)\nbash-$"
    # ... and the final observation, never sent back, comes from the last step.
    assert transcript.messages[-1].tool_results[0].output == "diff --git a/a.py"
    assert transcript.dropped_tool_calls == 0


def test_a_function_calling_history_keeps_its_ids_and_gets_the_missing_steps(write_text):
    history = [
        {"role": "system", "content": "You are a programmer.", "message_type": "system_prompt"},
        {"role": "user", "content": "Solve the issue.", "message_type": "observation"},
        {
            "role": "assistant",
            "content": "Look around.",
            "thought": "Look around.",
            "action": "ls",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "ls"}'},
                }
            ],
        },
        {"role": "tool", "content": "a.py", "tool_call_ids": ["call_a"]},
        {
            "role": "assistant",
            "content": "Again.",
            "thought": "Again.",
            "action": "ls",
            # A reused id (hand-written demos do this) after the first call was answered.
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "ls"}'},
                }
            ],
        },
        {"role": "tool", "content": "a.py", "tool_call_ids": ["call_a"]},
    ]
    path = write_text("fc.traj", json.dumps({"history": history, "trajectory": STEPS}))
    transcript = load_transcript(path)
    ids = [c.id for m in transcript.messages for c in m.tool_calls]
    assert ids == ["call_a", "call_a#2", "step-3"]
    assert [r.call_id for m in transcript.messages for r in m.tool_results] == ids
    assert transcript.messages[-2].tool_calls[0].arguments == {"command": "submit"}


def test_without_history_the_steps_are_the_conversation(write_text):
    transcript = load_transcript(write_text("old.traj", json.dumps({"trajectory": STEPS})))
    assert [m.role for m in transcript.messages] == ["assistant", "tool"] * 3
    assert [m.text for m in transcript.messages if m.role == "assistant"] == [
        "Look around.",
        "Open it.",
        "Submit.",
    ]
    assert transcript.task is None and transcript.system is None


def test_a_bad_history_entry_names_its_index(write_text):
    history = text_history()
    history.insert(4, {"role": "narrator", "content": "meanwhile"})
    path = write_text("bad.traj", json.dumps({"history": history, "trajectory": STEPS}))
    with pytest.raises(TranscriptError, match=r"bad\.traj:5: history\[4\] has unknown role 'narrator'"):
        load_transcript(path)
    assert load_transcript(path, lenient=True).skipped == 1


def test_broken_json_names_the_line(write_text):
    path = write_text("broken.traj", '{\n  "trajectory": [\n    {"action": }\n  ]\n}\n')
    with pytest.raises(TranscriptError, match=r"broken\.traj:3:16: invalid JSON"):
        load_transcript(path, lenient=True)  # a broken document has no records to skip
