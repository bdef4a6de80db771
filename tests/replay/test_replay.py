"""Replaying the shared transcripts: never over the window, the task and its constraints always visible."""

from __future__ import annotations

from contextwright.budget.allocator import allocate
from contextwright.clock import FixedClock
from contextwright.importers import load_transcripts
from contextwright.importers.model import Transcript, TranscriptMessage
from contextwright.log import open_log
from contextwright.models import anthropic, with_window
from contextwright.providers.usage import Usage
from contextwright.replay import agent_for, constraints_in, replay, safe_tool_name, visible_in
from contextwright.runtime.engine import Engine
from contextwright.testing.fakes import TEST_SECRET

WINDOW = 32_000


def _trace_files(traces_dir):
    return sorted(p for p in traces_dir.rglob("*") if p.is_file() and p.name not in ("README.md", "manifest.jsonl"))


def test_every_shared_transcript_replays_within_a_32k_window(traces_dir):
    files = _trace_files(traces_dir)
    assert len(files) > 100
    problems: list[str] = []
    requests = 0
    for path in files:
        for transcript in load_transcripts([path]):
            engine = Engine.open("memory://", clock=FixedClock(step=1), secret=TEST_SECRET)
            result = replay(transcript, engine=engine, model=with_window(anthropic("claude-sonnet-4-6"), WINDOW))
            if result.overflows:
                problems.append(f"{path.name}: {result.overflows} requests could not fit")
            task = transcript.task
            constraints = constraints_in(task)
            stated = next(
                (
                    e.seq
                    for e in result.session.history.events
                    if e.type == "message.user" and task and e.payload.text.strip() == task.strip()
                ),
                None,
            )
            if task and stated is None:
                problems.append(f"{path.name}: the task statement was never recorded as a user message")
            for built in result.requests:
                requests += 1
                allocation = allocate(built.plan)
                if built.plan.prefix_token_total + allocation.with_margin(built.result.body_tokens) > allocation.input_limit:
                    problems.append(f"{path.name} request {built.index}: over the window")
                if stated is None or built.result.upto_seq < stated:
                    continue  # the harness spoke before the user stated the task
                if not visible_in(built.neutral, task):
                    problems.append(f"{path.name} request {built.index}: task not visible")
                missing = [c for c in constraints if not visible_in(built.neutral, c)]
                if missing:
                    problems.append(f"{path.name} request {built.index}: constraints missing: {missing[:2]}")
            engine.close()
    assert requests > 1_000
    assert not problems, problems[:20]


def test_constraint_sentences_are_found():
    task = "Fix the parser. You must not change the public API. Tests should pass. Never push to main!"
    assert constraints_in(task) == ["You must not change the public API.", "Never push to main!"]
    assert constraints_in(None) == []


def test_tool_names_are_made_provider_safe():
    assert safe_tool_name("mcp.server/tool name") == "mcp_server_tool_name"
    assert len(safe_tool_name("x" * 100)) == 64


def test_agent_from_a_transcript_uses_its_system_prompt_and_tools(tmp_path):
    path = tmp_path / "chat.json"
    path.write_text(
        '{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "List files."},'
        ' {"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "ls.all", "arguments": "{}"}}]},'
        ' {"role": "tool", "tool_call_id": "a", "content": "x.py"}, {"role": "assistant", "content": "One file."}]}'
    )
    [transcript] = load_transcripts([path])
    agent, names = agent_for(transcript)
    assert agent.instructions == "Be brief." and names == {"ls.all": "ls_all"}
    engine = Engine.open("memory://", clock=FixedClock(step=1), secret=TEST_SECRET)
    result = replay(transcript, engine=engine, model=with_window(anthropic("claude-sonnet-4-6"), WINDOW))
    assert len(result.requests) == 2 and result.overflows == 0
    assert visible_in(result.requests[-1].neutral, "x.py")


def test_a_live_providers_reports_replace_the_recorded_usage_and_tune_the_estimates():
    recorded = {"input_tokens": 9_999, "output_tokens": 5}
    messages = [TranscriptMessage(role="user", text="Rename the helper and run the tests.")]
    for turn in range(4):
        messages.append(TranscriptMessage(role="assistant", text=f"Step {turn} done.", usage=recorded))
        messages.append(TranscriptMessage(role="user", text=f"Go on with step {turn + 1}."))
    transcript = Transcript(session_id="live", format="synthetic", source="test", messages=tuple(messages))
    model = with_window(anthropic("claude-sonnet-4-6"), 32_000)

    def responses(provider_usage):
        clock = FixedClock(step=1)
        engine = Engine(open_log("memory://", clock=clock), clock=clock, secret=TEST_SECRET)
        try:
            result = replay(transcript, engine=engine, model=model, provider_usage=provider_usage)
            events = [e.payload for e in result.session.history.events if e.type == "model.response"]
            return events, [b.result.total_tokens for b in result.requests]
        finally:
            engine.close()

    kept, estimates = responses(None)
    assert [(r.usage.input_tokens, r.replayed) for r in kept] == [(9_999, True)] * 4
    live, tuned = responses(lambda built: Usage(input_tokens=built.result.total_tokens // 2))
    assert [r.replayed for r in live] == [False] * 4
    assert [r.usage.input_tokens for r in live] == [e // 2 for e in tuned]
    # Recorded usage belongs to other requests and teaches nothing; a live report does.
    assert tuned[:2] == estimates[:2] and tuned[-1] < estimates[-1]
