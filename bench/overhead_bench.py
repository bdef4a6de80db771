"""Overhead benchmark: where the tokens Contextwright adds to each request go.

Run from the repository root:

    python bench/overhead_bench.py            # every shared transcript, 200k window
    python bench/overhead_bench.py --quick    # two transcripts per format
    python bench/overhead_bench.py --format aider-chat-md    # one transcript format only

Every transcript is replayed by the engine (:func:`contextwright.replay.replay`,
Anthropic wire, claude-sonnet-4-6) and by the append-only ceiling of
:mod:`contextwright.compare` on the same timeline. Every block of every request is
counted exactly with o200k, the comparison's counter, and sorted into:

* envelope markup: the header and footer lines of each data block;
* control tools: the schemas of the engine's own tools (``context_*``);
* framing: platform text the transcript does not hold (the data-block rules in the
  system prompt, the per-turn runtime frame, working state, notes);
* content: everything else (the transcript's messages, tool calls and results, its
  tools and system prompt), shortened or not.

The table shows the tokens summed over all requests (what is sent, cached or not),
their share of the engine's total, per envelope, and the ceiling's total for scale.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from contextwright.clock import FixedClock
from contextwright.compare import TokenCounter, timeline_of
from contextwright.compare.nonces import reproducible_secret, transcript_digest
from contextwright.importers import load_transcripts
from contextwright.importers.model import Transcript
from contextwright.log import open_log
from contextwright.models import anthropic, with_window
from contextwright.replay import replay
from contextwright.runtime.engine import Engine
from contextwright.testing.corpus import corpus_path, missing_reason

_ENVELOPE_LINE = re.compile(r'<cw-data id="[0-9a-f]+"[^>\n]*>\n|\n</cw-data id="[0-9a-f]+">')
CATEGORIES = ("content", "envelope markup", "control tools", "framing")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="two transcripts per format instead of all")
    parser.add_argument("--window", type=int, default=200_000, help="context window (default 200000)")
    parser.add_argument("--format", help="only the transcripts of this format (a folder of the traces, e.g. aider-chat-md)")
    args = parser.parse_args()
    traces = corpus_path("traces")
    if traces is None:
        raise SystemExit(f"skipped: {missing_reason('traces')}")
    counter = TokenCounter(counting="o200k")
    console = Console(width=150)
    transcripts = _transcripts(traces, quick=args.quick, only=args.format)
    if not transcripts:
        raise SystemExit(f"no transcripts of format {args.format!r} in {traces}")
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    console.print(f"{machine}, {time.strftime('%Y-%m-%d')}, {len(transcripts)} transcripts, window {args.window:,}, o200k counts")
    model = with_window(anthropic("claude-sonnet-4-6"), args.window)
    totals: Counter[str] = Counter()
    envelopes = requests = ceiling = 0
    for transcript in transcripts:
        timeline = timeline_of(transcript)
        known = {part.strip() for part in timeline.system.split("\n\n")}
        for body in _engine_bodies(transcript, model):
            requests += 1
            envelopes += sum(1 for _ in _envelope_headers(body))
            totals.update(_split(body, counter, known))
        ceiling += sum(_ceiling_tokens(timeline, call.upto, counter) for call in timeline.calls)
    total = sum(totals.values())
    table = Table("where", "tokens sent", "share of total", "per request", title="Where Contextwright's request tokens go")
    for name in CATEGORIES:
        table.add_row(name, f"{totals[name]:,}", f"{totals[name] / total:.1%}", f"{totals[name] / max(requests, 1):,.0f}")
    table.add_section()
    table.add_row("total", f"{total:,}", "100.0%", f"{total / max(requests, 1):,.0f}")
    table.add_row("append-only ceiling", f"{ceiling:,}", f"{ceiling / total:.1%}", f"{ceiling / max(requests, 1):,.0f}")
    console.print(table)
    per = totals["envelope markup"] / envelopes if envelopes else 0.0
    console.print(
        f"{requests:,} requests, {envelopes:,} envelopes sent, {per:.1f} tokens of markup per envelope (header and footer)."
    )


def _transcripts(traces: Path, *, quick: bool, only: str | None = None) -> list[Transcript]:
    files = sorted(p for p in traces.rglob("*") if p.is_file() and p.name not in ("README.md", "manifest.jsonl"))
    if only is not None:
        files = [p for p in files if p.relative_to(traces).parts[0] == only]
    if quick:
        seen: Counter[str] = Counter()
        picked = []
        for path in files:
            kind = path.relative_to(traces).parts[0]
            if seen[kind] < 2:
                seen[kind] += 1
                picked.append(path)
        files = picked
    return [t for path in files for t in load_transcripts([path])]


def _engine_bodies(transcript: Transcript, model: Any) -> list[Mapping[str, Any]]:
    clock = FixedClock(step=1)
    secret = reproducible_secret("compare", [transcript_digest(transcript)])
    engine = Engine(open_log("memory://", clock=clock), clock=clock, secret=secret)
    try:
        return [built.anthropic() for built in replay(transcript, engine=engine, model=model).requests]
    finally:
        engine.close()


def _envelope_headers(body: Mapping[str, Any]) -> list[str]:
    return [m for text in _strings(body.get("messages", [])) for m in re.findall(r'<cw-data id="[0-9a-f]+"', text)]


def markup_tokens(block: Mapping[str, Any], counter: TokenCounter) -> int:
    """Tokens of the envelope header and footer lines in one content block (its strings as the model reads them)."""
    return sum(counter(line) for text in _strings(block) for line in _ENVELOPE_LINE.findall(text))


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for k, v in value.items() if k != "cache_control" for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _split(body: Mapping[str, Any], counter: TokenCounter, known: set[str]) -> Counter[str]:
    # ``known``: the transcript's own system prompt parts, which count as content.
    """Tokens of one body per category (the block counts sum to the simulator's)."""
    out: Counter[str] = Counter()
    for tool in body.get("tools", []):
        out["control tools" if tool["name"].startswith("context_") else "content"] += counter.block(tool)
    for block in body.get("system", []):
        text = block.get("text", "").strip()
        ours = text not in known and not all(part.strip() in known for part in text.split("\n\n"))
        out["framing" if ours else "content"] += counter.block(block)
    for message in body.get("messages", []):
        for block in message["content"]:
            whole = counter.block(block)
            markup = markup_tokens(block, counter)
            # In user turns every text not written by the platform is enveloped.
            platform_text = message["role"] == "user" and block.get("type") == "text" and not markup
            out["envelope markup"] += min(markup, whole)
            out["framing" if platform_text else "content"] += max(whole - markup, 0)
    return out


def _ceiling_tokens(timeline: Any, upto: int, counter: TokenCounter) -> int:
    fixed = sum(counter.block(t) for t in timeline.tools) + counter.block({"type": "text", "text": timeline.system})
    return fixed + sum(counter.block(b) for unit in timeline.units[:upto] for b in unit.blocks)


if __name__ == "__main__":
    main()
