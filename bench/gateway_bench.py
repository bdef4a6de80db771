"""Latency the gateway adds in observe mode: time to first byte through it against the provider direct.

A fake provider (``contextwright.testing.upstream.FakeUpstream``, streaming a short answer)
and ``contextwright gateway --mode observe`` each run in their own process on loopback;
this process plays a client shaped like Claude Code (a 28,000-character system block,
12 tools, a conversation that grows by one tool call and a 17,000-character output per
turn) and sends every turn's request twice, alternately: straight to the provider and
through the gateway. The time to first byte is taken from the request's start to the
first chunk of the streamed answer; the gateway records each turn while it forwards.

    python bench/gateway_bench.py            # 40 turns
    python bench/gateway_bench.py --turns 80
    python bench/gateway_bench.py --write    # and the figures into docs/benchmarks.md
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

    from contextwright.testing.upstream import FakeUpstream, Reply, anthropic_message

    answer = anthropic_message({"type": "text", "text": "Done with this step."})
    uvicorn.run(FakeUpstream(lambda received: Reply(body=answer)), host="127.0.0.1", port=port, log_level="warning")


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
        call = {"type": "tool_use", "id": f"toolu_{step:03d}", "name": "Tool0", "input": {"x": f"step {step}"}}
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
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--start", type=int, default=0, help="The first turn sent (a later one sends a longer history).")
    parser.add_argument(
        "--same", action="store_true", help="Send the --start turn every time (forwarding alone: a retry records nothing)."
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
    up_port, gw_port = free_port(), free_port()
    folder = Path(tempfile.mkdtemp())
    upstream = subprocess.Popen([sys.executable, __file__, "--serve-upstream", str(up_port)])
    gateway_cmd = [sys.executable, "-m", "contextwright", "gateway", "--store", str(folder / "bench.db"), "--port", str(gw_port)]
    gateway_cmd += ["--mode", "observe", "--anthropic-upstream", f"http://127.0.0.1:{up_port}"]
    gateway = subprocess.Popen(gateway_cmd, stdout=subprocess.DEVNULL, env={**os.environ})
    try:
        _wait(up_port, upstream)
        _wait(gw_port, gateway)
        direct, through = [], []
        with httpx2.Client(timeout=60) as client:
            for turn in range(args.start, args.start + args.turns):
                body = json.dumps(_body(args.start if args.same else turn)).encode()
                direct.append(_ttfb(client, f"http://127.0.0.1:{up_port}", body))
                through.append(_ttfb(client, f"http://127.0.0.1:{gw_port}", body))
                time.sleep(args.pause)
    finally:
        for process in (gateway, upstream):
            process.terminate()
            process.wait(timeout=30)
    size = len(json.dumps(_body(args.start + args.turns - 1)))
    added = [t - d for d, t in zip(direct, through)]
    load = f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    lines = [
        f"{args.turns} turns shaped like Claude Code's (28,000-character system, 12 tools, one 17,000-character "
        f"tool output more per turn; the last request {size:,} bytes), streamed, each sent straight to the fake "
        f"provider and through `contextwright gateway --mode observe`, on loopback; load {load}.",
        "",
        "| time to first byte | p50 | p95 |",
        "|---|---:|---:|",
        f"| provider direct | {statistics.median(direct):.2f} ms | {statistics.quantiles(direct, n=20)[-1]:.2f} ms |",
        f"| through the gateway | {statistics.median(through):.2f} ms | {statistics.quantiles(through, n=20)[-1]:.2f} ms |",
        f"| added (difference of the p50s) | {statistics.median(through) - statistics.median(direct):.2f} ms | |",
        f"| added (p50 of each turn's difference) | {statistics.median(added):.2f} ms | |",
    ]
    print("\n".join(lines))
    if args.write:
        sys.path.insert(0, str(Path(__file__).parent))
        from _docs import update_section

        update_section("gateway-bench", "## Latency the gateway adds (`bench/gateway_bench.py`)\n\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
