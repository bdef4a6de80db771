"""Every real transcript in the shared corpus loads strictly and keeps the importer guarantees."""

from __future__ import annotations

import functools
import itertools
import json
import re
from datetime import timedelta
from typing import Any

import pytest

from contextwright.clock import parse_instant
from contextwright.importers import Transcript, detect_format, load_transcripts
from contextwright.testing.corpus import corpus_path, missing_reason

pytestmark = pytest.mark.corpus

TRACES = corpus_path("traces")
MANIFEST: list[dict[str, Any]] = (
    [json.loads(line) for line in (TRACES / "manifest.jsonl").read_text().splitlines() if line.strip()]
    if TRACES is not None
    else []
)


def _entries() -> list[Any]:
    if not MANIFEST:
        return [pytest.param(None, id="no-corpus", marks=pytest.mark.skip(reason=missing_reason("traces")))]
    return [pytest.param(entry, id=entry["local"].split("/")[-1]) for entry in MANIFEST]


@functools.cache
def _load(local: str) -> tuple[Transcript, ...]:
    assert TRACES is not None
    return tuple(load_transcripts(TRACES / local))


def _only(entry: dict[str, Any]) -> Transcript:
    transcripts = _load(entry["local"])
    assert len(transcripts) == 1, "each corpus file is one session"
    return transcripts[0]


# Where the importer's counts differ from the manifest's, and why. The manifest counts
# every record in a file; the importer keeps what the model saw on the active thread.
DIFFERENCES: dict[str, dict[str, int]] = {
    # The session opens with a local-command caveat that has two children: a /clear echo
    # with its empty output, and the shell escape the conversation continues from. The
    # /clear pair is an abandoned branch, so two user records fall away.
    "12a546d1-83a7-49a6-abba-5400db340b43.jsonl": {"user_msgs": 4},
    "937c6e6b-27e7-4edd-86f1-ad28f9731841.jsonl": {"user_msgs": 5},
    # A rewind: the user replaced the second prompt. The first attempt (three prompts and
    # three replies after the fork) is off the active thread.
    "03eb5929-52b3-4b13-ada3-b93ae35806b8.jsonl": {"turns": 6, "user_msgs": 7},
    # Side chains (a sub-agent's own calls, prompts, tools and outputs) are not part of
    # the main conversation: 10 of 20 model calls, 2 of 4 prompts, 8 of 21 tool calls.
    "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl": {
        "turns": 10,
        "user_msgs": 2,
        "tool_calls": 13,
        "tool_output_chars": 8594,
    },
    # One tool result holds two text blocks; the importer joins them with a newline.
    "29ccd257-68b1-427f-ae5f-6524b7cb6f20.jsonl": {"tool_output_chars": 13553},
    # Seven turn markers sit inside a quoted diff ("+_**User**_"), not on a line of their
    # own; the manifest's pattern count takes them as turns.
    "2025-04-29_18-53-starting-task-002.md": {"turns": 24, "user_msgs": 24},
}

# Formats whose manifest tool-output count is the same quantity as ours. Not compared:
# SWE-agent (the manifest counts raw step output; the model saw it with the shell
# state appended), OpenHands events (the manifest also counts the recall notice and an
# error the framework reported as a user message), and the markdown formats.
_OUTPUT_CHARS_COMPARABLE = ("claude-code-jsonl", "openhands-llm-completions")


def _counts(transcript: Transcript) -> dict[str, int]:
    users = [m for m in transcript.messages if m.role == "user"]
    if transcript.format == "openhands-events":
        # The manifest counts user-sourced events; framework notices are meta here.
        users = [m for m in users if not m.meta]
    user_msgs = len(users)
    if transcript.format == "aider-chat-md":
        # The manifest counts '#### ' lines, one per line typed; the start-up banner
        # (meta, not a command) was not typed at all.
        user_msgs = sum(m.text.count("\n") + 1 for m in users if not (m.meta and not m.text.startswith("/")))
    outputs = [r.output for m in transcript.messages for r in m.tool_results]
    return {
        "turns": sum(1 for m in transcript.messages if m.role == "assistant"),
        "user_msgs": user_msgs,
        "tool_calls": sum(len(m.tool_calls) for m in transcript.messages) + transcript.dropped_tool_calls,
        "tool_output_chars": sum(len(o) for o in outputs),
    }


@pytest.mark.parametrize("entry", _entries())
def test_detection_picks_the_corpus_format(entry):
    assert TRACES is not None
    assert detect_format(TRACES / entry["local"]) == entry["fmt"]


@pytest.mark.parametrize("entry", _entries())
def test_every_file_loads_strictly_as_one_session(entry):
    transcript = _only(entry)
    # Check: the right importer ran, nothing was skipped, and there is a conversation
    # (one SpecStory export holds only a summary, with no turns to import).
    assert transcript.format == entry["fmt"]
    assert transcript.skipped == 0
    assert transcript.source.endswith(entry["local"])
    if entry["turns"]:
        assert transcript.messages and transcript.task
    for message in transcript.messages:
        assert message.source_line is not None and message.source_line >= 1


@pytest.mark.parametrize("entry", _entries())
def test_every_tool_call_has_exactly_one_later_result(entry):
    transcript = _only(entry)
    calls: set[str] = set()
    answered: set[str] = set()
    for message in transcript.messages:
        # Check: calls only on assistant messages, results only on tool messages.
        assert not message.tool_calls or message.role == "assistant"
        assert not message.tool_results or message.role == "tool"
        for call in message.tool_calls:
            assert call.id not in calls, f"call id {call.id} repeats"
            assert isinstance(call.arguments, dict)
            calls.add(call.id)
        for result in message.tool_results:
            assert result.call_id in calls, f"result {result.call_id} precedes or lacks its call"
            assert result.call_id not in answered, f"call {result.call_id} answered twice"
            answered.add(result.call_id)
    assert answered == calls


@pytest.mark.parametrize("entry", _entries())
def test_messages_are_in_chronological_order(entry):
    transcript = _only(entry)
    stamped = [m for m in transcript.messages if m.at is not None]
    # Check: times never go back, except that Claude Code stamps injected records
    # (local-command echoes: meta) out of order, and parallel tool results up to a few
    # milliseconds apart; the source order is the causal order and is kept.
    for before, after in itertools.pairwise(stamped):
        if before.meta or after.meta:
            continue
        assert parse_instant(after.at) >= parse_instant(before.at) - timedelta(seconds=1), (
            before.source_line,
            after.source_line,
        )


_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{200,}={0,2}")


def _looks_base64(run: str) -> bool:
    # Long digit-only runs (a CTF's bit strings) are data, not encoded binary.
    return bool(re.search(r"[A-Z]", run) and re.search(r"[a-z]", run) and re.search(r"[0-9]", run))


@pytest.mark.parametrize("entry", _entries())
def test_no_base64_binary_reaches_the_transcript(entry):
    transcript = _only(entry)
    texts = [m.text for m in transcript.messages] + [r.output for m in transcript.messages for r in m.tool_results]
    for text in texts:
        assert "iVBORw0KGgo" not in text and "data:image/" not in text
        assert not any(_looks_base64(run) for run in _BASE64_RUN.findall(text))


def test_pasted_screenshots_become_placeholders():
    if TRACES is None:
        pytest.skip(missing_reason("traces"))
    # Check: both sessions with pasted PNGs keep a placeholder naming type and size.
    for name in (
        "4379d1bf-ccb1-414e-a856-9791b73f3af2.jsonl",
        "9e953218-585f-4692-89df-9e0747a31c68.jsonl",
    ):
        [entry] = [e for e in MANIFEST if e["local"].endswith(name)]
        text = "\n".join(m.text for m in _only(entry).messages)
        assert re.search(r"\[image omitted: image/png, [\d,]+ bytes\]", text)


@pytest.mark.parametrize("entry", _entries())
def test_counts_agree_with_the_manifest(entry):
    transcript = _only(entry)
    ours = _counts(transcript)
    name = entry["local"].split("/")[-1]
    expected = {"turns": entry["turns"], "user_msgs": entry["user_msgs"]}
    if entry["fmt"] == "aider-chat-md":
        del expected["turns"]  # the manifest's "turns" are its user lines again
    if entry["fmt"] in ("cursor-specstory-md", "aider-chat-md"):
        # Their tool counts are rough text patterns; these formats yield no structured calls.
        assert ours["tool_calls"] == 0
    else:
        # Dangling calls (a final `finish`/response with no recorded result) are dropped
        # but counted, so calls + dropped equals every call the file recorded.
        expected["tool_calls"] = entry["tool_calls"]
    if entry["fmt"] in _OUTPUT_CHARS_COMPARABLE:
        expected["tool_output_chars"] = entry["tool_output_chars"]
    expected.update(DIFFERENCES.get(name, {}))
    assert {key: ours[key] for key in expected} == expected


@pytest.mark.parametrize("entry", _entries())
def test_loading_is_deterministic(entry):
    assert TRACES is not None
    assert tuple(load_transcripts(TRACES / entry["local"])) == _load(entry["local"])
