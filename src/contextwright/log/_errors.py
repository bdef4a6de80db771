"""Driver errors → Contextwright errors, one function per driver.

Adapters wrap every database call in :func:`translating_sqlite` or
:func:`translating_psycopg`, so no sqlite3 or psycopg exception escapes. The
mapping goes by class, most specific first; a test walks every class the
drivers define and checks that each lands on a specific Contextwright error.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from typing import Any

from contextwright._optional import require
from contextwright.errors import (
    ContextwrightError,
    NotAStore,
    StorageCorrupted,
    StorageError,
    StorageUnavailable,
    StoreReadOnly,
)

_FEATURE = "the PostgreSQL event log"
_SQLITE_UNAVAILABLE_HINTS = ("locked", "busy", "unable to open", "disk", "readonly", "read-only", "full")
_SQLITE_CORRUPT_HINTS = ("malformed", "corrupt")
# SQLITE_READONLY (the file was opened read-only: it cannot be written here) and its _DIRECTORY
# variant. The other SQLITE_READONLY_* codes (recovery, a lock, a moved file) pass with time.
_SQLITE_READ_ONLY_CODES = (8, 1544)


def map_sqlite_error(exc: sqlite3.Error | sqlite3.Warning, *, context: str) -> ContextwrightError:
    """The Contextwright error for a sqlite3 exception raised while doing ``context``."""
    text = str(exc).lower()
    name = type(exc).__name__
    if isinstance(exc, sqlite3.OperationalError):
        if getattr(exc, "sqlite_errorcode", None) in _SQLITE_READ_ONLY_CODES:
            return StoreReadOnly(f"the SQLite store is read-only here ({context}): {exc}", driver_error=name)
        if any(hint in text for hint in _SQLITE_UNAVAILABLE_HINTS):
            return StorageUnavailable(f"SQLite is unavailable while {context}: {exc}", driver_error=name)
        return StorageError(f"SQLite failed while {context}: {exc}", driver_error=name)
    if isinstance(exc, sqlite3.DatabaseError) and "file is not a database" in text:
        return NotAStore(f"not a SQLite database ({context}): {exc}", driver_error=name)
    if isinstance(exc, sqlite3.DatabaseError) and any(h in text for h in _SQLITE_CORRUPT_HINTS):
        return StorageCorrupted(f"SQLite database is corrupted ({context}): {exc}", driver_error=name)
    if isinstance(exc, (sqlite3.IntegrityError, sqlite3.DataError)):
        return StorageError(f"SQLite rejected data while {context}: {exc}", driver_error=name)
    if isinstance(exc, (sqlite3.InterfaceError, sqlite3.ProgrammingError, sqlite3.NotSupportedError)):
        return StorageError(f"SQLite was misused while {context}: {exc}", driver_error=name)
    if isinstance(exc, (sqlite3.DatabaseError, sqlite3.InternalError)):
        return StorageError(f"SQLite failed while {context}: {exc}", driver_error=name)
    if isinstance(exc, sqlite3.Warning):
        return StorageError(f"SQLite warning while {context}: {exc}", driver_error=name)
    return StorageError(f"SQLite error while {context}: {exc}", driver_error=name)


@contextlib.contextmanager
def translating_sqlite(context: str) -> Iterator[None]:
    """Re-raise any sqlite3 error inside the block as a Contextwright error."""
    try:
        yield
    except (sqlite3.Error, sqlite3.Warning) as exc:
        raise map_sqlite_error(exc, context=context) from exc


def map_psycopg_error(exc: BaseException, *, context: str) -> ContextwrightError:
    """The Contextwright error for a psycopg (or psycopg_pool) exception."""
    require("psycopg", extra="postgres", feature=_FEATURE)  # the caller only gets here with psycopg installed
    import psycopg

    errors = psycopg.errors
    name = type(exc).__name__
    sqlstate = getattr(getattr(exc, "diag", None), "sqlstate", None) or getattr(exc, "sqlstate", None)
    suffix = f" [{sqlstate}]" if sqlstate else ""
    require("psycopg_pool", extra="postgres", feature=_FEATURE)
    from psycopg_pool import PoolTimeout, TooManyRequests

    if isinstance(exc, (PoolTimeout, TooManyRequests)):
        return StorageUnavailable(f"PostgreSQL pool exhausted while {context}: {exc}", driver_error=name)
    retryable: tuple[Any, ...] = (
        errors.SerializationFailure,
        errors.DeadlockDetected,
        errors.LockNotAvailable,
        errors.QueryCanceled,
        errors.AdminShutdown,
        errors.CannotConnectNow,
        errors.TooManyConnections,
        errors.InsufficientResources,
        errors.DiskFull,
        errors.OutOfMemory,
        errors.ConnectionException,
    )
    if isinstance(exc, retryable) or isinstance(exc, psycopg.OperationalError):
        return StorageUnavailable(f"PostgreSQL is unavailable while {context}: {exc}{suffix}", driver_error=name)
    if isinstance(exc, (errors.DataCorrupted, errors.IndexCorrupted)):
        return StorageCorrupted(f"PostgreSQL reports corruption while {context}: {exc}{suffix}", driver_error=name)
    if isinstance(exc, (errors.UndefinedTable, errors.InvalidSchemaName)):
        return NotAStore(f"not a Contextwright store ({context}): {exc}{suffix}", driver_error=name)
    if isinstance(exc, (psycopg.IntegrityError, psycopg.DataError)):
        return StorageError(f"PostgreSQL rejected data while {context}: {exc}{suffix}", driver_error=name)
    if isinstance(exc, (psycopg.InterfaceError, psycopg.ProgrammingError, psycopg.NotSupportedError)):
        return StorageError(f"PostgreSQL was misused while {context}: {exc}{suffix}", driver_error=name)
    if isinstance(exc, (psycopg.InternalError, psycopg.DatabaseError)):
        return StorageError(f"PostgreSQL failed while {context}: {exc}{suffix}", driver_error=name)
    if isinstance(exc, (psycopg.Error, psycopg.Warning)):
        return StorageError(f"PostgreSQL error while {context}: {exc}{suffix}", driver_error=name)
    raise TypeError(f"not a psycopg error: {exc!r}")


def psycopg_error_classes() -> tuple[type[BaseException], ...]:
    """Every exception base the psycopg adapter must translate."""
    require("psycopg", extra="postgres", feature=_FEATURE)
    require("psycopg_pool", extra="postgres", feature=_FEATURE)
    import psycopg
    from psycopg_pool import PoolTimeout, TooManyRequests

    return (psycopg.Error, psycopg.Warning, PoolTimeout, TooManyRequests)


@contextlib.contextmanager
def translating_psycopg(context: str) -> Iterator[None]:
    """Re-raise any psycopg error inside the block as a Contextwright error."""
    try:
        yield
    except ContextwrightError:
        raise
    except psycopg_error_classes() as exc:
        raise map_psycopg_error(exc, context=context) from exc
