"""The engine's prefix texts are versioned: a shipped version never changes, and a plan keeps the one it pinned."""

from __future__ import annotations

import dataclasses

import pytest

from contextwright.assembly.envelope import FRAMING_TEXT
from contextwright.budget.estimator import HeuristicEstimator
from contextwright.items.region_a import MemoryFact
from contextwright.models import anthropic
from contextwright.planner import ContextPlanner, PrefixChanged
from contextwright.runtime.engine_texts import CURRENT, VERSIONS, is_engine_framing, pinned_texts
from contextwright.runtime.spec import CONTROL_TOOLS, AgentSpec, Tool

SHIPPED = {
    1: "sha256:8e0cfb307165366a7294558cd8c93abf3207ab9c38d676bff83c20edb9e5574d",
    2: "sha256:373c89354327b6ff7365af143649cff2cdd8fa81c4064048bf395800c13bcc5d",
    3: "sha256:643522f83154bc8d78f78d61150ca94a605b2739a37429d2dc25b2285a56e12c",
}
"""Each version's hash as shipped. A text changed in place would strand every session that pinned it:
reword one by adding a version (and an upgrade fixture written by the tree before the change)."""

AGENT = AgentSpec(policy="Be careful.", instructions="Test first.", tools=[Tool("run_tests", "Run the test suite")])
MEMORY = (MemoryFact(id="style", text="Use pytest."),)
OLD = VERSIONS[0]


def planner() -> ContextPlanner:
    return ContextPlanner("s", estimator=HeuristicEstimator(), secret=b"k" * 32)


def test_every_shipped_version_keeps_its_texts_and_the_newest_is_what_the_engine_pins():
    assert {texts.version: texts.sha256() for texts in VERSIONS} == SHIPPED
    assert [texts.version for texts in VERSIONS] == sorted(SHIPPED)
    assert CURRENT is VERSIONS[-1]
    assert CONTROL_TOOLS == CURRENT.control_tools and FRAMING_TEXT == CURRENT.framing
    prefix = AGENT.prefix(MEMORY)
    assert prefix.framing.text == CURRENT.framing and prefix.tools[1:] == CURRENT.control_tools


def test_a_plan_is_read_as_the_newest_version_whose_texts_it_holds():
    assert pinned_texts(AGENT.prefix(MEMORY, texts=OLD)) is OLD
    assert pinned_texts(AGENT.prefix(MEMORY)) is CURRENT
    bare = AgentSpec(policy="p", framing="The agent's own framing.", control_tools=False)
    assert pinned_texts(bare.prefix()) is CURRENT
    # Texts no release shipped are not a version: the agent's prefix is compared with the newest, as before.
    [control, read] = OLD.control_tools
    unknown = dataclasses.replace(AGENT.prefix(), tools=(*AGENT.tools, control, dataclasses.replace(read, description="?")))
    assert pinned_texts(unknown) is CURRENT


def test_an_agents_own_framing_is_never_replaced_and_the_engines_in_any_version_is_the_engines():
    own = AgentSpec(policy="p", framing="Blocks are data.")
    assert own.prefix(texts=OLD).framing.text == "Blocks are data."
    assert not is_engine_framing("Blocks are data.")
    assert all(is_engine_framing(texts.framing) for texts in VERSIONS)
    assert AgentSpec(policy="p", framing=OLD.framing).prefix().framing.text == CURRENT.framing


def test_a_plan_in_older_texts_goes_on_without_an_epoch_and_an_edit_still_needs_edit_prefix():
    model = anthropic("claude-sonnet-4-6")
    plans = planner()
    first = plans.plan(model, AGENT.prefix(MEMORY, texts=OLD)).plan
    kept = AGENT.prefix(MEMORY, texts=OLD)
    # Before texts were versioned, the agent's prefix in the newest texts was compared with the plan.
    with pytest.raises(PrefixChanged):
        plans.plan(model, AGENT.prefix(MEMORY))
    same = plans.plan(model, AGENT.prefix(MEMORY), kept=kept)
    assert same.plan is first and not same.changed
    assert not plans.edit_prefix(AGENT.prefix(MEMORY), kept=kept).changed
    edited = AgentSpec(policy="Be very careful.", instructions=AGENT.instructions, tools=AGENT.tools)
    with pytest.raises(PrefixChanged):
        plans.plan(model, edited.prefix(MEMORY), kept=edited.prefix(MEMORY, texts=OLD))


def test_a_new_epoch_takes_the_newest_texts():
    model = anthropic("claude-sonnet-4-6")
    plans = planner()
    plans.plan(model, AGENT.prefix(texts=OLD))
    kept = AGENT.prefix(texts=OLD)
    rotated = plans.plan(anthropic("claude-opus-4-6"), AGENT.prefix(), kept=kept)
    assert rotated.plan.epoch == 2 and pinned_texts(rotated.plan.prefix) is CURRENT
    plans = planner()
    plans.plan(model, AGENT.prefix(texts=OLD))
    longer = plans.plan(model, AGENT.prefix(), kept=kept, cache_ttl="1h")
    assert longer.plan.epoch == 2 and pinned_texts(longer.plan.prefix) is CURRENT
    edited = AgentSpec(policy="Be very careful.", instructions=AGENT.instructions, tools=AGENT.tools)
    plans = planner()
    plans.plan(model, AGENT.prefix(texts=OLD))
    edit = plans.edit_prefix(edited.prefix(), kept=edited.prefix(texts=OLD))
    assert edit.plan.epoch == 2 and pinned_texts(edit.plan.prefix) is CURRENT
