"""Facts about a session's history that stages, artifacts, child runs and pointers look up.

Each lookup once scanned every event of the session (how many stages were opened, which
version an artifact is at, which pointers the model was shown, every text an erased memory
item had). :class:`HistoryFacts` takes each event in once, as :class:`~contextwright.runtime.facts.LogFacts`
follows the log, and is written into a session checkpoint with it, so none of these needs
the whole history in memory. Every fact equals the scan it replaces (a test compares them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, get_args

from contextwright.derive._checkpoint_values import checked_count as _count
from contextwright.derive._checkpoint_values import checked_text as _text
from contextwright.errors import CheckpointRejected
from contextwright.events.catalog import ArtifactPointer, TrustLevel
from contextwright.events.envelope import Event
from contextwright.items.region_a import MemoryFact

__all__ = ["HistoryFacts"]

_TRUST_LEVELS = frozenset(get_args(TrustLevel))


class HistoryFacts:
    """Stages, artifacts, child runs, pointers and memory texts of the events taken in so far."""

    def __init__(self) -> None:
        self.stages_opened = 0
        self.stage_starts: dict[str, int] = {}
        """The seq at which each stage id was (last) opened."""
        self.artifact_versions: dict[str, int] = {}
        """How many versions of each artifact were declared."""
        self.artifact_steps: dict[str, int] = {}
        """How many steps the latest version of each artifact has."""
        self.children_started = 0
        self.child_calls: dict[str, str | None] = {}
        """The call that started each child run (the latest start of that child)."""
        self.task: str | None = None
        """The session's first user message that is not a steering note."""
        self.archives: list[str] = []
        """Refs of the compaction archives, in order."""
        self.pointers: dict[str, ArtifactPointer] = {}
        """Every pointer shown (stored artifacts, elided spans, archives), the first of each ref, in order."""
        self.memory_texts: dict[str, set[str]] = {}
        """Every text each memory item had: in a plan's snapshot, written or corrected."""

    def take(self, event: Event) -> None:
        """Take in one event (after every event before it)."""
        kind, payload = event.type, event.payload
        if kind == "stage.opened":
            self.stages_opened += 1
            self.stage_starts[payload.stage_id] = event.seq
        elif kind == "artifact.declared":
            self.artifact_versions[payload.artifact_id] = self.artifact_versions.get(payload.artifact_id, 0) + 1
            self.artifact_steps[payload.artifact_id] = len(payload.steps)
        elif kind == "child.started":
            self.children_started += 1
            self.child_calls[payload.child_session_id] = payload.call_id
        elif kind == "message.user":
            if self.task is None and payload.author == "user" and not payload.steering:
                self.task = payload.text
        elif kind == "artifact.stored":
            self._show((payload.pointer,))
        elif kind == "context.compacted":
            if payload.archive is not None:
                self.archives.append(payload.archive.ref)
            self._show((*payload.elided, *((payload.archive,) if payload.archive else ())))
        elif kind in ("context.plan.created", "context.epoch.rotated"):
            for item in payload.plan.get("prefix", {}).get("memory", []):
                memory_id = item.get("id")
                if isinstance(memory_id, str):
                    self.memory_texts.setdefault(memory_id, set()).add(item["text"])
        elif kind in ("memory.written", "memory.corrected"):
            self.memory_texts.setdefault(payload.memory_id, set()).add(payload.text)

    def _show(self, pointers: Iterable[ArtifactPointer]) -> None:
        for pointer in pointers:
            self.pointers.setdefault(pointer.ref, pointer)

    def pointer(self, ref: str) -> ArtifactPointer | None:
        """The one pointer whose ref starts with ``ref`` (None when there is none, or more than one)."""
        found = [pointer for full, pointer in self.pointers.items() if full.startswith(ref)]
        return found[0] if len(found) == 1 else None

    def erased_texts(self, erased: frozenset[str], snapshot: Iterable[MemoryFact] = ()) -> frozenset[str]:
        """Every text an erased memory item had (as ``memory_rules.erased_texts`` finds it in the whole log)."""
        if not erased:
            return frozenset()
        texts = {fact.text for fact in snapshot if fact.id in erased}
        for memory_id in erased:
            texts |= self.memory_texts.get(memory_id, set())
        return frozenset(t for t in texts if t.strip())

    def snapshot(self) -> dict[str, Any]:
        """Plain JSON data for a session checkpoint (:meth:`restore` reads it back)."""
        return {
            "stages_opened": self.stages_opened,
            "stage_starts": [[stage_id, seq] for stage_id, seq in self.stage_starts.items()],
            "artifacts": [[a, self.artifact_versions[a], self.artifact_steps[a]] for a in self.artifact_versions],
            "children_started": self.children_started,
            "child_calls": [[child_id, call_id] for child_id, call_id in self.child_calls.items()],
            "task": self.task,
            "archives": list(self.archives),
            "pointers": [[p.ref, p.trust, p.size_chars, p.kind] for p in self.pointers.values()],
            "memory_texts": [[memory_id, sorted(texts)] for memory_id, texts in self.memory_texts.items()],
        }

    @classmethod
    def restore(cls, data: Mapping[str, Any]) -> HistoryFacts:
        """The facts :meth:`snapshot` wrote; :class:`CheckpointRejected` for anything else."""
        facts = cls()
        facts.stages_opened = _count(data["stages_opened"])
        facts.stage_starts = {_text(stage_id): _count(seq) for stage_id, seq in data["stage_starts"]}
        for artifact_id, versions, steps in data["artifacts"]:
            facts.artifact_versions[_text(artifact_id)] = _count(versions)
            facts.artifact_steps[artifact_id] = _count(steps)
        facts.children_started = _count(data["children_started"])
        facts.child_calls = {_text(c): None if call is None else _text(call) for c, call in data["child_calls"]}
        facts.task = None if data["task"] is None else _text(data["task"])
        facts.archives = [_text(ref) for ref in data["archives"]]
        for ref, trust, size, kind in data["pointers"]:
            if trust not in _TRUST_LEVELS:
                raise CheckpointRejected(f"unknown trust level {trust!r}")
            facts.pointers[_text(ref)] = ArtifactPointer(ref=ref, trust=trust, size_chars=_count(size), kind=_text(kind))
        facts.memory_texts = {_text(m): {_text(t) for t in texts} for m, texts in data["memory_texts"]}
        return facts
