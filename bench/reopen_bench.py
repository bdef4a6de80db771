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

The soak writes the session's checkpoints as any session does (every
``DEFAULT_CHECKPOINT_EVERY`` events, at a request), and each reopen is timed twice, taking
turns: from the checkpoint, and with checkpoints off (the whole log read and folded). The
checkpoint writes of the growth are timed too (CPU per write, and per turn over the run).
With ``--no-checkpoints`` the tree is measured as it was before checkpoints existed (for a
tree without them, which has no such option, leave it out).
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parent))
import argparse
import gc
import shutil
import statistics
import tempfile
import time

from _soak_stats import fit
from soak_bench import soak

from contextwright.clock import FixedClock
from contextwright.runtime.core import SessionCore
from contextwright.runtime.engine import Engine
from contextwright.runtime.session import Session
from contextwright.testing.fakes import TEST_SECRET, sample_agent, sample_model


def open_copy(store: _Path, folder: _Path, window: int, **options: object) -> tuple[Engine, Session]:
    """A fresh engine (every cache empty) on a copy of ``store`` in ``folder``, and the store's last session.

    The copy is made and the last reopen's garbage collected before the caller starts its clock."""
    shutil.copy(store, folder / "store.db")
    gc.collect()  # the last reopen's garbage is not this one's cost
    engine = Engine.open(f"sqlite:///{folder}/store.db", clock=FixedClock("2026-03-09T09:00:00Z"), secret=TEST_SECRET, **options)
    return engine, engine.session(engine.log.sessions()[-1], agent=sample_agent(), model=sample_model(window))


def store_options(parser: argparse.ArgumentParser, *, turns: str) -> None:
    """The options that say which stores to grow and how often to reopen each."""
    parser.add_argument("--turns", default=turns, help="comma-separated session lengths, in soak turns")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-output-kb", type=float, default=20.0)
    parser.add_argument("--window", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=19)


def grow_store(args: argparse.Namespace, turns: int, prefix: str) -> _Path:
    """A new folder holding ``store.db``: one session grown by ``turns`` soak turns."""
    folder = _Path(tempfile.mkdtemp(prefix=prefix))
    _, engine = soak(
        turns=turns,
        max_bytes=int(args.max_output_kb * 1000),
        seed=args.seed,
        url=f"sqlite:///{folder}/store.db",
        window=args.window,
    )
    engine.close()
    return folder


def reopen_once(store: _Path, window: int, *, checkpoints: bool | None) -> tuple[int, float, float, int]:
    """(session events, open CPU s, first request CPU s, events read after the checkpoint) on a fresh copy of ``store``.

    ``checkpoints``: False turns them off, None leaves the engine's defaults (a tree without them)."""
    folder = _Path(tempfile.mkdtemp(prefix="cw-reopen-"))
    try:
        options = {"checkpoint_every": 0} if checkpoints is False else {}
        start = time.process_time()
        engine, session = open_copy(store, folder, window, **options)
        opened = time.process_time() - start
        after = session.history.last_seq - getattr(session._core, "base_seq", 0)
        if checkpoints:
            assert session._core.checkpoint_outcome == "restored", session._core.checkpoint_outcome
        events = session.history.last_seq
        session.user("One more pass over the failing module, please.")
        start = time.process_time()
        session.next_request().anthropic()
        first = time.process_time() - start
        engine.close()
        return events, opened, first, after
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    store_options(parser, turns="100,400,800")
    parser.add_argument("--no-checkpoints", action="store_true", help="a tree without checkpoints: time plain reopens only")
    args = parser.parse_args()
    modes: list[tuple[str, bool | None]] = (
        [("plain", None)] if args.no_checkpoints else [("checkpoint", True), ("no checkpoint", False)]
    )
    rows: dict[str, list[tuple[int, float, float]]] = {name: [] for name, _ in modes}
    writes = _WriteTimer()
    print("| session events | reopen | events read | median open CPU ms | median first request CPU ms | open + first |")
    print("|---:|---|---:|---:|---:|---:|")
    for turns in (int(t) for t in args.turns.split(",")):
        with writes:
            folder = grow_store(args, turns, "cw-reopen-grow-")
        runs: dict[str, list[tuple[int, float, float, int]]] = {name: [] for name, _ in modes}
        for _ in range(args.repeat):
            for name, checkpoints in modes:  # taking turns, so both see the same load
                runs[name].append(reopen_once(folder / "store.db", args.window, checkpoints=checkpoints))
        shutil.rmtree(folder, ignore_errors=True)
        for name, _ in modes:
            events = runs[name][0][0]
            opened = statistics.median(r[1] for r in runs[name])
            first = statistics.median(r[2] for r in runs[name])
            both = statistics.median(r[1] + r[2] for r in runs[name])
            rows[name].append((events, opened, first))
            after = runs[name][0][3]
            print(
                f"| {events:,} | {name} | {after:,} | {opened * 1000:.0f} | {first * 1000:.0f} | {both * 1000:.0f} |", flush=True
            )
        if writes.spent:
            print(
                f"checkpoint writes while growing {turns} turns: {len(writes.spent)}, "
                f"median {statistics.median(writes.spent) * 1000:.1f} ms CPU, largest {max(writes.spent) * 1000:.1f} ms, "
                f"{sum(writes.spent) / turns * 1000:.2f} ms per turn over the run",
                flush=True,
            )
            writes.spent.clear()
    for name, _ in modes:
        if len(rows[name]) > 1:
            x = [float(r[0]) for r in rows[name]]
            series = (
                ("open", [r[1] for r in rows[name]]),
                ("first request", [r[2] for r in rows[name]]),
                ("open + first request", [r[1] + r[2] for r in rows[name]]),
            )
            for part, values in series:
                base, slope = fit(values, x)[:2]
                print(f"{name}, {part}: {base * 1000:.0f} ms + {slope * 1e6:.1f} ms per 1,000 events")
    return 0


class _WriteTimer:
    """Times every checkpoint a session writes while the block runs (CPU seconds per write)."""

    def __init__(self) -> None:
        self.spent: list[float] = []
        self._original = getattr(SessionCore, "write_checkpoint", None)

    def __enter__(self) -> _WriteTimer:
        original = self._original
        if original is None:
            return self
        spent = self.spent

        def timed(core: SessionCore, state: object) -> None:
            start = time.process_time()
            original(core, state)
            spent.append(time.process_time() - start)

        SessionCore.write_checkpoint = timed  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        if self._original is not None:
            SessionCore.write_checkpoint = self._original  # type: ignore[method-assign]


if __name__ == "__main__":
    _sys.exit(main())
