"""In-memory event log: the reference implementation of the contract, for tests and demos."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from contextwright.clock import Clock
from contextwright.errors import SeqConflict
from contextwright.events.envelope import Event
from contextwright.log._invariants import IndexChanges, check_batch
from contextwright.log.base import (
    ArtifactRow,
    EventLog,
    PreparedEvent,
    StoredCheckpoint,
    StoredRow,
    decode_rows,
    new_rows,
    resolve_replay,
)


@dataclass(kw_only=True, slots=True)
class _Index:
    """The session-rules index of one session (see ``contextwright.log._invariants``)."""

    calls: dict[str, bool] = field(default_factory=dict)
    plans: dict[int, str] = field(default_factory=dict)
    requests: int = 0

    def call_states(self, call_ids: Sequence[str]) -> Mapping[str, bool]:
        return {c: self.calls[c] for c in call_ids if c in self.calls}

    def any_calls(self) -> bool:
        return bool(self.calls)

    def plan_prefixes(self) -> Mapping[int, str]:
        return self.plans

    def requests_built(self) -> int:
        return self.requests

    def apply(self, changes: IndexChanges) -> None:
        for _, call_id, answered in changes.call_updates():
            self.calls[call_id] = answered
        self.plans.update(changes.plans)
        if changes.requests_built is not None:
            self.requests = changes.requests_built


class InMemoryEventLog(EventLog):
    """Keeps every session in a dict of lists, guarded by one lock. Nothing persists."""

    # A class attribute so the contract's own tests can swap in a broken rule checker.
    _check_rules = staticmethod(check_batch)

    def __init__(self, *, clock: Clock | None = None) -> None:
        super().__init__(clock=clock)
        self._lock = threading.Lock()
        self._rows: dict[str, list[StoredRow]] = {}
        self._keys: dict[str, dict[str, StoredRow]] = {}
        self._settings: dict[str, str] = {}
        self._artifacts: dict[str, str] = {}
        self._index: dict[str, _Index] = {}
        self._checkpoints: dict[str, StoredCheckpoint] = {}

    def _append(self, session_id: str, events: Sequence[PreparedEvent], *, expected_seq: int) -> list[Event]:
        with self._lock:
            rows = self._rows.get(session_id, [])
            keys = self._keys.get(session_id, {})
            used = {e.idempotency_key: keys[e.idempotency_key] for e in events if e.idempotency_key in keys}
            replay = resolve_replay(session_id, events, used)
            if replay is not None:
                return replay
            if len(rows) != expected_seq:
                raise SeqConflict(session_id, expected_seq=expected_seq, actual_seq=len(rows))
            index = self._index.get(session_id) or _Index()
            changes = self._check_rules(session_id, events, index, first_seq=expected_seq + 1)
            new = new_rows(session_id, events, expected_seq=expected_seq, at=self.clock.now())
            self._rows[session_id] = rows + new
            self._keys[session_id] = keys | {r.idempotency_key: r for r in new if r.idempotency_key}
            if not changes.empty:
                index.apply(changes)
                self._index[session_id] = index
            return decode_rows(new)

    def _read(self, session_id: str, *, after_seq: int, limit: int | None) -> list[StoredRow]:
        with self._lock:
            rows = self._rows.get(session_id, [])[after_seq:]
        return rows if limit is None else rows[:limit]

    def _read_keyed(self, session_id: str, key_prefix: str) -> list[StoredRow]:
        with self._lock:
            keyed = self._keys.get(session_id, {})
            rows = [row for key, row in keyed.items() if key.startswith(key_prefix)]
        return sorted(rows, key=lambda row: row.seq)

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

    def _put_checkpoint(self, checkpoint: StoredCheckpoint) -> None:
        with self._lock:
            kept = self._checkpoints.get(checkpoint.session_id)
            if kept is None or kept.format != checkpoint.format or kept.seq <= checkpoint.seq:
                self._checkpoints[checkpoint.session_id] = checkpoint

    def _get_checkpoint(self, session_id: str) -> StoredCheckpoint | None:
        with self._lock:
            return self._checkpoints.get(session_id)

    def _checkpoint_rows(self) -> Iterator[StoredCheckpoint]:
        with self._lock:
            stored = sorted(self._checkpoints.items())
        return iter([checkpoint for _, checkpoint in stored])

    def _event_session_ids(self) -> list[str]:
        with self._lock:
            return sorted(self._rows)

    def _artifact_rows(self) -> Iterator[ArtifactRow]:
        with self._lock:
            stored = list(self._artifacts.items())
        for ref, content in stored:
            yield ArtifactRow(ref=ref, size_chars=len(content), content=content)

    def _index_state(self, session_id: str) -> tuple[dict[str, bool], dict[int, str], int]:
        with self._lock:
            index = self._index.get(session_id) or _Index()
            return dict(index.calls), dict(index.plans), index.requests
