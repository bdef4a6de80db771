"""In-memory event log: the reference implementation of the contract, for tests and demos."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from contextwright.clock import Clock
from contextwright.errors import SeqConflict
from contextwright.log.base import EventLog, PreparedEvent, StoredRow, resolve_replay


class InMemoryEventLog(EventLog):
    """Keeps every session in a dict of lists, guarded by one lock. Nothing persists."""

    def __init__(self, *, clock: Clock | None = None) -> None:
        super().__init__(clock=clock)
        self._lock = threading.Lock()
        self._rows: dict[str, list[StoredRow]] = {}
        self._keys: dict[str, dict[str, StoredRow]] = {}
        self._settings: dict[str, str] = {}
        self._artifacts: dict[str, str] = {}

    def _append(self, session_id: str, events: Sequence[PreparedEvent], *, expected_seq: int) -> list[StoredRow]:
        with self._lock:
            rows = self._rows.get(session_id, [])
            keys = self._keys.get(session_id, {})
            used = {e.idempotency_key: keys[e.idempotency_key] for e in events if e.idempotency_key in keys}
            replay = resolve_replay(session_id, events, used)
            if replay is not None:
                return replay
            if len(rows) != expected_seq:
                raise SeqConflict(session_id, expected_seq=expected_seq, actual_seq=len(rows))
            at = self.clock.now()
            new = [
                StoredRow(
                    session_id=session_id,
                    seq=expected_seq + offset,
                    type=event.type,
                    payload_json=event.payload_json,
                    payload_sha256=event.payload_sha256,
                    at=at,
                    idempotency_key=event.idempotency_key,
                )
                for offset, event in enumerate(events, start=1)
            ]
            self._rows[session_id] = rows + new
            self._keys[session_id] = keys | {r.idempotency_key: r for r in new if r.idempotency_key}
            return new

    def _read(self, session_id: str, *, after_seq: int, limit: int | None) -> list[StoredRow]:
        with self._lock:
            rows = self._rows.get(session_id, [])[after_seq:]
        return rows if limit is None else rows[:limit]

    def _last_seq(self, session_id: str) -> int:
        with self._lock:
            return len(self._rows.get(session_id, ()))

    def sessions(self) -> list[str]:
        with self._lock:
            return sorted(self._rows)

    def _setting(self, key: str, default: str) -> str:
        with self._lock:
            return self._settings.setdefault(key, default)

    def _put_artifact(self, ref: str, kind: str, content: str) -> None:
        with self._lock:
            self._artifacts.setdefault(ref, content)

    def _get_artifact(self, ref: str) -> str | None:
        with self._lock:
            return self._artifacts.get(ref)
