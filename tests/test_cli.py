"""The command line: demo, replay, inspect, stats, compress, compact, and one-line errors."""

from __future__ import annotations

import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contextwright.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("demo")
    db, report = folder / "demo.db", folder / "demo.html"
    result = runner.invoke(
        app, ["demo", "--db", str(db), "--turns", "15", "--window", "32000", "--report", str(report), "--json"]
    )
    assert result.exit_code == 0, result.output
    return db, report, json.loads(result.output)


def test_demo_reports_one_prefix_hash_per_epoch_and_no_orphans(demo_store):
    _, report, summary = demo_store
    assert summary["requests"] > 30 and summary["epochs"] == 1
    assert set(summary["prefix_hashes_per_epoch"].values()) == {1}
    assert summary["orphaned_tool_pairs"] == 0
    assert summary["peak_request_tokens"] <= summary["window"]
    assert summary["crosses_midnight"] and summary["cache_read_share"] > 0
    # The plots need the report extra; without it the report is written and says how to get them.
    assert report.exists()
    if importlib.util.find_spec("matplotlib") is not None:
        assert "<svg" in report.read_text()


def test_demo_is_deterministic(demo_store, tmp_path):
    _, _, summary = demo_store
    again = runner.invoke(
        app,
        [
            "demo",
            "--db",
            str(tmp_path / "d.db"),
            "--turns",
            "15",
            "--window",
            "32000",
            "--report",
            str(tmp_path / "r.html"),
            "--json",
        ],
    )
    second = json.loads(again.output)
    assert {k: v for k, v in second.items() if k not in ("store", "report")} == {
        k: v for k, v in summary.items() if k not in ("store", "report")
    }


def test_demo_prints_a_summary_table(tmp_path):
    result = runner.invoke(app, ["demo", "--db", str(tmp_path / "d.db"), "--turns", "3", "--report", str(tmp_path / "r.html")])
    assert result.exit_code == 0, result.output
    assert "prefix hashes per epoch" in result.output and "orphaned tool pairs" in result.output


def test_demo_on_the_openai_wire(tmp_path):
    result = runner.invoke(
        app,
        [
            "demo",
            "--db",
            str(tmp_path / "d.db"),
            "--turns",
            "4",
            "--provider",
            "openai",
            "--report",
            str(tmp_path / "r.html"),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["model"] == "gpt-4.1"


def test_inspect_reproduces_a_request_and_says_so(demo_store):
    db, _, _ = demo_store
    result = runner.invoke(app, ["inspect", str(db), "--session", "demo-ticket-4711", "--request", "5"])
    assert result.exit_code == 0, result.output
    assert "rebuilt from the log" in result.output and "matches the recorded hash" in result.output
    table = runner.invoke(app, ["inspect", str(db), "--session", "demo-ticket-4711"])
    assert table.exit_code == 0 and "Requests of demo-ticket-4711" in table.output
    as_json = json.loads(runner.invoke(app, ["inspect", str(db), "-s", "demo-ticket-4711", "-r", "0", "--json"]).output)
    assert as_json["session_id"] == "demo-ticket-4711"


def test_inspect_notices_a_tampered_log(demo_store, tmp_path):
    db, _, _ = demo_store
    copy = tmp_path / "copy.db"
    copy.write_bytes(db.read_bytes())
    conn = sqlite3.connect(copy)
    # Change the recorded hash of request 3: the rebuild no longer matches it.
    row = conn.execute(
        "SELECT seq, payload FROM cw_events WHERE type = 'context.request.built' ORDER BY seq LIMIT 1 OFFSET 3"
    ).fetchone()
    payload = json.loads(row[1])
    payload["request_sha256"] = "sha256:" + "0" * 64
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    import hashlib

    conn.execute(
        "UPDATE cw_events SET payload = ?, payload_sha256 = ? WHERE seq = ?",
        (text, "sha256:" + hashlib.sha256(text.encode()).hexdigest(), row[0]),
    )
    conn.commit()
    conn.close()
    result = runner.invoke(app, ["inspect", str(copy), "--session", "demo-ticket-4711", "--request", "3"])
    assert result.exit_code == 1 and "was recorded" in result.output


def test_stats(demo_store):
    db, _, _ = demo_store
    result = runner.invoke(app, ["stats", str(db)])
    assert result.exit_code == 0 and "demo-ticket-4711" in result.output


def test_compact_is_strict_and_reports(demo_store, tmp_path):
    db, _, _ = demo_store
    copy = tmp_path / "c.db"
    copy.write_bytes(db.read_bytes())
    result = runner.invoke(app, ["compact", str(copy), "--session", "demo-ticket-4711"])
    assert result.exit_code == 0, result.output
    assert "compacted" in result.output or "Nothing to compact" in result.output


def test_compress_reads_stdin_and_files(tmp_path):
    output = (
        "".join(f"tests/test_a.py::test_{i} PASSED\n" for i in range(300))
        + "FAILED tests/test_a.py::test_x - assert 1 == 2\n=== 1 failed, 300 passed in 2.0s ===\n"
    )
    result = runner.invoke(app, ["compress", "--exit-code", "1"], input=output)
    assert result.exit_code == 1  # the command's status passes through
    assert "FAILED tests/test_a.py::test_x - assert 1 == 2" in result.output and len(result.output) < len(output)
    path = tmp_path / "out.txt"
    path.write_text(output)
    data = json.loads(runner.invoke(app, ["compress", str(path), "--json", "--budget", "200"]).output)
    assert data["kind"] == "pytest" and data["chars_after"] < data["chars_before"] and data["pointer"].startswith("sha256:")


def test_replay_dumps_bodies_the_sdk_types_accept(tmp_path):
    pytest.importorskip("anthropic", reason="needs the anthropic SDK (the anthropic extra)")
    transcript = tmp_path / "chat.json"
    transcript.write_text(
        json.dumps(
            {
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "List the files."},
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [{"id": "a", "type": "function", "function": {"name": "ls", "arguments": "{}"}}],
                    },
                    {"role": "tool", "tool_call_id": "a", "content": "x.py\ny.py"},
                    {"role": "assistant", "content": "Two files."},
                ]
            }
        )
    )
    dump = tmp_path / "bodies"
    result = runner.invoke(
        app, ["replay", str(transcript), "--window", "32000", "--dump-requests", str(dump), "--report", str(tmp_path / "r.html")]
    )
    assert result.exit_code == 0, result.output
    bodies = sorted(dump.iterdir())
    assert len(bodies) == 2
    import anthropic
    import httpx2

    seen = []
    client = anthropic.Anthropic(
        api_key="t",
        http_client=httpx2.Client(
            transport=httpx2.MockTransport(
                lambda request: (
                    seen.append(json.loads(request.content))
                    or httpx2.Response(
                        200,
                        json={
                            "id": "m",
                            "type": "message",
                            "role": "assistant",
                            "model": "claude-sonnet-4-6",
                            "content": [{"type": "text", "text": "ok"}],
                            "stop_reason": "end_turn",
                            "stop_sequence": None,
                            "usage": {"input_tokens": 1, "output_tokens": 1},
                        },
                    )
                )
            )
        ),
    )
    for body in bodies:
        client.messages.create(**json.loads(body.read_text()))
    assert seen == [json.loads(b.read_text()) for b in bodies]


def test_mistakes_get_one_line_errors_without_tracebacks(tmp_path):
    not_a_store = tmp_path / "notes.db"
    sqlite3.connect(not_a_store).execute("CREATE TABLE notes (x)").connection.commit()
    cases = [
        ["events", str(tmp_path / "missing.db"), "--session", "s"],
        ["events", str(not_a_store), "--session", "s"],
        ["sessions", "mysql://nope"],
        ["inspect", str(not_a_store), "--session", "s"],
        ["replay", str(tmp_path / "nope.jsonl")],
        ["compress", str(tmp_path / "nope.txt")],
    ]
    for args in cases:
        result = runner.invoke(app, args)
        assert result.exit_code == 1, (args, result.output)
        assert "Traceback" not in result.output
        assert result.output.strip().startswith("error:"), result.output
    unknown = tmp_path / "weird.xyz"
    unknown.write_text("not a transcript at all")
    result = runner.invoke(app, ["replay", str(unknown)])
    assert result.exit_code == 1 and result.output.startswith("error:")


def test_help_reads_well():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("demo", "replay", "inspect", "stats", "compress", "compact", "sessions", "events", "verify"):
        assert command in result.output
        sub = runner.invoke(app, [command, "--help"])
        assert sub.exit_code == 0 and "Usage" in sub.output


def test_replay_runs_on_every_shared_transcript_and_dumps_sdk_ready_bodies(traces_dir, tmp_path):
    pytest.importorskip("anthropic", reason="needs the anthropic SDK (the anthropic extra)")
    files = sorted(p for p in traces_dir.rglob("*") if p.is_file() and p.name not in ("README.md", "manifest.jsonl"))
    dump = tmp_path / "bodies"
    result = runner.invoke(
        app, ["replay", *map(str, files), "--window", "64000", "--dump-requests", str(dump), "--json", "--no-compare"]
    )
    assert result.exit_code == 0, result.output[-2000:]
    rows = json.loads(result.output)["transcripts"]
    assert len(rows) >= len(files) and all(row["overflows"] == 0 for row in rows)
    assert {row["format"] for row in rows} >= {
        "claude-code-jsonl",
        "openhands-llm-completions",
        "openhands-events",
        "swe-agent-traj",
    }
    bodies = sorted(dump.iterdir())
    assert len(bodies) == sum(row["requests"] for row in rows)
    # One body per format family goes through the official SDK unchanged.
    import anthropic
    import httpx2

    seen = []
    ok = {
        "id": "m",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    client = anthropic.Anthropic(
        api_key="t",
        max_retries=0,
        http_client=httpx2.Client(
            transport=httpx2.MockTransport(
                lambda request: seen.append(json.loads(request.content)) or httpx2.Response(200, json=ok)
            )
        ),
    )
    sample = bodies[:: max(1, len(bodies) // 40)]
    for body in sample:
        client.messages.create(**json.loads(body.read_text()))
    assert seen == [json.loads(b.read_text()) for b in sample]


def test_replay_runs_as_a_one_hour_agent_profile_when_asked(tmp_path):
    transcript = tmp_path / "chat.json"
    messages = [{"role": "user", "content": "List the files."}, {"role": "assistant", "content": "Two files."}]
    transcript.write_text(json.dumps({"messages": messages}))
    dumps = {}
    for ttl in ("5m", "1h"):
        dump = tmp_path / ttl
        result = runner.invoke(app, ["replay", str(transcript), "--cache-ttl", ttl, "--dump-requests", str(dump), "--no-compare"])
        assert result.exit_code == 0, result.output
        [body] = [json.loads(p.read_text()) for p in dump.iterdir()]
        dumps[ttl] = [b.get("cache_control", {}).get("ttl") for b in body["system"] if b.get("cache_control")]
    assert dumps == {"5m": [None], "1h": ["1h"]}
    refused = runner.invoke(app, ["replay", str(transcript), "--cache-ttl", "2h"])
    assert refused.exit_code == 2 and "--cache-ttl" in refused.output


def test_inspect_shows_signed_reasoning_as_an_opaque_row(tmp_path):
    anthropic = pytest.importorskip("anthropic", reason="needs the anthropic SDK (the anthropic extra)")

    from contextwright.clock import FixedClock
    from contextwright.runtime.engine import Engine
    from contextwright.testing.fakes import sample_agent, sample_model

    db = tmp_path / "thinking.db"
    engine = Engine.open(str(db), clock=FixedClock("2026-03-01T22:30:00Z"))
    session = engine.session("think", agent=sample_agent(), model=sample_model())
    session.user("Find the TODOs.")
    session.next_request()
    answer = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": [
            {"type": "thinking", "thinking": "private chain of thought", "signature": "sig" * 20},
            {"type": "tool_use", "id": "toolu_1", "name": "search_code", "input": {"q": "TODO"}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    session.record(anthropic.types.Message.model_validate(answer))
    session.tool_result("toolu_1", "a.py:1: TODO")
    built = session.next_request()
    result = runner.invoke(app, ["inspect", str(db), "--session", "think", "--request", str(built.index)])
    assert result.exit_code == 0, result.output
    assert "matches the recorded hash" in result.output
    assert "anthropic thinking" in result.output and "private chain of thought" not in result.output


def test_the_entry_point_keeps_its_imports_out_of_the_collectors_passes():
    # A replay allocates events by the thousand; full collections should not rescan every loaded module.
    code = (
        "import gc, sys\n"
        "from contextwright.cli import main\n"
        "sys.argv = ['contextwright', '--version']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(gc.get_freeze_count())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert int(done.stdout.split()[-1]) > 10_000
