"""Reopen cost against the session's length: open the session from its store, then build the first request.

Run from the repository root:

    python bench/reopen_bench.py                      # sessions of 100, 400 and 800 soak turns
    python bench/reopen_bench.py --turns 100,800 --repeat 5

Each length is grown once with the soak's turns (``bench/soak_bench.py``, outputs up to
``--max-output-kb``), then reopened ``--repeat`` times, each time on a fresh copy of the
store by a fresh engine (a new process, every cache empty): the CPU time of opening the
engine and the session (reading and folding the log), and of the first request after one
new user message. The medians and a least-squares line against the session's events are
printed; nothing is written to the docs. To compare two trees, run the script with each
tree's ``src`` on ``PYTHONPATH``, alternating.
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parent))
import argparse
import shutil
import statistics
import tempfile
import time

from _soak_stats import fit
from soak_bench import soak

from contextwright.clock import FixedClock
from contextwright.runtime.engine import Engine
from contextwright.testing.fakes import TEST_SECRET, sample_agent, sample_model


def reopen_once(store: _Path, window: int) -> tuple[int, float, float]:
    """(session events, open CPU s, first request CPU s) on a fresh copy of ``store``."""
    folder = _Path(tempfile.mkdtemp(prefix="cw-reopen-"))
    try:
        shutil.copy(store, folder / "store.db")
        start = time.process_time()
        engine = Engine.open(f"sqlite:///{folder}/store.db", clock=FixedClock("2026-03-09T09:00:00Z"), secret=TEST_SECRET)
        session = engine.session(engine.log.sessions()[-1], agent=sample_agent(), model=sample_model(window))
        opened = time.process_time() - start
        events = session.last_seq
        session.user("One more pass over the failing module, please.")
        start = time.process_time()
        session.next_request().anthropic()
        first = time.process_time() - start
        engine.close()
        return events, opened, first
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", default="100,400,800", help="comma-separated session lengths, in soak turns")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-output-kb", type=float, default=20.0)
    parser.add_argument("--window", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=19)
    args = parser.parse_args()
    rows: list[tuple[int, float, float]] = []
    print("| session events | median open CPU ms | median first request CPU ms |")
    print("|---:|---:|---:|")
    for turns in (int(t) for t in args.turns.split(",")):
        folder = _Path(tempfile.mkdtemp(prefix="cw-reopen-grow-"))
        _, engine = soak(
            turns=turns,
            max_bytes=int(args.max_output_kb * 1000),
            seed=args.seed,
            url=f"sqlite:///{folder}/store.db",
            window=args.window,
        )
        engine.close()
        runs = [reopen_once(folder / "store.db", args.window) for _ in range(args.repeat)]
        shutil.rmtree(folder, ignore_errors=True)
        events = runs[0][0]
        opened = statistics.median(r[1] for r in runs)
        first = statistics.median(r[2] for r in runs)
        rows.append((events, opened, first))
        print(f"| {events:,} | {opened * 1000:.0f} | {first * 1000:.0f} |", flush=True)
    if len(rows) > 1:
        x = [float(r[0]) for r in rows]
        for name, values in (("open", [r[1] for r in rows]), ("first request", [r[2] for r in rows])):
            base, slope = fit(values, x)[:2]
            print(f"{name}: {base * 1000:.0f} ms + {slope * 1e6:.1f} ms per 1,000 events")
    return 0


if __name__ == "__main__":
    _sys.exit(main())
