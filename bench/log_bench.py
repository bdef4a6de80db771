"""Event-log benchmark: appends against a raw driver loop, full-session replay, canonical JSON.

Run from the repository root:

    python bench/log_bench.py            # 100,000-event replay, 2,000 single appends
    python bench/log_bench.py --quick    # 10,000 events, 300 single appends, for a smoke run

Three tables:

* **Appends against the raw driver.** ``EventLog.append`` (validation, canonical
  encoding, hashing, session rules, optimistic concurrency, typed events returned)
  next to the shortest loop over the same driver that gives the same write guarantees:
  it encodes and hashes the same payloads (typed payload to JSON values,
  ``json.dumps(sort_keys=True)``, SHA-256), and in one transaction per append looks up
  the batch's idempotency keys (when it has any), checks ``expected_seq`` against the
  last seq (read from the primary key) and inserts the rows, stamped with the append's
  instant (``datetime.now``, as ISO text on SQLite) as the log stamps its events, with
  the same journal settings, into a table made by the store's own migration for its events (same
  columns, keys and indexes). Seqs are then unique, gapless and checked, and a reused key
  is found, as in the log; a seq mismatch or a lost race writes nothing on both sides.
  What the raw loop skips is what the log adds: the strict check of each typed payload,
  the session rules and their index, the session list, and the typed events it returns.
  Single appends are one event per transaction (the path an agent loop takes per
  message); batches hold 100; ``--keys`` gives every event an idempotency key on both
  sides. Within a round the two take turns every few appends in one process, so a
  burst of load or of disk latency from elsewhere on the machine lands on both alike;
  the ratio is ours ÷ raw in events per second (1.0 = no overhead), taken within each
  round, and the table shows medians over ``--rounds`` rounds. Each ratio is given in
  wall time (what a caller waits, fsyncs included) and in this process's CPU time
  (steadier on a loaded machine; blind to the disk and to the PostgreSQL server). A first row runs both with no database at all
  (the in-memory log against encoding, hashing and a seq check in a dict), so the
  engine's own cost per event shows apart from the driver's.
* **Replay** of a whole session: reads, checks every payload hash, decodes typed events.
* **Canonical JSON** on real-sized bodies: ``canonical_json`` with its fast encoder,
  with the pure-Python fallback, and ``json.dumps(sort_keys=True)`` as the floor.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import os
import platform
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from contextwright import canonical
from contextwright.canonical import canonical_json
from contextwright.clock import FixedClock
from contextwright.events import AssistantMessage, NewEvent, ToolCall, ToolResult, UserMessage
from contextwright.events.registry import encode_payload, type_of
from contextwright.log import EventLog, InMemoryEventLog, _migrations
from contextwright.log.sqlite import SQLiteEventLog

POSTGRES_DSN = os.environ.get("CONTEXTWRIGHT_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
ROUNDS = 5
# Ours and the raw loop take turns every this many appends within a round.
SLICE = 10


def payload(i: int) -> Any:
    """A realistic mix: user text, assistant tool calls, ~1 kB tool outputs."""
    match i % 3:
        case 0:
            return UserMessage(text=f"Step {i}: run the tests for module {i % 17} and fix what fails.")
        case 1:
            return AssistantMessage(
                text="Running tests.",
                tool_calls=(ToolCall(id=f"c{i}", name="run_tests", arguments={"path": f"tests/m{i % 17}"}),),
            )
        case _:
            return ToolResult(
                call_id=f"c{i - 1}", tool_name="run_tests", output=("tests/test_x.py::test_y PASSED\n" * 32), exit_code=0
            )


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


class RawConflict(Exception):
    """The raw loop's seq conflict or idempotency mismatch (it writes nothing then, as the log)."""


def encoded_rows(session_id: str, events: Sequence[Any], expected_seq: int, stamp: Any) -> list[tuple[Any, ...]]:
    """Rows of the store's events table: typed payload to JSON values, ``json.dumps``, SHA-256; ``stamp`` is the append's instant."""
    rows = []
    for offset, event in enumerate(events, start=1):
        key = None
        if isinstance(event, NewEvent):
            event, key = event.payload, event.idempotency_key
        kind, text = type_of(event), _json(encode_payload(event))
        digest = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
        rows.append((session_id, expected_seq + offset, kind, text, digest, stamp, key))
    return rows


def replayed(rows: Sequence[tuple[Any, ...]], found: Sequence[tuple[Any, ...]]) -> bool:
    """What the keys found say: True for a full replay, False when none was used; RawConflict otherwise."""
    if not found:
        return False
    stored = {key: (kind, digest) for key, kind, digest in found}
    if any(stored.get(r[6]) != (r[2], r[4]) for r in rows):
        raise RawConflict("idempotency key reused for other content, or a batch mixing used and new keys")
    return True


class RawMemory:
    """No database: encode and hash, and check the seq against a dict of last seqs."""

    def __init__(self) -> None:
        self.last: dict[str, int] = {}

    def append(self, session_id: str, events: Sequence[Any], *, expected_seq: int) -> None:
        rows = encoded_rows(session_id, events, expected_seq, _dt.datetime.now(_dt.UTC))
        if self.last.get(session_id, 0) != expected_seq:
            raise RawConflict(session_id)
        self.last[session_id] = rows[-1][1]


class RawSQLite:
    """The floor on sqlite3 with the log's write guarantees, on the events table alone.

    Under ``BEGIN IMMEDIATE``: the used idempotency keys looked up (when the batch has
    any), the last seq read from the primary key and compared with ``expected_seq``, the
    rows inserted. The primary key keeps seqs unique and the check keeps them gapless, so
    no other table is needed: sessions can be listed from the events.
    """

    def __init__(self, path: str, synchronous: str) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute(f"PRAGMA synchronous={synchronous}")
        for statement in _events_table(_migrations.SQLITE):
            self.conn.execute(statement)

    def append(self, session_id: str, events: Sequence[Any], *, expected_seq: int) -> None:
        rows = encoded_rows(session_id, events, expected_seq, _dt.datetime.now(_dt.UTC).isoformat())
        keys = [r[6] for r in rows if r[6] is not None]
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            if keys:
                found = conn.execute(
                    "SELECT idempotency_key, type, payload_sha256 FROM cw_events "
                    f"WHERE session_id = ? AND idempotency_key IN ({','.join('?' * len(keys))})",
                    (session_id, *keys),
                ).fetchall()
                if replayed(rows, found):
                    conn.execute("COMMIT")
                    return
            (last,) = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM cw_events WHERE session_id = ?", (session_id,)).fetchone()
            if last != expected_seq:
                raise RawConflict(session_id)
            conn.executemany("INSERT INTO cw_events VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self.conn.close()


def _events_table(migrations: Sequence[_migrations.Migration]) -> list[str]:
    """The statements of the store's first migration that make its events table and that table's indexes."""
    return [statement for statement in migrations[0].statements if "cw_events" in statement]


class RawPostgres:
    """The floor on psycopg with the log's write guarantees, on the events table alone.

    One pipeline sends the key lookup (when the batch has keys), the inserts (when it has
    none) and the read of the last seq up to ``expected_seq``; then the loop commits, or
    rolls back when that is not ``expected_seq`` (a gap). A stale ``expected_seq`` fails on
    the primary key, as does the loser of two writers on one seq, and writes nothing. A
    batch with keys inserts in a second round trip, after the lookup. Two round trips per
    append, as the log.
    """

    def __init__(self, schema: str) -> None:
        import psycopg

        self.schema = schema
        # BEGIN and COMMIT sent as statements, as the log does: in a transaction block
        # psycopg would send the BEGIN in a round trip of its own.
        self.conn = psycopg.connect(POSTGRES_DSN, autocommit=True)
        self.conn.execute(f"CREATE SCHEMA {schema}")
        for statement in _events_table(_migrations.POSTGRES):
            self.conn.execute(statement.replace("{schema}", schema))
        self.insert = f"INSERT INTO {schema}.cw_events VALUES (%s, %s, %s, %s, %s, %s, %s)"
        # The last seq at or before expected_seq: a row after it makes the insert fail instead.
        self.last = f"SELECT COALESCE(MAX(seq), 0) FROM {schema}.cw_events WHERE session_id = %s AND seq <= %s"
        self.keys = f"SELECT idempotency_key, type, payload_sha256 FROM {schema}.cw_events WHERE session_id = %s AND idempotency_key = ANY(%s)"
        self.unique_violation = psycopg.errors.UniqueViolation

    def append(self, session_id: str, events: Sequence[Any], *, expected_seq: int) -> None:
        rows = encoded_rows(session_id, events, expected_seq, _dt.datetime.now(_dt.UTC))
        keys = [r[6] for r in rows if r[6] is not None]
        conn = self.conn
        try:
            with conn.pipeline(), conn.cursor() as cur:
                conn.execute("BEGIN")
                found = conn.execute(self.keys, (session_id, keys)) if keys else None
                if not keys:
                    cur.executemany(self.insert, rows)
                last = conn.execute(self.last, (session_id, expected_seq))
            if found is not None and replayed(rows, found.fetchall()):
                conn.execute("ROLLBACK")
                return
            (actual,) = last.fetchone() or (0,)
            if actual != expected_seq:
                raise RawConflict(session_id)
            if keys:
                with conn.pipeline(), conn.cursor() as cur:
                    cur.executemany(self.insert, rows)
                    conn.execute("COMMIT")
            else:
                conn.execute("COMMIT")
        except self.unique_violation as exc:  # another writer took the seq first
            conn.execute("ROLLBACK")
            raise RawConflict(session_id) from exc
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self.conn.execute(f"DROP SCHEMA {self.schema} CASCADE")
        self.conn.close()


Appender = EventLog | RawMemory | RawSQLite | RawPostgres


def keyed(events: Sequence[Any], session: str, *, keys: bool) -> Sequence[Any]:
    """``events``, each with an idempotency key unique to ``session`` when ``keys``."""
    if not keys:
        return events
    return [NewEvent.of(e, idempotency_key=f"{session}-{i}") for i, e in enumerate(events)]


def paired_appends(
    log: EventLog, raw: Appender, events: Sequence[Any], batch: int, *, keys: bool
) -> dict[str, tuple[float, float]]:
    """(wall seconds, CPU seconds) ours and the raw loop take to append ``events`` to a fresh session each.

    ``batch`` events per append. The two take turns every ``SLICE`` appends (the first of
    each pair alternating), so a burst of load or of disk latency from elsewhere on the
    machine lands on both alike. CPU time is this process's (user and system): it leaves
    out waiting for the disk or for another process to yield the core, and the
    PostgreSQL server's work.
    """
    sessions = {side: f"s-{uuid.uuid4().hex[:8]}" for side in ("ours", "raw")}
    todo = {side: keyed(events, sessions[side], keys=keys) for side in sessions}
    targets: dict[str, Appender] = {"ours": log, "raw": raw}
    wall = {"ours": 0.0, "raw": 0.0}
    cpu = {"ours": 0.0, "raw": 0.0}
    step = SLICE * batch
    for turn, start in enumerate(range(0, len(events), step)):
        for side in ("ours", "raw") if turn % 2 == 0 else ("raw", "ours"):
            target, session, mine = targets[side], sessions[side], todo[side]
            began, began_cpu = time.perf_counter(), time.process_time()
            for offset in range(start, min(start + step, len(events)), batch):
                target.append(session, mine[offset : offset + batch], expected_seq=offset)
            wall[side] += time.perf_counter() - began
            cpu[side] += time.process_time() - began_cpu
    return {side: (wall[side], cpu[side]) for side in wall}


def compare(log: EventLog, raw: Appender, *, singles: int, batched: int, batch: int, keys: bool, rounds: int) -> dict[str, float]:
    """Medians over rounds: events/s for ours and raw, and ours ÷ raw in wall and in CPU time, each taken within its round."""
    typed = [payload(i) for i in range(max(singles, batched))]
    found: dict[str, list[float]] = {}
    for _ in range(rounds):
        for kind, size, count in (("single", 1, singles), ("batch", batch, batched)):
            spent = paired_appends(log, raw, typed[:count], size, keys=keys)
            (ours_s, ours_cpu), (raw_s, raw_cpu) = spent["ours"], spent["raw"]
            found.setdefault(f"ours_{kind}", []).append(count / ours_s)
            found.setdefault(f"raw_{kind}", []).append(count / raw_s)
            found.setdefault(f"ratio_{kind}", []).append(raw_s / ours_s)
            found.setdefault(f"cpu_ratio_{kind}", []).append(raw_cpu / ours_cpu)
    return {name: statistics.median(values) for name, values in found.items()}


def replay_rate(log: EventLog, total: int, batch: int) -> float:
    session = f"replay-{uuid.uuid4().hex[:6]}"
    events = [payload(i) for i in range(total)]
    for offset in range(0, total, batch):
        log.append(session, events[offset : offset + batch], expected_seq=offset)
    start = time.perf_counter()
    replayed = log.read(session)
    elapsed = time.perf_counter() - start
    assert len(replayed) == total and replayed[-1].seq == total
    return total / elapsed


Pair = tuple[EventLog, Appender, Callable[[], None]]


def backends(tmp: str) -> list[tuple[str, Callable[[], Pair]]]:
    """(name, open) for each backend here; open returns (log, raw loop, cleanup)."""

    def sqlite_pair(sync: str) -> Pair:
        log = SQLiteEventLog(os.path.join(tmp, f"ours-{sync}.db"), clock=FixedClock(step=0.001), synchronous=sync)
        raw = RawSQLite(os.path.join(tmp, f"raw-{sync}.db"), sync)

        def cleanup() -> None:
            raw.close()
            log.close()

        return log, raw, cleanup

    def memory_pair() -> Pair:
        # No database on either side: the engine's own work against encoding, hashing and a seq check.
        return InMemoryEventLog(clock=FixedClock(step=0.001)), RawMemory(), lambda: None

    found: list[tuple[str, Callable[[], Pair]]] = [
        ("in memory (raw: encode + hash + seq check)", memory_pair),
        ("SQLite, synchronous=FULL (default)", lambda: sqlite_pair("FULL")),
        ("SQLite, synchronous=NORMAL", lambda: sqlite_pair("NORMAL")),
    ]
    try:
        from contextwright.log.postgres import PostgresEventLog

        schema = f"cw_bench_{uuid.uuid4().hex[:8]}"
        PostgresEventLog(POSTGRES_DSN, schema=schema).close()

        def postgres_pair() -> Pair:
            log = PostgresEventLog(POSTGRES_DSN, schema=schema, clock=FixedClock(step=0.001))
            raw = RawPostgres(f"{schema}_raw")

            def cleanup() -> None:
                raw.close()
                log.drop_schema()
                log.close()

            return log, raw, cleanup

        found.append(("PostgreSQL", postgres_pair))
    except Exception as exc:  # the table says why PostgreSQL is missing
        Console(stderr=True).print(f"PostgreSQL skipped: {exc}")
    return found


def anthropic_body(messages: int) -> dict[str, Any]:
    """A Messages-API-shaped body of ``messages`` messages from the payload mix above."""
    turns: list[dict[str, Any]] = []
    for i in range(messages):
        p = payload(i)
        if isinstance(p, UserMessage):
            turns.append({"role": "user", "content": [{"type": "text", "text": p.text}]})
        elif isinstance(p, AssistantMessage):
            uses = [{"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.arguments)} for c in p.tool_calls]
            turns.append({"role": "assistant", "content": [{"type": "text", "text": p.text}, *uses]})
        else:
            turns.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": p.call_id, "content": p.output}]})
    system = [{"type": "text", "text": "You are a careful coding agent. Résumé of the rules: run tests first. " * 40}]
    return {"model": "claude-sonnet-4-6", "max_tokens": 4096, "temperature": 0.2, "system": system, "messages": turns}


def best_seconds(fn: Callable[[], Any], budget_s: float = 0.5) -> float:
    """Best time of one call over a few repetitions (at least 3, about ``budget_s`` in all)."""
    times: list[float] = []
    while len(times) < 3 or (sum(times) < budget_s and len(times) < 200):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def canonical_table() -> Table:
    table = Table(
        "body",
        "KiB",
        "canonical_json, fast (ms)",
        "canonical_json, pure Python (ms)",
        "json.dumps sort_keys (ms)",
        "fast ÷ json.dumps",
        "pure ÷ json.dumps",
        title=f"Canonical JSON (fast encoder: {'orjson' if canonical.fast_encoder_available() else 'absent'})",
    )
    bodies = [("one event payload", encode_payload(payload(2)))]
    bodies += [(f"request, {n:,} messages", anthropic_body(n)) for n in (100, 1_000, 5_000)]
    for name, body in bodies:
        assert canonical._pure_json(body) == canonical_json(body)
        fast = best_seconds(lambda body=body: canonical_json(body))
        pure = best_seconds(lambda body=body: canonical._pure_json(body))
        floor = best_seconds(lambda body=body: json.dumps(body, sort_keys=True))
        table.add_row(
            name,
            f"{len(canonical_json(body).encode()) / 1024:,.1f}",
            f"{fast * 1000:.3f}",
            f"{pure * 1000:.3f}",
            f"{floor * 1000:.3f}",
            f"{fast / floor:.2f}×",
            f"{pure / floor:.2f}×",
        )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10,000-event replay, 300 single appends")
    parser.add_argument("--events", type=int, default=None, help="events in the replayed session (default 100,000)")
    parser.add_argument("--singles", type=int, default=None, help="single-event appends per round (default 2,000)")
    parser.add_argument("--batch", type=int, default=100, help="events per batch append")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="rounds of appends; the table shows medians")
    parser.add_argument("--keys", action="store_true", help="give every appended event an idempotency key, on both sides")
    args = parser.parse_args()
    total = args.events or (10_000 if args.quick else 100_000)
    singles = args.singles or (300 if args.quick else 2_000)
    batched = min(total, 10_000)

    console = Console(width=170)
    console.print(
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}"
    )
    appends = Table(
        "backend",
        "single: ours/s",
        "single: raw/s",
        "single: ours ÷ raw",
        "single, CPU: ours ÷ raw",
        f"batch of {args.batch}: ours/s",
        f"batch of {args.batch}: raw/s",
        f"batch of {args.batch}: ours ÷ raw",
        "batch, CPU: ours ÷ raw",
        f"replay {total:,} events/s",
        title=f"Appends ({singles:,} single, {batched:,} batched{', keyed' if args.keys else ''}; medians of {args.rounds} rounds, ours and raw taking turns every {SLICE} appends) and replay",
    )
    with tempfile.TemporaryDirectory() as tmp:
        for name, open_pair in backends(tmp):
            log, raw, cleanup = open_pair()
            try:
                with console.status(f"measuring {name}"):
                    r = compare(log, raw, singles=singles, batched=batched, batch=args.batch, keys=args.keys, rounds=args.rounds)
                    replay = replay_rate(log, total, args.batch)
            finally:
                cleanup()
            appends.add_row(
                name,
                f"{r['ours_single']:,.0f}",
                f"{r['raw_single']:,.0f}",
                f"{r['ratio_single']:.2f}",
                f"{r['cpu_ratio_single']:.2f}",
                f"{r['ours_batch']:,.0f}",
                f"{r['raw_batch']:,.0f}",
                f"{r['ratio_batch']:.2f}",
                f"{r['cpu_ratio_batch']:.2f}",
                f"{replay:,.0f}",
            )
    console.print(appends)
    with console.status("measuring canonical JSON"):
        console.print(canonical_table())


if __name__ == "__main__":
    main()
