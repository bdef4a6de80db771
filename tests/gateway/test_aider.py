"""The real aider driven through ``contextwright gateway`` against a scripted provider.

aider (the pinned PyPI release, in a virtual environment of its own) speaks OpenAI Chat
Completions through LiteLLM, streamed and without tools, to ``OPENAI_API_BASE``; it sends
no session id, so the gateway files the conversation under its fallback key.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from gateway_clients import AIDER_VERSION, client_binary, client_env, gateway_command

from contextwright.log import open_log
from contextwright.testing.service import serving
from contextwright.testing.upstream import FakeUpstream, Received, Reply, chat_answer

pytest.importorskip("uvicorn", reason='the gateway needs its extra: pip install "contextwright[gateway]"')

KEY = "sk-aider-test-key-3e8d1f0a9b"
ANSWER = "Hello from the scripted provider."


@pytest.mark.parametrize("mode", ["observe", "manage"])
def test_aider_through_the_gateway(tmp_path: Path, mode: str) -> None:
    aider = client_binary("aider", "aider", package="aider-chat", version=AIDER_VERSION, pypi=True)
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    answers: list[Received] = []

    def script(received: Received) -> Reply:
        answers.append(received)
        return Reply(body=chat_answer(ANSWER, model="gpt-4o"))

    upstream = FakeUpstream(script)
    store, output = tmp_path / "gateway.db", tmp_path / "gateway.out"
    with serving(upstream) as provider, gateway_command(store, provider, output, mode=mode) as gateway:
        env = client_env(home, OPENAI_API_BASE=f"{gateway}/v1", OPENAI_API_KEY=KEY, LITELLM_LOCAL_MODEL_COST_MAP="True")
        command = [str(aider), "--model", "openai/gpt-4o", "--no-git", "--yes-always", "--no-check-update"]
        command += ["--no-show-model-warnings", "--analytics-disable", "--no-pretty", "--message", "Say hello."]
        started = time.monotonic()
        run = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert run.returncode == 0, run.stdout + run.stderr
        assert ANSWER in run.stdout
        assert time.monotonic() - started < 60
        log = open_log(str(store), read_only=True)
        try:
            deadline = time.monotonic() + 15
            while not (log.sessions() and "model.response" in [e.type for e in log.read(log.sessions()[0])]):
                assert time.monotonic() < deadline, "the gateway did not record aider's answer"
                time.sleep(0.05)
            (session,) = log.sessions()
            events = log.read(session)
        finally:
            log.close()

    (request,) = answers
    body = request.json
    assert request.path == "/v1/chat/completions" and request.headers["authorization"] == f"Bearer {KEY}"
    assert body["stream"] is True and "tools" not in body
    assert session.startswith("anon/")
    types = [e.type for e in events]
    assert types.count("context.request.built") == 1 and types.count("model.response") == 1
    # aider's prompt holds an example exchange of its own; the last answer is the provider's.
    assert [e.payload.text for e in events if e.type == "message.assistant"][-1] == ANSWER
    assert "Say hello." in [e.payload.text for e in events if e.type == "message.user"]
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("gateway.db*"))
    assert b"Say hello." in stored and KEY.encode() not in stored
    assert KEY not in output.read_text()
