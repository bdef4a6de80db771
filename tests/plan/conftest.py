from __future__ import annotations

import pytest

from contextwright.assembly.envelope import FRAMING_TEXT
from contextwright.budget.estimator import HeuristicEstimator
from contextwright.items import AgentInstructions, Framing, MemoryFact, MemorySnapshot, PlatformPolicy, ToolSpec
from contextwright.plan import Prefix

SECRET = b"s" * 32


@pytest.fixture
def secret() -> bytes:
    return SECRET


@pytest.fixture
def make_tool():
    return tool


def tool(name: str, description: str = "A tool.") -> ToolSpec:
    return ToolSpec(
        name=name, description=description, input_schema={"type": "object", "properties": {"path": {"type": "string"}}}
    )


@pytest.fixture
def prefix() -> Prefix:
    return Prefix(
        policy=PlatformPolicy(text="You are a careful coding agent. Never push to main."),
        framing=Framing(text=FRAMING_TEXT),
        instructions=AgentInstructions(text="Run the tests before you claim a fix works."),
        tools=(tool("run_tests"), tool("read_file"), tool("deploy_preview")),
        memory=MemorySnapshot(facts=(MemoryFact(id="m1", text="The project uses Python 3.11."),)),
    )


@pytest.fixture
def estimator() -> HeuristicEstimator:
    return HeuristicEstimator()
