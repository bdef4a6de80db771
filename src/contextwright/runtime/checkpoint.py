"""A session's derived state written beside its log, so a reopen reads only the events after it.

A session derives everything it needs from its log: the surface fold, the facts it looks
up on every request, the current plan, the working state and the usage fold. A checkpoint
holds all of them as of one seq (format ``session-2``), sealed with a keyed hash under the
session's secret. It is only a cache: a checkpoint that is missing, past the log's end,
folded from another event, unsealed, of another format or that does not decode is set
aside, and the session folds its log from the start, with the same result.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from contextwright.budget._reconcile import Reconciler, UsageFold
from contextwright.canonical import canonical_json, parse_canonical, sha256_tagged, to_plain
from contextwright.derive import _working_state as ws
from contextwright.derive._fold_state import fold_restore, fold_snapshot
from contextwright.derive._surface import Folder
from contextwright.errors import CheckpointRejected, ContextwrightError
from contextwright.log.base import EventLog, StoredCheckpoint
from contextwright.plan.plan import ContextPlan
from contextwright.runtime.facts import LogFacts

SESSION_FORMAT: Final[str] = "session-2"
"""The layout below; a change to it (or to what any of its parts keep) is a new name."""

DEFAULT_CHECKPOINT_EVERY: Final[int] = 400
"""Events between two checkpoints (at least): a reopen folds at most about this many events
beyond the checkpoint, and writing one costs about as much as folding the session once."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SessionState:
    """What a session derived from its events up to ``seq``."""

    seq: int
    folder: Folder
    facts: LogFacts
    plan: tuple[ContextPlan, Mapping[str, Any]] | None
    """The current plan as of ``seq`` with the data it was recorded as (None before the first)."""
    working_state: ws.WorkingState
    usage: UsageFold
    counts: CountSeed | None = None
    """Raw token counts of the texts the last build counted (they size the next one the same)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class CountSeed:
    """Raw token counts of one model's texts by digest, and what else they depend on."""

    fingerprint: str
    """:func:`~contextwright.runtime.estimates.estimator_fingerprint` of the estimator that counted them."""
    model: str
    raw: Mapping[bytes, int]


def checkpoint_body(state: SessionState, session_id: str) -> str:
    """The checkpoint body of ``state``: JSON text (the same state gives the same text)."""
    return canonical_json(
        {
            "format": SESSION_FORMAT,
            "session_id": session_id,
            "seq": state.seq,
            "fold": fold_snapshot(state.folder),
            "facts": state.facts.snapshot(),
            "plan": None if state.plan is None else to_plain(state.plan[1]),
            "working_state": state.working_state.to_dict(),
            "usage": state.usage.snapshot(),
            "counts": None if state.counts is None else _counts_data(state.counts),
        }
    )


def seal(secret: bytes, *, session_id: str, seq: int, head_sha256: str, body: str) -> str:
    """The keyed hash that binds a body to its session, its seq and the event it was folded up to."""
    fields = canonical_json([SESSION_FORMAT, session_id, seq, head_sha256, sha256_tagged(body.encode("utf-8"))])
    return hmac.new(secret, b"checkpoint:" + fields.encode("utf-8"), hashlib.sha256).hexdigest()


def write_checkpoint(log: EventLog, session_id: str, secret: bytes, state: SessionState, *, head_sha256: str) -> None:
    """Store ``state`` as the session's checkpoint at ``state.seq`` (whose event has payload hash ``head_sha256``)."""
    body = checkpoint_body(state, session_id)
    tag = seal(secret, session_id=session_id, seq=state.seq, head_sha256=head_sha256, body=body)
    log.put_checkpoint(session_id, seq=state.seq, format=SESSION_FORMAT, body=body, seal=tag)


def read_checkpoint(log: EventLog, session_id: str, secret: bytes, reconciler: Reconciler | None) -> SessionState | None:
    """The session's checkpoint as state to go on from, or None when there is none the log still stands behind.

    Raises :class:`CheckpointRejected` for one that is there but cannot be used (its seal,
    its format, its contents): the caller folds the log instead."""
    stored = log.checkpoint(session_id)
    if stored is None:
        return None
    return restore_state(stored, session_id, secret, reconciler)


def restore_state(stored: StoredCheckpoint, session_id: str, secret: bytes, reconciler: Reconciler | None) -> SessionState:
    """Decode and check a stored checkpoint; :class:`CheckpointRejected` for anything this session did not write."""
    if stored.format != SESSION_FORMAT:
        raise CheckpointRejected(f"session {session_id!r}: a checkpoint of format {stored.format!r}, not {SESSION_FORMAT!r}")
    expected = seal(secret, session_id=session_id, seq=stored.seq, head_sha256=stored.head_sha256, body=stored.body)
    if not hmac.compare_digest(expected, stored.seal):
        raise CheckpointRejected(f"session {session_id!r}: the checkpoint's seal does not match")
    try:
        data = parse_canonical(stored.body)
        if data["format"] != SESSION_FORMAT or data["session_id"] != session_id or data["seq"] != stored.seq:
            raise CheckpointRejected(f"session {session_id!r}: the checkpoint's body names another place")
        folder = fold_restore(session_id, data["fold"])
        facts = LogFacts.restore(data["facts"])
        plan_data = data["plan"]
        plan = None if plan_data is None else (ContextPlan.from_dict(plan_data), plan_data)
        state = SessionState(
            seq=stored.seq,
            folder=folder,
            facts=facts,
            plan=plan,
            working_state=ws.WorkingState.from_dict(data["working_state"]),
            usage=UsageFold.restore(data["usage"], reconciler),
            counts=None if data["counts"] is None else _counts(data["counts"]),
        )
    except CheckpointRejected:
        raise
    except (ContextwrightError, KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise CheckpointRejected(f"session {session_id!r}: the checkpoint does not decode: {exc}") from exc
    except RecursionError:
        raise CheckpointRejected(f"session {session_id!r}: the checkpoint nests too deep to decode") from None
    positions = (state.facts.seen, state.usage.upto_seq, state.folder._state.upto)
    if any(position != stored.seq for position in positions):
        raise CheckpointRejected(f"session {session_id!r}: the checkpoint's parts are not all at seq {stored.seq}")
    return state


def _counts_data(seed: CountSeed) -> dict[str, Any]:
    return {
        "fingerprint": seed.fingerprint,
        "model": seed.model,
        "raw": [[digest.hex(), raw] for digest, raw in sorted(seed.raw.items())],
    }


def _counts(data: Mapping[str, Any]) -> CountSeed:
    fingerprint, model = data["fingerprint"], data["model"]
    if not isinstance(fingerprint, str) or not isinstance(model, str):
        raise CheckpointRejected("a count seed names its estimator and model")
    raw: dict[bytes, int] = {}
    for digest, count in data["raw"]:
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise CheckpointRejected(f"expected a count, got {count!r}")
        raw[bytes.fromhex(digest)] = count
    return CountSeed(fingerprint=fingerprint, model=model, raw=raw)
