"""What the engine's function form or its log cannot carry reaches the provider as the client sent it, in manage mode.

Codex declares a hosted web search and a namespace of sub-agent tools; a Codex model edits
files with a free-form (grammar) tool; Claude can be given server tools. Sent in the engine's
function form they would lose their meaning (a web search with no parameters, a namespace
with no tools), so the engine pins the client's declaration and its wire sends it unchanged,
and a free-form tool's calls go back as the custom items the provider answered with. An image
in the conversation, which the log keeps only a placeholder for, sends the client's own request.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from typer.testing import CliRunner

from contextwright.cli import app as cli_app
from contextwright.items.region_a import READ_TOOL_NAME, AgentInstructions, Framing, PlatformPolicy, ToolSpec
from contextwright.plan.plan import Prefix
from contextwright.testing.upstream import Reply, anthropic_message, responses_answer

SHELL = {
    "type": "function",
    "name": "exec_command",
    "description": "Run a command.",
    "strict": False,
    "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]},
}
WEB_SEARCH = {"type": "web_search", "external_web_access": True}
NAMESPACE = {
    "type": "namespace",
    "name": "multi_agent_v1",
    "description": "Tools for spawning and managing sub-agents.",
    "tools": [
        {
            "type": "function",
            "name": "spawn_agent",
            "description": "Start a sub-agent.",
            "strict": False,
            "parameters": {"type": "object", "properties": {"task": {"type": "string"}}},
        }
    ],
}
APPLY_PATCH = {
    "type": "custom",
    "name": "apply_patch",
    "description": "Edit files with a patch.",
    "format": {"type": "grammar", "syntax": "lark", "definition": 'start: "*** Begin Patch" /(.|\\n)*/ "*** End Patch"'},
}
STRICT = {
    "type": "function",
    "name": "set_status",
    "description": "Set the status.",
    "strict": True,
    "parameters": {
        "type": "object",
        "properties": {"status": {"type": "string"}},
        "required": ["status"],
        "additionalProperties": False,
    },
}
PATCH = "*** Begin Patch\n*** Add File: notes.txt\n+done\n*** End Patch"


def _responses_body(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "model": "gpt-5",
        "instructions": "You are a coding agent.",
        "input": items,
        "tools": [SHELL, WEB_SEARCH, NAMESPACE, APPLY_PATCH, STRICT],
        "store": False,
        "stream": False,
        "prompt_cache_key": "native-tools",
    }


def _post(url: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
    return httpx.post(url + path, content=json.dumps(body), headers={"content-type": "application/json", **headers}, timeout=30)


def test_hosted_namespace_free_form_and_strict_tools_go_upstream_as_declared(make_gateway: Any) -> None:
    gateway = make_gateway(mode="manage")
    call = {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_patch", "name": "apply_patch", "input": PATCH}
    gateway.replies(
        Reply(body=responses_answer(call, response_id="resp_1")),
        Reply(
            body=responses_answer(
                {
                    "type": "message",
                    "id": "msg_1",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": "Patched.", "annotations": []}],
                },
                response_id="resp_2",
            )
        ),
    )
    auth = {"authorization": "Bearer sk-native-tools"}
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Add notes.txt."}]}
    first = _post(gateway.url, "/v1/responses", _responses_body([user]), auth)
    assert first.status_code == 200, first.text
    output = {"type": "custom_tool_call_output", "call_id": "call_patch", "output": "Success. Updated: A notes.txt"}
    second = _post(gateway.url, "/v1/responses", _responses_body([user, call, output]), auth)
    assert second.status_code == 200, second.text

    sent = [r.json for r in gateway.upstream.conversations]
    assert all(r.headers.get("x-contextwright-mode") is None for r in gateway.upstream.conversations)
    for body in sent:
        # The client's five tools, each as declared (keys sorted), then the engine's read tool.
        assert body["tools"][:5] == [SHELL, WEB_SEARCH, NAMESPACE, APPLY_PATCH, STRICT]
        assert [t["name"] for t in body["tools"][5:]] == [READ_TOOL_NAME]
    # The free-form call and its output go back as the custom items the provider answered with.
    custom = [item for item in sent[1]["input"] if item.get("type", "").startswith("custom_tool_call")]
    assert [item["type"] for item in custom] == ["custom_tool_call", "custom_tool_call_output"]
    assert custom[0] == {"type": "custom_tool_call", "call_id": "call_patch", "name": "apply_patch", "input": PATCH}
    assert custom[1]["call_id"] == "call_patch" and "Success. Updated: A notes.txt" in custom[1]["output"]  # in its envelope
    assert not any(item.get("type") == "function_call" for item in sent[1]["input"])
    # The log rebuilds what went upstream: the declarations and the custom items with it.
    [session] = gateway.log.sessions()
    gateway.settled(session, 2)
    inspected = CliRunner().invoke(
        cli_app, ["inspect", str(gateway.store), "-s", session, "-r", "1", "--wire", "openai_responses"]
    )
    assert inspected.exit_code == 0, inspected.output
    rebuilt = json.loads(inspected.output)
    assert {k: rebuilt[k] for k in ("tools", "input")} == {k: sent[1][k] for k in ("tools", "input")}


def test_claude_server_tools_go_upstream_as_declared_without_the_clients_cache_mark(make_gateway: Any) -> None:
    gateway = make_gateway(mode="manage")
    gateway.replies(Reply(body=anthropic_message({"type": "text", "text": "Searched."})))
    search = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
    bash = {
        "name": "Bash",
        "description": "Run a command.",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
        "cache_control": {"type": "ephemeral"},
    }
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": "You are a coding agent.",
        "tools": [bash, search],
        "messages": [{"role": "user", "content": "Find the release notes."}],
        "metadata": {"user_id": "native-server-tools"},
    }
    response = _post(gateway.url, "/v1/messages", body, {"x-api-key": "sk-ant-native"})
    assert response.status_code == 200, response.text
    [sent] = [r.json for r in gateway.upstream.conversations]
    by_name = {t["name"]: t for t in sent["tools"]}
    assert {k: v for k, v in by_name["web_search"].items() if k != "cache_control"} == search
    assert by_name["Bash"]["input_schema"] == bash["input_schema"]


def test_a_native_declaration_is_pinned_with_the_tool_and_read_back_from_the_plan() -> None:
    native = ToolSpec(
        name="web_search",
        description="",
        input_schema={"type": "object", "properties": {}},
        native={"wire": "openai_responses", "tool": WEB_SEARCH},
    )
    plain = ToolSpec(name="exec_command", description="Run a command.", input_schema=SHELL["parameters"])
    assert "native" not in plain.to_dict()  # a function's pinned form is as it always was
    texts = {"policy": PlatformPolicy(text=""), "framing": Framing(text=""), "instructions": AgentInstructions(text="")}
    prefix = Prefix(**texts, tools=(plain, native))
    assert Prefix.from_content(prefix.content()).tools == (plain, native)
    assert Prefix(**texts, tools=(plain,)).sha256() != prefix.sha256()


IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgoAAAANSUhEUgAAAAE="}}


def test_an_image_the_log_cannot_show_sends_the_clients_request_as_it_came(make_gateway: Any) -> None:
    gateway = make_gateway(mode="manage")
    gateway.replies(
        Reply(
            body=anthropic_message(
                {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "shot.png"}}, stop_reason="tool_use"
            )
        ),
        Reply(body=anthropic_message({"type": "text", "text": "The button is red."})),
    )
    read = {
        "name": "Read",
        "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}},
    }
    history: list[dict[str, Any]] = [{"role": "user", "content": "What colour is the button in shot.png?"}]

    def body() -> dict[str, Any]:
        return {"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": "An agent.", "tools": [read], "messages": history}

    headers = {"x-api-key": "sk-ant-image", "x-contextwright-session": "agents/image"}
    first = _post(gateway.url, "/v1/messages", body(), headers)
    assert first.status_code == 200 and "x-contextwright-mode" not in first.headers  # the engine's request
    history += [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "shot.png"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [IMAGE]}]},
    ]
    second = _post(gateway.url, "/v1/messages", body(), headers)
    assert second.status_code == 200
    # The image reaches the model: the client's own request went, and the run says why.
    assert second.headers["x-contextwright-mode"] == "passthrough; reason=unsent_content"
    assert gateway.upstream.conversations[-1].json["messages"][-1]["content"][0]["content"] == [IMAGE]
    gateway.settled("agents/image", 2)
    passed = [e.payload for e in gateway.events("agents/image") if e.type == "gateway.request.passed"]
    assert [(p.reason, p.message) for p in passed] == [("unsent_content", "blocks the log keeps no text for: image")]


def test_a_server_tools_call_and_result_in_an_answer_send_the_clients_request_as_it_came(make_gateway: Any) -> None:
    gateway = make_gateway(mode="manage")
    gateway.replies(Reply(body=anthropic_message({"type": "text", "text": "Version 2.1 added the flag."})))
    search = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
    used = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "release notes"}}
    found = {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": [
            {"type": "web_search_result", "url": "https://example.org/notes", "title": "Notes", "encrypted_content": "Eo8B"}
        ],
    }
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "tools": [search],
        "messages": [
            {"role": "user", "content": "Find the release notes."},
            {"role": "assistant", "content": [used, found, {"type": "text", "text": "Found them."}]},
            {"role": "user", "content": "Which version added the flag?"},
        ],
    }
    response = _post(
        gateway.url, "/v1/messages", body, {"x-api-key": "sk-ant-search", "x-contextwright-session": "agents/search"}
    )
    assert response.status_code == 200
    assert response.headers["x-contextwright-mode"] == "passthrough; reason=unsent_content"
    assert gateway.upstream.conversations[-1].json["messages"][1]["content"][:2] == [used, found]
