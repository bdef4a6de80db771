"""Where the first request after a reopen from a checkpoint spends its time, part by part.

Run from the repository root:

    python bench/reopen_parts.py                      # sessions of 100 and 800 soak turns
    python bench/reopen_parts.py --turns 100,400,800 --repeat 5

Each length is grown once with the soak's turns (as ``bench/reopen_bench.py`` does), then
reopened ``--repeat`` times from its checkpoint on a fresh copy of the store, taking turns
between two variants of the first request:

* ``previous``: as the session does it, the last request is rebuilt first (its cache
  markers and its messages are what the new request's markers and relief compare with);
* ``no previous``: the rebuild is skipped (``Requests._previous_request`` answers None), so
  the new request is built and rendered with nothing before it. Its body differs (no
  lookback marker); the variant shows how much of the rebuild's cost is its own and how much
  the new build would pay anyway on a cold render memo.

Timed (CPU ms, medians): the open, the rebuild of the previous request, the build of the new
one (relief included), its request hash, the whole ``next_request``, and the Anthropic
render of the new body (and its JSON size). The last lines fit each part against the session's events.
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parent))
import argparse
import json
import shutil
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from _soak_stats import fit
from reopen_bench import grow_store, open_copy, store_options

from contextwright.assembly.memo import RenderMemo
from contextwright.runtime.relief import Relief
from contextwright.runtime.requests import Requests

PARTS = ("open", "previous rebuild", "new build", "request hash", "next_request", "wire render", "first request")


@contextmanager
def _timed(owner: Any, name: str, spent: dict[str, float], part: str) -> Iterator[None]:
    """Add the CPU time of every call of ``owner.name`` to ``spent[part]`` while the block runs."""
    original = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return original(*args, **kwargs)
        finally:
            spent[part] += time.process_time() - start

    setattr(owner, name, timed)
    try:
        yield
    finally:
        setattr(owner, name, original)


@contextmanager
def _replaced(owner: Any, name: str, value: Callable[..., Any] | None) -> Iterator[None]:
    original = getattr(owner, name)
    if value is not None:
        setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, original)


def reopen_once(store: _Path, window: int, *, previous: bool) -> tuple[int, dict[str, float]]:
    """(session events, CPU seconds by part) for one reopen of a fresh copy of ``store`` and its first request;
    ``"body"`` is the new body's JSON size in bytes."""
    folder = _Path(tempfile.mkdtemp(prefix="cw-reopen-parts-"))
    spent: dict[str, float] = defaultdict(float)
    try:
        start = time.process_time()
        engine, session = open_copy(store, folder, window)
        spent["open"] = time.process_time() - start
        assert session._core.checkpoint_outcome == "restored", session._core.checkpoint_outcome
        events = session.history.last_seq
        session.user("One more pass over the failing module, please.")
        skip = None if previous else (lambda self, epoch: None)
        with (
            _replaced(Requests, "_previous_request", skip),
            _timed(Requests, "_previous_request", spent, "previous rebuild"),
            _timed(Relief, "build", spent, "new build"),
            _timed(RenderMemo, "sha256", spent, "request hash"),
        ):
            start = time.process_time()
            built = session.next_request()
            spent["next_request"] = time.process_time() - start
            start = time.process_time()
            body = built.anthropic()
            spent["wire render"] = time.process_time() - start
        spent["first request"] = spent["next_request"] + spent["wire render"]
        spent["body"] = len(json.dumps(body))
        engine.close()
        return events, spent
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    store_options(parser, turns="100,800")
    args = parser.parse_args()
    variants = (("previous", True), ("no previous", False))
    medians: dict[str, list[tuple[int, dict[str, float]]]] = {name: [] for name, _ in variants}
    print(f"| session events | body KB | first request | {' | '.join(PARTS)} |")
    print(f"|---:|---:|---|{'---:|' * len(PARTS)}")
    for turns in (int(t) for t in args.turns.split(",")):
        folder = grow_store(args, turns, "cw-reopen-parts-grow-")
        runs: dict[str, list[tuple[int, dict[str, float]]]] = {name: [] for name, _ in variants}
        for _ in range(args.repeat):
            for name, previous in variants:  # taking turns, so both see the same load
                runs[name].append(reopen_once(folder / "store.db", args.window, previous=previous))
        shutil.rmtree(folder, ignore_errors=True)
        for name, _ in variants:
            events = runs[name][0][0]
            row = {part: statistics.median(r[1].get(part, 0.0) for r in runs[name]) for part in PARTS}
            medians[name].append((events, row))
            cells = " | ".join(f"{row[part] * 1000:.1f}" for part in PARTS)
            body_kb = statistics.median(r[1]["body"] for r in runs[name]) / 1000
            print(f"| {events:,} | {body_kb:.0f} | {name} | {cells} |", flush=True)
    for name, _ in variants:
        if len(medians[name]) > 1:
            x = [float(events) for events, _ in medians[name]]
            slopes = []
            for part in PARTS:
                slope = fit([row[part] for _, row in medians[name]], x)[1]
                slopes.append(f"{part} {slope * 1e6:.1f}")
            print(f"{name}, ms per 1,000 events: {', '.join(slopes)}")
    return 0


if __name__ == "__main__":
    _sys.exit(main())
