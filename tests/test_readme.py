"""The README's code is executed, and its first lines stay the two commands."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_starts_with_the_two_commands():
    text = README.read_text()
    block = re.search(r"```console\n(.*?)```", text, re.S).group(1).strip().splitlines()
    assert block == [
        'python3 -m pip install -e ".[report]" && contextwright demo',
        'python3 -m pip install -c constraints.txt -e ".[dev]" && python3 -m pytest',
    ]
    ci = (README.parent / ".ci" / "run").read_text()
    assert block[1] in ci


def test_python_examples_run(tmp_path, monkeypatch):
    """Every Python block runs; the SDK's HTTP goes to a scripted provider through a mock transport."""
    pytest.importorskip("anthropic", reason="needs the anthropic SDK (the anthropic extra)")
    import anthropic
    import httpx2

    from contextwright.events import AssistantMessage, ToolCall
    from contextwright.testing.provider import ScriptedProvider

    monkeypatch.chdir(tmp_path)
    provider = ScriptedProvider(
        [
            AssistantMessage(text="Running the tests.", tool_calls=(ToolCall(id="toolu_01", name="run_tests", arguments={}),)),
            AssistantMessage(text="Fixed: the billing test expected a float."),
        ]
    )
    real_client = anthropic.Anthropic
    monkeypatch.setattr(
        anthropic,
        "Anthropic",
        lambda **kw: real_client(api_key="test", http_client=httpx2.Client(transport=httpx2.MockTransport(provider.handler))),
    )
    ran = []

    def run(call):
        ran.append(call.name)
        return "1 failed, 41 passed", 1

    blocks = [b for b in re.findall(r"```python\n(.*?)```", README.read_text(), re.S) if "session.stream(" not in b]
    assert len(blocks) >= 2
    for code in blocks:
        exec(compile(code, "README.md", "exec"), {"run": run})
    assert ran == ["run_tests"] and len(provider.bodies) == 2
    # The body the SDK put on the wire carried the cache markers and the enveloped task.
    wire = provider.bodies[-1]
    assert wire["system"][-1]["cache_control"]["type"] == "ephemeral"
    assert "CI fails on main" in json.dumps(wire["messages"])


def test_the_streaming_example_runs(tmp_path, monkeypatch, capsys):
    """The streaming loop, as written, against a scripted provider that answers in server-sent events."""
    pytest.importorskip("anthropic", reason="needs the anthropic SDK (the anthropic extra)")
    import anthropic
    import httpx2

    from contextwright.events import AssistantMessage, ToolCall
    from contextwright.testing.provider import ScriptedProvider

    monkeypatch.chdir(tmp_path)
    provider = ScriptedProvider(
        [
            AssistantMessage(
                text="Checking the tests first. ", tool_calls=(ToolCall(id="toolu_01", name="run_tests", arguments={}),)
            ),
            AssistantMessage(text="# Migrating to 2.0\nRename `connect` to `open`."),
        ]
    )
    real_client = anthropic.Anthropic
    monkeypatch.setattr(
        anthropic,
        "Anthropic",
        lambda **kw: real_client(api_key="test", http_client=httpx2.Client(transport=httpx2.MockTransport(provider.handler))),
    )
    [code] = [b for b in re.findall(r"```python\n(.*?)```", README.read_text(), re.S) if "session.stream(" in b]
    scope = {"run": lambda call: ("42 passed", 0)}
    exec(compile(code, "README.md", "exec"), scope)
    assert capsys.readouterr().out == "Checking the tests first. # Migrating to 2.0\nRename `connect` to `open`."
    assert [b["stream"] for b in provider.bodies] == [True, True] and provider.bodies[0]["max_tokens"] == 64_000
    assert provider.bodies[0]["system"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    types = [e.type for e in scope["session"].history.events]
    assert types.count("message.assistant") == 2 and types.count("model.response") == 2


def test_every_extra_is_named_in_the_readme():
    import tomllib

    extras = tomllib.loads((README.parent / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    section = README.read_text().split("## Optional extras", 1)[1].split("\n## ", 1)[0]
    assert sorted(name for name in extras if f"`{name}`" not in section) == []
