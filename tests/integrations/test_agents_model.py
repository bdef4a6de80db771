"""The Agents SDK, one object: ``Agent(model=ContextwrightModel(...))`` bounds every call with nothing wired per run.

The same agent and script run with the SDK's own ``SQLiteSession`` alone (which bounds
nothing: every tool output reaches the model whole on every later call) and with the
model wrapped; the runs pass no ``run_config`` and no ``hooks``.
"""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("agents", reason="needs the OpenAI Agents SDK (the agents extra)")

from agents import Agent, Runner, SQLiteSession, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.usage import Usage
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

from contextwright.budget.estimator import HeuristicEstimator
from contextwright.clock import FixedClock
from contextwright.integrations.agents import ContextwrightModel, agent_spec_for
from contextwright.models import openai as openai_model
from contextwright.models import with_window
from contextwright.runtime.engine import Engine
from contextwright.testing.fakes import TEST_SECRET

TURNS = 6
WINDOW = 16_000
TASK = "Make the billing tests pass without changing the public API."


def _big_output(turn: int) -> str:
    """A verbose pytest run of 601 tests with one failure (about 27,000 characters)."""
    lines = ["collected 601 items", ""] + [f"tests/test_billing.py::test_case_{i} PASSED" for i in range(600)]
    lines.insert(303, f"tests/test_billing.py::test_rounding_{turn} FAILED")
    return "\n".join(
        [*lines, f"FAILED tests/test_billing.py::test_rounding_{turn} - assert 10.01 == 10.0", "1 failed, 600 passed"]
    )


@function_tool
def run_tests(turn: int) -> str:
    """Run the billing test suite."""
    return _big_output(turn)


def _script() -> list:
    steps = [[function_call("run_tests", {"turn": turn}, call_id=f"call_{turn}")] for turn in range(TURNS)]
    return [*steps, [assistant_message("Fixed: rounding uses Decimal.")]]


def _model() -> ScriptedModel:
    model = ScriptedModel(_script())
    model.set_default_usage(
        Usage(
            requests=1,
            input_tokens=3000,
            output_tokens=20,
            total_tokens=3020,
            input_tokens_details=InputTokensDetails(cached_tokens=2048, cache_write_tokens=0),
            output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
        )
    )
    return model


def _tokens(calls) -> list[int]:
    estimator = HeuristicEstimator()
    return [estimator.estimate(json.dumps(call.input), model="gpt-5.5") for call in calls]


def test_one_wrapped_model_bounds_every_call_and_records_its_usage(tmp_path):
    scripted = _model()
    agent = Agent(name="billing", instructions="You fix billing bugs.", tools=[run_tests])
    engine = Engine.open(f"sqlite:///{tmp_path / 'cw.db'}", clock=FixedClock("2026-03-01T22:30:00Z"), secret=TEST_SECRET)
    session = engine.session("ticket-8", agent=agent_spec_for(agent), model=with_window(openai_model("gpt-5.5"), WINDOW))
    agent.model = ContextwrightModel(scripted, session)  # the only new line

    history = SQLiteSession("ticket-8", str(tmp_path / "sdk.db"))
    result = asyncio.run(Runner.run(agent, TASK, session=history, max_turns=TURNS + 2))
    assert result.final_output == "Fixed: rounding uses Decimal."

    calls = scripted.calls
    assert len(calls) == TURNS + 1
    built = [e.payload for e in session.history.events if e.type == "context.request.built"]
    limit = session.setup.plan.model.context_window - session.setup.plan.model.output_reserve
    # Check: every call the model got was the engine's request, within the window, the task visible.
    assert len(built) == TURNS + 1 and all(b.total_tokens <= limit for b in built)
    for call in calls:
        assert call.system_instructions is None and TASK in json.dumps(call.input)
        assert "test_case_300 PASSED" not in json.dumps(call.input)
        assert call.model_settings.extra_args["prompt_cache_key"]
    # Check: each call's usage was recorded against its request, with no hooks passed.
    responses = [e.payload for e in session.history.events if e.type == "model.response"]
    assert len(responses) == TURNS + 1 and responses[0].usage.cache_read_tokens == 2048
    # The SDK's session keeps every output whole.
    stored = asyncio.run(history.get_items())
    assert [i["output"] for i in stored if i.get("type") == "function_call_output"] == [_big_output(t) for t in range(TURNS)]


def test_the_sdk_session_alone_sends_every_output_whole(tmp_path):
    """The same agent and script with ``SQLiteSession`` alone, for the figures: tokens sent per call."""
    native_model = _model()
    native = Agent(name="billing", instructions="You fix billing bugs.", tools=[run_tests], model=native_model)
    asyncio.run(Runner.run(native, TASK, session=SQLiteSession("n", str(tmp_path / "n.db")), max_turns=TURNS + 2))

    wrapped_model = _model()
    agent = Agent(name="billing", instructions="You fix billing bugs.", tools=[run_tests])
    engine = Engine.open("memory://", clock=FixedClock("2026-03-01T22:30:00Z"), secret=TEST_SECRET)
    session = engine.session("w", agent=agent_spec_for(agent), model=with_window(openai_model("gpt-5.5"), WINDOW))
    agent.model = ContextwrightModel(wrapped_model, session)
    asyncio.run(Runner.run(agent, TASK, session=SQLiteSession("w", str(tmp_path / "w.db")), max_turns=TURNS + 2))

    alone, bounded = _tokens(native_model.calls), _tokens(wrapped_model.calls)
    assert "test_case_300 PASSED" in json.dumps(native_model.calls[-1].input)
    assert sum(bounded) < sum(alone) / 4
    print(
        f"\nmodel input tokens per call (estimated): SQLiteSession alone {alone} (total {sum(alone)}), wrapped {bounded} (total {sum(bounded)})"
    )


def test_instructions_the_spec_does_not_hold_are_pinned_first_then_refused_if_they_change(tmp_path):
    from contextwright.integrations.errors import PrefixMismatch

    scripted = ScriptedModel([[assistant_message("First.")], [assistant_message("Second.")]])
    agent = Agent(name="billing", instructions="You fix billing bugs.", tools=[run_tests])
    engine = Engine.open("memory://", clock=FixedClock("2026-03-01T22:30:00Z"), secret=TEST_SECRET)
    spec = agent_spec_for(agent, policy="Platform rules: never push to main.")
    session = engine.session("p", agent=spec, model=with_window(openai_model("gpt-5.5"), WINDOW))
    agent.model = ContextwrightModel(scripted, session)
    history = SQLiteSession("p", str(tmp_path / "p.db"))
    asyncio.run(Runner.run(agent, TASK, session=history))
    # Check: the agent's own instructions reached the model, pinned after the platform policy.
    first = json.dumps(scripted.calls[0].input)
    assert "Platform rules: never push to main." in first and "You fix billing bugs." in first
    agent.instructions = "You write poems."
    with pytest.raises(PrefixMismatch, match="You write poems."):
        asyncio.run(Runner.run(agent, "Go on.", session=history))
    assert len(scripted.calls) == 1
