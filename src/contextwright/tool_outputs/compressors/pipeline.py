"""The compression pipeline and the registry of kinds.

normalise → detect → protect (per-kind rules, failure needles, the exit-code rule)
→ filter noise → fold repeats → group → truncate to the budget → guard. Protection
runs before anything is dropped. The guards: outputs that are short or already
within budget come back unchanged, and so does any output the pipeline cannot make
shorter; the same input always gives the same bytes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Literal

from contextwright.errors import UsageError
from contextwright.tool_outputs.compressors import (
    companions,
    compilers,
    generic,
    lint,
    listings,
    lookups,
    outcomes,
    severity,
    testruns,
    tracebacks,
    traces,
    trees,
    validators,
    vcs,
)
from contextwright.tool_outputs.compressors.detect import detect_lines
from contextwright.tool_outputs.compressors.jsondoc import (
    compress_json,
    parse_json,
    protected_keys,
    reports_error,
)
from contextwright.tool_outputs.compressors.marks import MUST, Marks, Policy
from contextwright.tool_outputs.compressors.normalize import lossless, normalize_lines, probe_lines
from contextwright.tool_outputs.compressors.render import render

Analyser = Callable[[Sequence[str], Marks], None]

SHORT_CHARS = 500
"""Outputs shorter than this many characters are returned unchanged."""
SHORT_LINES = 5
"""Outputs with at most this many lines are returned unchanged."""
MIN_SAVED_SHARE = 0.1
"""Under a budget, a compressed output must be at least this share shorter, in characters, or the input comes back."""
AUTO_SHARE = 0.2
"""With ``budget_tokens="auto"``, aim for this share of the output's tokens..."""
AUTO_MAX_TOKENS = 500
"""...but never for more than this many tokens..."""
AUTO_MIN_TOKENS = 60
"""...nor for fewer than this many (a marker and a failure line need room)."""
_OWN_LOCATION_KINDS = frozenset({"generic", "stack-trace", "build", "typecheck", "rustc", "package-install"})
"""Kinds whose lines that point into the project's code are all kept. Test runners and
linters keep each failure's or finding's location by their own rules (and rank the frames
and excerpts around it); the data kinds' locations are their content."""
_DATA_KINDS = frozenset({"dir-listing", "git-blame", "git-diff", "git-log", "git-status", "grep", "process-list"})
"""Kinds whose lines are data: a commit message or a matched line that says "error" reports nothing."""
_TEST_KINDS = frozenset({"cargo-test", "go-test", "jest", "pytest", "scala-test"})
"""Test runners: detected only by their own signatures, and their rules rank each failure's
lines themselves (a test's log lines and passing events are not findings of the run)."""
NOISY_KINDS: frozenset[str] = frozenset(
    {"build", "cargo-test", "go-test", "jest", "package-install", "pytest", "rustc", "scala-test"}
)
"""Kinds whose outputs print noise (passing tests, download progress, build chatter). When the
content is kept (``keep_content``), only these lose lines; every other kind's lines are its content."""
_FAILED_TAIL_LINES = 10
_FAILED_TAIL_LINES_KNOWN = 3


REGISTRY: dict[str, tuple[Analyser, Policy]] = {
    "build": (compilers.analyse_build, Policy(head_share=0.3, shape_labels=True)),
    "cargo-test": (testruns.analyse_cargo_test, Policy(head_share=0.25)),
    "dir-listing": (
        listings.analyse_dir_listing,
        Policy(head_share=0.6, key_share=0.3, label_cap=50, run_min=None, far_dedup=False),
    ),
    "generic": (generic.analyse_generic, Policy(head_share=0.4, shape_labels=True)),
    "git-blame": (
        vcs.analyse_git_blame,
        Policy(head_share=0.6, key_share=0.3, run_min=None, far_dedup=False),
    ),
    "git-diff": (
        vcs.analyse_git_diff,
        Policy(head_share=0.7, key_share=0.3, run_min=None, far_dedup=False),
    ),
    "git-log": (
        vcs.analyse_git_log,
        Policy(head_share=0.7, run_min=6, run_labels=frozenset({"diffstat line"}), far_dedup=False),
    ),
    "git-status": (
        vcs.analyse_git_status,
        Policy(head_share=0.5, label_cap=25, run_min=None, far_dedup=False),
    ),
    "go-test": (testruns.analyse_go_test, Policy(head_share=0.25)),
    "grep": (
        listings.analyse_grep,
        Policy(head_share=0.6, key_share=0.5, label_cap=15, run_min=None, far_dedup=False),
    ),
    "jest": (testruns.analyse_jest, Policy(head_share=0.3)),
    "json": (generic.analyse_generic, Policy(far_dedup=False)),
    "lint": (lint.analyse_lint, Policy(head_share=0.4, label_cap=5)),
    "package-install": (
        listings.analyse_package_install,
        Policy(head_share=0.3, run_labels=frozenset({"continuation line"})),
    ),
    "process-list": (listings.analyse_process_list, Policy(head_share=0.5, key_share=0.3, far_dedup=False)),
    "pytest": (testruns.analyse_pytest, Policy(head_share=0.25)),
    "rustc": (compilers.analyse_rustc, Policy(head_share=0.3)),
    "scala-test": (testruns.analyse_scala_test, Policy(head_share=0.3)),
    "stack-trace": (traces.analyse_stack_trace, Policy(head_share=0.3)),
    "typecheck": (compilers.analyse_typecheck, Policy(head_share=0.3, shape_labels=True)),
}

KINDS: tuple[str, ...] = tuple(sorted(REGISTRY))
"""Every kind ``compress`` understands; pass one as ``kind=`` or let ``"auto"`` detect it."""

KIND_ALIASES: dict[str, str] = {
    "vitest": "jest",
    "mypy": "typecheck",
    "tsc": "typecheck",
    "eslint": "lint",
    "ruff": "lint",
    "flake8": "lint",
    "rubocop": "lint",
    "golangci-lint": "lint",
    "ripgrep": "grep",
    "rg": "grep",
    "ls": "dir-listing",
    "du": "dir-listing",
    "find": "dir-listing",
    "pip": "package-install",
    "npm": "package-install",
    "apt": "package-install",
    "package-manager": "package-install",
    "msbuild": "build",
    "dotnet": "build",
    "gradle": "build",
    "maven": "build",
    "make": "build",
    "cargo-build": "rustc",
    "rustc-build": "rustc",
    "traceback": "stack-trace",
    "json-api": "json",
    "search": "grep",
    "ps": "process-list",
}
"""Tool and folder names accepted as ``kind=`` and the kind each one means."""


def auto_budget(tokens: int) -> int:
    """The default budget for an output of ``tokens`` tokens: a fifth of it, from 60 to 500 tokens."""
    return max(AUTO_MIN_TOKENS, min(AUTO_MAX_TOKENS, math.ceil(tokens * AUTO_SHARE)))


def default_token_count(text: str) -> int:
    """A conservative stand-in for a tokenizer: one token per four characters, rounded up."""
    return math.ceil(len(text) / 4)


@dataclass(frozen=True, kw_only=True, slots=True)
class Compressed:
    """The result of compressing one tool output."""

    text: str
    """What the model sees: the compressed output, or the input itself when unchanged."""
    kind: str
    """The kind given or detected."""
    original_chars: int
    """Characters in the input."""
    compressed_chars: int
    """Characters in ``text``."""
    original_tokens: int
    """Tokens in the input, by the counter in use."""
    compressed_tokens: int
    """Tokens in ``text``, by the counter in use."""
    kept_must_lines: int
    """Protected lines (failures, errors, summaries, locations), all of which are in ``text``."""
    omitted: tuple[tuple[int, int], ...]
    """Line ranges of the input left out, 1-based and inclusive."""
    failed: bool
    """The command failed: non-zero exit code, or the output reports a failure."""
    budget_tokens: int | None
    """The budget aimed for (``"auto"`` resolved to its number of tokens)."""

    @property
    def changed(self) -> bool:
        """True when ``text`` differs from the input."""
        return bool(self.omitted) or self.compressed_chars != self.original_chars

    @property
    def over_budget(self) -> bool:
        """True when protected lines alone did not fit the budget (they are kept anyway)."""
        return self.budget_tokens is not None and self.compressed_tokens > self.budget_tokens


def _resolve_kind(kind: str) -> str:
    if kind in REGISTRY or kind == "auto":
        return kind
    if kind in KIND_ALIASES:
        return KIND_ALIASES[kind]
    raise UsageError(f"unknown kind {kind!r}; use 'auto' or one of {', '.join(KINDS)}", kind=kind)


def analyse(lines: Sequence[str], kind: str, *, exit_code: int | None) -> tuple[Marks, Policy, bool]:
    """Mark every line of ``lines`` for ``kind``; returns the marks, the policy and ``failed``."""
    analyser, policy = REGISTRY[kind]
    marks = Marks(len(lines))
    probes = probe_lines(lines)
    analyser(probes, marks)
    if kind not in _DATA_KINDS:
        generic.label_diff_bodies(probes, marks)
    view = generic.view_of(probes)
    needle_failure = generic.apply_needles(view, marks)
    if kind in _OWN_LOCATION_KINDS:
        generic.protect_own_locations(view, marks)
    if kind not in _DATA_KINDS and kind not in _TEST_KINDS:
        generic.protect_findings(view, marks)
    if kind not in _DATA_KINDS:
        outcomes.protect_outcomes(view.lines, marks)
        companions.protect_companions(view.lines, marks)
        lookups.rank_failed_lookups(view.lines, marks)
        tracebacks.rank_library_frames(view.lines, marks)
        trees.protect_tree_problems(view.lines, marks)
        validators.protect_error_objects(view.lines, marks)
        generic.fold_repeated_places(view, marks)
        generic.rank_foreign_frames_after_own(view, marks)
        generic.protect_listed_records(view, marks)
        generic.fold_repeated_details(view, marks)
        # Last: it overrules the protection above for findings below the run's highest severity.
        severity.fold_lower_severities(view.lines, marks)
    failed = marks.failed or (exit_code not in (None, 0)) or (kind == "generic" and needle_failure)
    if exit_code not in (None, 0):
        # A failed command's last lines are evidence whatever the rules recognised; with
        # no recognised failure line at all they are the only evidence, so keep more.
        recognised = any(p >= MUST for p in marks.priority)
        keep = _FAILED_TAIL_LINES_KNOWN if recognised else _FAILED_TAIL_LINES
        for index in [i for i, line in enumerate(lines) if line.strip()][-keep:]:
            marks.must(index)
    return marks, policy, failed


@dataclass(frozen=True, slots=True)
class _Input:
    """One tool output split into lines and sized, as :func:`compress` and :func:`compress_text` share it."""

    text: str
    lines: list[str]
    body: list[str]
    trailing_newline: bool
    kind: str
    """The kind asked for, resolved from an alias; still ``"auto"`` when detection is to choose."""
    original_tokens: int
    budget: int | None
    count: Callable[[str], int]

    @property
    def left_whole(self) -> bool:
        return _left_whole(self.text, self.body, self.budget, self.original_tokens)


def _prepare(
    text: str,
    kind: str,
    budget_tokens: int | Literal["auto"] | None,
    pointer: str | None,
    count_tokens: Callable[[str], int] | None,
) -> _Input:
    _check_arguments(text, budget_tokens, pointer)
    count = count_tokens or default_token_count
    resolved = _resolve_kind(kind)
    lines = normalize_lines(text)
    trailing_newline = len(lines) > 1 and lines[-1] == ""
    original_tokens = count(text)
    return _Input(
        text=text,
        lines=lines,
        body=lines[:-1] if trailing_newline else lines,
        trailing_newline=trailing_newline,
        kind=resolved,
        original_tokens=original_tokens,
        budget=auto_budget(original_tokens) if isinstance(budget_tokens, str) else budget_tokens,
        count=count,
    )


def compress(
    text: str,
    *,
    kind: str = "auto",
    budget_tokens: int | Literal["auto"] | None = None,
    exit_code: int | None = None,
    pointer: str | None = None,
    count_tokens: Callable[[str], int] | None = None,
    exclude_kinds: Collection[str] = (),
    keep_content: bool = False,
) -> Compressed:
    """Compress one tool output for a model's context, keeping every failure line verbatim.

    ``kind`` is one of ``KINDS`` (or an alias such as ``"vitest"``), or ``"auto"`` to
    detect it. ``budget_tokens`` is the size to aim for; protected lines are kept even
    when they alone exceed it. ``"auto"`` aims for ``auto_budget(tokens of the input)``
    (what the command line and sessions use); ``None`` filters noise only.
    ``exit_code`` marks the run as failed when non-zero.
    ``pointer`` is an opaque reference to the full output that omission markers name.
    ``count_tokens`` defaults to ``ceil(len / 4)``. ``exclude_kinds`` are kinds that
    detection may not choose (to measure how the rest copes with an unseen format).
    ``keep_content`` (with no budget) loses nothing of the content: what carries none goes
    (colour codes, carriage-return redraws, trailing blanks, runs of one repeated line folded
    into a counted marker; :func:`~contextwright.tool_outputs.compressors.normalize.lossless`), and
    so does the noise of :data:`NOISY_KINDS`; a JSON document comes back whole.
    """
    if keep_content and budget_tokens is not None:
        raise UsageError("keep_content keeps the content whatever its size: give it no budget_tokens")
    prepared = _prepare(text, kind, budget_tokens, pointer, count_tokens)
    return _compress_prepared(
        prepared, exit_code=exit_code, pointer=pointer, exclude_kinds=exclude_kinds, keep_content=keep_content
    )


def _compress_prepared(
    prepared: _Input,
    *,
    exit_code: int | None,
    pointer: str | None,
    exclude_kinds: Collection[str] = (),
    keep_content: bool = False,
) -> Compressed:
    text, body, budget, count = prepared.text, prepared.body, prepared.budget, prepared.count
    resolved = prepared.kind
    if resolved == "auto":
        resolved = _detect(prepared, exit_code, exclude_kinds)
    original_tokens = prepared.original_tokens

    def unchanged(must: int, failed: bool) -> Compressed:
        return Compressed(
            text=text,
            kind=resolved,
            original_chars=len(text),
            compressed_chars=len(text),
            original_tokens=original_tokens,
            compressed_tokens=original_tokens,
            kept_must_lines=must,
            omitted=(),
            failed=failed,
            budget_tokens=budget,
        )

    if resolved == "json" and (document := parse_json(text)) is not None:
        failed = exit_code not in (None, 0) or reports_error(document)
        must = protected_keys(document)
        if prepared.left_whole or keep_content:
            return unchanged(must, failed)
        out = compress_json(document, text, budget=budget, count_tokens=count, failed=failed, pointer=pointer)
        return _guarded(text, out, (), unchanged(must, failed), count)

    marks, policy, failed = analyse(body, resolved if resolved != "json" else "generic", exit_code=exit_code)
    must = sum(1 for p in marks.priority if p >= MUST)
    if keep_content and resolved not in NOISY_KINDS:
        return _guarded(text, lossless(text, pointer=pointer), (), unchanged(must, failed), count)
    if prepared.left_whole:
        return unchanged(must, failed)
    newline = "\n" if prepared.trailing_newline else ""
    rendered = render(body, marks, policy, budget=budget, count_tokens=count, pointer=pointer, suffix=newline)
    out = rendered.text + newline
    return _guarded(text, out, rendered.omitted, unchanged(must, failed), count)


def compress_text(
    text: str,
    *,
    kind: str = "auto",
    budget_tokens: int | Literal["auto"] | None = None,
    exit_code: int | None = None,
    pointer: str | None = None,
    count_tokens: Callable[[str], int] | None = None,
) -> tuple[str, str]:
    """``(text, kind)`` of :func:`compress` with the same arguments, for callers that keep only those.

    An output that comes back whole (short, or within the budget) is not analysed: for
    it, the line analysis only counts must lines and tells whether the run failed, and
    most tool outputs a session records are such outputs.
    """
    prepared = _prepare(text, kind, budget_tokens, pointer, count_tokens)
    if prepared.left_whole:
        return text, _detect(prepared, exit_code, ()) if prepared.kind == "auto" else prepared.kind
    compressed = _compress_prepared(prepared, exit_code=exit_code, pointer=pointer)
    return compressed.text, compressed.kind


def _detect(prepared: _Input, exit_code: int | None, exclude_kinds: Collection[str]) -> str:
    return detect_lines(prepared.text, prepared.lines, exclude=frozenset(exclude_kinds), failed=exit_code not in (None, 0))


def _is_short(text: str, body: Sequence[str]) -> bool:
    return len(text) < SHORT_CHARS or len(body) <= SHORT_LINES


def _left_whole(text: str, body: Sequence[str], budget: int | None, original_tokens: int) -> bool:
    # Short, or within the budget: the input comes back as it is, whatever its kind.
    return _is_short(text, body) or (budget is not None and original_tokens <= budget)


def _check_arguments(text: object, budget_tokens: object, pointer: str | None) -> None:
    if not isinstance(text, str):
        raise UsageError(f"text must be a str, not {type(text).__name__}")
    if budget_tokens is not None and budget_tokens != "auto" and (not isinstance(budget_tokens, int) or budget_tokens < 1):
        raise UsageError(
            f"budget_tokens must be 'auto', None or an integer of at least 1, got {budget_tokens!r}",
            budget_tokens=budget_tokens,
        )
    if pointer is not None and (not pointer or any(c.isspace() for c in pointer)):
        raise UsageError(f"pointer must be a non-empty string without whitespace, got {pointer!r}")


def _guarded(
    text: str,
    out: str,
    omitted: tuple[tuple[int, int], ...],
    fallback: Compressed,
    count: Callable[[str], int],
) -> Compressed:
    # Never longer than the input, in characters or in tokens; and under a budget, a cut that
    # saves less than a tenth of the characters is not worth its markers (they cost more tokens
    # per character than most output does, so it may not save tokens at all).
    least = MIN_SAVED_SHARE if fallback.budget_tokens is not None else 0.0
    if len(out) >= len(text) or len(out) > len(text) * (1 - least):
        return fallback
    tokens = count(out)
    if tokens > fallback.original_tokens:
        return fallback
    return Compressed(
        text=out,
        kind=fallback.kind,
        original_chars=len(text),
        compressed_chars=len(out),
        original_tokens=fallback.original_tokens,
        compressed_tokens=tokens,
        kept_must_lines=fallback.kept_must_lines,
        omitted=omitted,
        failed=fallback.failed,
        budget_tokens=fallback.budget_tokens,
    )
