"""A SQLite store this process cannot write opens for reading; every write is refused as StoreReadOnly.

Root ignores file permissions, so as root the reader runs in a child process without
CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (``capsh --drop``): for it a 0444 file, or a 0555
directory, is as unwritable as for any user. As another user the permissions apply as they are.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from contextwright import Engine
from contextwright.errors import StorageUnavailable, StoreReadOnly
from contextwright.log._errors import map_sqlite_error
from contextwright.testing.fakes import TEST_SECRET, open_session

READER = """
import json, sys
from contextwright import Engine
from contextwright.errors import StoreReadOnly
from contextwright.log import open_log
from contextwright.testing.fakes import TEST_SECRET, sample_agent, sample_model

url = sys.argv[1]
out = {}
try:
    log = open_log(url)
except Exception as exc:
    print(json.dumps({"open_error": type(exc).__name__, "message": str(exc)}))
    raise SystemExit(0)
out["read_only"] = log.read_only
out["sessions"] = log.sessions()
engine = Engine(log, secret=TEST_SECRET)
session = engine.session("s1", agent=sample_agent(), model=sample_model())
out["inspected"] = session.inspect(0).sha256()
try:
    session.user("one more")
    out["write"] = "stored"
except StoreReadOnly as exc:
    out["write"] = str(exc)
out["last_seq"] = log.last_seq("s1")
print(json.dumps(out))
"""


def _unprivileged(args: list[str]) -> list[str]:
    """``args`` run without the capabilities that let root write whatever it likes."""
    if os.geteuid() != 0:
        return args
    capsh = shutil.which("capsh")
    if capsh is None:
        pytest.skip("as root this needs capsh (libcap2-bin) to drop CAP_DAC_OVERRIDE for the reader")
    return [capsh, "--drop=cap_dac_override,cap_dac_read_search", "--", "-c", " ".join(f"'{a}'" for a in args)]


def _read(url: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        _unprivileged([sys.executable, "-c", READER, url]), capture_output=True, text=True, timeout=120, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.fixture
def store(tmp_path: Path):
    """A store with one session and one recorded request; permissions restored afterwards for cleanup."""
    folder = tmp_path / "store"
    folder.mkdir()
    path = folder / "agent.db"
    engine, session, _ = open_session(url=f"sqlite:///{path}")
    session.user("Run the tests.")
    built = session.next_request()
    last_seq = session.history.last_seq
    engine.close()
    yield path, built.neutral.sha256(), last_seq
    folder.chmod(0o755)
    path.chmod(0o644)


@pytest.mark.parametrize(
    ("file_mode", "dir_mode"),
    [(0o444, 0o555), (0o444, 0o755), (0o644, 0o555)],
    ids=["file-and-folder", "file", "folder"],
)
def test_a_store_that_cannot_be_written_opens_for_reading_and_refuses_writes(store, file_mode, dir_mode):
    path, request_sha, last_seq = store
    path.chmod(file_mode)
    path.parent.chmod(dir_mode)
    before = sorted(p.name for p in path.parent.iterdir())
    seen = _read(f"sqlite:///{path}")
    assert "open_error" not in seen, seen
    # Check: reading works as the CLI's read-only open does; the request rebuilds to its recorded hash.
    assert seen["read_only"] is True and seen["sessions"] == ["s1"] and seen["inspected"] == request_sha
    # Check: a write is refused with the typed error that says so, and nothing is written (no journal files either).
    assert "read-only" in seen["write"] and seen["last_seq"] == last_seq
    assert sorted(p.name for p in path.parent.iterdir()) == before


def test_a_read_only_store_that_needs_an_upgrade_says_both(store):
    path, _, _ = store
    with sqlite3.connect(path) as conn:  # as a store written by an older version: its last migration not applied
        conn.execute("DELETE FROM cw_migrations WHERE version = (SELECT MAX(version) FROM cw_migrations)")
    path.chmod(0o444)
    path.parent.chmod(0o555)
    seen = _read(f"sqlite:///{path}")
    assert seen["open_error"] == "StoreReadOnly"
    assert "read-only" in seen["message"] and "upgrade" in seen["message"]


def test_sqlites_read_only_answer_maps_to_store_read_only(tmp_path):
    # A real SQLITE_READONLY, produced as any user: the file opened with mode=ro.
    path = tmp_path / "s.db"
    Engine.open(f"sqlite:///{path}", secret=TEST_SECRET).close()
    with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True) as conn:
        with pytest.raises(sqlite3.OperationalError) as caught:
            conn.execute("INSERT INTO cw_meta (key, value) VALUES ('k', 'v')")
    mapped = map_sqlite_error(caught.value, context="writing a setting")
    assert isinstance(mapped, StoreReadOnly) and "read-only" in mapped.message
    # Check: it is not an outage to retry, and a busy database still is one.
    assert not isinstance(mapped, StorageUnavailable)
    assert isinstance(map_sqlite_error(sqlite3.OperationalError("database is locked"), context="x"), StorageUnavailable)
