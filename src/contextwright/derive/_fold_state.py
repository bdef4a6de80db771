"""A running fold written down as plain data and read back: the main part of a session checkpoint.

:func:`fold_snapshot` gives JSON-ready data for a :class:`~contextwright.derive._surface.Folder`
(its entries with their payloads encoded as the log encodes them, its counters and sets,
and its echo index); :func:`fold_restore` gives back a folder that folds the events after
it exactly as the one that never stopped. Repeat marking is not written down: a restored
folder marks its first surface from scratch, which gives the same marks. This module is
the folder's own persistence, so it reads and sets the folder's private state.

Anything that is not data :func:`fold_snapshot` wrote (another format, a payload that does
not decode, a count that is not one) raises :class:`~contextwright.errors.CheckpointRejected`:
whoever restores falls back to folding the log.
"""

from __future__ import annotations

from typing import Any

from contextwright.derive._checkpoint_values import checked_count as _count
from contextwright.derive._checkpoint_values import checked_text as _text
from contextwright.derive._surface import (
    ArtifactEntry,
    AssistantReply,
    DecisionEntry,
    Entry,
    Exchange,
    Folder,
    ResultEntry,
    Summary,
    UserTurn,
)
from contextwright.derive._taint import EchoIndex
from contextwright.errors import CheckpointRejected, ContextwrightError
from contextwright.events.catalog import (
    ArtifactDeclared,
    AssistantMessage,
    Compacted,
    DecisionPoint,
    FrameRecorded,
    StageOpened,
    ToolResult,
    UserMessage,
)
from contextwright.events.registry import decode_stored_payload, encode_payload

FOLD_FORMAT = "fold-1"
"""The layout below; a change to it (or to what a fold keeps) is a new name."""


def fold_snapshot(folder: Folder) -> dict[str, Any]:
    """The folder's state as plain JSON data (the same events give the same data)."""
    if folder.broken:
        raise CheckpointRejected(f"session {folder.session_id!r}: a failed fold has no state to write down")
    state = folder._state
    return {
        "format": FOLD_FORMAT,
        "session_id": folder.session_id,
        "entries": [_entry(e) for e in state.entries],
        "deferred": [_entry(e) for e in state.deferred],
        "open_index": state.open_index,
        "calls_by_id": [[call_id, i] for call_id, i in sorted(state.calls_by_id.items())],
        "pruned": sorted(state.pruned),
        "upto": state.upto,
        "seed": state.seed,
        "requests": state.requests,
        "depth": state.depth,
        "seen_task": state.seen_task,
        "stage": None if state.stage is None else encode_payload(state.stage),
        "replaced_versions": state.replaced_versions,
        "stale_reasoning": sorted(state.stale_reasoning),
        "has_reasoning": state.has_reasoning,
        "echoes": folder._echoes.snapshot(),
    }


def fold_restore(session_id: str, data: Any) -> Folder:
    """The folder :func:`fold_snapshot` wrote for ``session_id``; :class:`CheckpointRejected` for anything else."""
    try:
        if not isinstance(data, dict) or data.get("format") != FOLD_FORMAT:
            raise CheckpointRejected("not a fold of this format")
        if data["session_id"] != session_id:
            raise CheckpointRejected(f"a fold of session {data['session_id']!r}, not {session_id!r}")
        folder = Folder(session_id)
        state = folder._state
        state.entries = [_decode_entry(e) for e in data["entries"]]
        state.deferred = [_decode_entry(e) for e in data["deferred"]]
        open_index = data["open_index"]
        state.open_index = None if open_index is None else _index(open_index, len(state.entries))
        state.calls_by_id = {_text(call_id): _index(i, len(state.entries)) for call_id, i in data["calls_by_id"]}
        state.pruned = {_text(call_id) for call_id in data["pruned"]}
        state.upto = _count(data["upto"])
        state.seed = _count(data["seed"])
        state.requests = _count(data["requests"])
        state.depth = _count(data["depth"])
        state.seen_task = _flag(data["seen_task"])
        state.stage = None if data["stage"] is None else _payload(StageOpened, data["stage"])
        state.replaced_versions = _count(data["replaced_versions"])
        state.stale_reasoning = {_count(seq) for seq in data["stale_reasoning"]}
        state.has_reasoning = _flag(data["has_reasoning"])
        folder._echoes = EchoIndex.restore(data["echoes"])
    except CheckpointRejected:
        raise
    except (ContextwrightError, KeyError, TypeError, ValueError) as exc:
        raise CheckpointRejected(f"session {session_id!r}: the fold does not decode: {exc}") from exc
    except RecursionError:
        # Nothing the log accepts nests this deep (or the caller's stack is nearly full): a cache miss either way.
        raise CheckpointRejected(f"session {session_id!r}: the fold nests too deep to decode") from None
    return folder


def _entry(entry: Entry) -> list[Any]:
    if isinstance(entry, UserTurn):
        frame = None if entry.frame is None else encode_payload(entry.frame)
        return ["user", entry.seq, entry.ref, encode_payload(entry.message), frame, entry.frame_ref, entry.task, entry.stage]
    if isinstance(entry, Exchange):
        results = [[r.seq, r.ref, encode_payload(r.result), r.pruned, r.duplicate_of, r.superseded_by] for r in entry.results]
        return ["exchange", entry.seq, entry.ref, encode_payload(entry.message), results, entry.stage]
    if isinstance(entry, AssistantReply):
        return ["reply", entry.seq, entry.ref, encode_payload(entry.message), entry.stage]
    if isinstance(entry, DecisionEntry):
        return ["decision", entry.seq, entry.ref, encode_payload(entry.decision)]
    if isinstance(entry, ArtifactEntry):
        return ["artifact", entry.seq, entry.ref, encode_payload(entry.declared), entry.current_step, entry.stage]
    return ["summary", entry.seq, entry.ref, encode_payload(entry.compacted)]


def _decode_entry(data: Any) -> Entry:
    kind, seq, ref, *rest = data
    seq, ref = _count(seq), _text(ref)
    if kind == "user":
        message, frame, frame_ref, task, stage = rest
        return UserTurn(
            seq=seq,
            ref=ref,
            message=_payload(UserMessage, message),
            frame=None if frame is None else _payload(FrameRecorded, frame),
            frame_ref=_optional_text(frame_ref),
            task=_flag(task),
            stage=_optional_text(stage),
        )
    if kind == "exchange":
        message, results, stage = rest
        return Exchange(
            seq=seq,
            ref=ref,
            message=_payload(AssistantMessage, message),
            results=tuple(_result(r) for r in results),
            stage=_optional_text(stage),
        )
    if kind == "reply":
        message, stage = rest
        return AssistantReply(seq=seq, ref=ref, message=_payload(AssistantMessage, message), stage=_optional_text(stage))
    if kind == "decision":
        (decision,) = rest
        return DecisionEntry(seq=seq, ref=ref, decision=_payload(DecisionPoint, decision))
    if kind == "artifact":
        declared, step, stage = rest
        return ArtifactEntry(
            seq=seq,
            ref=ref,
            declared=_payload(ArtifactDeclared, declared),
            current_step=_count(step),
            stage=_optional_text(stage),
        )
    if kind == "summary":
        (compacted,) = rest
        return Summary(seq=seq, ref=ref, compacted=_payload(Compacted, compacted))
    raise CheckpointRejected(f"unknown fold entry {kind!r}")


def _result(data: Any) -> ResultEntry:
    seq, ref, result, pruned, duplicate_of, superseded_by = data
    return ResultEntry(
        seq=_count(seq),
        ref=_text(ref),
        result=_payload(ToolResult, result),
        pruned=_flag(pruned),
        duplicate_of=_optional_text(duplicate_of),
        superseded_by=_optional_text(superseded_by),
    )


def _payload(cls: type[Any], data: Any) -> Any:
    # The read path's decoder (payloads here passed the log's limits when they were appended);
    # data nested deeper than those limits ends in the RecursionError handled above.
    payload = decode_stored_payload(cls.TYPE, data)
    if not isinstance(payload, cls):
        raise CheckpointRejected(f"expected a {cls.__name__}, got {type(payload).__name__}")
    return payload


def _index(value: Any, size: int) -> int:
    if _count(value) >= size:
        raise CheckpointRejected(f"index {value} is past the {size} entries")
    result: int = value
    return result


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise CheckpointRejected(f"expected true or false, got {value!r}")
    return value


def _optional_text(value: Any) -> str | None:
    return None if value is None else _text(value)
