"""The Agents SDK model input filter: the SDK keeps every item whole, the model sees the engine's bounded request."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("agents", reason="needs the OpenAI Agents SDK (the agents extra)")

from agents import Agent, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.usage import Usage
from openai.types.responses import ResponseReasoningItem
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

from contextwright.assembly.assemble import cache_key
from contextwright.canonical import to_plain
from contextwright.clock import FixedClock
from contextwright.integrations.agents import ContextwrightSession, agent_spec_for, model_input_filter
from contextwright.integrations.errors import HistoryRewritten
from contextwright.models import openai as openai_model
from contextwright.models import with_window
from contextwright.runtime.engine import Engine
from contextwright.testing.fakes import TEST_SECRET

WINDOW = 8_000
TASK = "Make the billing tests pass without changing the public API."


def _big_output(turn: int) -> str:
    """A verbose pytest run of 601 tests with one failure (about 27,000 characters)."""
    lines = ["=" * 29 + " test session starts " + "=" * 30, "collected 601 items", ""]
    lines += [f"tests/test_billing.py::test_case_{i} PASSED" for i in range(600)]
    lines.insert(303, f"tests/test_billing.py::test_rounding_{turn} FAILED")
    lines += [
        "",
        "=" * 35 + " FAILURES " + "=" * 35,
        "_" * 32 + f" test_rounding_{turn} " + "_" * 32,
        "    assert round_cents(10.005) == 10.0",
        "E   assert 10.01 == 10.0",
        "=" * 27 + " short test summary info " + "=" * 28,
        f"FAILED tests/test_billing.py::test_rounding_{turn} - assert 10.01 == 10.0",
        "=" * 24 + " 1 failed, 600 passed in 2.31s " + "=" * 24,
    ]
    return "\n".join(lines)


@function_tool
def run_tests(turn: int) -> str:
    """Run the billing test suite."""
    return _big_output(turn)


def _reasoning(turn: int) -> ResponseReasoningItem:
    return ResponseReasoningItem(id=f"rs_{turn}", type="reasoning", summary=[], encrypted_content=f"gAAAA-opaque-{turn}")


def _script(turns: int) -> list:
    steps = []
    for turn in range(turns):
        steps.append([_reasoning(turn), function_call("run_tests", {"turn": turn}, call_id=f"call_{turn}")])
        steps.append([assistant_message(f"Turn {turn}: one rounding test fails; fixing it next.")])
    return steps


def _setup(tmp_path, turns: int):
    engine = Engine.open(f"sqlite:///{tmp_path / 'cw.db'}", clock=FixedClock("2026-03-01T22:30:00Z"), secret=TEST_SECRET)
    model = ScriptedModel(_script(turns))
    agent = Agent(name="billing", instructions="You fix billing bugs.", model=model, tools=[run_tests])
    session = engine.session("ticket-7", agent=agent_spec_for(agent), model=with_window(openai_model("gpt-5.5"), WINDOW))
    items = ContextwrightSession("ticket-7", engine)  # one log for both: the SDK's items and the engine's events
    view = model_input_filter(session)
    return engine, model, agent, session, items, view


def _check_run(engine, model, session, items, turns: int) -> None:
    calls = model.calls
    assert len(calls) == 2 * turns
    stored = asyncio.run(items.get_items())
    outputs = [i for i in stored if i.get("type") == "function_call_output"]
    # Check: the SDK session keeps every tool output whole.
    assert [o["output"] for o in outputs] == [_big_output(t) for t in range(turns)]
    built = [e.payload for e in session.history.events if e.type == "context.request.built"]
    assert len(built) == 2 * turns
    limit = session.setup.plan.model.context_window - session.setup.plan.model.output_reserve
    # Check: every request the model received was built by the engine, within the window.
    assert all(b.total_tokens <= limit for b in built)
    for call in calls:
        sent = json.dumps(call.input)
        assert len(sent) < 4 * WINDOW  # far below one raw tool output (~25k characters) per turn
        assert TASK in sent  # the task statement stays visible
        assert call.system_instructions is None
        assert call.input[0]["role"] == "developer" and "You fix billing bugs." in call.input[0]["content"]
    # Check: the model saw a bounded view of the output that keeps the failure line and points at the original.
    [shown] = [i["output"] for i in calls[1].input if i.get("type") == "function_call_output"]
    assert len(shown) < len(_big_output(0)) // 4
    assert "FAILED tests/test_billing.py::test_rounding_0" in shown and "sha256:" in shown
    # Check: the reasoning item reaches the model unchanged, right before its call.
    second = calls[1].input
    index = next(i for i, item in enumerate(second) if item.get("type") == "function_call")
    [kept] = [i for i in stored if i.get("type") == "reasoning" and i["id"] == "rs_0"]
    assert json.dumps(second[index - 1], sort_keys=True) == json.dumps(kept, sort_keys=True)
    assert second[index - 1]["encrypted_content"] == "gAAAA-opaque-0"
    # Check: the engine's log holds the reasoning with its call, so a rebuild shows it too.
    first_answer = next(e.payload for e in session.history.events if e.type == "message.assistant")
    assert [to_plain(r.block) for r in first_answer.reasoning] == [kept]
    # Check: one stable prompt_cache_key per session and epoch.
    keys = {call.model_settings.extra_args["prompt_cache_key"] for call in calls}
    assert keys == {cache_key("ticket-7", session.setup.plan.epoch)}


def test_runner_run_async_over_several_tool_turns(tmp_path):
    turns = 4
    engine, model, agent, session, items, view = _setup(tmp_path, turns)
    model.set_default_usage(
        Usage(
            requests=1,
            input_tokens=3000,
            input_tokens_details=InputTokensDetails(cached_tokens=2048, cache_write_tokens=0),
            output_tokens=40,
            output_tokens_details=OutputTokensDetails(reasoning_tokens=10),
            total_tokens=3040,
        )
    )
    config = view.run_config()

    async def drive():
        for turn in range(turns):
            text = TASK if turn == 0 else f"Continue with step {turn}."
            result = await Runner.run(agent, text, session=items, run_config=config, hooks=view.hooks())
            assert result.final_output.startswith(f"Turn {turn}:")

    asyncio.run(drive())
    _check_run(engine, model, session, items, turns)
    # Check: every model call's usage was recorded against its built request, reads apart from the rest.
    usage = [e.payload for e in session.history.events if e.type == "model.response"]
    assert [u.request_index for u in usage] == list(range(2 * turns))
    assert {(u.usage.input_tokens, u.usage.cache_read_tokens, u.usage.output_tokens) for u in usage} == {(952, 2048, 40)}


def test_runner_run_sync_over_several_tool_turns(tmp_path):
    turns = 3
    engine, model, agent, session, items, view = _setup(tmp_path, turns)
    config = view.run_config()
    for turn in range(turns):
        text = TASK if turn == 0 else f"Continue with step {turn}."
        assert Runner.run_sync(agent, text, session=items, run_config=config).final_output.startswith(f"Turn {turn}:")
    _check_run(engine, model, session, items, turns)


def test_a_rewritten_history_is_a_typed_error(tmp_path):
    engine, model, agent, session, items, view = _setup(tmp_path, 2)
    config = view.run_config()
    Runner.run_sync(agent, TASK, session=items, run_config=config)
    asyncio.run(items.pop_item())
    asyncio.run(items.pop_item())
    with pytest.raises(HistoryRewritten, match="no longer start with"):
        Runner.run_sync(agent, "Continue.", session=items, run_config=config)
