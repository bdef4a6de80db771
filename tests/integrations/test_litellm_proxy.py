"""The LiteLLM proxy hook, in LiteLLM's own proxy on 127.0.0.1, between an OpenAI client and a fake Anthropic upstream.

The proxy runs as LiteLLM ships it (its ``litellm`` command, a config file naming the hook
in ``callbacks``); the upstream is :class:`~contextwright.testing.upstream.FakeUpstream`
over real HTTP; the client is the ``openai`` SDK running an unchanged tool loop.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no cost-map fetch from the network
openai = pytest.importorskip("openai", reason="needs the openai SDK (the openai extra)")
httpx2 = pytest.importorskip("httpx2", reason="needs httpx2 (the openai extra)")
for _module in ("litellm", "backoff", "apscheduler", "fastapi_sso", "uvloop", "uvicorn"):
    if importlib.util.find_spec(_module) is None:
        pytest.skip(f"LiteLLM's proxy needs {_module} (the litellm-proxy extra)", allow_module_level=True)

from contextwright.log import open_log  # noqa: E402
from contextwright.testing.service import free_port, serving  # noqa: E402
from contextwright.testing.upstream import FakeUpstream, Received, Reply, anthropic_message  # noqa: E402

MASTER_KEY = "sk-contextwright-proxy-test-0123456789abcdef"
ROUNDS = 4
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "run_tests",
            "description": "Run the test suite",
            "parameters": {"type": "object", "properties": {}},
        },
    }
]


def pytest_output(turn: int) -> str:
    """A verbose pytest run of 601 tests with one failure (about 27,000 characters)."""
    lines = ["collected 601 items", ""] + [f"tests/test_billing.py::test_case_{i} PASSED" for i in range(600)]
    lines.insert(303, f"tests/test_billing.py::test_rounding_{turn} FAILED")
    return "\n".join(
        [*lines, f"FAILED tests/test_billing.py::test_rounding_{turn} - assert 10.01 == 10.0", "1 failed, 600 passed"]
    )


def script(received: Received) -> Reply:
    """Calls ``run_tests`` until the last round, then answers."""
    turn = sum(1 for m in received.json["messages"] if m["role"] == "assistant")
    if turn < ROUNDS - 1:
        return Reply(
            body=anthropic_message(
                {"type": "tool_use", "id": f"toolu_{turn}", "name": "run_tests", "input": {}}, stop_reason="tool_use"
            )
        )
    return Reply(body=anthropic_message({"type": "text", "text": "Fixed: rounding uses Decimal."}))


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[FakeUpstream, str]]:
    fake = FakeUpstream(script)
    with serving(fake) as url:
        yield fake, url


def _proxy(tmp: Path, upstream_url: str, *, hook: bool) -> Iterator[str]:
    store = tmp / "cw.db"
    (tmp / "hooks.py").write_text(
        textwrap.dedent(
            f"""
            import contextwright as cw
            from contextwright.integrations.litellm import ContextwrightProxyHook

            hook = ContextwrightProxyHook(
                cw.Engine.open("sqlite:///{store}"),
                cw.AgentSpec(policy="Never push to main."),
                cw.models.anthropic("claude-sonnet-4-6"),
            )
            """
        )
    )
    settings = "litellm_settings:\n  callbacks: hooks.hook\n" if hook else ""
    (tmp / "config.yaml").write_text(
        "model_list:\n"
        "  - model_name: claude-sonnet-4-6\n"
        "    litellm_params:\n"
        "      model: anthropic/claude-sonnet-4-6\n"
        f"      api_base: {upstream_url}\n"
        "      api_key: test\n"
        f"{settings}"
        f"general_settings:\n  master_key: {MASTER_KEY}\n"
    )
    port = free_port()
    log = (tmp / "proxy.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-c", "from litellm.proxy.proxy_cli import run_server; run_server()",
         "--config", str(tmp / "config.yaml"), "--host", "127.0.0.1", "--port", str(port)],
        cwd=tmp, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx2.get(f"{url}/health/liveliness", timeout=1).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("LiteLLM's proxy did not start:\n" + (tmp / "proxy.log").read_text()[-3000:])
            time.sleep(0.3)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def _client_loop(url: str, recorded: Any = None) -> list[int]:
    """The client's own tool loop through the proxy; after each call, how many answers the session holds."""
    client = openai.OpenAI(
        base_url=url, api_key=MASTER_KEY, max_retries=0, default_headers={"x-contextwright-session": "ticket-9"}
    )
    messages: list[Any] = [
        {"role": "system", "content": "You fix CI. Prefer the smallest diff."},
        {"role": "user", "content": "CI fails on main. Fix it."},
    ]
    seen = []
    while True:
        response = client.chat.completions.create(model="claude-sonnet-4-6", messages=messages, tools=TOOLS, max_tokens=2048)
        if recorded is not None:
            seen.append(recorded())
        message = response.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return seen
        for call in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": pytest_output(len(messages))})


@pytest.fixture(scope="module")
def runs(upstream, tmp_path_factory) -> dict[str, Any]:
    """The same client loop through the proxy with the hook and without it (LiteLLM alone)."""
    fake, upstream_url = upstream
    out: dict[str, Any] = {}
    for name in ("hook", "native"):
        tmp = tmp_path_factory.mktemp(name)
        fake.received.clear()

        def answers(tmp: Path = tmp) -> int:
            log = open_log(f"sqlite:///{tmp / 'cw.db'}")
            try:
                return sum(1 for e in log.read("ticket-9") if e.type == "model.response")
            finally:
                log.close()

        with _proxy_cm(tmp, upstream_url, hook=name == "hook") as url:
            out[f"{name}_seen"] = _client_loop(url, answers if name == "hook" else None)
            out[name] = [r.json for r in fake.conversations]
            if name == "hook":
                fake.received.clear()
                out["messages_seen"] = _messages_loop(url, tmp)
                out["messages"] = [r.json for r in fake.conversations]
        out[f"{name}_store"] = tmp / "cw.db"
    return out


def _messages_loop(url: str, tmp: Path) -> list[int]:
    """An Anthropic client's streamed tool loop through the proxy's /v1/messages (as Claude Code sends it)."""
    import anthropic

    def answers() -> int:
        log = open_log(f"sqlite:///{tmp / 'cw.db'}")
        try:
            return sum(1 for e in log.read("ticket-10") if e.type == "model.response")
        finally:
            log.close()

    client = anthropic.Anthropic(
        base_url=url, api_key=MASTER_KEY, max_retries=0, default_headers={"x-contextwright-session": "ticket-10"}
    )
    tools = [{"name": "run_tests", "description": "Run the test suite", "input_schema": {"type": "object", "properties": {}}}]
    messages: list[Any] = [{"role": "user", "content": "CI fails on main. Fix it."}]
    seen = []
    while True:
        options = {"model": "claude-sonnet-4-6", "max_tokens": 2048, "system": "You fix CI.", "tools": tools}
        with client.messages.stream(messages=messages, **options) as stream:
            final = stream.get_final_message()
        seen.append(answers())
        messages.append({"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in final.content]})
        calls = [block for block in final.content if block.type == "tool_use"]
        if not calls:
            return seen
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": c.id, "content": pytest_output(len(messages))} for c in calls],
            }
        )


def test_claude_code_style_streams_through_v1_messages_get_the_engine_request_and_are_recorded(runs):
    # Check: each streamed answer was in the session's log before the client had read the next call's answer.
    assert runs["messages_seen"] == list(range(1, ROUNDS + 1))
    bodies = runs["messages"]
    assert len(bodies) == ROUNDS
    for body in bodies:
        assert "Never push to main." in json.dumps(body["system"]) and "You fix CI." in json.dumps(body["system"])
        assert "test_case_300 PASSED" not in json.dumps(body["messages"])
        assert json.dumps(body).count('"cache_control"') <= 4


def test_the_proxy_hook_sends_the_engine_request_upstream_and_records_each_answer_in_time(runs):
    # Check: each answer was in the session's log before the client had it back.
    assert runs["hook_seen"] == list(range(1, ROUNDS + 1))
    bodies = runs["hook"]
    assert len(bodies) == ROUNDS
    for body in bodies:
        system = json.dumps(body["system"])
        # The platform policy, then the client's own system prompt, pinned; the client's tool and the engine's.
        assert "Never push to main." in system and "Prefer the smallest diff." in system
        assert {t["name"] for t in body["tools"]} >= {"run_tests", "context_read_artifact"}
        assert json.dumps(body).count('"cache_control"') <= 4
        assert "test_case_300 PASSED" not in json.dumps(body["messages"])  # tool output bounded
    log = open_log(f"sqlite:///{runs['hook_store']}")
    types = [e.type for e in log.read("ticket-9")]
    log.close()
    assert (types.count("context.request.built"), types.count("tool.result")) == (ROUNDS, ROUNDS - 1)


def test_the_hook_sends_fewer_tokens_upstream_than_the_proxy_alone(runs):
    from contextwright.budget.estimator import HeuristicEstimator

    estimator = HeuristicEstimator()
    hook = [estimator.estimate(json.dumps(body), model="claude-sonnet-4-6") for body in runs["hook"]]
    native = [estimator.estimate(json.dumps(body), model="claude-sonnet-4-6") for body in runs["native"]]
    assert len(hook) == len(native) == ROUNDS
    # Without the hook LiteLLM forwards every tool output whole; with it each is bounded.
    assert "test_case_300 PASSED" in json.dumps(runs["native"][-1]["messages"])
    assert sum(hook) < sum(native) / 2
    print(
        f"\nupstream input tokens per call (estimated): hook {hook} (total {sum(hook)}), proxy alone {native} (total {sum(native)})"
    )


def _proxy_cm(tmp: Path, upstream_url: str, *, hook: bool) -> Any:
    from contextlib import contextmanager

    return contextmanager(_proxy)(tmp, upstream_url, hook=hook)
