"""The tool-result share (B2) at entry: a new result may take what the share leaves beyond the
results of its own exchange; older results become pointers to make room, oldest first, once the
visible results pass their high-water mark (the share, or an opted-in floor where the share is smaller)."""

from __future__ import annotations

import random

import pytest

from contextwright.budget.allocator import allocate
from contextwright.events import AssistantMessage, ToolCall
from contextwright.plan.budgets import BudgetConfig
from contextwright.runtime.limits import ENVELOPE_TOKENS, RESULT_FLOOR_TOKENS
from contextwright.testing.fakes import open_session

WINDOW = 32_000
FRAMED = 2 * ENVELOPE_TOKENS  # a result's envelope and block


def _source(rng: random.Random, chars: int) -> str:
    """A source file as a file-reading tool returns it (not a command output: no automatic aim)."""
    words = [f"{a}{b}" for a in ("tot", "led", "inv", "tax", "sum", "cur") for b in ("al", "ger", "oice", "es", "mary", "rency")]
    lines = ["# billing/ledger.py"]
    while sum(len(line) + 1 for line in lines) < chars:
        name, *args = rng.sample(words, 4)
        lines.append(f"def {name}({', '.join(args)}): return {' + '.join(rng.sample(words, 3))}")
    return "\n".join(lines)


def _visible(session) -> int:
    """The tool results a request would carry, measured as the bound measures them."""
    core = session._core
    plan = core.planner().current
    estimate = core.body_estimate(plan)
    return sum(
        estimate(e.payload.output) + ENVELOPE_TOKENS
        for e in session.history.events
        if e.type == "tool.result" and e.payload.call_id not in _pruned(session)
    )


def _pruned(session) -> set[str]:
    return {c for e in session.history.events if e.type == "context.pruned" for c in e.payload.call_ids}


def _allowance(share: int, held: int, waiting: int) -> int:
    """What a new result may show: the share beyond its exchange's earlier results, split among the calls waiting."""
    return max(RESULT_FLOOR_TOKENS, (share - held) // waiting - FRAMED)


@pytest.mark.parametrize("seed", range(6))
def test_each_new_result_may_take_the_share_its_exchange_leaves(seed):
    rng = random.Random(seed)
    _, session, _ = open_session(f"share-{seed}", window=WINDOW)
    session.user("Read the billing parts and find where totals are rounded.")
    session.next_request()
    allocation = allocate(session._core.planner().current)
    share = allocation.tool_results
    estimate = session._core.body_estimate(session._core.planner().current)
    for i in range(rng.randrange(4, 9)):
        calls = tuple(
            ToolCall(id=f"c{i}-{k}", name="read_file", arguments={"path": f"billing/part_{i}_{k}.py"})
            for k in range(rng.randrange(1, 4))
        )
        session.adapter.record_assistant(AssistantMessage(text="", tool_calls=calls))
        held = 0
        for n, call in enumerate(calls):
            event = session.tool_result(call.id, _source(rng, rng.randrange(5_000, 60_000)))
            limit = _allowance(share, held, len(calls) - n)
            # The policy's hard bound is in characters: three per token of the limit.
            assert len(event.payload.output) <= limit * 3, (i, n, limit)
            held += estimate(event.payload.output) + FRAMED
        built = session.next_request()
        # Older results made room: the high-water mark holds, and this exchange's results are all shown.
        assert built.result.tokens_by_class.get("tool_results", 0) <= allocation.tool_results_high, i
        assert not {c.id for c in calls} & _pruned(session), i


def test_what_older_results_hold_never_cuts_the_newest():
    rng = random.Random(11)
    _, session, _ = open_session("share-newest", window=WINDOW)
    session.user("Read every billing part and find where totals are rounded.")
    session.next_request()
    share = allocate(session._core.planner().current).tool_results
    shown = []
    for i in range(12):
        call = ToolCall(id=f"c{i}", name="read_file", arguments={"path": f"billing/part_{i}.py"})
        session.adapter.record_assistant(AssistantMessage(text="", tool_calls=(call,)))
        source = _source(rng, 2_000 * (share // 1_000))
        shown.append(session.tool_result(call.id, source).payload.output == source)
        session.next_request()
    # Each part fits the share alone: every one arrived whole, however full the share stood.
    assert all(shown)
    assert _pruned(session)


@pytest.mark.parametrize("window", [WINDOW, 200_000])
def test_the_high_water_mark_holds_at_every_build_without_pressure(window):
    # Past the high-water mark, the build prunes older results (oldest first, in one batch)
    # although the window is far from soft pressure.
    rng = random.Random(7)
    _, session, _ = open_session("share-every-build", window=window)
    session.user("Read every billing part and find where totals are rounded.")
    session.next_request()
    allocation = allocate(session._core.planner().current)
    high = allocation.tool_results_high
    size = high // 5  # tokens; five results reach the mark
    passes = 0
    over_share = False
    for i in range(30):
        call = ToolCall(id=f"c{i}", name="read_file", arguments={"path": f"billing/part_{i}.py"})
        session.adapter.record_assistant(AssistantMessage(text="", tool_calls=(call,)))
        session.tool_result(call.id, _source(rng, size * 3))
        before = len(_pruned(session))
        built = session.next_request()
        assert built.result.pressure == "none", i
        shown = built.result.tokens_by_class.get("tool_results", 0)
        assert shown <= high, i
        over_share = over_share or shown > allocation.tool_results
        if len(_pruned(session)) > before:
            passes += 1
            pruned = [e.payload.call_ids for e in session.history.events if e.type == "context.pruned"][-1]
            # Oldest first: every result left whole is newer than every pruned one.
            whole = [f"c{k}" for k in range(i + 1) if f"c{k}" not in _pruned(session)]
            assert max(int(c[1:]) for c in pruned) < min(int(c[1:]) for c in whole)
    # Batched down to the low-water mark: one pass per several rounds, not one per round.
    assert 1 <= passes <= 30 // 3
    # The mark is the share (B2) or, where the share allows less, the absolute floor: at 32k the results
    # grew past the share up to the floor; at 200k the share is the larger and they never did.
    floor = min(allocation.history, BudgetConfig().tool_results_floor_tokens)
    assert high == max(allocation.tool_results, floor)
    assert over_share == (floor > allocation.tool_results)
