"""Idempotency-key lookup: the log's key range against reading the session and scanning it.

Run from the repository root:

    python bench/keyed_lookup_bench.py                       # SQLite, 1,000 / 5,000 / 20,000 events
    python bench/keyed_lookup_bench.py --postgres postgresql://postgres@127.0.0.1:5432/test

The service asks, before a keyed write, which events an earlier request with the same key
stored. It used to scan the session's events, which on a session reopened from its
checkpoint means reading the history before the checkpoint first; it now asks the log for
the events whose key starts with the key's prefix (``EventLog.read_keyed``). One event in
ten carries a key shaped like the service's (``<key>:<fingerprint>#<batch>.<i>``). Each
round times both lookups for one key in the middle of the session, taking turns, and the
table gives the median per lookup and the ratio scan ÷ lookup within the round (CPU time of
this process, steadier on a shared machine; PostgreSQL's own work is outside it, so its
wall-time ratio is given too).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from contextwright.clock import FixedClock
from contextwright.events import NewEvent, UserMessage
from contextwright.log.base import EventLog
from contextwright.log.sqlite import SQLiteEventLog


def fill(log: EventLog, session_id: str, events: int) -> str:
    """Append ``events`` messages, one in ten keyed; return the prefix of a key in the middle."""
    batch: list[NewEvent] = []
    seq = 0
    for i in range(events):
        key = f"req-{i}:0123456789abcdef#1.0" if i % 10 == 0 else None
        batch.append(NewEvent.of(UserMessage(text=f"message {i} " + "x" * 200), idempotency_key=key))
        if len(batch) == 500:
            log.append(session_id, batch, expected_seq=seq)
            seq += len(batch)
            batch = []
    if batch:
        log.append(session_id, batch, expected_seq=seq)
    return f"req-{(events // 20) * 10}:"


def scan(log: EventLog, session_id: str, prefix: str) -> int:
    return len([e for e in log.read(session_id) if e.idempotency_key is not None and e.idempotency_key.startswith(prefix)])


def lookup(log: EventLog, session_id: str, prefix: str) -> int:
    return len(log.read_keyed(session_id, prefix))


def timed(fn: Callable[[EventLog, str, str], int], log: EventLog, session_id: str, prefix: str) -> tuple[float, float, int]:
    wall, cpu = time.perf_counter(), time.process_time()
    found = fn(log, session_id, prefix)
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000, found


def run(name: str, log: EventLog, sizes: list[int], rounds: int) -> None:
    for size in sizes:
        session_id = f"bench-{uuid.uuid4().hex[:8]}"
        prefix = fill(log, session_id, size)
        rows: dict[str, list[tuple[float, float]]] = {"scan": [], "lookup": []}
        for _ in range(rounds):
            for label, fn in (("scan", scan), ("lookup", lookup)):
                wall, cpu, found = timed(fn, log, session_id, prefix)
                assert found == 1, (label, found)
                rows[label].append((wall, cpu))
        cpu_ratio = statistics.median(s[1] / max(k[1], 1e-3) for s, k in zip(rows["scan"], rows["lookup"], strict=True))
        wall_ratio = statistics.median(s[0] / k[0] for s, k in zip(rows["scan"], rows["lookup"], strict=True))
        scan_ms = statistics.median(c for _, c in rows["scan"])
        lookup_ms = statistics.median(c for _, c in rows["lookup"])
        print(f"| {name} | {size:,} | {scan_ms:.2f} | {lookup_ms:.3f} | {cpu_ratio:,.0f} | {wall_ratio:,.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,5000,20000")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--postgres", help="a PostgreSQL DSN; a scratch schema is made and dropped")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print("| backend | events | scan, CPU ms | lookup, CPU ms | scan ÷ lookup (CPU) | scan ÷ lookup (wall) |")
    print("|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp, SQLiteEventLog(Path(tmp) / "bench.db", clock=FixedClock()) as log:
        run("SQLite", log, sizes, args.rounds)
    if args.postgres:
        import psycopg

        from contextwright.log.postgres import PostgresEventLog

        schema = f"cw_keyed_bench_{uuid.uuid4().hex[:8]}"
        try:
            with PostgresEventLog(args.postgres, schema=schema, clock=FixedClock()) as pg:
                run("PostgreSQL", pg, sizes, args.rounds)
        finally:
            with psycopg.connect(args.postgres, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


if __name__ == "__main__":
    main()
