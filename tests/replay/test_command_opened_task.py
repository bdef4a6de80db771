"""A session opened by a command (``/init``): its expanded prompt is the task, and it never yields."""

from __future__ import annotations

from contextwright.clock import FixedClock
from contextwright.importers._common import first_task
from contextwright.importers.model import ToolCall, ToolResult, Transcript, TranscriptMessage
from contextwright.log import open_log
from contextwright.models import anthropic, with_window
from contextwright.replay import replay, visible_in
from contextwright.runtime.engine import Engine
from contextwright.testing.fakes import TEST_SECRET

ECHO = "<command-message>init is analyzing your codebase…</command-message>\n<command-name>/init</command-name>"
PROMPT = (
    "Please analyze this codebase and create a CLAUDE.md file with the commands used to build, lint and "
    "test it, and the architecture a newcomer needs. Do not repeat what the README already says."
)


def _opened_by_init(rounds: int) -> tuple[TranscriptMessage, ...]:
    messages = [
        TranscriptMessage(role="user", text=ECHO, meta=True),
        TranscriptMessage(role="user", text=PROMPT, meta=True),
    ]
    for n in range(rounds):
        call = ToolCall(id=f"t{n}", name="Read", arguments={"file_path": f"/repo/pkg/module_{n}.py"})
        body = "".join(f"{k:>6}\tdef handler_{n}_{k}(request): return dispatch_{k}(request, {n})\n" for k in range(300))
        notes = " ".join(f"handler_{n}_{k} routes to dispatch_{k} with mode {n}." for k in range(30))
        messages.append(TranscriptMessage(role="assistant", text=f"Module {n}: {notes}", tool_calls=(call,)))
        messages.append(TranscriptMessage(role="tool", text="", tool_results=(ToolResult(call_id=call.id, output=body),)))
    messages.append(TranscriptMessage(role="assistant", text="CLAUDE.md is written."))
    return tuple(messages)


def test_the_expanded_prompt_not_the_echo_is_the_task():
    messages = _opened_by_init(1)
    assert first_task(messages) == PROMPT
    # A command with no expanded prompt: its echo is all that names what was asked.
    assert first_task(messages[:1]) == ECHO
    # A prompt the user typed still comes first.
    typed = TranscriptMessage(role="user", text="fix the failing test")
    assert first_task((*messages, typed)) == "fix the failing test"


def test_an_init_opened_session_keeps_its_task_through_compaction_at_32k():
    messages = _opened_by_init(40)
    transcript = Transcript(session_id="init", format="synthetic", source="test", messages=messages, task=first_task(messages))
    clock = FixedClock(step=1)
    engine = Engine(open_log("memory://", clock=clock), clock=clock, secret=TEST_SECRET)
    try:
        result = replay(transcript, engine=engine, model=with_window(anthropic("claude-sonnet-4-6"), 32_000))
        events = result.session.history.events
        assert any(e.type == "context.compacted" for e in events)  # the history was folded at least once
        [task] = [e.payload for e in events if e.type == "message.user" and e.payload.text == PROMPT]
        assert task.author == "user"
        assert result.requests and all(visible_in(built.neutral, PROMPT) for built in result.requests)
    finally:
        engine.close()
