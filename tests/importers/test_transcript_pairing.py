"""The guarantees shared by every importer: pairing, placeholders, immutable values."""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

import pytest

from contextwright.importers import ToolCall, TranscriptError, TranscriptMessage, load_transcript


def calls(*ids: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in ids],
    }


def result(call_id: str, output: str = "ok") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": output}


def test_reusing_an_id_while_its_call_is_open_is_malformed(write_json):
    path = write_json("dup.json", [{"role": "user", "content": "go"}, calls("a"), calls("a"), result("a")])
    with pytest.raises(TranscriptError, match=r"dup\.json:3: tool call id 'a' is reused before its first call"):
        load_transcript(path)
    transcript = load_transcript(path, lenient=True)
    # Check: the second call is skipped; the first keeps its result.
    assert transcript.skipped == 1
    assert [len(m.tool_calls) for m in transcript.messages if m.role == "assistant"] == [1, 0]


def test_an_id_reused_after_its_result_gets_a_suffix(write_json):
    path = write_json(
        "reuse.json",
        [calls("a"), result("a", "1"), calls("a"), result("a", "2"), calls("a"), result("a", "3")],
    )
    transcript = load_transcript(path)
    assert [c.id for m in transcript.messages for c in m.tool_calls] == ["a", "a#2", "a#3"]
    assert [(r.call_id, r.output) for m in transcript.messages for r in m.tool_results] == [
        ("a", "1"),
        ("a#2", "2"),
        ("a#3", "3"),
    ]


def test_only_unanswered_calls_are_dropped(write_json):
    path = write_json("partial.json", [calls("a", "b", "c"), result("b")])
    transcript = load_transcript(path)
    assert [c.id for c in transcript.messages[0].tool_calls] == ["b"]
    assert transcript.dropped_tool_calls == 2


@pytest.mark.parametrize("size", [30, 31, 32])
def test_placeholders_give_the_decoded_size_whatever_the_padding(write_json, size):
    data = base64.b64encode(bytes(size)).decode()
    part = {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{data}"}}
    transcript = load_transcript(write_json("img.json", [{"role": "user", "content": [part]}]))
    assert transcript.messages[0].text == f"[image omitted: image/jpeg, {size} bytes]"


def test_values_are_frozen_and_keyword_only():
    message = TranscriptMessage(role="assistant", text="hi", tool_calls=(ToolCall(id="a", name="f", arguments={}),))
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.text = "changed"  # type: ignore[misc]
    with pytest.raises(TypeError):
        ToolCall("a", "f", {})  # type: ignore[misc]
    assert (message.at, message.usage, message.meta, message.tool_results) == (
        None,
        None,
        False,
        (),
    )
