"""The README's service section, step by step: create a key, start the service with the real
command, run the agent loop through the client, open the console."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.service.conftest import NEEDS

pytest.importorskip("fastapi", reason=NEEDS)
pytest.importorskip("uvicorn", reason=NEEDS)
pytest.importorskip("anthropic", reason="the README loop needs the anthropic SDK (the anthropic extra)")
pytest.importorskip("httpx2", reason=NEEDS)

import httpx2

from contextwright.testing.service import free_port

README = Path(__file__).resolve().parents[2] / "README.md"


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind} service\n(.*?)```", README.read_text(), re.S)


def _command(line: str, *, port: int, store: str) -> list[str]:
    args = shlex.split(line.replace("--port 8700", f"--port {port}").replace("sqlite:///service.db", store))
    assert args[0] == "contextwright"
    return [sys.executable, "-m", "contextwright", *args[1:]]


def test_the_readme_service_steps_run(tmp_path, monkeypatch):
    import anthropic

    from contextwright.events import AssistantMessage, ToolCall
    from contextwright.testing.provider import ScriptedProvider

    [console] = _blocks("console")
    [code] = _blocks("python")
    create_line, serve_line = [line for line in console.strip().splitlines() if line.startswith("contextwright")]
    port, store = free_port(), f"sqlite:///{tmp_path}/service.db"

    # Step 1: create a key; it is the last line printed.
    created = subprocess.run(_command(create_line, port=port, store=store), capture_output=True, text=True, timeout=120)
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip().splitlines()[-1]
    assert key.startswith("cw_")

    # Step 2: start the service with the README's command.
    server = subprocess.Popen(
        _command(serve_line, port=port, store=store), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx2.get(f"{base}/openapi.json", timeout=2).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            assert server.poll() is None, server.stdout.read() if server.stdout else ""
            assert time.monotonic() < deadline, "the service did not start"
            time.sleep(0.2)

        # Step 3: the agent loop through the client, with the SDK's HTTP going to a scripted provider.
        provider = ScriptedProvider(
            [
                AssistantMessage(
                    text="Running the tests.", tool_calls=(ToolCall(id="toolu_01", name="run_tests", arguments={}),)
                ),
                AssistantMessage(text="Fixed: the billing test expected a float."),
            ]
        )
        real_client = anthropic.Anthropic
        monkeypatch.setattr(
            anthropic,
            "Anthropic",
            lambda **kw: real_client(api_key="test", http_client=httpx2.Client(transport=httpx2.MockTransport(provider.handler))),
        )
        monkeypatch.setenv("CONTEXTWRIGHT_API_KEY", key)
        code = code.replace("http://127.0.0.1:8700", base)
        ran: list[str] = []
        printed: list[str] = []

        def run(call):  # type: ignore[no-untyped-def]
            ran.append(call.name)
            return "1 failed, 41 passed", 1

        exec(compile(code, "README.md", "exec"), {"run": run, "print": lambda *a: printed.append(" ".join(map(str, a)))})
        assert ran == ["run_tests"] and len(provider.bodies) == 2
        assert printed == ["2 True"]

        # Step 4: the console is served by the same process, and lists the session for this key.
        page = httpx2.get(f"{base}/console")
        assert page.status_code == 200 and "Contextwright console" in page.text
        sessions = httpx2.get(f"{base}/v1/sessions", headers={"Authorization": f"Bearer {key}"}).json()["sessions"]
        assert [s["session_id"] for s in sessions] == ["ticket-4711"]
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert os.path.exists(tmp_path / "service.db")
