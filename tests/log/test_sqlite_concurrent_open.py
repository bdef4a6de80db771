"""Several processes opening one new SQLite store at once (workers starting together) all get it."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

from contextwright.log import open_log

PROCESSES = 6
ROUNDS = 30
"""Before the switch to WAL waited for the file's lock, about one round in ten lost a process to "database is locked"."""


def _open(path: str, go: Any, results: Any) -> None:
    go.wait()
    try:
        log = open_log(path)
        log.sessions()
        log.close()
        results.put("")
    except Exception as exc:  # reported to the test, which names it
        results.put(repr(exc))


def test_processes_opening_a_new_store_together_all_open_it(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    failures = []
    for round_ in range(ROUNDS):
        path = str(tmp_path / f"store{round_}.db")
        go, results = context.Event(), context.Queue()
        workers = [context.Process(target=_open, args=(path, go, results)) for _ in range(PROCESSES)]
        for worker in workers:
            worker.start()
        go.set()
        for worker in workers:
            worker.join(timeout=60)
        failures += [error for error in (results.get(timeout=10) for _ in workers) if error]
    assert failures == []
