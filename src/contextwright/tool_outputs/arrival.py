"""What happens to a tool's output on its way into the context.

1. The full text is stored as an artifact (content-addressed, never deleted).
2. Reductions that lose nothing apply to every output: colour codes and carriage-return
   redraws resolved, trailing blanks dropped, the padding before a numbered view's line
   numbers dropped, runs of one repeated line folded into a counted marker. Kinds that really print noise (test runs, builds, package installs)
   also lose it: passing tests, download progress, compiler chatter. For the other kinds
   (a listing, a search, a file view, a diff, a JSON answer) the content is the evidence,
   and it is kept whole. A long output is first cut to a bounded view (its head, its tail,
   and the lines of the middle that mention a failure;
   :mod:`~contextwright.tool_outputs.scan_window`), so memory stays a fraction of the output
   and time stays linear whatever a tool prints.
3. Only an output that still exceeds its allowance (``budget_tokens``: the runtime sets
   it from the room the window has left) is cut, by the per-kind compressor, which keeps
   every failure line verbatim; then it is capped: bounded head + a fixed omission marker
   naming the artifact + bounded tail, so both ends survive.

The model sees the result of 2 and 3 with a typed pointer to the original; the
``context_read_artifact`` control tool pages the original back in, at its
original trust level.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from contextwright.errors import UsageError
from contextwright.events.catalog import ArtifactPointer
from contextwright.items.region_a import READ_TOOL_NAME as READ_TOOL_NAME  # defined beside the prefix items: markers name it
from contextwright.tool_outputs.cap import DEFAULT_MAX_CHARS, cap_output
from contextwright.tool_outputs.compressors import KIND_ALIASES, auto_budget, detect_kind
from contextwright.tool_outputs.compressors.normalize import lossless
from contextwright.tool_outputs.compressors.pipeline import NOISY_KINDS, compress_text
from contextwright.tool_outputs.scan_window import bounded_view

# Sent with every request: worded for the model and no longer than it needs. The handler
# checks every argument itself, so the schema carries types, not limits.
READ_TOOL_DESCRIPTION = (
    "Read the whole text behind a ref that a shortened or removed text names, as numbered lines: page with "
    "start_line and max_lines (defaults 1 and 200, at most 400) or filter with grep (a substring)."
)
"""Refs are 'sha256:…' pointers (tool outputs, archives) and message refs (a message shown bounded)."""
READ_TOOL_SCHEMA = {
    "type": "object",
    "required": ["ref"],
    "properties": {
        "ref": {"type": "string"},
        "start_line": {"type": "integer"},
        "max_lines": {"type": "integer"},
        "grep": {"type": "string"},
    },
}
READ_MAX_CHARS = 20_000
_NOT_COMMAND_OUTPUT = frozenset({"generic", "json"})


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolOutputPolicy:
    """How one tool's outputs are bounded (configurable per tool)."""

    max_chars: int = DEFAULT_MAX_CHARS
    """Hard bound on what the model sees, in characters (head, marker, tail)."""
    compress: bool = True
    """Run the per-kind compressor before capping."""
    kind: str = "auto"
    """The output's kind, or ``"auto"`` to detect it."""
    budget_tokens: int | None = None
    """The output's allowance: an output that still exceeds it after the reductions that lose nothing
    (and the noise filter of a noisy kind) is cut to it by the compressor; None leaves it to the cap."""
    auto_budget: bool = False
    """Aim command outputs at ``auto_budget`` (a fifth of the output, 60 to 500 tokens) whatever the
    room, as the command line does by default; ``budget_tokens`` still bounds it. A command output is
    one of a recognised kind (a test run, a build, a listing) or one that failed; other results (a file
    read, a page of prose, an API body) are left to ``budget_tokens`` and the cap. Off by default: a
    listing, a search or a file view is the evidence the model asked for, so a session keeps an output
    whole unless it exceeds ``budget_tokens``."""


@dataclass(frozen=True, kw_only=True, slots=True)
class PreparedOutput:
    """A tool output ready for the log: what the model sees, and the pointer to the original."""

    text: str
    pointer: ArtifactPointer
    kind: str
    changed: bool


def prepare_output(
    output: str,
    *,
    ref: str,
    trust: str,
    exit_code: int | None,
    policy: ToolOutputPolicy,
    count_tokens: Callable[[str], int],
) -> PreparedOutput:
    """Compress and cap ``output`` whose original is stored under ``ref``."""
    text, kind = bounded_view(output, ref=ref), "text"
    if policy.compress and not policy.auto_budget:
        text, kind = _reduce_by_value(text, ref=ref, exit_code=exit_code, policy=policy, count_tokens=count_tokens)
    elif policy.compress:
        kind = policy.kind
        budget = policy.budget_tokens
        # Detection and the automatic budget read the bounded view too, so a huge output is read once.
        if policy.auto_budget and kind == "auto":
            kind = detect_kind(text)
        if policy.auto_budget and (exit_code not in (None, 0) or kind not in _NOT_COMMAND_OUTPUT):
            aim = auto_budget(count_tokens(text))
            budget = aim if budget is None else min(budget, aim)
        text, kind = compress_text(
            text,
            kind=kind,
            budget_tokens=budget,
            exit_code=exit_code,
            pointer=ref,
            count_tokens=count_tokens,
        )
    capped = cap_output(text, max_chars=policy.max_chars, pointer=ref)
    pointer = ArtifactPointer(ref=ref, trust=trust, size_chars=len(output), kind=kind)  # type: ignore[arg-type]  # a compressor's kind is one of the pointer's kinds
    return PreparedOutput(text=capped.text, pointer=pointer, kind=kind, changed=capped.text != output)


def _reduce_by_value(
    view: str, *, ref: str, exit_code: int | None, policy: ToolOutputPolicy, count_tokens: Callable[[str], int]
) -> tuple[str, str]:
    """``view`` reduced without losing content, cut by its kind's compressor only when over ``budget_tokens``."""
    kind = detect_kind(view) if policy.kind == "auto" else KIND_ALIASES.get(policy.kind, policy.kind)
    if kind in NOISY_KINDS:
        # The noise filter alone (no budget): passing tests, progress, chatter; every failure line stays.
        reduced, kind = compress_text(view, kind=kind, exit_code=exit_code, pointer=ref, count_tokens=count_tokens)
    else:
        reduced = lossless(view, pointer=ref)
    budget = policy.budget_tokens
    if budget is None or count_tokens(reduced) <= budget:
        return reduced, kind
    # Over the allowance: the compressor reads the view itself, so its markers' line numbers are the artifact's.
    return compress_text(view, kind=kind, budget_tokens=budget, exit_code=exit_code, pointer=ref, count_tokens=count_tokens)


def read_slice(content: str, arguments: Mapping[str, object]) -> str:
    """The part of an artifact that a ``context_read_artifact`` call asks for, with line numbers."""
    start = arguments.get("start_line", 1)
    limit = arguments.get("max_lines", 200)
    grep = arguments.get("grep")
    if not isinstance(start, int) or isinstance(start, bool) or start < 1:
        raise UsageError("start_line must be an integer of at least 1")
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 400:
        raise UsageError("max_lines must be an integer from 1 to 400")
    if grep is not None and not isinstance(grep, str):
        raise UsageError("grep must be a string")
    lines = content.splitlines()
    numbered = [(n, line) for n, line in enumerate(lines, start=1) if n >= start and (not grep or grep in line)]
    shown = numbered[:limit]
    body = "\n".join(f"{n:>6}  {line}" for n, line in shown)
    if len(body) > READ_MAX_CHARS:
        body = body[:READ_MAX_CHARS] + "\n[… cut at 20,000 characters; ask for fewer lines]"
    more = len(numbered) - len(shown)
    footer = f"\n[{len(lines):,} lines in all" + (f"; {more:,} more matching lines after these" if more else "") + "]"
    return (body or "[no matching lines]") + footer
