"""Claude Code session files: grouping, threads, side chains, blocks, errors."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from contextwright.importers import TranscriptError, load_transcript

USAGE = {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 100}


def user(uuid: str, parent: str | None, content: Any, **extra: Any) -> dict[str, Any]:
    return {
        "type": "user",
        "uuid": uuid,
        "parentUuid": parent,
        "isSidechain": False,
        "sessionId": "sess-1",
        "timestamp": f"2025-03-01T10:00:{len(uuid):02d}Z",
        "message": {"role": "user", "content": content},
        **extra,
    }


def assistant(uuid: str, parent: str | None, msg_id: str, *blocks: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "type": "assistant",
        "uuid": uuid,
        "parentUuid": parent,
        "isSidechain": False,
        "sessionId": "sess-1",
        "timestamp": f"2025-03-01T10:00:{len(uuid):02d}Z",
        "message": {
            "id": msg_id,
            "role": "assistant",
            "model": "claude-test",
            "content": list(blocks),
            "usage": USAGE,
        },
        **extra,
    }


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(call_id: str, command: str = "ls") -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": command}}


def result(call_id: str, output: Any = "ok", **extra: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": output, **extra}


def test_lines_of_one_response_merge_and_usage_is_taken_once(write_jsonl):
    path = write_jsonl(
        "s.jsonl",
        [
            user("u1", None, "list the files"),
            assistant("a1", "u1", "msg_1", text("Looking.")),
            assistant(
                "a2",
                "a1",
                "msg_1",
                {"type": "thinking", "thinking": "secret plan", "signature": "x"},
            ),
            assistant("a3", "a2", "msg_1", tool_use("t1")),
            user("u2", "a3", [result("t1", "a.txt")]),
            assistant("a4", "u2", "msg_2", text("One file.")),
        ],
    )
    transcript = load_transcript(path)
    roles = [m.role for m in transcript.messages]
    assert roles == ["user", "assistant", "tool", "assistant"]
    first = transcript.messages[1]
    # Check: three lines are one model call; usage repeats per line and is not summed.
    assert first.text == "Looking."
    assert [c.id for c in first.tool_calls] == ["t1"]
    assert first.usage == USAGE
    assert first.model == "claude-test"
    assert first.source_line == 2
    # Check: thinking is dropped everywhere.
    assert all("secret plan" not in m.text for m in transcript.messages)
    assert transcript.messages[2].tool_results[0].output == "a.txt"
    assert transcript.session_id == "sess-1"
    assert transcript.format == "claude-code-jsonl"
    assert transcript.messages[0].at == "2025-03-01T10:00:02.000000Z"


def test_side_chains_and_non_conversation_records_are_skipped(write_jsonl):
    side = assistant("s1", None, "msg_side", text("sub-agent work"), isSidechain=True)
    path = write_jsonl(
        "s.jsonl",
        [
            {"type": "summary", "summary": "An old summary", "leafUuid": "zz"},
            user("u1", None, "do it"),
            {"type": "progress", "uuid": "p1", "parentUuid": "u1", "data": {}},
            side,
            user("s2", "s1", "sub-agent prompt", isSidechain=True),
            assistant("a1", "p1", "msg_1", text("done")),
        ],
    )
    transcript = load_transcript(path)
    assert [m.text for m in transcript.messages] == ["do it", "done"]


def test_a_rewind_keeps_the_thread_ending_at_the_last_record(write_jsonl):
    path = write_jsonl(
        "s.jsonl",
        [
            user("u1", None, "first prompt"),
            assistant("a1", "u1", "msg_1", text("first reply")),
            user("u2", "a1", "abandoned prompt"),
            assistant("a2", "u2", "msg_2", text("abandoned reply")),
            # The user rewound to a1 and asked again.
            user("u3", "a1", "edited prompt"),
            assistant("a3", "u3", "msg_3", text("final reply")),
        ],
    )
    transcript = load_transcript(path)
    assert [m.text for m in transcript.messages] == [
        "first prompt",
        "first reply",
        "edited prompt",
        "final reply",
    ]


def test_parallel_tool_results_off_the_thread_are_kept(write_jsonl):
    # Claude Code parents each parallel result to the line with its call, so only the
    # last result is an ancestor of the final record.
    path = write_jsonl(
        "s.jsonl",
        [
            user("u1", None, "read both"),
            assistant("a1", "u1", "msg_1", tool_use("t1")),
            assistant("a2", "a1", "msg_1", tool_use("t2")),
            user("r1", "a1", [result("t1", "one")]),
            user("r2", "a2", [result("t2", "two")]),
            assistant("a3", "r2", "msg_2", text("both read")),
        ],
    )
    transcript = load_transcript(path)
    assert [c.id for c in transcript.messages[1].tool_calls] == ["t1", "t2"]
    outputs = [r.output for m in transcript.messages for r in m.tool_results]
    assert outputs == ["one", "two"]
    assert transcript.dropped_tool_calls == 0


def test_a_compaction_boundary_is_bridged_by_logical_parent(write_jsonl):
    path = write_jsonl(
        "s.jsonl",
        [
            user("u1", None, "before compaction"),
            assistant("a1", "u1", "msg_1", text("reply")),
            {
                "type": "system",
                "subtype": "compact_boundary",
                "uuid": "c1",
                "parentUuid": None,
                "logicalParentUuid": "a1",
            },
            user("u2", "c1", "summary of the conversation so far", isCompactSummary=True),
            assistant("a2", "u2", "msg_2", text("continuing")),
        ],
    )
    transcript = load_transcript(path)
    assert next(m.text for m in transcript.messages) == "before compaction"
    assert transcript.messages[2].meta
    assert len(transcript.messages) == 4


def test_records_without_uuids_are_taken_in_file_order(write_jsonl):
    plain = [user("u1", None, "hi"), assistant("a1", "u1", "msg_1", text("hello"))]
    for record in plain:
        del record["uuid"], record["parentUuid"]
    transcript = load_transcript(write_jsonl("s.jsonl", plain))
    assert [m.text for m in transcript.messages] == ["hi", "hello"]


def test_results_and_text_in_one_record_become_tool_then_user(write_jsonl):
    path = write_jsonl(
        "s.jsonl",
        [
            user("u1", None, "run it"),
            assistant("a1", "u1", "msg_1", tool_use("t1")),
            user(
                "u2",
                "a1",
                [
                    result("t1", [text("line 1"), text("line 2")], is_error=True),
                    text("stop, wrong dir"),
                ],
            ),
        ],
    )
    transcript = load_transcript(path)
    tool, note = transcript.messages[2:]
    assert tool.role == "tool" and tool.text == ""
    assert tool.tool_results[0].output == "line 1\nline 2"
    assert tool.tool_results[0].is_error
    assert note.role == "user" and note.text == "stop, wrong dir"
    assert note.source_line == tool.source_line == 3


def test_images_become_placeholders_never_base64(write_jsonl):
    png = base64.b64encode(b"\x89PNG" + bytes(26)).decode()
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}
    path = write_jsonl(
        "s.jsonl",
        [
            user("u1", None, [image, text("what is this?")]),
            assistant("a1", "u1", "msg_1", tool_use("t1")),
            user("u2", "a1", [result("t1", [image])]),
        ],
    )
    transcript = load_transcript(path)
    assert transcript.messages[0].text == "[image omitted: image/png, 30 bytes]\n\nwhat is this?"
    assert transcript.messages[2].tool_results[0].output == "[image omitted: image/png, 30 bytes]"
    assert png not in repr(transcript)


def test_meta_and_command_echoes_are_not_the_task(write_jsonl):
    path = write_jsonl(
        "s.jsonl",
        [
            user("u1", None, "Caveat: local commands follow.", isMeta=True),
            user("u2", "u1", "<command-name>/clear</command-name>"),
            user("u3", "u2", "<bash-input>ls</bash-input>"),
            user("u4", "u3", "fix the failing test"),
            assistant("a1", "u4", "msg_1", text("on it")),
        ],
    )
    transcript = load_transcript(path)
    assert [m.meta for m in transcript.messages] == [True, True, True, False, False]
    assert transcript.task == "fix the failing test"


def test_a_call_without_a_result_is_dropped_and_counted(write_jsonl):
    path = write_jsonl(
        "s.jsonl",
        [
            user("u1", None, "go"),
            assistant("a1", "u1", "msg_1", text("running"), tool_use("t1")),
        ],
    )
    transcript = load_transcript(path)
    assert transcript.messages[1].tool_calls == ()
    assert transcript.messages[1].text == "running"
    assert transcript.dropped_tool_calls == 1


def test_unknown_record_type_names_the_file_and_line(write_jsonl):
    path = write_jsonl("s.jsonl", [user("u1", None, "hi"), {"type": "user", "uuid": "x"}, {"type": "mystery"}])
    with pytest.raises(TranscriptError) as info:
        load_transcript(path)
    # Check: the first bad record (line 2: a user record with no message) is reported.
    error = info.value
    assert (error.path, error.line) == (str(path), 2)
    assert str(error).startswith(f"{path}:2: ")
    assert "no message" in error.problem

    path = write_jsonl("t.jsonl", [user("u1", None, "hi"), {"type": "mystery"}])
    with pytest.raises(TranscriptError, match=r"t\.jsonl:2: unknown record type 'mystery'"):
        load_transcript(path)


def test_unknown_content_block_is_carried_as_an_opaque_part_or_fails_when_strict(write_jsonl):
    path = write_jsonl("s.jsonl", [user("u1", None, "hi"), assistant("a1", "u1", "m", {"type": "hologram"})])
    transcript = load_transcript(path)
    assert transcript.unsupported_blocks == {"hologram": 1}
    assert transcript.messages[-1].text == "[unsupported block: hologram, 20 bytes]"
    with pytest.raises(TranscriptError, match=r":2: unknown assistant content block type 'hologram' \(strict mode\)"):
        load_transcript(path, strict=True)


def test_lenient_mode_skips_and_counts_bad_records(write_jsonl):
    path = write_jsonl(
        "s.jsonl",
        [
            user("u1", None, "hi"),
            "{not json",
            {"type": "mystery"},
            assistant("a1", "u1", "msg_1", text("hello")),
        ],
    )
    with pytest.raises(TranscriptError, match=r"s\.jsonl:2:2: invalid JSON"):
        load_transcript(path)
    transcript = load_transcript(path, lenient=True)
    assert transcript.skipped == 2
    assert [m.text for m in transcript.messages] == ["hi", "hello"]
