"""Latency the gateway adds in observe mode: time to first byte through it against the provider direct.

A fake provider (``contextwright.testing.upstream.FakeUpstream``, streaming a short answer)
and ``contextwright gateway --mode observe`` each run in their own process on loopback;
this process plays a client shaped like Claude Code (a 28,000-character system block,
12 tools, a conversation that grows by one tool call and a 17,000-character output per
turn, the call being the one the provider answered) and sends every turn's request twice,
alternately: straight to the provider and through the gateway. The time to first byte is taken from the request's start to the
first chunk of the streamed answer; the gateway records each turn while it forwards.

    python bench/gateway_bench.py                  # 100 and 1,000 messages, 31 requests each
    python bench/gateway_bench.py --sizes 100 --reps 61
    python bench/gateway_bench.py --write          # and the figures into docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2

from contextwright.testing.service import free_port


def _serve_upstream(port: int) -> None:
    import uvicorn

    from contextwright.testing.upstream import FakeUpstream, Received, Reply, anthropic_message

    def script(received: Received) -> Reply:
        # The call the client's next request holds, so the gateway records one new turn per request,
        # as with a real client (an answer the client then does not send back reads as a rewritten history).
        turn = (len(received.json["messages"]) - 1) // 2
        return Reply(body=anthropic_message(_call(turn), stop_reason="tool_use"))

    uvicorn.run(FakeUpstream(script), host="127.0.0.1", port=port, log_level="warning")


def _call(step: int) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_{step:03d}", "name": "Tool0", "input": {"x": f"step {step}"}}


def _wait(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"a server exited at start ({process.args!r})")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError("a server did not start in 30 s") from None
            time.sleep(0.05)


def _body(turn: int) -> dict[str, Any]:
    tools = [
        {
            "name": f"Tool{n}",
            "description": "d" * 1500,
            "input_schema": {"type": "object", "properties": {"x": {"type": "string"}}},
        }
        for n in range(12)
    ]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]
    for step in range(turn):
        call = _call(step)
        messages.append({"role": "assistant", "content": [call]})
        output = (f"line {step} " * 1700)[:17_000]
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": output}]})
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 32000,
        "stream": True,
        "system": [{"type": "text", "text": "s" * 28_000}],
        "tools": tools,
        "metadata": {"user_id": json.dumps({"session_id": "bench-session"})},
        "messages": messages,
    }


def _ttfb(client: httpx2.Client, url: str, body: bytes) -> float:
    headers = {"x-api-key": "sk-bench", "anthropic-version": "2023-06-01", "content-type": "application/json"}
    started = time.perf_counter()
    with client.stream("POST", url + "/v1/messages", content=body, headers=headers) as response:
        first = None
        for _ in response.iter_raw():
            first = first or time.perf_counter()
        assert response.status_code == 200
    assert first is not None
    return (first - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1000", help="Messages per request: one row each.")
    parser.add_argument("--reps", type=int, default=31, help="Requests per size, each one turn longer.")
    parser.add_argument(
        "--same",
        action="store_true",
        help="Send the first request of a size every time (forwarding alone: a retry records nothing).",
    )
    parser.add_argument(
        "--pause", type=float, default=0.05, help="Seconds between turns (a client reading and running its tool)."
    )
    parser.add_argument("--write", action="store_true", help="Write the figures into docs/benchmarks.md.")
    parser.add_argument("--serve-upstream", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_upstream:
        _serve_upstream(args.serve_upstream)
        return
    sizes = [int(size) for size in args.sizes.split(",")]
    up_port, gw_port = free_port(), free_port()
    folder = Path(tempfile.mkdtemp())
    upstream = subprocess.Popen([sys.executable, __file__, "--serve-upstream", str(up_port)])
    gateway_cmd = [sys.executable, "-m", "contextwright", "gateway", "--store", str(folder / "bench.db"), "--port", str(gw_port)]
    gateway_cmd += ["--mode", "observe", "--anthropic-upstream", f"http://127.0.0.1:{up_port}"]
    gateway_cmd += ["--max-body-bytes", str(32 * 1024 * 1024)]  # 1,000 messages of 17,000-character outputs are ~8.5 MB
    gateway = subprocess.Popen(gateway_cmd, stdout=subprocess.DEVNULL, env={**os.environ})
    rows = []
    try:
        _wait(up_port, upstream)
        _wait(gw_port, gateway)
        with httpx2.Client(timeout=120) as client:
            for size in sizes:
                first = size // 2  # turns: 1 + 2 * turns messages
                direct, through = [], []
                for turn in range(first, first + args.reps):
                    body = json.dumps(_body(first if args.same else turn)).encode()
                    direct.append(_ttfb(client, f"http://127.0.0.1:{up_port}", body))
                    through.append(_ttfb(client, f"http://127.0.0.1:{gw_port}", body))
                    time.sleep(args.pause)
                rows.append((1 + 2 * first, len(body), direct, through))
    finally:
        for process in (gateway, upstream):
            process.terminate()
            process.wait(timeout=30)
    load = f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    lines = [
        f"Requests shaped like Claude Code's (28,000-character system, 12 tools, one 17,000-character tool output more "
        f"per turn), {args.reps} per size each one turn longer, streamed, each sent straight to the fake provider and "
        f"through `contextwright gateway --mode observe`, alternately, on loopback; load {load}.",
        "",
        "| messages | last request | TTFB direct p50 | p95 | TTFB gateway p50 | p95 | added (p50 of differences) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for messages, size, direct, through in rows:
        added = statistics.median(t - d for d, t in zip(direct, through, strict=True))
        lines.append(
            f"| {messages:,} | {size / 1e6:.2f} MB | {statistics.median(direct):.2f} ms "
            f"| {statistics.quantiles(direct, n=20)[-1]:.2f} ms | {statistics.median(through):.2f} ms "
            f"| {statistics.quantiles(through, n=20)[-1]:.2f} ms | {added:.2f} ms |"
        )
    print("\n".join(lines))
    if args.write:
        sys.path.insert(0, str(Path(__file__).parent))
        from _docs import update_section

        update_section("gateway-bench", "## Latency the gateway adds (`bench/gateway_bench.py`)\n\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
