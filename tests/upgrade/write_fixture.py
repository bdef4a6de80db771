"""Write an upgrade fixture: stores as the tree on ``PYTHONPATH`` writes them, for HEAD to reopen and continue.

Every change to the engine's prefix texts or to the build rules adds a fixture, written
by the tree before the change::

    git archive <commit> src | tar -x -C /tmp/tree
    PYTHONPATH=/tmp/tree/src python3 tests/upgrade/write_fixture.py tests/upgrade/fixtures/<commit> \\
        --postgres postgresql://postgres@127.0.0.1:5432/test

It writes ``store.sqlite`` (a SQLite store), ``store.postgres.sql`` (``pg_dump`` of a
PostgreSQL store written the same way, in schema ``cw_upgrade_fixture``) and
``manifest.json`` (the tree, the sessions and how many requests each recorded). Each
store holds the sessions of ``scenario.SESSIONS``: written over the library, or over HTTP
to a service on the store.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import scenario

import contextwright
from contextwright.clock import FixedClock
from contextwright.log import open_log
from contextwright.runtime import Engine, InMemoryMemory

SCHEMA = "cw_upgrade_fixture"


def write_store(url: str) -> dict[str, int]:
    """The scenario's sessions in the store at ``url``; returns the requests each recorded."""
    clock = FixedClock("2026-12-01T09:00:00+00:00", step=1)
    log = open_log(url, clock=clock)
    engine = Engine(log, clock=clock)
    built: dict[str, int] = {}
    for spec in scenario.SESSIONS:
        if spec["via"] != "library":
            continue
        session = engine.session(
            spec["id"], agent=scenario.agent_spec(spec["agent"]), model=scenario.model(), memory=InMemoryMemory(spec["memory"])
        )
        scenario.history(session, tools=session.agent.control_tools)
        built[spec["id"]] = len([e for e in log.read(spec["id"]) if e.type == "context.request.built"])
    log.close()
    built.update(_write_over_http(url, clock))
    return built


def _write_over_http(url: str, clock: FixedClock) -> dict[str, int]:
    from contextwright.client import Client
    from contextwright.service import ServiceConfig, create_app
    from contextwright.testing.service import serving

    app = create_app(ServiceConfig(store=url), clock=clock)
    built: dict[str, int] = {}
    with serving(app) as base:
        for spec in scenario.SESSIONS:
            if spec["via"] != "http":
                continue
            key = app.state.store.create_key(spec["tenant"])[1]
            with Client(base, key) as client:
                session = client.session(spec["id"], agent=scenario.agent_spec(spec["agent"]), model=scenario.model())
                scenario.history(session, tools=True)
                events = session.history.events() if callable(session.history.events) else session.history.events
                built[spec["id"]] = len([e for e in events if e["type"] == "context.request.built"])
    return built


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the fixture's folder (tests/upgrade/fixtures/<commit>)")
    parser.add_argument("--postgres", help="a PostgreSQL DSN to write the PostgreSQL store on (schema cw_upgrade_fixture)")
    parser.add_argument("--tree", default="", help="the commit the tree on PYTHONPATH was taken from")
    args = parser.parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    db = out / "store.sqlite"
    for stale in out.glob("store.sqlite*"):
        stale.unlink()
    built = write_store(f"sqlite:///{db}")
    with sqlite3.connect(db) as conn:  # one file: the write-ahead log folded in
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode=DELETE")
    if args.postgres:
        import psycopg

        with psycopg.connect(args.postgres, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
        pg_built = write_store(f"{args.postgres}?schema={SCHEMA}")
        if pg_built != built:
            raise SystemExit(f"the PostgreSQL store recorded {pg_built}, the SQLite one {built}")
        dump = subprocess.run(
            ["pg_dump", "--schema", SCHEMA, "--inserts", "--no-owner", "--no-privileges", args.postgres],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        # Plain SQL: psql's meta-commands (``\\restrict``) are left out.
        sql = "".join(line for line in dump.splitlines(keepends=True) if not line.startswith("\\"))
        (out / "store.postgres.sql").write_text(sql, encoding="utf-8")
        with psycopg.connect(args.postgres, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
    manifest: dict[str, Any] = {
        "tree": args.tree,
        "version": getattr(contextwright, "__version__", ""),
        "schema": SCHEMA,
        "sessions": [{**spec, "requests": built[spec["id"]]} for spec in scenario.SESSIONS],
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    shutil.rmtree(out / "__pycache__", ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
