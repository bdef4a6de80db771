"""Choose which lines to show and render the rest as explicit omission markers.

Two stages. The first runs always: drop noise, collapse blank runs, fold repeats,
cap ordinary blocks per label and collapse long runs of alike lines. The second runs
only under a token budget: keep every ``MUST`` line, then ``KEY`` lines by level,
then fill what is left with ordinary lines from the head and the tail (the share is
the kind's). Every hidden run of lines becomes one marker line that names the range
and what was in it; the first marker also names the pointer to the full output.
"""

from __future__ import annotations

import itertools
import operator
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from contextwright.tool_outputs.cap import MARKER_PREFIX, MARKER_SUFFIX
from contextwright.tool_outputs.compressors.marks import KEY_HIGH, MUST, NOISE, NORMAL, Marks, Policy

LINE_MARKER_RE = re.compile(
    r"^\s*\[\.\.\. (?P<open>(?P<count>[\d,]+) lines? omitted \(|previous (?:\d+ )?lines? repeated [\d,]+ more times? \()?"
    r"lines? (?P<first>\d+)(?:-(?P<last>\d+))?(?(open)\)| omitted).*\.\.\.\]$"
)
"""Matches a line-omission marker; ``first``/``last`` are the omitted line numbers.

Three forms: ``[... 12 lines omitted (lines 3-14) ...]``, the short form
``[... lines 3-4 omitted ...]`` for runs of fewer than eight lines, and
``[... previous line repeated 5 more times (lines 7-11) ...]``."""

_REPEAT = "\x00repeat"
_BLANK = "\x00blank"
_MAX_PERIOD = 4
_FAR_DEDUP_MIN_CHARS = 40
_RUN_KEEP_HEAD = 2
_RUN_KEEP_TAIL = 1
_BUDGET_ROUNDS = 8
_COALESCE_GAP = 2
_DETAIL_MIN_LINES = 8
_FULL_SHARE = 0.9
_SPARSE_MIN_GAPS = 3
_SPARSE_MAX_SHOWN = 3


@dataclass(frozen=True, kw_only=True, slots=True)
class Rendered:
    """The chosen lines, rendered, and the original line ranges left out."""

    text: str
    """Output lines joined with newlines (markers included)."""
    omitted: tuple[tuple[int, int], ...]
    """Omitted line ranges of the original, 1-based and inclusive."""


_STAMP = re.compile(r"^[\d:.,/\-+TZ\[\]()]+$")
_DIGITS = re.compile(r"[0-9a-f]{7,}|\d+")


def _shape(line: str) -> str:
    # Leading timestamps and counters vary on every line; the words after them do not.
    words = line.split()
    while words and _STAMP.match(words[0]):
        words.pop(0)
    return _DIGITS.sub("0", " ".join(words[:2]))[:48]


def _is_blank(line: str) -> bool:
    return not line.strip()


class _Stage:
    """Visibility state shared by the stages of one rendering."""

    def __init__(self, lines: Sequence[str], marks: Marks) -> None:
        self.lines = lines
        self.marks = marks
        self.visible = [True] * len(lines)
        self.reason = [""] * len(lines)
        self.period = [0] * len(lines)

    def hide(self, index: int, reason: str) -> None:
        self.visible[index] = False
        self.reason[index] = reason

    def shown(self) -> list[int]:
        return [i for i, v in enumerate(self.visible) if v]


def _drop_noise_and_blanks(stage: _Stage) -> None:
    previous_blank = False
    for index, line in enumerate(stage.lines):
        if stage.marks.priority[index] == NOISE:
            stage.hide(index, stage.marks.labels[index])
            continue
        blank = _is_blank(line)
        if blank and previous_blank:
            stage.hide(index, _BLANK)
        previous_blank = blank


def _fold_repeats(stage: _Stage) -> None:
    # A block of k lines repeated right after itself: keep the first copy. Single
    # repeated lines fold when that saves more than a marker costs.
    order = stage.shown()
    texts = [stage.lines[i] for i in order]
    priority = stage.marks.priority
    total = len(order)
    position = 0
    # Only a line equal to one at most a period ahead can start a fold; the comparisons run
    # in C, so the loop below visits those lines alone.
    for candidate in _repeat_starts(texts):
        if candidate < position:
            continue
        position = candidate
        for period in range(1, _MAX_PERIOD + 1):
            # Cheap necessary condition first: the line one period ahead is the same.
            if position + 2 * period > total or texts[position + period] != texts[position]:
                continue
            block = texts[position : position + period]
            if all(_is_blank(text) for text in block) or (period > 1 and len(set(block)) == 1):
                continue
            copies = 0
            cursor = position + period
            while cursor + period <= total and texts[cursor : cursor + period] == block:
                copies += 1
                cursor += period
            hidden = order[position + period : cursor]
            worth = sum(len(stage.lines[i]) for i in hidden) > 60 if period == 1 else copies >= 2
            if copies and worth:
                for offset, index in enumerate(hidden):
                    original = order[position + offset % period]
                    priority[original] = max(priority[original], priority[index])
                    stage.hide(index, _REPEAT)
                    stage.period[index] = period
                position = cursor
                break
        else:
            position += 1


def _repeat_starts(texts: list[str]) -> list[int]:
    """Positions whose text recurs within ``_MAX_PERIOD`` positions after it, in order."""
    starts: set[int] = set()
    for period in range(1, _MAX_PERIOD + 1):
        starts.update(itertools.compress(range(len(texts)), map(operator.eq, texts, texts[period:])))
    return sorted(starts)


def _fold_far_duplicates(stage: _Stage) -> None:
    first_seen: dict[str, int] = {}
    priority = stage.marks.priority
    for index in stage.shown():
        text = stage.lines[index]
        if len(text.strip()) < _FAR_DEDUP_MIN_CHARS:
            continue
        earlier = first_seen.get(text)
        if earlier is None:
            first_seen[text] = index
        elif priority[index] <= NORMAL:
            # Ranked lines repeat for a reason (the same assertion in two failures).
            stage.hide(index, "repeated line")


def _cap_labels(stage: _Stage, cap: int) -> None:
    marks = stage.marks
    seen: Counter[str] = Counter()
    hidden_heads: set[int] = set()
    for index in stage.shown():
        owner = marks.owner[index]
        if owner != index:
            if owner in hidden_heads and marks.priority[index] <= NORMAL:
                stage.hide(index, "")
            continue
        label = marks.labels[index]
        if not label or marks.priority[index] != NORMAL:
            continue
        seen[label] += 1
        if seen[label] > cap:
            hidden_heads.add(index)
            stage.hide(index, label)


def _collapse_runs(stage: _Stage, run_min: int, shape_labels: bool, run_labels: frozenset[str] | None) -> None:
    marks = stage.marks

    def group_of(index: int) -> str:
        if marks.priority[index] != NORMAL or _is_blank(stage.lines[index]):
            return ""
        label = marks.labels[index]
        if run_labels is not None:
            return label if label in run_labels else ""
        if not label and shape_labels:
            label = _shape(stage.lines[index])
        return label

    order = stage.shown()
    start = 0
    group = group_of(order[0]) if order else ""
    while start < len(order):
        # Each line's group is computed once: the line that ends a run starts the next.
        end = start + 1
        following = ""
        while end < len(order):
            following = group_of(order[end])
            if not group or following != group:
                break
            end += 1
        if group and end - start >= run_min:
            alike = f"lines like '{group}'"  # one string per run, not one per hidden line
            for index in order[start + _RUN_KEEP_HEAD : end - _RUN_KEEP_TAIL]:
                stage.hide(index, marks.labels[index] or alike)
        start, group = end, following


def _coalesce(stage: _Stage) -> None:
    # Two omissions separated by one or two ordinary lines (a test-group heading, a
    # stray log line) become one: otherwise interleaved noise costs a marker per gap.
    priority = stage.marks.priority
    index = 0
    n = len(stage.lines)
    while index < n:
        if stage.visible[index]:
            index += 1
            continue
        end = index
        while end < n and not stage.visible[end]:
            end += 1
        gap_end = end
        while gap_end < n and stage.visible[gap_end] and gap_end - end < _COALESCE_GAP + 1:
            gap_end += 1
        gap = range(end, gap_end)
        after = gap_end
        while after < n and not stage.visible[after] and _is_blank(stage.lines[after]):
            after += 1
        if (
            after < n
            and not stage.visible[after]
            and 0 < len(gap) <= _COALESCE_GAP
            and all(priority[i] == NORMAL for i in gap)
            and any(not _is_blank(stage.lines[i]) for i in range(index, end))
        ):
            for i in gap:
                stage.hide(i, stage.marks.labels[i])
            index = end
            continue
        index = end


def _economize(stage: _Stage) -> None:
    # A hidden run that is cheaper than its own marker is shown instead: scattered
    # single omissions would otherwise make the output longer, not shorter.
    for start, end in _hidden_runs(stage.visible):
        hidden = stage.lines[start : end + 1]
        if any(map(str.strip, hidden)):
            cost = sum(map(len, hidden)) + len(hidden)
            # A run that costs more than any marker for it could stays hidden: no marker to write.
            if cost <= _marker_bound(stage, start, end) + 1 and cost <= len(_marker(stage, start, end, None)) + 1:
                for i in range(start, end + 1):
                    stage.visible[i] = True
                    stage.reason[i] = ""


def _marker_bound(stage: _Stage, start: int, end: int) -> int:
    """A length that no marker of lines ``start..end`` without a pointer exceeds.

    Every count and line number in it has at most the digits of ``end + 1``, and it names
    at most two reasons of the run (a repeat as "repeated line").
    """
    digits = len(f"{end + 1:,}")
    longest = max(len(_REPEATED_LINE), *map(len, stage.reason[start : end + 1]))
    return len(MARKER_PREFIX) + len(MARKER_SUFFIX) + 64 + 6 * digits + 2 * longest


_REPEATED_LINE = "repeated line"


def _marker(stage: _Stage, start: int, end: int, pointer: str | None) -> str:
    first, last = start + 1, end + 1
    span = f"line {first}" if first == last else f"lines {first}-{last}"
    reasons = stage.reason[start : end + 1]
    ref = f"; full output: {pointer}" if pointer else ""
    if reasons.count(_REPEAT) == len(reasons):
        periods = set(stage.period[start : end + 1])
        if len(periods) == 1:
            period = periods.pop()
            times = len(reasons) // period
            what = "previous line" if period == 1 else f"previous {period} lines"
            plural = "time" if times == 1 else "times"
            return f"{MARKER_PREFIX}{what} repeated {times:,} more {plural} ({span}){ref}{MARKER_SUFFIX}"
    if len(reasons) < _DETAIL_MIN_LINES:
        # Only long runs say what they hide and how many lines: on a short run the words
        # cost more than they tell, and the count is plain from the range.
        return f"{MARKER_PREFIX}{span} omitted{ref}{MARKER_SUFFIX}"
    # Counted in the order of first appearance: Counter.most_common keeps it among ties, so this is deterministic.
    counts = Counter(
        _REPEATED_LINE if reason == _REPEAT else reason
        for reason, line in zip(reasons, stage.lines[start : end + 1], strict=True)
        if reason == _REPEAT or (reason and reason != _BLANK and line.strip())
    )
    top = counts.most_common(2)
    detail = ", ".join(f"{n:,}× {label}" for label, n in top)
    what = f": {detail}" if detail else ""
    return f"{MARKER_PREFIX}{len(reasons):,} lines omitted ({span}){what}{ref}{MARKER_SUFFIX}"


def _hidden_runs(show: list[bool]) -> list[tuple[int, int]]:
    """The runs of False in ``show`` (a list of bools), as inclusive index ranges.

    ``list.index`` finds each run's ends in C: the loop turns once per run, not per line.
    """
    runs: list[tuple[int, int]] = []
    n = len(show)
    position = 0
    while position < n:
        try:
            start = show.index(False, position)
        except ValueError:
            break
        try:
            end = show.index(True, start)
        except ValueError:
            end = n
        runs.append((start, end - 1))
        position = end
    return runs


def _sparse_chains(stage: _Stage, runs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    # Kept lines with short gaps between them (a flood of findings, each followed by a
    # quoted source line and a caret) would cost a marker per gap, as much as the findings
    # themselves: such a stretch gets one marker, before it, that names every line it hides.
    # Returns chains as (first run, last run) indexes into ``runs``.
    def short(run: tuple[int, int]) -> bool:
        start, end = run
        return end - start + 1 < _DETAIL_MIN_LINES and any(stage.reason[i] != _REPEAT for i in range(start, end + 1))

    def silent(run: tuple[int, int]) -> bool:
        return all(_is_blank(stage.lines[i]) for i in range(run[0], run[1] + 1))

    chains: list[tuple[int, int]] = []
    first = -1
    gaps = 0
    for position, run in enumerate([*runs, (-1, -1)]):
        joins = (
            position < len(runs)
            and (silent(run) or short(run))
            and (first < 0 or run[0] - runs[position - 1][1] - 1 <= _SPARSE_MAX_SHOWN)
        )
        if joins:
            if first < 0:
                first, gaps = position, 0
            gaps += not silent(run)
            continue
        if first >= 0 and gaps >= _SPARSE_MIN_GAPS:
            chains.append((first, position - 1))
        first, gaps = -1, 0
        if position < len(runs) and short(run):
            first, gaps = position, 1
    return chains


def _sparse_marker(runs: list[tuple[int, int]], pointer: str | None) -> str:
    first, last = runs[0][0] + 1, runs[-1][1] + 1
    hidden = sum(end - start + 1 for start, end in runs)
    kept = last - first + 1 - hidden
    ref = f"; full output: {pointer}" if pointer else ""
    return f"{MARKER_PREFIX}{hidden:,} lines omitted (lines {first}-{last}) between the {kept:,} lines below{ref}{MARKER_SUFFIX}"


def _render(stage: _Stage, show: list[bool], pointer: str | None) -> Rendered:
    out: list[str] = []
    lines, reason, visible, labels = stage.lines, stage.reason, stage.visible, stage.marks.labels
    runs = _hidden_runs(show)
    for start, end in runs:
        for index in range(start, end + 1):
            if not reason[index] and visible[index]:
                reason[index] = labels[index]
    chain_at: dict[int, int] = {}  # first line of a chain's first run -> index of its last run
    quiet: set[int] = set()  # first lines of runs a chain's marker speaks for
    for first, last in _sparse_chains(stage, runs):
        chain_at[runs[first][0]] = last
        quiet.update(start for start, _ in runs[first + 1 : last + 1])
    pointer_left = pointer
    index = 0  # the first line not yet written
    for position, (start, end) in enumerate(runs):
        out.extend(lines[index:start])
        if start in chain_at:
            last = chain_at[start]
            out.append(_sparse_marker(runs[position : last + 1], pointer_left))
            pointer_left = None
        elif start not in quiet and any(not _is_blank(lines[i]) for i in range(start, end + 1)):
            out.append(_marker(stage, start, end, pointer_left))
            pointer_left = None
        index = end + 1
    out.extend(lines[index:])
    return Rendered(text="\n".join(out), omitted=tuple((start + 1, end + 1) for start, end in runs))


def _take(indexes: list[int], show: list[bool], delta: Callable[[int], int], room: int) -> int:
    # Greedy in rank order; skip a line that does not fit, give up after many misses.
    spent = 0
    misses = 0
    for index in indexes:
        if room - spent <= 0 or misses > 64:
            break
        cost = delta(index)
        if cost <= room - spent:
            show[index] = True
            spent += cost
        else:
            misses += 1
    return spent


def _fill(
    stage: _Stage,
    policy: Policy,
    limit: int,
    cost: Callable[[int], int],
    marker_cost: int,
) -> list[bool]:
    marks = stage.marks
    n = len(stage.lines)
    candidates = stage.shown()
    show = [False] * n

    def delta(index: int) -> int:
        # Showing a line inside a hidden run splits it (one more marker); showing
        # the last line of a run removes that run's marker.
        left_hidden = index > 0 and not show[index - 1]
        right_hidden = index < n - 1 and not show[index + 1]
        if left_hidden and right_hidden:
            return cost(index) + marker_cost
        if not left_hidden and not right_hidden:
            return cost(index) - marker_cost
        return cost(index)

    left = limit - marker_cost
    for index in candidates:
        if marks.priority[index] >= MUST:
            left -= delta(index)
            show[index] = True
    keyed = sorted(
        (i for i in candidates if NORMAL < marks.priority[i] < MUST and not _is_blank(stage.lines[i])),
        key=lambda i: (-marks.priority[i], i),
    )
    # High-ranked lines may take all the room left; lower ranks only the kind's share.
    high = [i for i in keyed if marks.priority[i] >= KEY_HIGH]
    low = [i for i in keyed if marks.priority[i] < KEY_HIGH]
    left -= _take(high, show, delta, max(left, 0))
    left -= _take(low, show, delta, int(max(left, 0) * policy.key_share))
    ordinary = [i for i in candidates if marks.priority[i] <= NORMAL]
    head_left = int(max(left, 0) * policy.head_share)
    taken = 0
    for index in ordinary:
        c = delta(index)
        if c > head_left:
            break
        show[index] = True
        head_left -= c
        left -= c
        taken += 1
    for index in reversed(ordinary[taken:]):
        c = delta(index)
        if c > left:
            break
        show[index] = True
        left -= c
    # A blank line between two omissions only pads the markers.
    for index in range(n):
        lonely = (index == 0 or not show[index - 1]) and (index == n - 1 or not show[index + 1])
        if show[index] and lonely and _is_blank(stage.lines[index]):
            show[index] = False
    # Show a short gap instead of a marker when the gap costs no more than the marker;
    # only gaps made entirely of candidates, or a marker would remain anyway.
    gap: list[int] = []
    for index in range(n + 1):
        if index < n and not show[index]:
            gap.append(index)
            continue
        if gap and all(stage.visible[i] for i in gap) and sum(cost(i) for i in gap) <= marker_cost:
            for i in gap:
                show[i] = True
        gap = []
    return show


def render(
    lines: Sequence[str],
    marks: Marks,
    policy: Policy,
    *,
    budget: int | None,
    count_tokens: Callable[[str], int],
    pointer: str | None,
    suffix: str = "",
) -> Rendered:
    """Run both stages over normalised ``lines`` and render the result.

    ``suffix`` is what the caller appends to the rendering (a trailing newline): the budget
    holds for the text as returned, so whole renderings are counted with it.
    """
    stage = _Stage(lines, marks)
    _drop_noise_and_blanks(stage)
    _fold_repeats(stage)
    if policy.far_dedup:
        _fold_far_duplicates(stage)
    if policy.label_cap is not None:
        _cap_labels(stage, policy.label_cap)
    if policy.run_min is not None:
        _collapse_runs(stage, policy.run_min, policy.shape_labels, policy.run_labels)
    _coalesce(stage)
    _economize(stage)
    if budget is None:
        return _render(stage, list(stage.visible), pointer)

    # Costs are memoised in a list (0: not yet counted): a dict would cost a hundred bytes a line.
    costs = [0] * len(lines)

    def cost(index: int) -> int:
        value = costs[index]
        if not value:
            value = costs[index] = count_tokens(lines[index]) + 1
        return value

    sample = f"{MARKER_PREFIX}{len(lines):,} lines omitted (lines {len(lines)}-{len(lines)}): 10× label{MARKER_SUFFIX}"
    marker_cost = count_tokens(sample) + 1
    # Protected lines alone may exceed the budget: they are kept all the same, and no
    # round of filling can do better, so skip the rounds.
    must_only = [stage.visible[i] and marks.priority[i] >= MUST for i in range(len(lines))]
    floor = _render(stage, must_only, pointer)
    if count_tokens(floor.text + suffix) > budget:
        return floor
    # Lines are costed one by one, and a counter that errs high per text (the calibrated
    # estimator) sums them above the whole: a fill that comes out well under the budget
    # is retried with more room, and the fullest rendering that fits is kept.
    limit = budget
    best: Rendered | None = None
    best_used = 0
    for _ in range(_BUDGET_ROUNDS):
        show = _fill(stage, policy, limit, cost, marker_cost)
        rendered = _render(stage, show, pointer)
        used = count_tokens(rendered.text + suffix)
        if used > budget:
            if best is not None:
                break
            limit -= used - budget + max(4, budget // 20)
            continue
        if used <= best_used:
            break
        best, best_used = rendered, used
        if used >= budget * _FULL_SHARE:
            break
        limit = limit * budget // used
    return best if best is not None else floor
