"""The real Codex CLI driven through ``contextwright gateway`` against a scripted provider.

``codex exec`` (the pinned npm release) talks to a custom model provider whose ``base_url``
is the gateway (``wire_api = "responses"``); behind it a fake provider answers from a
script: an encrypted reasoning item with a small command, a command with a large output,
a failing command, then a server error that Codex retries, then the final answer.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from gateway_clients import CODEX_VERSION, client_binary, client_env, gateway_command

from contextwright.canonical import to_plain
from contextwright.log import open_log
from contextwright.testing.service import serving
from contextwright.testing.upstream import FakeUpstream, Received, Reply, responses_answer

pytest.importorskip("uvicorn", reason='the gateway needs its extra: pip install "contextwright[gateway]"')

KEY = "sk-proj-codex-test-key-0c4e9a7b1d"
REASONING = {"type": "reasoning", "id": "rs_01", "summary": [], "encrypted_content": "gAAAAABo-opaque-reasoning-from-the-fake"}
COMMANDS = ["seq 1 5", "seq 1 20000", "exit 3"]


class Script:
    """The provider's side: three commands, one server error, a final answer."""

    def __init__(self) -> None:
        self.failed = False

    def __call__(self, received: Received) -> Reply:
        items = received.json["input"]
        answered = sum(1 for i in items if i.get("type") == "function_call_output")
        if answered < len(COMMANDS):
            call = {
                "type": "function_call",
                "id": f"fc_{answered}",
                "call_id": f"call_{answered}",
                "name": "exec_command",
                "arguments": json.dumps({"cmd": COMMANDS[answered]}),
                "status": "completed",
            }
            output = [REASONING, call] if answered == 0 else [call]
            return Reply(body=responses_answer(*output, response_id=f"resp_{answered}"))
        if not self.failed:
            self.failed = True
            return Reply(
                status=500,
                body={"error": {"message": "The server had an error", "type": "server_error", "param": None, "code": None}},
            )
        text = {"type": "output_text", "text": "Codex is done.", "annotations": []}
        message = {"type": "message", "id": "msg_final", "role": "assistant", "status": "completed", "content": [text]}
        return Reply(body=responses_answer(message, response_id="resp_final"))


@pytest.mark.parametrize("mode", ["observe", "manage"])
def test_codex_through_the_gateway(tmp_path: Path, mode: str) -> None:
    codex = client_binary("codex", "codex", package="@openai/codex", version=CODEX_VERSION)
    home, codex_home, work = tmp_path / "home", tmp_path / "codex-home", tmp_path / "work"
    for folder in (home, codex_home, work):
        folder.mkdir()
    version = subprocess.run([str(codex), "--version"], capture_output=True, text=True, timeout=30, env=client_env(home))
    assert version.stdout.strip().endswith(CODEX_VERSION), version.stdout
    upstream = FakeUpstream(Script())
    store, output = tmp_path / "gateway.db", tmp_path / "gateway.out"
    with serving(upstream) as provider, gateway_command(store, provider, output, mode=mode) as gateway:
        (codex_home / "config.toml").write_text(
            'model = "gpt-5"\nmodel_provider = "gateway"\n\n'
            f'[model_providers.gateway]\nname = "gateway"\nbase_url = "{gateway}/v1"\n'
            'env_key = "OPENAI_API_KEY"\nwire_api = "responses"\n'
        )
        env = client_env(home, CODEX_HOME=str(codex_home), OPENAI_API_KEY=KEY)
        started = time.monotonic()
        run = subprocess.run(
            [
                str(codex),
                "exec",
                "--skip-git-repo-check",
                "--dangerously-bypass-approvals-and-sandbox",
                "Run the three commands.",
            ],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=90,
            stdin=subprocess.DEVNULL,
        )
        assert run.returncode == 0, run.stdout + run.stderr
        assert "Codex is done." in run.stdout
        assert time.monotonic() - started < 60
        conversations = upstream.conversations
        log = open_log(str(store), read_only=True)
        try:
            deadline = time.monotonic() + 15
            while not log.sessions() and time.monotonic() < deadline:
                time.sleep(0.05)
            # Codex's conversation id is its prompt_cache_key (in manage mode the engine sends its own upstream).
            session = log.sessions()[0]
            events = _settled(log, session, answers=4)
            sessions = log.sessions()
        finally:
            log.close()

    first = conversations[0].json
    assert first["store"] is False and len(first["tools"]) >= 5
    # Codex's hosted web search and its namespace of sub-agent tools reach the provider as it declared them.
    namespaces = [t for t in first["tools"] if t.get("type") == "namespace"]
    assert any(t.get("type") == "web_search" for t in first["tools"])
    assert namespaces and all(t.get("tools") for t in namespaces)
    assert all(r.path == "/v1/responses" and r.headers["authorization"] == f"Bearer {KEY}" for r in conversations)
    # The 500 reached Codex, which sent the same request again.
    assert len(conversations) == 5 and conversations[3].body == conversations[4].body
    assert sessions == [session] and session.startswith("openai/") and not session.startswith("openai/cw-")
    if mode == "observe":
        assert session == "openai/" + first["prompt_cache_key"]
    else:  # the engine's request went upstream, with its own cache key and Codex's other options
        assert first["prompt_cache_key"].startswith("cw-") and first["stream"] is True
        assert first["include"] == ["reasoning.encrypted_content"]

    types = [e.type for e in events]
    assert types.count("context.request.built") == 4  # the retry built nothing new
    assert types.count("model.response") == 4
    answers = [e.payload for e in events if e.type == "message.assistant"]
    assert [to_plain(b.block) for b in answers[0].reasoning] == [REASONING]
    assert [c.arguments["cmd"] for a in answers for c in a.tool_calls] == COMMANDS
    results = [e.payload for e in events if e.type == "tool.result"]
    assert [r.call_id for r in results] == ["call_0", "call_1", "call_2"]
    small, large, failed = results
    assert "1\n2\n3\n4\n5" in small.output
    assert large.artifact is not None and "20000" in log_artifact(store, large.artifact.ref)
    assert "exit code 3" in failed.output.lower() or "exited with code 3" in failed.output.lower()

    stored = b"".join(p.read_bytes() for p in tmp_path.glob("gateway.db*"))
    assert b"call_1" in stored and KEY.encode() not in stored
    assert KEY not in output.read_text()


def _settled(log: Any, session: str, *, answers: int, timeout: float = 20.0) -> list[Any]:
    deadline = time.monotonic() + timeout
    while True:
        events = log.read(session)
        if sum(e.type == "model.response" for e in events) >= answers or time.monotonic() > deadline:
            time.sleep(0.1)
            return log.read(session)
        time.sleep(0.05)


def log_artifact(store: Path, ref: str) -> str:
    log = open_log(str(store), read_only=True)
    try:
        return log.get_artifact(ref)
    finally:
        log.close()
