"""Decoding the stored events of one session: the strict decoder alone against the read path.

Run from the repository root:

    python bench/decode_bench.py                 # a session of 400 soak turns
    python bench/decode_bench.py --turns 100 --repeat 30

Grows one store with the soak's turns (``bench/soak_bench.py``, outputs up to
``--max-output-kb``), parses every stored payload once, then alternates, ``--repeat`` times,
decoding them all with the strict decoder (paths built for every field, as every read did
before) and with ``decode_stored_payload`` (the fast decoder, the strict one only for what
it cannot vouch for). Prints the median CPU ms per 1,000 events of each, their ratio, and the
whole ``EventLog.read`` of the session (fetch, hash check, parse, decode) for scale. Nothing is
written to the docs.
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parent))
import argparse
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from soak_bench import soak

from contextwright.canonical import parse_canonical
from contextwright.events import _schema
from contextwright.events.registry import decode_stored_payload, payload_class


def cpu_ms(fn: Callable[[], Any]) -> float:
    start = time.process_time()
    fn()
    return (time.process_time() - start) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--max-output-kb", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=19)
    args = parser.parse_args()
    folder = _Path(tempfile.mkdtemp(prefix="cw-decode-"))
    try:
        url = f"sqlite:///{folder}/store.db"
        _, engine = soak(turns=args.turns, max_bytes=int(args.max_output_kb * 1000), seed=args.seed, url=url, window=200_000)
        session_id = engine.log.sessions()[-1]
        with sqlite3.connect(folder / "store.db") as db:
            rows = db.execute("SELECT type, payload FROM cw_events WHERE session_id = ? ORDER BY seq", (session_id,)).fetchall()
        parsed = [(payload_class(name), name, parse_canonical(text)) for name, text in rows]

        def strict() -> None:
            for cls, _, data in parsed:
                _schema.decode(cls, data)

        def read_path() -> None:
            for _, name, data in parsed:
                decode_stored_payload(name, data)

        strict_ms: list[float] = []
        read_ms: list[float] = []
        whole_ms: list[float] = []
        for _ in range(args.repeat):
            strict_ms.append(cpu_ms(strict))
            read_ms.append(cpu_ms(read_path))
            whole_ms.append(cpu_ms(lambda: engine.log.read(session_id)))
        engine.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    per_k = 1000 / len(parsed)
    before, after = statistics.median(strict_ms), statistics.median(read_ms)
    print(f"{len(parsed)} events, {args.repeat} alternations, median CPU ms per 1,000 events")
    print(f"strict decoder: {before * per_k:.2f}")
    print(f"decode_stored_payload: {after * per_k:.2f} ({before / after:.2f}x faster)")
    print(f"EventLog.read (fetch, hash, parse, decode): {statistics.median(whole_ms) * per_k:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
