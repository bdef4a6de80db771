"""OpenAI chat-format logs: JSON lists, conversation objects, and JSONL."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from contextwright.importers import TranscriptError, load_transcript, load_transcripts

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]


def chat() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "Be brief."},
        {"role": "developer", "content": "Use tools."},
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": "{oops"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
        {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "error"}]},
        {"role": "assistant", "content": "18C and sunny."},
        {"role": "system", "content": "Mid-conversation notice."},
    ]


def test_a_message_list_is_one_session(write_json):
    transcript = load_transcript(write_json("chat.json", chat()), format="openai-chat")
    assert transcript.format == "openai-chat"
    # Check: leading system and developer messages form the system prompt; a later one stays.
    assert transcript.system == "Be brief.\n\nUse tools."
    assert [m.role for m in transcript.messages] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "system",
    ]
    calls = transcript.messages[1].tool_calls
    assert calls[0].arguments == {"city": "Paris"}
    # Check: arguments that are not a JSON object are kept, not lost.
    assert calls[1].arguments == {"_raw": "{oops"}
    assert transcript.messages[3].tool_results[0].output == "error"
    assert transcript.messages[2].source_line == 5
    assert transcript.task == "Weather in Paris?"


def test_a_conversation_object_keeps_its_id_and_tools(write_json):
    transcript = load_transcript(write_json("c.json", {"id": "conv-7", "messages": chat(), "tools": TOOLS}))
    assert (transcript.session_id, transcript.tools) == ("conv-7", tuple(TOOLS))


def test_jsonl_of_messages_is_one_session_with_line_numbers(write_jsonl):
    path = write_jsonl("chat.jsonl", chat())
    transcript = load_transcript(path)
    assert transcript.format == "openai-chat"
    assert [m.source_line for m in transcript.messages] == [3, 4, 5, 6, 7, 8]


def test_jsonl_of_conversations_yields_one_session_each(write_jsonl):
    path = write_jsonl("train.jsonl", [{"messages": chat()}, {"messages": chat()[:3]}])
    transcripts = load_transcripts(path)
    assert [t.session_id for t in transcripts] == ["train:1", "train:2"]
    with pytest.raises(TranscriptError, match="holds 2 sessions"):
        load_transcript(path)


def test_images_and_audio_become_placeholders(write_json):
    png = base64.b64encode(bytes(300)).decode()
    wav = base64.b64encode(bytes(16)).decode()
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is shown?"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}},
                {"type": "image_url", "image_url": {"url": "https://example.org/cat.png"}},
                {"type": "input_audio", "input_audio": {"data": wav, "format": "wav"}},
            ],
        }
    ]
    transcript = load_transcript(write_json("img.json", messages))
    assert transcript.messages[0].text == (
        "What is shown?\n\n[image omitted: image/png, 300 bytes]\n\n"
        "[image: https://example.org/cat.png]\n\n[audio omitted: audio/wav, 16 bytes]"
    )


def test_legacy_function_calls_pair_by_name(write_json):
    messages = [
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": None,
            "function_call": {"name": "get_weather", "arguments": "{}"},
        },
        {"role": "function", "name": "get_weather", "content": "18C"},
    ]
    transcript = load_transcript(write_json("legacy.json", messages))
    call = transcript.messages[1].tool_calls[0]
    assert call.id == "function_call-2"
    assert transcript.messages[2].tool_results[0].call_id == call.id


def test_a_result_for_an_unknown_call_is_malformed(write_json):
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "nope", "content": "x"},
    ]
    path = write_json("orphan.json", messages)
    with pytest.raises(TranscriptError, match=r"orphan\.json:2: tool result for call 'nope', which was never made"):
        load_transcript(path)
    transcript = load_transcript(path, lenient=True)
    assert transcript.skipped == 1 and [m.role for m in transcript.messages] == ["user"]


def test_bad_jsonl_lines_are_skipped_in_lenient_mode(write_jsonl):
    path = write_jsonl(
        "c.jsonl",
        [{"role": "user", "content": "hi"}, "{broken", {"role": "assistant", "content": "hello"}],
    )
    with pytest.raises(TranscriptError, match=r"c\.jsonl:2:2: invalid JSON"):
        load_transcript(path)
    transcript = load_transcript(path, lenient=True)
    assert transcript.skipped == 1
    assert [m.text for m in transcript.messages] == ["hi", "hello"]
