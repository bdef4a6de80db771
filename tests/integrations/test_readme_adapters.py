"""The README's adapter examples run as written; the SDKs' HTTP goes to scripted providers through mock transports."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("anthropic", reason="the adapter examples need the anthropic extra")
pytest.importorskip("openai", reason="the adapter examples need the openai extra")
pytest.importorskip("langchain.agents", reason="the adapter examples need the langchain extra")
pytest.importorskip("agents", reason="the adapter examples need the agents extra")

import anthropic
import httpx2
import openai

from contextwright.events import AssistantMessage, ToolCall
from contextwright.testing.provider import ScriptedProvider

README = Path(__file__).resolve().parents[2] / "README.md"


def _responses_reply(n: int, output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": f"resp_{n}",
        "object": "response",
        "created_at": 1,
        "model": "gpt-5.5",
        "status": "completed",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {"input_tokens": 900, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 9, "total_tokens": 909},
    }


class ResponsesScript:
    """A Responses endpoint that answers from a list of output item lists."""

    def __init__(self, outputs: list[list[dict[str, Any]]]) -> None:
        self.outputs = list(outputs)
        self.bodies: list[dict[str, Any]] = []

    def handler(self, request: Any) -> Any:
        self.bodies.append(json.loads(request.content))
        return httpx2.Response(200, json=_responses_reply(len(self.bodies), self.outputs.pop(0)))


def _text(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def test_adapter_examples_run(tmp_path, monkeypatch):
    import agents
    import langchain_anthropic

    monkeypatch.chdir(tmp_path)
    # The Anthropic SDK example and the LangChain example each talk to a scripted Claude.
    claude = ScriptedProvider(
        [
            AssistantMessage(text="Running the tests.", tool_calls=(ToolCall(id="toolu_01", name="run_tests", arguments={}),)),
            AssistantMessage(text="Fixed."),
            AssistantMessage(text="Running them.", tool_calls=(ToolCall(id="toolu_02", name="run_tests", arguments={}),)),
            AssistantMessage(text="Fixed too."),
        ]
    )
    real_anthropic = anthropic.Anthropic
    mocked_anthropic = lambda **kw: real_anthropic(
        api_key="test", http_client=httpx2.Client(transport=httpx2.MockTransport(claude.handler)), **kw
    )
    monkeypatch.setattr(anthropic, "Anthropic", mocked_anthropic)

    class ScriptedChatAnthropic(langchain_anthropic.ChatAnthropic):
        def __init__(self, **kw: Any) -> None:
            super().__init__(api_key="test", **kw)
            self.__dict__["_client"] = mocked_anthropic()

    monkeypatch.setattr(langchain_anthropic, "ChatAnthropic", ScriptedChatAnthropic)
    # The OpenAI wrapper example and the Agents SDK example talk to a scripted Responses endpoint.
    gpt = ResponsesScript(
        [
            [_text("test_billing fails.")],
            [
                {
                    "type": "function_call",
                    "id": "fc_1",
                    "call_id": "call_1",
                    "name": "run_tests",
                    "arguments": "{}",
                    "status": "completed",
                }
            ],
            [_text("Fixed.")],
        ]
    )
    real_openai = openai.OpenAI
    monkeypatch.setattr(
        openai,
        "OpenAI",
        lambda **kw: real_openai(api_key="test", http_client=httpx2.Client(transport=httpx2.MockTransport(gpt.handler)), **kw),
    )

    async def ahandler(request: Any) -> Any:
        return gpt.handler(request)

    agents.set_default_openai_client(
        openai.AsyncOpenAI(api_key="test", http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(ahandler))),
        use_for_tracing=False,
    )
    agents.set_tracing_disabled(True)
    ran: list[str] = []

    def run(call: Any) -> tuple[str, int]:
        ran.append(call.name)
        return "1 failed, 41 passed", 1

    blocks = re.findall(r"```python adapter\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) == 6
    namespace: dict[str, Any] = {"run": run}
    try:
        for code in blocks:
            exec(compile(code, "README.md", "exec"), namespace)
    finally:
        agents.set_tracing_disabled(False)
    # Check: each example reached its provider with the engine's request.
    assert ran == ["run_tests"]
    assert len(claude.bodies) == 4 and all("Never push to main" in json.dumps(b["system"]) for b in claude.bodies)
    assert len(gpt.bodies) == 3 and all("prompt_cache_key" in b for b in gpt.bodies)
    assert namespace["result"].final_output == "Fixed."
    assert namespace["summarised"].setup.compactor is namespace["summarizer"]
    agents_usage = [e for e in namespace["engine"].log.read("ticket-4715") if e.type == "model.response"]
    assert len(agents_usage) == 2
    assert [type(m).__name__ for m in namespace["state"]["messages"]] == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
