"""A session's fold written down and read back, against reading and folding its log.

Run from the repository root:

    python bench/fold_state_bench.py                  # sessions of 100 and 400 soak turns
    python bench/fold_state_bench.py --turns 100,800 --repeat 7

Each length is grown once with the soak's turns (``bench/soak_bench.py``, outputs up to
``--max-output-kb``). Then, ``--repeat`` times in turn, the CPU time of: reading the whole
log (``EventLog.read``), folding it to a surface, writing the fold down as canonical JSON
(``fold_snapshot``), and reading that back to a surface (``parse_canonical`` +
``fold_restore`` + the first surface). Prints the medians, the body's size and the
surface's entries; nothing is written to the docs.
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
from collections.abc import Callable
from typing import Any

from soak_bench import soak

from contextwright.canonical import canonical_json, parse_canonical
from contextwright.derive._fold_state import fold_restore, fold_snapshot
from contextwright.derive._surface import Folder, Surface
from contextwright.log.base import EventLog


def cpu_ms(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.process_time()
    value = fn()
    return (time.process_time() - start) * 1000, value


def folded(session_id: str, events: list[Any]) -> Surface:
    folder = Folder(session_id)
    folder.apply(events)
    return folder.surface()


def measure(log: EventLog, repeat: int) -> tuple[int, int, int, dict[str, float]]:
    """(events, body bytes, entries, median CPU ms per step)."""
    session_id = log.sessions()[-1]
    events = log.read(session_id)
    folder = Folder(session_id)
    folder.apply(events)
    whole = folder.surface()
    body = canonical_json(fold_snapshot(folder))
    times: dict[str, list[float]] = {"read": [], "fold": [], "write": [], "restore": []}
    for _ in range(repeat):
        times["read"].append(cpu_ms(lambda: log.read(session_id))[0])
        times["fold"].append(cpu_ms(lambda: folded(session_id, events))[0])
        times["write"].append(cpu_ms(lambda: canonical_json(fold_snapshot(folder)))[0])
        spent, surface = cpu_ms(lambda: fold_restore(session_id, parse_canonical(body)).surface())
        times["restore"].append(spent)
        assert surface == whole, "the restored fold differs from the fold"
    return len(events), len(body.encode()), len(whole.entries), {k: statistics.median(v) for k, v in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", default="100,400", help="comma-separated session lengths, in soak turns")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--max-output-kb", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=19)
    args = parser.parse_args()
    print("| session events | body KB | surface entries | read ms | fold ms | write ms | restore ms |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for turns in (int(t) for t in args.turns.split(",")):
        folder = _Path(tempfile.mkdtemp(prefix="cw-fold-state-"))
        try:
            _, engine = soak(
                turns=turns,
                max_bytes=int(args.max_output_kb * 1000),
                seed=args.seed,
                url=f"sqlite:///{folder}/store.db",
                window=200_000,
            )
            events, size, entries, ms = measure(engine.log, args.repeat)
            engine.close()
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        print(
            f"| {events:,} | {size / 1000:.0f} | {entries:,} | {ms['read']:.1f} | {ms['fold']:.1f} | {ms['write']:.1f} | {ms['restore']:.1f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    _sys.exit(main())
