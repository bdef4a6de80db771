"""What the engine's function form or its log cannot carry reaches the provider as the client sent it, in manage mode.

Codex declares a hosted web search and a namespace of sub-agent tools; a Codex model edits
files with a free-form (grammar) tool; Claude can be given server tools. Sent in the engine's
function form they would lose their meaning (a web search with no parameters, a namespace
with no tools), so the engine pins the client's declaration and its wire sends it unchanged,
and a free-form tool's calls go back as the custom items the provider answered with. An image
in the conversation, which the log keeps only a placeholder for, sends the client's own request;
so does an item the log keeps nothing of (a hosted web search's call, a Codex compaction item, a
chat answer's audio reference), while messages, calls, their outputs and reasoning stay managed,
a call's namespace and a message's phase with them, and a chat custom tool call as a Responses
one. A client chaining on a stored answer that held such an item sends its requests as they came.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from contextwright.cli import app as cli_app
from contextwright.events.registry import payload_json
from contextwright.gateway.answers import AnswerReader
from contextwright.gateway.recorder import ResponseIds
from contextwright.items.region_a import READ_TOOL_NAME, AgentInstructions, Framing, PlatformPolicy, ToolSpec
from contextwright.plan.plan import Prefix
from contextwright.testing.upstream import Reply, anthropic_message, chat_answer, responses_answer

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
    assert [(p.reason, p.message) for p in passed] == [("unsent_content", "content the log keeps no text for: image")]


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


REASONING_ITEM = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAAABo-opaque"}
USER = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "What changed in the 2.1 release?"}]}
WEB_SEARCH_CALL = {
    "type": "web_search_call",
    "id": "ws_1",
    "status": "completed",
    "action": {"type": "search", "query": "release 2.1 notes"},
}
FOUND = {
    "type": "message",
    "id": "msg_found",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "Version 2.1 added the flag.", "annotations": []}],
}


def _said(text: str, number: int) -> dict[str, Any]:
    content = [{"type": "output_text", "text": text, "annotations": []}]
    return {"type": "message", "id": f"msg_{number}", "role": "assistant", "status": "completed", "content": content}


def _asked(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def _passed(gateway: Any, session: str) -> list[tuple[str, str]]:
    return [(e.payload.reason, e.payload.message) for e in gateway.events(session) if e.type == "gateway.request.passed"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_hosted_web_search_in_a_codex_answer_sends_the_clients_requests_as_they_came(make_gateway: Any, stream: bool) -> None:
    gateway = make_gateway(mode="manage")
    gateway.replies(
        Reply(body=responses_answer(REASONING_ITEM, WEB_SEARCH_CALL, FOUND, response_id="resp_1")),
        Reply(body=responses_answer(_said("It is on by default.", 2), response_id="resp_2")),
        Reply(body=responses_answer(_said("Turn it off in the settings.", 3), response_id="resp_3")),
    )
    auth = {"authorization": "Bearer sk-web-search"}
    history: list[dict[str, Any]] = [USER]

    def body() -> dict[str, Any]:
        return {**_responses_body(history), "prompt_cache_key": "web-search-session", "stream": stream}

    first = _post(gateway.url, "/v1/responses", body(), auth)
    assert first.status_code == 200, first.text
    assert "x-contextwright-mode" not in first.headers
    assert gateway.upstream.conversations[0].json["prompt_cache_key"].startswith("cw-")  # the engine's request
    # Codex keeps the answer's items, the hosted search among them, and sends them back.
    history += [REASONING_ITEM, WEB_SEARCH_CALL, FOUND, _asked("Is the flag on by default?")]
    sent = json.dumps(body())
    second = httpx.post(gateway.url + "/v1/responses", content=sent, headers={"content-type": "application/json", **auth})
    assert second.status_code == 200, second.text
    # The log keeps no web search: the model gets the client's request, the search in it.
    assert second.headers["x-contextwright-mode"] == "passthrough; reason=unsent_content"
    assert gateway.upstream.conversations[1].body == sent.encode()
    history += [_said("It is on by default.", 2), _asked("How do I turn it off?")]
    third = _post(gateway.url, "/v1/responses", body(), auth)
    assert third.status_code == 200, third.text
    assert third.headers["x-contextwright-mode"] == "passthrough; reason=unsent_content"
    assert gateway.upstream.conversations[2].json == body()

    # One run all along (the answer with the search continued it), every turn recorded.
    session = "openai/web-search-session"
    assert gateway.log.sessions() == [session]
    types = gateway.settled(session, 3)
    assert types.count("message.user") == 3 and types.count("context.request.built") == 1
    passed = _passed(gateway, session)
    assert [reason for reason, _ in passed] == ["unsent_content", "unsent_content"]
    assert all(message.endswith(": web_search_call") for _, message in passed)


UNCARRIED = {
    # Codex's own remote compaction: the item stands for the whole earlier history.
    "compaction": [{"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAAABo-compacted"}, USER],
    "item_reference": [USER, {"id": "msg_stored"}],  # an item the provider stored, by id (the type may be left out)
    "image_generation_call": [
        USER,
        {"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": "iVBORw0KGgo="},
        _said("Here is the logo.", 1),
        _asked("Make it blue."),
    ],
    "local_shell_call, local_shell_call_output": [
        USER,
        {
            "type": "local_shell_call",
            "id": "lsh_1",
            "call_id": "call_sh",
            "status": "completed",
            "action": {"type": "exec", "command": ["ls"], "env": {}},
        },
        {"type": "local_shell_call_output", "id": "call_sh", "output": "notes.txt"},
    ],
    "mcp_call, mcp_list_tools": [
        USER,
        {"type": "mcp_list_tools", "id": "mcpl_1", "server_label": "docs", "tools": []},
        {"type": "mcp_call", "id": "mcp_1", "server_label": "docs", "name": "search", "arguments": "{}", "output": "found"},
        _said("The docs say so.", 1),
        _asked("Thanks. And the changelog?"),
    ],
    # A call a program item made, and one run asynchronously: the engine re-renders calls as the model's own.
    "caller": [
        USER,
        {
            "type": "function_call",
            "call_id": "call_p",
            "name": "exec_command",
            "arguments": "{}",
            "caller": {"type": "program", "caller_id": "prog_1"},
        },
        {"type": "function_call_output", "call_id": "call_p", "output": "ok"},
    ],
    "async": [
        USER,
        {"type": "function_call", "call_id": "call_a", "name": "exec_command", "arguments": "{}", "async": True},
        {"type": "function_call_output", "call_id": "call_a", "output": "started"},
    ],
}


@pytest.mark.parametrize("kinds", list(UNCARRIED))
def test_input_items_the_log_cannot_carry_send_the_clients_request_as_it_came(make_gateway: Any, kinds: str) -> None:
    gateway = make_gateway(mode="manage")
    gateway.replies(Reply(body=responses_answer(_said("Done.", 9))))
    body = {**_responses_body(UNCARRIED[kinds]), "prompt_cache_key": "uncarried"}
    sent = json.dumps(body)
    response = httpx.post(
        gateway.url + "/v1/responses",
        content=sent,
        headers={"content-type": "application/json", "authorization": "Bearer sk-uncarried"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    assert response.headers["x-contextwright-mode"] == "passthrough; reason=unsent_content"
    [upstream] = gateway.upstream.conversations
    assert upstream.body == sent.encode()
    gateway.settled("openai/uncarried", 1)
    [(reason, message)] = _passed(gateway, "openai/uncarried")
    assert (reason, message) == ("unsent_content", "content the log keeps no text for: " + kinds)


def test_messages_calls_outputs_and_reasoning_are_carried_and_the_engines_request_goes(make_gateway: Any) -> None:
    gateway = make_gateway(mode="manage")
    gateway.replies(Reply(body=responses_answer(_said("All done.", 4))))
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_ls",
        "name": "exec_command",
        "arguments": json.dumps({"cmd": "ls"}),
        "status": "completed",
        "caller": {"type": "direct"},  # the model's own call: nothing the engine's re-rendered call lacks
    }
    patch = {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_patch", "name": "apply_patch", "input": PATCH}
    items = [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Sandbox: none."}]},
        USER,
        REASONING_ITEM,
        call,
        {"type": "function_call_output", "call_id": "call_ls", "output": "notes.txt"},
        patch,
        {"type": "custom_tool_call_output", "call_id": "call_patch", "output": "Success."},
        _said("Patched.", 3),
        {"role": "user", "content": "Thanks."},  # a message with no type
    ]
    body = {**_responses_body(items), "prompt_cache_key": "carried"}
    response = _post(gateway.url, "/v1/responses", body, {"authorization": "Bearer sk-carried"})
    assert response.status_code == 200, response.text
    assert "x-contextwright-mode" not in response.headers
    sent = gateway.upstream.conversations[0].json
    assert sent["prompt_cache_key"].startswith("cw-")
    assert [i for i in sent["input"] if i.get("type") == "reasoning"] == [REASONING_ITEM]  # byte for byte
    gateway.settled("openai/carried", 4)
    assert _passed(gateway, "openai/carried") == []


def test_what_a_chat_answer_holds_beyond_text_and_tool_calls_sends_the_clients_request_as_it_came(
    make_gateway: Any,
) -> None:
    gateway = make_gateway(mode="manage")
    gateway.replies(Reply(body=chat_answer("It was about the weather.")))
    body = {
        "model": "gpt-4o-audio-preview",
        "messages": [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "Say hello out loud."},
            {"role": "assistant", "content": None, "audio": {"id": "audio_1"}},  # a spoken answer, by reference
            {"role": "user", "content": "What was that about?"},
        ],
    }
    sent = json.dumps(body)
    headers = {"content-type": "application/json", "authorization": "Bearer sk-chat", "x-contextwright-session": "agents/audio"}
    response = httpx.post(gateway.url + "/v1/chat/completions", content=sent, headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    assert response.headers["x-contextwright-mode"] == "passthrough; reason=unsent_content"
    assert gateway.upstream.conversations[-1].body == sent.encode()
    gateway.settled("agents/audio", 2)
    [(reason, message)] = _passed(gateway, "agents/audio")
    assert reason == "unsent_content" and message.endswith(": audio")


def _inspected(gateway: Any, session: str, request: int, wire: str) -> dict[str, Any]:
    """The engine's request number ``request`` (from 0) of ``session`` as ``inspect`` rebuilds it from the log for ``wire``."""
    inspected = CliRunner().invoke(cli_app, ["inspect", str(gateway.store), "-s", session, "-r", str(request), "--wire", wire])
    assert inspected.exit_code == 0, inspected.output
    rebuilt: dict[str, Any] = json.loads(inspected.output)
    return rebuilt


CHAT_PATCH_TOOL = {
    "type": "custom",
    "custom": {
        "name": "apply_patch",
        "description": "Edit files with a patch.",
        "format": {"type": "grammar", "grammar": {"syntax": "lark", "definition": 'start: "*** Begin Patch" /(.|\\n)*/'}},
    },
}
CHAT_SHELL_TOOL = {
    "type": "function",
    "function": {"name": "exec_command", "description": "Run a command.", "parameters": SHELL["parameters"]},
}


def test_a_chat_custom_tool_call_is_carried_and_goes_back_as_a_custom_call(make_gateway: Any) -> None:
    gateway = make_gateway(mode="manage")
    custom_call = {"id": "call_patch", "type": "custom", "custom": {"name": "apply_patch", "input": PATCH}}
    function_call = {"id": "call_ls", "type": "function", "function": {"name": "exec_command", "arguments": '{"cmd": "ls"}'}}
    called = chat_answer("")
    called["choices"][0]["message"] = {"role": "assistant", "content": None, "tool_calls": [function_call, custom_call]}
    called["choices"][0]["finish_reason"] = "tool_calls"
    gateway.replies(Reply(body=called), Reply(body=chat_answer("Patched.")))
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Add notes.txt."},
    ]

    def body() -> dict[str, Any]:
        return {"model": "gpt-5", "messages": history, "tools": [CHAT_SHELL_TOOL, CHAT_PATCH_TOOL]}

    headers = {"authorization": "Bearer sk-chat-custom", "x-contextwright-session": "agents/chat-custom"}
    first = _post(gateway.url, "/v1/chat/completions", body(), headers)
    assert first.status_code == 200, first.text
    assert first.json()["choices"][0]["message"]["tool_calls"] == [function_call, custom_call]  # the client's answer as it came
    history += [
        {"role": "assistant", "content": None, "tool_calls": [function_call, custom_call]},
        {"role": "tool", "tool_call_id": "call_ls", "content": "README.md"},
        {"role": "tool", "tool_call_id": "call_patch", "content": "Success. Updated: A notes.txt"},
    ]
    second = _post(gateway.url, "/v1/chat/completions", body(), headers)
    assert second.status_code == 200, second.text
    # Readable, and the client's copy of the answer continues the run: both requests are the engine's.
    assert all("x-contextwright-mode" not in r.headers for r in (first, second))
    sent = gateway.upstream.conversations[1].json
    [answer] = [m for m in sent["messages"] if m["role"] == "assistant"]
    assert answer["tool_calls"] == [
        {"id": "call_ls", "type": "function", "function": {"name": "exec_command", "arguments": '{"cmd":"ls"}'}},
        {"id": "call_patch", "type": "custom", "custom": {"name": "apply_patch", "input": PATCH}},
    ]
    assert sent["tools"][:2] == [CHAT_SHELL_TOOL, CHAT_PATCH_TOOL]
    types = gateway.settled("agents/chat-custom", 2)
    assert gateway.log.sessions() == ["agents/chat-custom"] and types.count("context.request.built") == 2
    assert _passed(gateway, "agents/chat-custom") == []
    # The log rebuilds the request that went upstream, the custom call with it.
    rebuilt = _inspected(gateway, "agents/chat-custom", 1, "openai_chat")
    assert {k: sent[k] for k in rebuilt} == rebuilt


def test_a_chained_client_after_an_answer_with_a_hosted_search_sends_its_requests_as_they_came(make_gateway: Any) -> None:
    gateway = make_gateway(mode="manage")
    gateway.replies(
        Reply(body=responses_answer(WEB_SEARCH_CALL, FOUND, response_id="resp_1")),
        Reply(body=responses_answer(_said("It is on by default.", 2), response_id="resp_2")),
        Reply(body=responses_answer(_said("Turn it off in the settings.", 3), response_id="resp_3")),
    )
    auth = {"content-type": "application/json", "authorization": "Bearer sk-chained-search"}

    def send(items: list[dict[str, Any]], previous: str | None = None) -> tuple[httpx.Response, bytes]:
        body = {**_responses_body(items), "store": True, "prompt_cache_key": "chained-search"}
        if previous is not None:
            body["previous_response_id"] = previous
        sent = json.dumps(body).encode()
        return httpx.post(gateway.url + "/v1/responses", content=sent, headers=auth, timeout=30), sent

    first, _ = send([USER])
    assert first.status_code == 200 and "x-contextwright-mode" not in first.headers  # the engine's request
    # The client sends only what follows the stored answer, not the search it held: the engine's
    # request, built from the log, would lack it, so the client's goes (previous_response_id and all).
    for number, (previous, question) in enumerate(
        [("resp_1", "Is the flag on by default?"), ("resp_2", "How do I turn it off?")], start=1
    ):
        response, sent = send([_asked(question)], previous)
        assert response.status_code == 200, response.text
        assert response.headers["x-contextwright-mode"] == "passthrough; reason=unsent_content"
        assert gateway.upstream.conversations[number].body == sent
    session = "openai/chained-search"
    assert gateway.log.sessions() == [session]  # the chain continued the run
    types = gateway.settled(session, 3)
    assert types.count("message.user") == 3 and types.count("context.request.built") == 1
    message = "content the log keeps no text for: web_search_call"
    assert _passed(gateway, session) == [("unsent_content", message)] * 2
    # Noted in the store with the response ids: a worker that never saw the answers knows too.
    assert ResponseIds(gateway.log).unsent("resp_2") == ("web_search_call",)
    assert ResponseIds(gateway.log).unsent("resp_unknown") == ()


def test_a_conversation_the_provider_stores_and_the_log_does_not_sends_the_clients_requests_as_they_came(
    make_gateway: Any,
) -> None:
    # A client chaining on a response no gateway on the store recorded (made before the gateway was put
    # in front of it, say): the engine's request, built from the new input alone, would drop the stored
    # conversation before it; so its request goes as it came, and so do those chaining on its answers.
    gateway = make_gateway(mode="manage")
    gateway.replies(
        Reply(body=responses_answer(_said("It is on by default.", 1), response_id="resp_b1")),
        Reply(body=responses_answer(_said("Turn it off in the settings.", 2), response_id="resp_b2")),
        Reply(body=responses_answer(_said("Version 2.1 added it.", 3), response_id="resp_b3")),
    )
    auth = {"content-type": "application/json", "authorization": "Bearer sk-stored-conversation"}

    def send(question: str, **chain: Any) -> tuple[httpx.Response, bytes]:
        body = {**_responses_body([_asked(question)]), "store": True, "prompt_cache_key": "stored", **chain}
        sent = json.dumps(body).encode()
        return httpx.post(gateway.url + "/v1/responses", content=sent, headers=auth, timeout=30), sent

    for number, chain in enumerate(
        [
            {"previous_response_id": "resp_made_before"},  # no gateway recorded it
            {"previous_response_id": "resp_b1"},  # recorded, but its run begins with a stored conversation
            {"conversation": {"id": "conv_abc"}},  # the Conversations API
        ]
    ):
        response, sent = send(f"Question {number}?", **chain)
        assert response.status_code == 200, response.text
        assert response.headers["x-contextwright-mode"] == "passthrough; reason=unsent_content"
        assert gateway.upstream.conversations[number].body == sent
    passed = [p for run in gateway.log.sessions() for p in _passed(gateway, run)]
    assert passed == [("unsent_content", "content the log keeps no text for: stored_conversation")] * 3
    assert not any(e.type == "context.request.built" for run in gateway.log.sessions() for e in gateway.log.read(run))


SPAWN = {
    "type": "function_call",
    "id": "fc_spawn",
    "call_id": "call_spawn",
    "namespace": "multi_agent_v1",
    "name": "spawn_agent",
    "arguments": json.dumps({"task": "Write the release notes."}),
    "status": "completed",
}


def _phased(text: str, number: int, phase: str) -> dict[str, Any]:
    return {**_said(text, number), "phase": phase}


def test_a_namespaced_call_and_the_phase_of_a_message_are_carried_and_sent_back(make_gateway: Any) -> None:
    gateway = make_gateway(mode="manage")
    commentary = _phased("I will start a helper for the notes.", 1, "commentary")
    final = _phased("The helper wrote the notes.", 2, "final_answer")
    gateway.replies(
        Reply(body=responses_answer(REASONING_ITEM, commentary, SPAWN, response_id="resp_1")),
        Reply(body=responses_answer(final, response_id="resp_2")),
        Reply(body=responses_answer(_said("You are welcome.", 3), response_id="resp_3")),
    )
    auth = {"authorization": "Bearer sk-namespace"}
    history: list[dict[str, Any]] = [USER]

    def body() -> dict[str, Any]:
        return {**_responses_body(history), "prompt_cache_key": "namespaced"}

    assert _post(gateway.url, "/v1/responses", body(), auth).status_code == 200
    history += [
        REASONING_ITEM,
        commentary,
        SPAWN,
        {"type": "function_call_output", "call_id": "call_spawn", "output": "agent_1 started"},
    ]
    second = _post(gateway.url, "/v1/responses", body(), auth)
    assert second.status_code == 200, second.text
    history += [final, _asked("Thanks.")]
    third = _post(gateway.url, "/v1/responses", body(), auth)
    assert third.status_code == 200, third.text
    # The client's copies continue the run: every request is the engine's, in one run.
    assert all("x-contextwright-mode" not in r.headers for r in (second, third))
    session = "openai/namespaced"
    assert gateway.log.sessions() == [session]
    types = gateway.settled(session, 3)
    assert types.count("context.request.built") == 3 and _passed(gateway, session) == []
    # The call goes back in its namespace, each message with its phase; a message without one has none.
    sent = gateway.upstream.conversations[2].json
    assert {
        "type": "function_call",
        "call_id": "call_spawn",
        "namespace": "multi_agent_v1",
        "name": "spawn_agent",
        "arguments": '{"task":"Write the release notes."}',
    } in sent["input"]
    answers = [i for i in sent["input"] if i.get("role") == "assistant"]
    assert [(a["content"], a.get("phase")) for a in answers] == [
        ("I will start a helper for the notes.", "commentary"),
        ("The helper wrote the notes.", "final_answer"),
    ]
    # The log holds them only where they were set: an answer without them is stored as it always was.
    stored = [e.payload for e in gateway.events(session) if e.type == "message.assistant"]
    assert [(m.phase, [c.namespace for c in m.tool_calls]) for m in stored] == [
        ("commentary", ["multi_agent_v1"]),
        ("final_answer", []),
        (None, []),
    ]
    plain = [payload_json(e.payload) for e in gateway.events(session) if e.type == "message.assistant"]
    assert '"phase":"commentary"' in plain[0] and '"namespace":"multi_agent_v1"' in plain[0]
    assert '"phase"' not in plain[2] and '"namespace"' not in plain[2]
    # inspect rebuilds both requests that went upstream after the first, from the log.
    for number in (1, 2):
        rebuilt = _inspected(gateway, session, number, "openai_responses")
        assert {k: gateway.upstream.conversations[number].json[k] for k in rebuilt} == rebuilt


def test_an_answer_whose_messages_have_different_phases_sends_the_clients_request_as_it_came(make_gateway: Any) -> None:
    gateway = make_gateway(mode="manage")
    gateway.replies(Reply(body=responses_answer(_said("Noted.", 9))))
    items = [
        USER,
        _phased("Looking at the notes.", 1, "commentary"),
        _phased("Version 2.1 added the flag.", 2, "final_answer"),
        _asked("Thanks. And 2.2?"),
    ]
    body = {**_responses_body(items), "prompt_cache_key": "mixed-phases"}
    sent = json.dumps(body)
    headers = {"content-type": "application/json", "authorization": "Bearer sk-mixed"}
    response = httpx.post(gateway.url + "/v1/responses", content=sent, headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    # The log keeps an answer's text as one, with one phase: the client's request goes, the phases in it.
    assert response.headers["x-contextwright-mode"] == "passthrough; reason=unsent_content"
    assert gateway.upstream.conversations[0].body == sent.encode()
    gateway.settled("openai/mixed-phases", 2)
    assert _passed(gateway, "openai/mixed-phases") == [("unsent_content", "content the log keeps no text for: phase")]


def test_a_streamed_chat_custom_tool_call_is_read_as_a_whole_answer_gives_it() -> None:
    # A free-form tool's call streamed in pieces reads to the same message as the non-streamed answer,
    # so the log holds its name and whole input (the next request's copy of it then continues the run).
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        event = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "gpt-5"}
        event["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
        return b"data: " + json.dumps(event).encode() + b"\n\n"

    half = len(PATCH) // 2
    stream = [
        chunk({"role": "assistant", "content": None}),
        chunk(
            {
                "tool_calls": [
                    {"index": 0, "id": "call_ls", "type": "function", "function": {"name": "exec_command", "arguments": ""}}
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"cmd": "ls"}'}}]}),
        chunk(
            {"tool_calls": [{"index": 1, "id": "call_patch", "type": "custom", "custom": {"name": "apply_patch", "input": ""}}]}
        ),
        chunk({"tool_calls": [{"index": 1, "custom": {"input": PATCH[:half]}}]}),
        chunk({"tool_calls": [{"index": 1, "custom": {"input": PATCH[half:]}}]}),
        chunk({}, "tool_calls"),
        b"data: [DONE]\n\n",
    ]
    reader = AnswerReader("openai_chat", streamed=True)
    for part in stream:
        reader.feed(part)
    answer = reader.answer()
    assert answer is not None
    assert answer["choices"][0]["message"]["tool_calls"] == [
        {"id": "call_ls", "type": "function", "function": {"name": "exec_command", "arguments": '{"cmd": "ls"}'}},
        {"id": "call_patch", "type": "custom", "custom": {"name": "apply_patch", "input": PATCH}},
    ]
