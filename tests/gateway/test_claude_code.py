"""The real Claude Code client driven through ``contextwright gateway`` against a scripted provider.

Claude Code (the pinned npm release) runs ``claude -p`` with ``ANTHROPIC_BASE_URL`` set to
the gateway, in both modes; the provider behind the gateway is a fake on loopback that
answers from a script: a signed thinking block with a small tool call, a call whose output
is too large for Claude Code to send whole (it keeps it in a file and sends a preview), a
call that fails, then a context-length error. Observed, the error reaches Claude Code, which
answers it with its own compaction, recorded as a new run beside the first; managed, the
engine relieves the session and sends its request again, and Claude Code never sees it.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from gateway_clients import CLAUDE_CODE_VERSION, client_binary, client_env, gateway_command
from typer.testing import CliRunner

from contextwright.cli import app as cli_app
from contextwright.log import open_log
from contextwright.testing.service import serving
from contextwright.testing.upstream import FakeUpstream, Received, Reply, anthropic_error, anthropic_message

pytest.importorskip("uvicorn", reason='the gateway needs its extra: pip install "contextwright[gateway]"')

KEY = "sk-ant-api03-claude-code-test-key-5f1e2d"
SIGNATURE = "EqQBCkgIBxABGAIiQKx7signed-by-the-fake=="
CALLS = [
    ({"type": "thinking", "thinking": "Start with a small listing.", "signature": SIGNATURE}, "seq 1 20"),
    (None, "seq 1 10000"),  # 48,894 characters: over Claude Code's limit for an output sent whole
    (None, "exit 3"),
]


class Script:
    """The provider's side: three tool calls, a context-length error, then whatever comes next.

    Through an observing gateway the error reaches Claude Code, which compacts its own history
    (a summarisation request, then the conversation again from the summary). Through a managing
    one the engine relieves the session and sends its request again, and Claude Code never
    sees the error."""

    def __init__(self) -> None:
        self.overflowed = False
        self.compacted = False

    def __call__(self, received: Received) -> Reply:
        body = received.json
        last = body["messages"][-1]
        blocks = last["content"] if isinstance(last["content"], list) else []
        if self.compacted:
            return Reply(body=anthropic_message({"type": "text", "text": "All done after compaction."}))
        if self.overflowed and any(b.get("type") == "text" and "Respond with TEXT ONLY" in b.get("text", "") for b in blocks):
            self.compacted = True  # Claude Code's own summarisation request
            return Reply(
                body=anthropic_message({"type": "text", "text": "<summary>Ran seq 1 20, seq 1 10000 and exit 3.</summary>"})
            )
        if self.overflowed:
            return Reply(body=anthropic_message({"type": "text", "text": "All done after relief."}))
        answered = sum(
            1 for m in body["messages"] if isinstance(m["content"], list) for b in m["content"] if b.get("type") == "tool_result"
        )
        if answered < len(CALLS):
            thinking, command = CALLS[answered]
            call = {
                "type": "tool_use",
                "id": f"toolu_{answered:02d}",
                "name": "Bash",
                "input": {"command": command, "description": "step"},
            }
            return Reply(body=anthropic_message(*([thinking] if thinking else []), call, stop_reason="tool_use"))
        self.overflowed = True
        return anthropic_error(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum")


@pytest.mark.parametrize("mode", ["observe", "manage"])
def test_claude_code_through_the_gateway(tmp_path: Path, mode: str) -> None:
    claude = client_binary("claude-code", "claude", package="@anthropic-ai/claude-code", version=CLAUDE_CODE_VERSION)
    version = subprocess.run([str(claude), "--version"], capture_output=True, text=True, timeout=30, env=client_env(tmp_path))
    assert version.stdout.startswith(CLAUDE_CODE_VERSION), version.stdout
    upstream = FakeUpstream(Script())
    store = tmp_path / "gateway.db"
    output = tmp_path / "gateway.out"
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    with serving(upstream) as provider, gateway_command(store, provider, output, mode=mode) as gateway:
        env = client_env(home, ANTHROPIC_BASE_URL=gateway, ANTHROPIC_API_KEY=KEY, IS_SANDBOX="1")
        started = time.monotonic()
        run = subprocess.run(
            [str(claude), "-p", "Run the three steps.", "--dangerously-skip-permissions"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=90,
        )
        assert run.returncode == 0, run.stdout + run.stderr
        assert ("All done after compaction." if mode == "observe" else "All done after relief.") in run.stdout
        assert time.monotonic() - started < 60
        log = open_log(str(store), read_only=True)
        try:
            runs = _wait_for_runs(log, runs=2 if mode == "observe" else 1)
            main, *later = runs
            events = log.read(main)
        finally:
            log.close()

    conversations = upstream.conversations
    assert all(r.headers["x-api-key"] == KEY for r in conversations)
    assert all(r.query == "beta=true" for r in conversations)
    first = conversations[0].json
    assert len(first["tools"]) >= 10 and first["thinking"]["type"] == "adaptive"
    assert main == "claude-code/" + json.loads(first["metadata"]["user_id"])["session_id"]
    types = [e.type for e in events]
    if mode == "observe":
        # The error reached Claude Code, which compacted its own history: a summarisation request
        # and the conversation again from the summary, later runs of the same session.
        assert len(conversations) == 6
        assert types.count("context.request.built") == 4  # the overflowed request is recorded as built...
        assert types.count("model.response") == 3  # ...and left unanswered
        assert later, "the client's compaction should start a new run"
        assert any("continued from a previous conversation" in text for text in _user_texts(store, later))
    else:
        # The engine relieved the session (archive first) and sent its request again: one run.
        assert len(conversations) == 5 and later == []
        assert [e.payload.recovered for e in events if e.type == "context.overflow"] == [True]
        assert types.count("model.response") == 4
    answers = [e.payload for e in events if e.type == "message.assistant"]
    assert [dict(b.block) for b in answers[0].reasoning] == [CALLS[0][0]]
    results = [e.payload for e in events if e.type == "tool.result"]
    assert [r.call_id for r in results] == ["toolu_00", "toolu_01", "toolu_02"]
    small, large, failed = results
    assert small.output.split() == [str(n) for n in range(1, 21)] and not small.is_error
    assert "Output too large" in large.output and len(large.output) < 4_000  # Claude Code's preview, not the 48k output
    assert failed.is_error

    if mode == "manage":
        # What went upstream was the engine's request, as the log rebuilds it; Claude Code's options stayed.
        rebuilt = CliRunner().invoke(cli_app, ["inspect", str(store), "-s", main, "-r", "2", "--wire", "anthropic"])
        assert rebuilt.exit_code == 0, rebuilt.output
        sent = conversations[2].json
        assert sent["messages"] == json.loads(rebuilt.output)["messages"]
        assert sent["thinking"] == first["thinking"] and sent["metadata"] == first["metadata"]

    stored = b"".join(p.read_bytes() for p in tmp_path.glob("gateway.db*"))
    assert b"toolu_01" in stored and KEY.encode() not in stored
    assert KEY not in output.read_text()


def _wait_for_runs(log: Any, *, runs: int, timeout: float = 60.0) -> list[str]:
    """The session's runs once the last answer is recorded (the gateway records after the last byte)."""
    deadline = time.monotonic() + timeout
    wanted = runs
    while True:
        runs_now = sorted(log.sessions(), key=lambda s: (len(s), s))
        answers = [e.type for e in log.read(runs_now[-1])].count("model.response") if runs_now else 0
        done = len(runs_now) >= wanted and answers >= (1 if wanted > 1 else 4)
        if done or time.monotonic() > deadline:
            return runs_now
        time.sleep(0.05)


def _user_texts(store: Path, sessions: list[str]) -> list[str]:
    log = open_log(str(store), read_only=True)
    try:
        return [e.payload.text for s in sessions for e in log.read(s) if e.type == "message.user"]
    finally:
        log.close()
