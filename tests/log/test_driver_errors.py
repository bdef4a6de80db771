"""No sqlite3 or psycopg error class escapes unmapped."""

from __future__ import annotations

import inspect
import sqlite3

import pytest

from contextwright.errors import ContextwrightError, LogError, StorageError, StorageUnavailable
from contextwright.log._errors import map_psycopg_error, map_sqlite_error, translating_psycopg, translating_sqlite
from contextwright.log.sqlite import SQLiteEventLog
from contextwright.testing.contract import user


def _subclasses(root: type) -> list[type]:
    seen, todo = [], [root]
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.append(cls)
            todo.extend(cls.__subclasses__())
    return seen


SQLITE_CLASSES = sorted({*_subclasses(sqlite3.Error), *_subclasses(sqlite3.Warning)}, key=lambda c: c.__name__)


@pytest.mark.parametrize("cls", SQLITE_CLASSES, ids=lambda c: c.__name__)
def test_every_sqlite_error_class_is_mapped(cls):
    mapped = map_sqlite_error(cls("boom"), context="testing")
    assert isinstance(mapped, LogError)
    assert type(mapped) is not ContextwrightError
    with pytest.raises(LogError) as info:
        with translating_sqlite("testing"):
            raise cls("boom")
    assert isinstance(info.value.__cause__, cls)


def test_sqlite_lock_and_disk_problems_are_marked_unavailable():
    assert isinstance(map_sqlite_error(sqlite3.OperationalError("database is locked"), context="x"), StorageUnavailable)
    assert isinstance(map_sqlite_error(sqlite3.OperationalError("database or disk is full"), context="x"), StorageUnavailable)


@pytest.mark.parametrize("cls", SQLITE_CLASSES, ids=lambda c: c.__name__)
def test_a_driver_failure_inside_append_surfaces_as_a_contextwright_error(tmp_path, monkeypatch, cls):
    log = SQLiteEventLog(tmp_path / "e.db")
    real = log._append_locked

    def failing(*args, **kwargs):
        real(*args, **kwargs)
        raise cls("injected failure")

    monkeypatch.setattr(log, "_append_locked", failing)
    with pytest.raises(ContextwrightError):
        log.append("s", [user("a")], expected_seq=0)
    monkeypatch.undo()
    # The failed transaction was rolled back: nothing was stored.
    assert log.read("s") == [] and log.last_seq("s") == 0
    log.close()


def _psycopg_classes() -> list[type]:
    psycopg = pytest.importorskip("psycopg")
    classes = {*_subclasses(psycopg.Error), *_subclasses(psycopg.Warning)}
    for _, obj in inspect.getmembers(psycopg.errors, inspect.isclass):
        if issubclass(obj, (psycopg.Error, psycopg.Warning)):
            classes.add(obj)
    import psycopg_pool

    classes |= {psycopg_pool.PoolTimeout, psycopg_pool.TooManyRequests}
    return sorted(classes, key=lambda c: (c.__module__, c.__name__))


def test_every_psycopg_error_class_is_mapped():
    classes = _psycopg_classes()
    assert len(classes) > 200  # psycopg defines one class per SQLSTATE
    for cls in classes:
        try:
            exc = cls("boom")
        except TypeError:
            exc = cls.__new__(cls)
        mapped = map_psycopg_error(exc, context="testing")
        assert isinstance(mapped, StorageError) or isinstance(mapped, LogError), cls
        assert type(mapped) is not ContextwrightError, cls
        with pytest.raises(LogError):
            with translating_psycopg("testing"):
                raise exc


def test_psycopg_connection_problems_are_marked_unavailable():
    psycopg = pytest.importorskip("psycopg")
    assert isinstance(map_psycopg_error(psycopg.OperationalError("no route"), context="x"), StorageUnavailable)
    assert isinstance(map_psycopg_error(psycopg.errors.SerializationFailure("retry"), context="x"), StorageUnavailable)


def test_unreachable_postgres_is_a_typed_error():
    pytest.importorskip("psycopg")
    from contextwright.log.postgres import PostgresEventLog

    # Port 1 on loopback refuses at once; no external network is involved.
    with pytest.raises(StorageUnavailable):
        PostgresEventLog("postgresql://postgres@127.0.0.1:1/test", connect_timeout=2)
