"""Replay the provider usage recorded in the shared transcripts against reconciled estimates.

For each transcript format that records the provider's input total per model call,
rebuild what the model saw before each call, estimate it raw with
``HeuristicEstimator.raw_estimate`` (plus the engine's per-message and per-part
overheads), and feed the reported totals to a :class:`Reconciler` exactly as a
session folds them from its log: the factor used for call *n* is learned from the
calls before it only. The projected input total (exact part plus the corrected
estimate) is compared with what the provider reported.

* ``claude-code-jsonl``: one observation per model call (``message.usage``). Claude
  Code's own system prompt and tool schemas are not in the transcript: they stand in
  for the exactly counted part, taken as the first call's total minus the raw estimate
  of its few visible tokens (the engine knows its prefix; here it is inferred once).
  Sub-agent (sidechain) records are left out; a session is cut at its first image (sized
  by the provider's image rule, not by text) and at its first compaction (the reported
  total falls by more than 30%).
* ``openhands-llm-completions``: one recorded call per file (the last of its session),
  so only the uncorrected first estimate can be compared there; the whole request is
  estimated (a Claude model, no public tokenizer: nothing is exact).
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextwright.assembly.assemble import MESSAGE_OVERHEAD_TOKENS, PART_OVERHEAD_TOKENS
from contextwright.budget._reconcile import Reconciler
from contextwright.budget.estimator import HeuristicEstimator

_COMPACTION_DROP = 0.7  # a reported total below 70% of the previous one: the context was reset
_MIN_EVIDENCE = 2  # reports a session must have seen before its estimates are scored
_UNSEEN_GROWTH, _UNSEEN_SLACK = 2.0, 300  # reported growth beyond 2x the visible growth + 300 tokens


@dataclass(frozen=True, kw_only=True, slots=True)
class Call:
    """One model call: the raw estimate of what it carried and the provider's input total."""

    raw: int
    actual: int
    o200k: int | None = None
    """Exact o200k count of the same texts and overheads, where measured."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Transcript:
    """The model calls of one session, in order."""

    name: str
    format: str
    model: str
    calls: tuple[Call, ...]
    inferred_exact: bool
    """True when the first call only serves to infer the exact part (Claude Code's hidden prefix)."""


def block_texts(content: Any, *, thinking: bool = True) -> Iterator[str]:
    """The texts of a message's content (a string or Anthropic-style blocks); images have none.

    ``thinking=False`` leaves thinking out: earlier turns' thinking is not sent back as input."""
    if isinstance(content, str):
        yield content
        return
    for block in content if isinstance(content, list) else ():
        if isinstance(block, str):
            yield block
        elif isinstance(block, dict):
            kind = block.get("type")
            if kind == "text":
                yield block.get("text", "")
            elif kind == "thinking" and thinking:
                yield block.get("thinking", "")
            elif kind == "tool_use":
                yield json.dumps(block.get("input"), ensure_ascii=False)
            elif kind == "tool_result":
                yield from block_texts(block.get("content"), thinking=thinking)


def _has_image(content: Any) -> bool:
    if not isinstance(content, list):
        return False
    return any(
        isinstance(b, dict) and (b.get("type") == "image" or (b.get("type") == "tool_result" and _has_image(b.get("content"))))
        for b in content
    )


def claude_code(path: Path, estimator: HeuristicEstimator) -> Transcript | None:
    """The main-chain model calls of one Claude Code session file."""
    seen: set[str] = set()
    raw, calls, model = 0, [], ""
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if record.get("type") not in ("user", "assistant") or record.get("isSidechain"):
            continue
        message = record.get("message") or {}
        if _has_image(message.get("content")):
            break
        usage = message.get("usage") if record["type"] == "assistant" else None
        if usage and message.get("id") not in seen and str(message.get("model", "")).startswith("claude"):
            seen.add(message["id"])
            model = message["model"]
            actual = sum(usage.get(k) or 0 for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
            if calls and actual < _COMPACTION_DROP * calls[-1].actual:
                break
            calls.append(Call(raw=raw + MESSAGE_OVERHEAD_TOKENS, actual=actual))
        texts = [t for t in block_texts(message.get("content"), thinking=False) if t]
        if texts:
            raw += MESSAGE_OVERHEAD_TOKENS + sum(
                estimator.raw_estimate(t, model=model or "claude-sonnet-4") + PART_OVERHEAD_TOKENS for t in texts
            )
    if len(calls) < 2:
        return None
    return Transcript(name=path.name, format="claude-code-jsonl", model=model, calls=tuple(calls), inferred_exact=True)


def openhands_completion(path: Path, estimator: HeuristicEstimator, o200k: Callable[[str], int]) -> Transcript | None:
    """The one recorded call of an OpenHands completions file."""
    data = json.loads(path.read_text(encoding="utf-8"))
    model = str(data.get("kwargs", {}).get("model") or "claude-3-5-sonnet-20241022")
    usage = (data.get("response") or {}).get("usage") or {}
    actual = int(usage.get("prompt_tokens") or 0)
    if not actual:
        return None
    groups = []
    for message in data.get("messages", []):
        texts = [t for t in block_texts(message.get("content"), thinking=False) if t]
        texts += [c.get("function", {}).get("arguments", "") for c in message.get("tool_calls") or []]
        groups.append(texts)
    groups.append([json.dumps(tool, ensure_ascii=False) for tool in data.get("kwargs", {}).get("tools") or []])

    def size(count: Callable[[str], int]) -> int:
        return sum(MESSAGE_OVERHEAD_TOKENS + sum(count(t) + PART_OVERHEAD_TOKENS for t in texts) for texts in groups)

    call = Call(raw=size(lambda t: estimator.raw_estimate(t, model=model)), actual=actual, o200k=size(o200k))
    return Transcript(name=path.name, format="openhands-llm-completions", model=model, calls=(call,), inferred_exact=False)


def load(traces: Path) -> list[Transcript]:
    """Every transcript with provider usage under ``traces``."""
    from contextwright.budget._tokenizers import exact_token_counter

    estimator, o200k = HeuristicEstimator(), exact_token_counter("o200k_base")
    found: list[Transcript | None] = []
    for path in sorted((traces / "claude-code-jsonl").rglob("*.jsonl")):
        found.append(claude_code(path, estimator))
    for path in sorted((traces / "openhands-llm-completions").rglob("*.json")):
        found.append(openhands_completion(path, estimator, o200k))
    return [t for t in found if t is not None]


@dataclass(frozen=True, kw_only=True, slots=True)
class Scored:
    """A projected input total next to the provider's, for one call."""

    projected: int
    actual: int
    evidence: int
    """How many earlier reports of the session the factor was learned from."""
    unseen: bool = False
    """The reported total grew far more than the transcript's visible text (content it does not hold)."""


def replay(transcript: Transcript, **options: Any) -> list[Scored]:
    """Project every call's input total from the reports before it, as a session does."""
    calls = transcript.calls
    exact = max(0, calls[0].actual - calls[0].raw) if transcript.inferred_exact else 0
    first = 1 if transcript.inferred_exact else 0
    reconciler = Reconciler(**options)
    scored = []
    for index, call in enumerate(calls[first:], start=first):
        factor = reconciler.factor(transcript.model)
        projected = exact + math.ceil(call.raw * factor - 1e-9)
        before = calls[index - 1] if index else None
        unseen = before is not None and call.actual - before.actual > _UNSEEN_GROWTH * (call.raw - before.raw) + _UNSEEN_SLACK
        scored.append(Scored(projected=projected, actual=call.actual, evidence=index - first, unseen=unseen))
        estimated_part = call.actual - exact
        if call.raw > 0 and estimated_part > 0:
            reconciler.observe(transcript.model, call.raw, estimated_part)
    return scored


@dataclass(frozen=True, kw_only=True, slots=True)
class Accuracy:
    """Under- and over-estimates of the real input total over a set of calls."""

    label: str
    sessions: int
    requests: int
    under: float
    median_over: float
    p90_over: float
    worst_under: float
    under_seen: float
    """Under-estimates among calls whose reported growth the transcript's text accounts for."""


def accuracy(label: str, sessions: int, scored: Sequence[Scored]) -> Accuracy:
    """Share of projections below the provider's total, and how far above it the rest sit."""
    if not scored:
        return Accuracy(
            label=label, sessions=sessions, requests=0, under=0.0, median_over=0.0, p90_over=0.0, worst_under=0.0, under_seen=0.0
        )
    over = sorted(s.projected / s.actual - 1 for s in scored)
    seen = [s for s in scored if not s.unseen]
    return Accuracy(
        label=label,
        sessions=sessions,
        requests=len(scored),
        under=sum(1 for s in scored if s.projected < s.actual) / len(scored),
        median_over=statistics.median(over),
        p90_over=over[min(len(over) - 1, int(0.9 * len(over)))],
        worst_under=min(0.0, over[0]),
        under_seen=sum(1 for s in seen if s.projected < s.actual) / max(1, len(seen)),
    )


def evaluate(transcripts: Sequence[Transcript], *, min_evidence: int = _MIN_EVIDENCE, **options: Any) -> list[Accuracy]:
    """Per format: reconciled projections once ``min_evidence`` reports were seen, and the raw first estimates."""
    rows = []
    for fmt in sorted({t.format for t in transcripts}):
        group = [t for t in transcripts if t.format == fmt]
        replayed = [replay(t, **options) for t in group]
        late = [s for r in replayed for s in r if s.evidence >= min_evidence]
        if late:
            rows.append(accuracy(f"{fmt}: after {min_evidence} reports", len(group), late))
        if not any(t.inferred_exact for t in group):  # else the first call only located the hidden prefix
            rows.append(accuracy(f"{fmt}: first estimate (no report yet)", len(group), [r[0] for r in replayed if r]))
    return rows


def smallest_safe_margin(
    transcripts: Sequence[Transcript], *, target: float = 0.01, grid: Sequence[float] = tuple(i / 200 for i in range(41))
) -> float | None:
    """The smallest log-margin whose projections fall below the provider's total on at most ``target`` of calls."""
    for margin in grid:
        late = [s for t in transcripts for s in replay(t, margin=margin) if s.evidence >= _MIN_EVIDENCE]
        if late and sum(1 for s in late if s.projected < s.actual) / len(late) <= target:
            return margin
    return None


def cross_session(transcripts: Sequence[Transcript], *, window: int = 2, **options: Any) -> list[Scored]:
    """Single-call transcripts: each session's estimate corrected by the reports of the ``window`` sessions before it.

    A stand-in where a file records one call of its session: the same model on the same
    agent, so the factor two reports give is what a session would have after two calls."""
    scored = []
    for index in range(window, len(transcripts)):
        reconciler = Reconciler(**options)
        for earlier in transcripts[index - window : index]:
            call = earlier.calls[0]
            reconciler.observe(earlier.model, call.raw, call.actual)
        target = transcripts[index]
        call = target.calls[0]
        projected = math.ceil(call.raw * reconciler.factor(target.model) - 1e-9)
        scored.append(Scored(projected=projected, actual=call.actual, evidence=window))
    return scored
