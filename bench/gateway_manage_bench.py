"""The gateway in manage mode on a long Claude Code session: tokens sent upstream, evidence kept, latency added.

A seeded generator of our own plays a Claude-Code-shaped session (a system block, four
tools, every request re-sending the whole conversation) whose tool results are medium
outputs: noisy passing pytest runs with one failure and their totals, build logs,
``ls -la`` listings, file views and grep results; the user writes a line every 25 turns (the engine
builds no request after 200 model rounds since the last user message). The scripted fake provider
(``contextwright.testing.upstream.FakeUpstream``) answers each request with the session's
next assistant message (chosen by the last tool result's id, so the engine's own request
gets the same answer as the client's), and records every body it receives.

Tokens (the default): every body the client sent and every body the gateway sent upstream
are counted with one exact counter (o200k, ``contextwright.compare.TokenCounter``); the
evidence recall of the upstream requests is scored with ``contextwright.compare.evidence``
(the strings each assistant message used that it read in an earlier tool output), and the
last noisy test run as sent upstream is checked for its failure line and totals.

Latency (``--latency``): the gateway (``contextwright gateway --mode manage``) and the fake
provider each in their own process on loopback; at 100 and 1,000 messages each request is
sent straight to the provider and through the gateway, alternately, and the p50 time to
first byte added is set against the engine's own work for the same requests through the library, on the
session as the gateway had it before them: the new turn recorded (``Session.tool_result()``, where the output's
view is decided on arrival) and ``Session.next_request()``, timed after the same pause as each request through
the gateway (``--pause``, :data:`PAUSE` by default), and back to back beside it; the second alone is shown too.

    python bench/gateway_manage_bench.py                 # tokens, 60 turns
    python bench/gateway_manage_bench.py --turns 80
    python bench/gateway_manage_bench.py --latency       # latency at 100 and 1,000 messages
    python bench/gateway_manage_bench.py --write         # and the figures into docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

sys.path.insert(0, str(Path(__file__).parent))

from contextwright.testing.service import free_port
from contextwright.testing.upstream import FakeUpstream, Received, Reply, anthropic_message

SEED = 20261207
USER_EVERY = 25
"""Turns between the user's own messages."""
PAUSE = 0.1
"""Seconds between one request and the next (the gateway records the previous answer meanwhile). The library's
turns are timed after the same pause: work that starts on an idle machine runs slower than the same work
back to back (caches and clocks are cold), and the gateway's requests always start so."""
TASK = "The parser tests fail since the last refactor; find out why and fix it."
TOOLS = [
    {"name": name, "description": f"{name}: {desc}", "input_schema": {"type": "object", "properties": props}}
    for name, desc, props in (
        ("Bash", "Run a shell command in the project.", {"command": {"type": "string"}}),
        ("Read", "Read a file with line numbers.", {"file_path": {"type": "string"}}),
        ("Grep", "Search the project with ripgrep.", {"pattern": {"type": "string"}, "path": {"type": "string"}}),
        ("Glob", "List files matching a pattern.", {"pattern": {"type": "string"}}),
    )
]
WORDS = "parse token value node buffer state index frame cache result error config item render scope".split()


def _system(rng: random.Random) -> str:
    lines = ["You are Claude Code, an interactive coding agent. Follow the rules below."]
    for n in range(160):
        lines.append(f"- Rule {n}: " + " ".join(rng.choice(WORDS) for _ in range(12)) + ".")
    return "\n".join(lines)


# --- the medium outputs ---------------------------------------------------------------------------


def _pytest(rng: random.Random, run: int) -> tuple[str, str, str]:
    """A noisy passing run with one failure: (output, failure line, totals line)."""
    lines = [
        "============================= test session starts ==============================",
        "platform linux -- Python 3.11.7, pytest-8.3.2, pluggy-1.5.0",
        f"rootdir: /home/dev/parsekit, configfile: pyproject.toml, seed {rng.randint(1000, 99999)}",
        "collected 240 items",
        "",
    ]
    bad = rng.randrange(240)
    failure = ""
    for n in range(240):
        module = f"tests/test_{WORDS[n % len(WORDS)]}_{n // 15:02d}.py"
        name = f"test_{rng.choice(WORDS)}_{rng.choice(WORDS)}_{n:03d}"
        if n == bad:
            failure = f"FAILED {module}::{name} - AssertionError: assert {rng.randint(10, 99)} == {rng.randint(100, 999)}"
            lines.append(f"{module}::{name} FAILED{'':<20}[{100 * (n + 1) // 240:3d}%]")
        else:
            lines.append(f"{module}::{name} PASSED{'':<20}[{100 * (n + 1) // 240:3d}%]")
    lines += [
        "",
        "=================================== FAILURES ===================================",
        f"_________________________________ run {run} _________________________________",
        "    def test_case():",
        ">       assert parse(source) == expected",
        "E       AssertionError",
        "",
        "=========================== short test summary info ============================",
        failure,
    ]
    totals = f"======================== 1 failed, 239 passed in {rng.uniform(3, 9):.2f}s ========================"
    lines.append(totals)
    return "\n".join(lines), failure, totals


def _build(rng: random.Random) -> str:
    lines = ["$ make build", "python -m build --wheel"]
    for n in range(90):
        word = rng.choice(WORDS)
        lines.append(f"copying src/parsekit/{word}_{n:02d}.py -> build/lib/parsekit/{word}_{n:02d}.py")
        if n % 11 == 0:
            lines.append(f"warning: src/parsekit/{word}_{n:02d}.py:{rng.randint(1, 400)}: unused import '{rng.choice(WORDS)}'")
    lines.append(f"Successfully built parsekit-0.{rng.randint(1, 9)}.{rng.randint(0, 20)}-py3-none-any.whl")
    return "\n".join(lines)


def _listing(rng: random.Random, folder: str) -> tuple[str, list[str]]:
    names = sorted({f"{rng.choice(WORDS)}_{rng.randint(0, 99):02d}.py" for _ in range(45)})
    lines = [
        f"total {rng.randint(100, 900)}",
        "drwxr-xr-x  9 dev dev  4096 Dec  7 09:12 .",
        "drwxr-xr-x 31 dev dev  4096 Dec  7 08:01 ..",
    ]
    for name in names:
        lines.append(
            f"-rw-r--r--  1 dev dev {rng.randint(200, 40000):5d} Dec  {rng.randint(1, 7)} 0{rng.randint(0, 9)}:{rng.randint(10, 59)} {name}"
        )
    return "\n".join(lines), [f"{folder}/{n}" for n in names]


def _file_view(rng: random.Random, path: str) -> tuple[str, str]:
    function = f"{rng.choice(WORDS)}_{rng.choice(WORDS)}_{rng.randint(100, 999)}"
    lines = []
    for n in range(1, 121):
        if n == 40:
            text = f"def {function}(source: str) -> Node:"
        elif n % 9 == 0:
            text = f"    # {' '.join(rng.choice(WORDS) for _ in range(8))}"
        else:
            text = f"    {rng.choice(WORDS)} = {rng.choice(WORDS)}.{rng.choice(WORDS)}({rng.choice(WORDS)}, {rng.randint(0, 99)})"
        lines.append(f"{n:6d}\t{text}")
    return f"{path}\n" + "\n".join(lines), function


def _grep(rng: random.Random, pattern: str) -> tuple[str, str]:
    hits = []
    for _ in range(35):
        hits.append(
            f"src/parsekit/{rng.choice(WORDS)}_{rng.randint(0, 99):02d}.py:{rng.randint(1, 500)}:    {pattern}({rng.choice(WORDS)}, {rng.choice(WORDS)})"
        )
    return "\n".join(hits), hits[rng.randrange(len(hits))].split(":")[0]


# --- the session ------------------------------------------------------------------------------------


@dataclass
class Turn:
    answer: dict[str, Any]
    """The assistant message (Anthropic content blocks) the provider answers with."""
    results: list[dict[str, Any]]
    """The tool results the client sends back."""
    failure: str = ""
    totals: str = ""


def session(turns: int, seed: int = SEED) -> tuple[str, list[Turn]]:
    """The system text and ``turns`` turns: each an answer calling one or two tools, and their outputs."""
    rng = random.Random(seed)
    system = _system(rng)
    out: list[Turn] = []
    seen_paths: list[str] = ["src/parsekit/parser.py"]
    last_fact = ""
    last_function = "parse_source"
    for step in range(turns):
        kind = ("pytest", "ls", "read", "grep", "build", "pytest", "read")[step % 7]
        call_id = f"toolu_{seed % 1000:03d}{step:04d}"
        text = f"Step {step}." + (f" Earlier output showed `{last_fact}`." if last_fact else "")
        failure = totals = ""
        if kind == "pytest":
            output, failure, totals = _pytest(rng, step)
            call = {"name": "Bash", "input": {"command": "python -m pytest -q tests/"}}
            last_fact = failure.split(" - ")[0].removeprefix("FAILED ")
        elif kind == "ls":
            folder = rng.choice(["src/parsekit", "tests", "src/parsekit/nodes"])
            output, paths = _listing(rng, folder)
            seen_paths += paths
            call = {"name": "Bash", "input": {"command": f"ls -la {folder}"}}
            last_fact = paths[rng.randrange(len(paths))]
        elif kind == "read":
            path = seen_paths[rng.randrange(len(seen_paths))]
            output, function = _file_view(rng, path)
            call = {"name": "Read", "input": {"file_path": path}}
            last_fact = last_function = function
        elif kind == "grep":
            # Where the function it last read is used: what an agent searches for (a random word pair would
            # only match test names it never read for that).
            pattern = last_function
            output, path = _grep(rng, pattern)
            seen_paths.append(path)
            call = {"name": "Grep", "input": {"pattern": pattern, "path": "src"}}
            last_fact = path
        else:
            output = _build(rng)
            call = {"name": "Bash", "input": {"command": "make build"}}
            last_fact = output.splitlines()[-1].split()[-1]
        use = {"type": "tool_use", "id": call_id, **call}
        result = {"type": "tool_result", "tool_use_id": call_id, "content": output}
        results: list[dict[str, Any]] = [result]
        if step % USER_EVERY == USER_EVERY - 1:
            # The user types between tool rounds now and then (the engine caps rounds since the last user message).
            results.append({"type": "text", "text": f"Keep going; also keep an eye on {rng.choice(seen_paths)}."})
        out.append(Turn(answer={"text": text, "use": use}, results=results, failure=failure, totals=totals))
    return system, out


def answer_blocks(turn: Turn) -> list[dict[str, Any]]:
    return [{"type": "text", "text": turn.answer["text"]}, turn.answer["use"]]


def final_blocks(turns: list[Turn]) -> list[dict[str, Any]]:
    last = next(t for t in reversed(turns) if t.failure)
    return [{"type": "text", "text": f"Fixed: `{last.failure.split(' - ')[0].removeprefix('FAILED ')}` now passes."}]


def client_messages(turns: list[Turn], upto: int) -> list[dict[str, Any]]:
    """What the client sends on request ``upto`` (0-based): the task and ``upto`` answered turns."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    for turn in turns[:upto]:
        messages.append({"role": "assistant", "content": answer_blocks(turn)})
        messages.append({"role": "user", "content": turn.results})
    return messages


def client_body(system: str, messages: list[dict[str, Any]], session_id: str) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 32000,
        "stream": True,
        "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
        "tools": TOOLS,
        "metadata": {"user_id": json.dumps({"device_id": "d" * 64, "account_uuid": "", "session_id": session_id})},
        "messages": messages,
    }


def scripted(turns: list[Turn]) -> Any:
    """The provider's script: the answer after the last tool result the request holds (the first answer without one)."""
    after = {t.results[0]["tool_use_id"]: i + 1 for i, t in enumerate(turns)}

    def script(received: Received) -> Reply:
        last = None
        for message in received.json.get("messages", []):
            if isinstance(message.get("content"), list):
                for block in message["content"]:
                    if block.get("type") == "tool_result":
                        last = block.get("tool_use_id")
        index = after.get(last, 0) if last else 0
        blocks = answer_blocks(turns[index]) if index < len(turns) else final_blocks(turns)
        return Reply(body=anthropic_message(*blocks, stop_reason="tool_use" if index < len(turns) else "end_turn"))

    return script


# --- tokens and evidence ---------------------------------------------------------------------------------


def _tokens(counter: Any, body: dict[str, Any]) -> int:
    from contextwright.canonical import canonical_json

    rest = {k: v for k, v in body.items() if k != "messages"}
    return counter(canonical_json(rest)) + sum(counter(canonical_json(m)) for m in body["messages"])


def _timeline(system: str, turns: list[Turn]) -> Any:
    """The session as ``contextwright.compare.evidence`` scores it: one model call per client request."""
    from contextwright.compare.timeline import MODEL_CALL_PACE, PACE_START, ModelCall, Timeline, Unit

    units = [Unit(role="user", blocks=({"type": "text", "text": TASK},), group=0, kind="user", text=TASK)]
    calls = []
    answers = [answer_blocks(t) for t in turns] + [final_blocks(turns)]
    for ordinal, blocks in enumerate(answers):
        at = PACE_START + MODEL_CALL_PACE * ordinal
        calls.append(ModelCall(upto=len(units), at=at, ordinal=ordinal, after_task=True))
        text = " ".join(str(b.get("text", b.get("name", ""))) for b in blocks)
        units.append(Unit(role="assistant", blocks=tuple(blocks), group=ordinal + 1, kind="assistant", text=text))
        if ordinal < len(turns):
            for result in turns[ordinal].results:
                if result["type"] == "text":
                    text = result["text"]
                    units.append(Unit(role="user", blocks=(result,), group=ordinal + 1, kind="user", text=text))
                else:
                    text = result["content"]
                    units.append(Unit(role="user", blocks=(result,), group=ordinal + 1, kind="tool_result", text=text))
    times = tuple(PACE_START + MODEL_CALL_PACE * i for i in range(len(answers)))
    return Timeline(
        units=tuple(units), calls=tuple(calls), assistant_times=times, tools=tuple(TOOLS), system=system, task=TASK, timed=False
    )


@dataclass(frozen=True)
class Sent:
    at: Any
    body: dict[str, Any]
    ordinal: int
    relief: tuple[str, ...] = ()


def run_tokens(turns_n: int, seed: int = SEED) -> dict[str, Any]:
    """Play the session through an in-process gateway in manage mode; the figures of the tokens table."""
    from contextwright.compare.evidence import evidence_recall, normalize, request_text
    from contextwright.compare.strategies import TokenCounter
    from contextwright.gateway import GatewayConfig, create_gateway_app
    from contextwright.testing.service import serving

    system, turns = session(turns_n, seed)
    upstream = FakeUpstream(scripted(turns))
    folder = Path(tempfile.mkdtemp())
    client_bodies: list[dict[str, Any]] = []
    with serving(upstream) as up_url:
        config = GatewayConfig(store=str(folder / "manage.db"), mode="manage", anthropic_upstream=up_url)
        with serving(create_gateway_app(config)) as gw_url, httpx2.Client(timeout=120) as client:
            headers = {"x-api-key": "sk-bench", "anthropic-version": "2023-06-01", "content-type": "application/json"}
            for upto in range(turns_n + 1):
                body = client_body(system, client_messages(turns, upto), "5b0e7d2a-4c1f-4e8e-9d55-0c2f7a1b9e31")
                client_bodies.append(body)
                response = client.post(gw_url + "/v1/messages?beta=true", content=json.dumps(body).encode(), headers=headers)
                assert response.status_code == 200, response.text
    sent = [r.json for r in upstream.conversations]
    assert len(sent) == len(client_bodies), (len(sent), len(client_bodies))
    counter = TokenCounter()
    client_tokens = sum(_tokens(counter, b) for b in client_bodies)
    upstream_tokens = sum(_tokens(counter, b) for b in sent)
    timeline = _timeline(system, turns)
    requests = [Sent(at=c.at, body=b, ordinal=c.ordinal) for c, b in zip(timeline.calls, sent, strict=True)]
    recall = evidence_recall(timeline, requests, strategy="contextwright", count=counter)
    last = max(i for i, t in enumerate(turns) if t.failure)
    shown = request_text(sent[-1])
    kept = normalize(turns[last].failure) in shown, normalize(turns[last].totals) in shown
    run_id = turns[last].results[0]["tool_use_id"]
    upstream_run = _result_chars(sent[-1], run_id)
    return {
        "turns": turns_n,
        "requests": len(client_bodies),
        "client": client_tokens,
        "upstream": upstream_tokens,
        "saving": 1 - upstream_tokens / client_tokens,
        "recall": recall,
        "failure_kept": kept[0],
        "totals_kept": kept[1],
        "run_chars": len(turns[last].results[0]["content"]),
        "run_upstream_chars": upstream_run,
        "last_client": _tokens(counter, client_bodies[-1]),
        "last_upstream": _tokens(counter, sent[-1]),
    }


def _result_chars(body: dict[str, Any], call_id: str) -> int:
    for message in body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "tool_result" and block.get("tool_use_id") == call_id:
                content = block.get("content")
                if isinstance(content, list):
                    return sum(len(str(part.get("text", ""))) for part in content)
                return len(str(content or ""))
    return 0


def tokens_table(f: dict[str, Any]) -> list[str]:
    recall = f["recall"]
    misses = ", ".join(f"{k} {v}" for k, v in recall.misses.items()) or "none"
    return [
        f"{f['turns']} turns ({f['requests']} requests, seed {SEED}) of a Claude-Code-shaped session whose tool results are "
        "medium outputs (noisy pytest runs of 240 tests with one failure, build logs, `ls -la` listings, 120-line file "
        "views, grep results), the whole conversation re-sent on every request, through `contextwright gateway --mode "
        "manage` to the fake provider; every body counted with o200k.",
        "",
        "| measure | value |",
        "|---|---:|",
        f"| tokens the client sent (all requests) | {f['client']:,} |",
        f"| tokens the gateway sent upstream | {f['upstream']:,} |",
        f"| saving | {100 * f['saving']:.1f}% |",
        f"| last request: client / upstream | {f['last_client']:,} / {f['last_upstream']:,} |",
        f"| evidence recall of the upstream requests | {100 * (recall.share or 0):.1f}% ({recall.seen}/{recall.pairs}; misses: {misses}) |",
        f"| last noisy test run upstream: characters (client's) | {f['run_upstream_chars']:,} ({f['run_chars']:,}) |",
        f"| its failure line / totals line kept | {'yes' if f['failure_kept'] else 'NO'} / {'yes' if f['totals_kept'] else 'NO'} |",
    ]


# --- latency -------------------------------------------------------------------------------------------


def _serve_upstream(port: int, turns_n: int) -> None:
    import uvicorn

    _, turns = session(turns_n)
    uvicorn.run(FakeUpstream(scripted(turns)), host="127.0.0.1", port=port, log_level="warning")


def run_latency(sizes: list[int], reps: int, pause: float = PAUSE) -> list[dict[str, Any]]:
    from gateway_bench import _ttfb, _wait

    from contextwright.log import open_log
    from contextwright.runtime.engine import Engine
    from contextwright.runtime.reopen import reopen

    turns_n = max(sizes) // 2 + reps + 2
    system, turns = session(turns_n)
    up_port, gw_port = free_port(), free_port()
    folder = Path(tempfile.mkdtemp())
    store = folder / "latency.db"
    upstream = subprocess.Popen([sys.executable, __file__, "--serve-upstream", str(up_port), "--turns", str(turns_n)])
    cmd = [sys.executable, "-m", "contextwright", "gateway", "--store", str(store), "--port", str(gw_port)]
    cmd += ["--mode", "manage", "--anthropic-upstream", f"http://127.0.0.1:{up_port}"]
    cmd += ["--max-body-bytes", str(32 * 1024 * 1024)]  # 1,000 messages of medium outputs are ~4.6 MB
    gateway = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, env={**os.environ})
    rows: list[dict[str, Any]] = []
    try:
        _wait(up_port, upstream)
        _wait(gw_port, gateway)
        with httpx2.Client(timeout=300) as client:
            for size in sizes:
                session_id = f"00000000-0000-4000-8000-{size:012d}"
                first = size // 2  # answered turns: 1 + 2 * first messages
                direct, through = [], []
                for k in range(-1, reps):  # the first (the whole history recorded at once) is not timed
                    body = json.dumps(client_body(system, client_messages(turns, first + k), session_id)).encode()
                    d = _ttfb(client, f"http://127.0.0.1:{up_port}", body)
                    t = _ttfb(client, f"http://127.0.0.1:{gw_port}", body)
                    if k >= 0:
                        direct.append(d)
                        through.append(t)
                    time.sleep(pause)
                pending = turns[first + reps - 1].results[0]  # the result of the last answer's call
                rows.append(
                    {
                        "size": 1 + 2 * first,
                        "session": session_id,
                        "pending": pending,
                        "direct": direct,
                        "through": through,
                    }
                )
    finally:
        for process in (gateway, upstream):
            process.terminate()
            process.wait(timeout=30)
    # The engine's build of the next request on a copy of that log: the last answer's tool call gets its result.
    copy = folder / "copy"
    copy.mkdir()
    for part in folder.glob("latency.db*"):
        shutil.copy(part, copy / part.name)
    log = open_log(str(copy / "latency.db"))
    try:
        engine = Engine(log)
        for row in rows:
            # The session's latest run (a compaction starts a new one beside the first).
            name = sorted((s for s in log.sessions() if row["session"] in s), key=lambda s: (len(s), s))[-1]
            # The requests the gateway built (a request it built none for goes upstream as sent).
            row["built"] = sum(1 for e in log.read(name) if e.type == "context.request.built")
            cold: list[float] = []
            for _ in range(reps):  # reopened each time: the whole log read back and the request built from it
                opened = reopen(engine, name)
                if not cold:
                    opened.tool_result(row["pending"]["tool_use_id"], row["pending"]["content"])
                started = time.perf_counter()
                opened.next_request()
                cold.append((time.perf_counter() - started) * 1000)
            row["cold"] = cold
    finally:
        log.close()
    for row in rows:
        row["work"], row["build"] = _library_turns(system, turns, row, reps, folder, pause=pause)
        row["hot"], _ = _library_turns(system, turns, row, reps, folder, pause=0)
    return rows


def _library_turns(
    system: str, turns: list[Turn], row: dict[str, Any], reps: int, folder: Path, *, pause: float
) -> tuple[list[float], list[float]]:
    """The engine's work for the requests the gateway was timed on, through the library: ms per turn for the
    new turn recorded and the request built, and for the build alone.

    The session is made as the gateway made it before those requests (the first request of the size through
    the gateway's own recorder, in this process, and its answer), then each timed request's turn goes in as a
    library user's loop puts it: its tool result (decided on arrival) or the user's line, then
    ``Session.next_request()``, each after ``pause`` seconds; the answer that follows is recorded untimed."""
    from contextwright.gateway.identity import session_key
    from contextwright.gateway.recorder import Recorder
    from contextwright.gateway.wires import parse_request
    from contextwright.log import open_log
    from contextwright.runtime.engine import Engine

    first = (row["size"] - 1) // 2
    log = open_log(str(Path(tempfile.mkdtemp(dir=folder)) / "library.db"))
    try:
        engine = Engine(log)
        recorder = Recorder(engine, manage=True)
        conversation = parse_request("anthropic", client_body(system, client_messages(turns, first - 1), row["session"]))
        key, _ = session_key(conversation, {}, responses=recorder.responses)
        ticket = recorder.record_request(key, conversation)
        assert ticket.run is not None and ticket.built, ticket
        recorder.record_answer(ticket, anthropic_message(*answer_blocks(turns[first - 1]), stop_reason="tool_use"))
        session = ticket.run.session
        work: list[float] = []
        build: list[float] = []
        for k in range(reps):  # request k brings the results of the call turn first + k - 1 made
            time.sleep(pause)
            arrived = time.perf_counter()
            for result in turns[first + k - 1].results:
                if result["type"] == "text":
                    session.user(result["text"])
                else:
                    session.tool_result(result["tool_use_id"], result["content"])
            started = time.perf_counter()
            session.next_request()
            ended = time.perf_counter()
            work.append((ended - arrived) * 1000)
            build.append((ended - started) * 1000)
            session.record(anthropic_message(*answer_blocks(turns[first + k]), stop_reason="tool_use"))
        return work, build
    finally:
        log.close()


def latency_table(rows: list[dict[str, Any]], reps: int, pause: float = PAUSE) -> list[str]:
    from _docs import machine_load

    lines = [
        f"`contextwright gateway --mode manage` and the fake provider in their own processes on loopback; the same "
        f"generated session (seed {SEED}, a user message every {USER_EVERY} turns) at each size, {reps} requests per size "
        "each one turn longer (the first request of a size, which records the whole history, is sent before and not "
        f"timed), each sent straight to the provider and through the gateway, alternately, {pause:g} s apart. The engine's "
        "work for the same requests is measured through the library, on the session as the gateway had it before "
        "them (made by the gateway's recorder in the bench's process): *engine build* is the request's new turn "
        "recorded (`Session.tool_result()`, where the tool output's view is decided on arrival, or `Session.user()`) "
        "and `Session.next_request()`, timed after the same pause as each request through the gateway (the ratio's "
        "denominator: the same work runs slower on a machine idle before it) and, on a second copy, back to back; "
        "*next_request* is the last alone, after the pause (the answer that follows is recorded untimed: the gateway "
        "records it after its answer has gone). A cold build reopens the session from the gateway's log first. "
        f"Load {machine_load()}.",
        "",
        "| messages | TTFB direct p50 | TTFB gateway p50 | added (p50 of differences) | engine build p50 | added / build "
        "| engine build back to back p50 | added / that | next_request p50 | added / next_request | cold build p50 "
        "| requests built by the gateway |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        added = statistics.median(t - d for d, t in zip(row["direct"], row["through"], strict=True))
        work, build = statistics.median(row["work"]), statistics.median(row["build"])
        hot = statistics.median(row["hot"])
        lines.append(
            f"| {row['size']:,} | {statistics.median(row['direct']):.1f} ms | {statistics.median(row['through']):.1f} ms "
            f"| {added:.1f} ms | {work:.1f} ms | {added / work:.2f}× | {hot:.1f} ms | {added / hot:.2f}× "
            f"| {build:.1f} ms | {added / build:.2f}× | {statistics.median(row['cold']):.1f} ms | {row['built']} of {reps + 1} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--latency", action="store_true", help="Measure the latency added at 100 and 1,000 messages.")
    parser.add_argument("--sizes", default="100,1000", help="Messages per request for --latency.")
    parser.add_argument("--reps", type=int, default=9, help="Timed requests per size for --latency.")
    parser.add_argument(
        "--pause", type=float, default=PAUSE, help="Seconds between requests for --latency (the library's turns wait as long)."
    )
    parser.add_argument("--write", action="store_true", help="Write the figures into docs/benchmarks.md.")
    parser.add_argument("--serve-upstream", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_upstream:
        _serve_upstream(args.serve_upstream, args.turns)
        return
    if args.latency:
        lines = latency_table(run_latency([int(s) for s in args.sizes.split(",")], args.reps, args.pause), args.reps, args.pause)
        name, title = (
            "gateway-manage-latency",
            "## Gateway in manage mode: latency added (`bench/gateway_manage_bench.py --latency`)",
        )
    else:
        lines = tokens_table(run_tokens(args.turns))
        name, title = "gateway-manage-tokens", "## Gateway in manage mode: tokens sent upstream (`bench/gateway_manage_bench.py`)"
    print("\n".join(lines))
    if args.write:
        from _docs import update_section

        update_section(name, title + "\n\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
