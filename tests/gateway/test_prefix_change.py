"""A client that changes its tools or system text mid-conversation: the run goes on in a new epoch, never a new run."""

from __future__ import annotations

import copy
import json
from typing import Any

import httpx2
import pytest
from test_observe import ANSWER_1, ANSWER_2, CC_SESSION, FIRST, SECOND, TOOLS, claude_body, post
from typer.testing import CliRunner

from contextwright.cli import app as cli_app
from contextwright.gateway.reconcile import prefix_change_note
from contextwright.items.region_a import READ_TOOL_NAME, ToolSpec
from contextwright.runtime.engine import Engine
from contextwright.runtime.reopen import reopen
from contextwright.runtime.spec import AgentSpec
from contextwright.testing.upstream import Reply, anthropic_message, responses_answer

PLAN_TOOL = {"name": "ExitPlanMode", "description": "Leave plan mode.", "input_schema": {"type": "object"}}


def _epochs(gateway: Any, session_id: str) -> tuple[list[Any], list[Any]]:
    """The session's epoch events (the first plan, then rotations) and its built requests."""
    events = gateway.events(session_id)
    epochs = [e.payload for e in events if e.type in ("context.plan.created", "context.epoch.rotated")]
    built = [e.payload for e in events if e.type == "context.request.built"]
    return epochs, built


def _rebuilt(gateway: Any, session_id: str, index: int, wire: str) -> dict[str, Any]:
    """The request ``index`` of the session as ``inspect`` rebuilds it from the log, on ``wire``."""
    args = ["inspect", str(gateway.store), "-s", session_id, "-r", str(index), "--wire", wire]
    result = CliRunner().invoke(cli_app, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)  # type: ignore[no-any-return]


def _check_rebuilt(gateway: Any, session_id: str, built: list[Any]) -> None:
    session = reopen(Engine(gateway.log), session_id)
    for index, record in enumerate(built):
        assert session.inspect(index).sha256() == record.request_sha256  # byte for byte, as recorded


@pytest.mark.parametrize("mode", ["manage", "observe"])
def test_anthropic_client_changing_its_tools_and_system_goes_on_in_a_new_epoch(make_gateway: Any, mode: str) -> None:
    gateway = make_gateway(mode=mode)
    gateway.replies(Reply(body=ANSWER_1), Reply(body=ANSWER_2), Reply(body=anthropic_message({"type": "text", "text": "Done."})))
    assert post(gateway.url, claude_body(copy.deepcopy(FIRST))).status_code == 200
    # The client switches mode: a tool more, the Read tool gone, and another system text.
    second = claude_body(copy.deepcopy(SECOND))
    second["tools"] = [TOOLS[0], PLAN_TOOL]
    second["system"] = [{"type": "text", "text": "You are a coding agent in plan mode."}]
    response = post(gateway.url, second)
    assert response.status_code == 200 and response.content  # never an error to the client
    gateway.settled(CC_SESSION, 2)

    assert [s for s in gateway.log.sessions() if s.startswith(CC_SESSION)] == [CC_SESSION]  # one run
    epochs, built = _epochs(gateway, CC_SESSION)
    assert [e.epoch for e in epochs] == [1, 2] and [b.epoch for b in built] == [1, 2]
    assert epochs[1].reason == "prefix_edited"
    assert epochs[1].note == (
        "the client changed its prefix: tools added: ExitPlanMode; tools removed: Read; system text changed"
    )
    assert built[1].prefix_sha256 != built[0].prefix_sha256 == epochs[0].prefix_sha256
    assert built[1].prefix_sha256 == epochs[1].prefix_sha256
    _check_rebuilt(gateway, CC_SESSION, built)
    rebuilt = _rebuilt(gateway, CC_SESSION, 1, "anthropic")
    names = [t["name"] for t in rebuilt["tools"]]
    assert names[:2] == ["Bash", "ExitPlanMode"] and "Read" not in names
    assert "plan mode" in json.dumps(rebuilt["system"])
    # Every turn is recorded once, in the one run.
    types = gateway.types(CC_SESSION)
    assert types.count("message.user") == 1 and types.count("tool.result") == 1
    if mode == "manage":
        sent = gateway.upstream.received[-1].json
        assert sent["tools"] == rebuilt["tools"] and sent["system"] == rebuilt["system"]
        assert sent["messages"] == rebuilt["messages"]
        assert names == ["Bash", "ExitPlanMode", READ_TOOL_NAME]  # the read tool stays pinned after the client's
    # A restarted gateway reads the run back with its new prefix: the next request continues it.
    third = copy.deepcopy(second)
    third["messages"] += [{"role": "assistant", "content": ANSWER_2["content"]}, {"role": "user", "content": "Thanks."}]
    from contextwright.gateway import GatewayConfig, create_gateway_app
    from contextwright.testing.service import serving

    config = GatewayConfig(
        store=str(gateway.store), anthropic_upstream=gateway.upstream_url, openai_upstream=gateway.upstream_url, mode=mode
    )
    with serving(create_gateway_app(config)) as url:
        assert post(url, third).status_code == 200
        gateway.settled(CC_SESSION, 3)
    assert [s for s in gateway.log.sessions() if s.startswith(CC_SESSION)] == [CC_SESSION]
    epochs, built = _epochs(gateway, CC_SESSION)
    assert len(epochs) == 2 and [b.epoch for b in built] == [1, 2, 2]


def test_responses_client_changing_its_tools_goes_on_in_a_new_epoch(make_gateway: Any) -> None:
    gateway = make_gateway(mode="manage")
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "shell", "arguments": '{"command":["ls"]}'}
    message = {
        "type": "message",
        "id": "msg_2",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
    }
    gateway.replies(
        Reply(body=responses_answer(call, response_id="resp_1")), Reply(body=responses_answer(message, response_id="resp_2"))
    )
    shell = {
        "type": "function",
        "name": "shell",
        "description": "Run a command",
        "parameters": {"type": "object", "properties": {}},
    }
    body: dict[str, Any] = {
        "model": "gpt-5",
        "instructions": "You are Codex.",
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]}],
        "tools": [shell],
        "stream": False,
        "store": False,
        "prompt_cache_key": "0199a1b2-conv",
    }
    headers = {"authorization": "Bearer sk-openai-test"}
    assert httpx2.post(gateway.url + "/v1/responses", json=body, headers=headers, timeout=30).status_code == 200
    patch = {
        "type": "function",
        "name": "apply_patch",
        "description": "Edit files",
        "parameters": {"type": "object", "properties": {}},
    }
    changed_shell = {**shell, "description": "Run a command in the sandbox"}
    body["tools"] = [changed_shell, patch]
    body["input"] = body["input"] + [call, {"type": "function_call_output", "call_id": "call_1", "output": "a.txt\nb.txt"}]
    response = httpx2.post(gateway.url + "/v1/responses", json=body, headers=headers, timeout=30)
    assert response.status_code == 200
    session_id = "openai/0199a1b2-conv"
    gateway.settled(session_id, 2)

    assert [s for s in gateway.log.sessions() if s.startswith(session_id)] == [session_id]
    epochs, built = _epochs(gateway, session_id)
    assert [e.epoch for e in epochs] == [1, 2] and [b.epoch for b in built] == [1, 2]
    assert epochs[1].note == "the client changed its prefix: tools added: apply_patch; tools changed: shell"
    assert built[1].prefix_sha256 != built[0].prefix_sha256
    _check_rebuilt(gateway, session_id, built)
    sent = gateway.upstream.received[-1].json
    rebuilt = _rebuilt(gateway, session_id, 1, "openai_responses")
    assert sent["tools"] == rebuilt["tools"] and sent["input"] == rebuilt["input"]
    assert [t["name"] for t in sent["tools"]] == ["shell", "apply_patch", READ_TOOL_NAME]
    assert sent["tools"][0]["description"] == "Run a command in the sandbox"


def test_a_rewritten_history_with_new_tools_still_opens_a_new_run(make_gateway: Any) -> None:
    gateway = make_gateway(mode="manage")
    gateway.replies(Reply(body=ANSWER_1), Reply(body=ANSWER_2))
    post(gateway.url, claude_body(copy.deepcopy(FIRST)))
    gateway.settled(CC_SESSION, 1)
    # /clear, then a new first message with the plan-mode tools: nothing of the run continues.
    cleared = claude_body([{"role": "user", "content": "Start over."}])
    cleared["tools"] = [*TOOLS, PLAN_TOOL]
    assert post(gateway.url, cleared).status_code == 200
    gateway.settled(f"{CC_SESSION}~2", 1)
    epochs, _ = _epochs(gateway, CC_SESSION)
    assert len(epochs) == 1


def test_the_note_names_what_changed_by_tool_name() -> None:
    def spec(name: str, description: str = "d") -> ToolSpec:
        return ToolSpec(name=name, description=description, input_schema={"type": "object"})

    old = AgentSpec(policy="", instructions="a", tools=(spec("x"), spec("y"), spec(READ_TOOL_NAME)), control_tools=False)
    same = AgentSpec(policy="", instructions="a", tools=(spec("x"), spec("y")), control_tools=False)
    assert prefix_change_note(old, AgentSpec(policy="", instructions="b", tools=old.tools, control_tools=False)) == (
        "the client changed its prefix: system text changed"
    )
    reordered = AgentSpec(policy="", instructions="a", tools=(spec("y"), spec("x")), control_tools=False)
    assert prefix_change_note(same, reordered) == "the client changed its prefix: tools reordered"
    edited = AgentSpec(policy="", instructions="a", tools=(spec("x", "other"), spec("z")), control_tools=False)
    assert prefix_change_note(old, edited) == "the client changed its prefix: tools added: z; tools removed: y; tools changed: x"
