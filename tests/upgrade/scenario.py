"""What the upgrade fixtures hold, and the steps that write them and continue them.

Kept to the public API every tree since the fixtures began shares (``Engine``, ``AgentSpec``,
``Session`` and the HTTP ``Client``): ``write_fixture.py`` runs these steps under the
tree that writes a fixture, and the tests run them again under HEAD. A session is driven
the same way over the library and over HTTP.
"""

from __future__ import annotations

from typing import Any

from contextwright.events import AssistantMessage, ToolCall

TOOL = {"name": "run_tests", "description": "Run the test suite", "input_schema": {"type": "object", "properties": {}}}

SESSIONS: tuple[dict[str, Any], ...] = (
    # The agent as a caller writes it: default framing, the engine's control tools, a memory snapshot.
    {
        "id": "lib-tools",
        "via": "library",
        "agent": {
            "policy": "You are a careful coding agent. Never push to main.",
            "instructions": "Run the tests first.",
            "tools": [TOOL],
        },
        "memory": {"style": "The project uses pytest and ruff."},
    },
    # No control tools: only the framing is the engine's.
    {
        "id": "lib-bare",
        "via": "library",
        "agent": {"policy": "You answer questions about the code.", "tools": [TOOL], "control_tools": False},
        "memory": {},
    },
    {
        "id": "svc-tools",
        "via": "http",
        "tenant": "acme",
        "agent": {
            "policy": "You are a careful coding agent. Never push to main.",
            "instructions": "Run the tests first.",
            "tools": [TOOL],
        },
        "memory": {},
    },
)

MODEL = {"provider": "anthropic", "id": "claude-sonnet-4-6"}

FAILING_RUN = "\n".join(
    [f"tests/test_mod.py::test_case_{i} PASSED" for i in range(120)]
    + ["tests/test_mod.py::test_parse FAILED", "E   AssertionError: expected 3, got 4", "=== 1 failed, 120 passed in 2.31s ==="]
)


def agent_spec(data: dict[str, Any]) -> Any:
    """The AgentSpec of a session's recorded agent, as its caller wrote it (default framing)."""
    from contextwright.runtime import AgentSpec, Tool

    return AgentSpec(
        policy=data["policy"],
        instructions=data.get("instructions", ""),
        tools=tuple(Tool(t["name"], t["description"], t["input_schema"]) for t in data.get("tools", ())),
        control_tools=data.get("control_tools", True),
    )


def model() -> Any:
    """The model every fixture session runs on."""
    from contextwright import models

    return models.anthropic(MODEL["id"])


CONTINUED = 3
"""The number of the first turn HEAD adds to a fixture's session."""


def turn(session: Any, n: int, *, tools: bool) -> None:
    """One turn: a question, a test run whose long output is stored whole, a working-state update, an answer."""
    session.user(f"Turn {n}: CI fails on main. Fix it without changing the public API.")
    session.next_request()
    run = ToolCall(id=f"run-{n}", name="run_tests", arguments={})
    session.adapter.record_assistant(AssistantMessage(text="Running the tests.", tool_calls=(run,)))
    session.tool_result(run.id, FAILING_RUN, exit_code=1)
    session.next_request()
    if tools:
        note = ToolCall(
            id=f"note-{n}", name="context_update_working_state", arguments={"add_constraints": [f"Keep the API ({n})."]}
        )
        session.adapter.record_assistant(AssistantMessage(text="Noting the constraint.", tool_calls=(note,)))
        session.next_request()
    session.adapter.record_assistant(AssistantMessage(text=f"test_parse fails on an off-by-one; fixed in turn {n}."))


def history(session: Any, *, tools: bool) -> None:
    """What a fixture's session records before the upgrade: turns, a steering note, a compaction, a turn after it."""
    turn(session, 0, tools=tools)
    turn(session, 1, tools=tools)
    session.user("Keep the parser's public names as they are.", steering=True)
    session.next_request()
    session.adapter.record_assistant(AssistantMessage(text="Understood: the public names stay."))
    session.compact()
    turn(session, 2, tools=tools)
