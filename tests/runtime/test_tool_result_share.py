"""The tool-result share (B2) at entry: a new result is bounded to the room the share has left,
beyond what the end of the share keeps for results at the floor."""

from __future__ import annotations

import random

import pytest

from contextwright.budget.allocator import allocate
from contextwright.events import AssistantMessage, ToolCall
from contextwright.runtime.limits import ENVELOPE_TOKENS, FLOOR_RESULTS_RESERVED, RESULT_FLOOR_TOKENS
from contextwright.testing.fakes import open_session

WINDOW = 32_000


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
        for e in session.events
        if e.type == "tool.result" and e.payload.call_id not in _pruned(session)
    )


def _pruned(session) -> set[str]:
    return {c for e in session.events if e.type == "context.pruned" for c in e.payload.call_ids}


def _reserve(share: int) -> int:
    """What the end of the share keeps for results at the floor."""
    return min(FLOOR_RESULTS_RESERVED * (RESULT_FLOOR_TOKENS + ENVELOPE_TOKENS), share // 2)


@pytest.mark.parametrize("seed", range(6))
def test_each_new_result_takes_at_most_half_the_room_left(seed):
    rng = random.Random(seed)
    _, session, _ = open_session(f"share-{seed}", window=WINDOW)
    session.user("Read the billing parts and find where totals are rounded.")
    session.next_request()
    share = allocate(session._core.planner().current).tool_results
    for i in range(rng.randrange(4, 9)):
        call = ToolCall(id=f"c{i}", name="read_file", arguments={"path": f"billing/part_{i}.py"})
        session.record_assistant(AssistantMessage(text="", tool_calls=(call,)))
        room = share - _visible(session) - ENVELOPE_TOKENS
        event = session.tool_result(call.id, _source(rng, rng.randrange(5_000, 60_000)))
        limit = max(RESULT_FLOOR_TOKENS, (min(share, room) - _reserve(share)) // 2)
        # The policy's hard bound is in characters: three per token of the limit.
        assert len(event.payload.output) <= limit * 3, (i, room, limit)
        built = session.next_request()
        if (room - _reserve(share)) // 2 >= RESULT_FLOOR_TOKENS:
            # The floor was not needed: the share holds without any pruning.
            assert built.result.tokens_by_class.get("tool_results", 0) <= share, (i, room)


def test_the_share_holds_at_every_build_without_pressure():
    # Past the share, each new result still shows its floor; the build prunes older
    # results (oldest first, in one batch) although the window is far from soft pressure.
    rng = random.Random(7)
    _, session, _ = open_session("share-every-build", window=WINDOW)
    session.user("Read every billing part and find where totals are rounded.")
    session.next_request()
    share = allocate(session._core.planner().current).tool_results
    passes = 0
    for i in range(30):
        call = ToolCall(id=f"c{i}", name="read_file", arguments={"path": f"billing/part_{i}.py"})
        session.record_assistant(AssistantMessage(text="", tool_calls=(call,)))
        session.tool_result(call.id, _source(rng, 20_000))
        before = len(_pruned(session))
        built = session.next_request()
        assert built.result.pressure == "none", i
        assert built.result.tokens_by_class.get("tool_results", 0) <= share, i
        if len(_pruned(session)) > before:
            passes += 1
            pruned = [e.payload.call_ids for e in session.events if e.type == "context.pruned"][-1]
            # Oldest first: every result left whole is newer than every pruned one.
            whole = [f"c{k}" for k in range(i + 1) if f"c{k}" not in _pruned(session)]
            assert max(int(c[1:]) for c in pruned) < min(int(c[1:]) for c in whole)
    # Batched down to the low-water mark: one pass per several rounds, not one per round.
    assert 1 <= passes <= 30 // 5


def test_the_end_of_the_share_keeps_passes_many_results_apart():
    # Large results fill the share within a few rounds if each may take half of what is left;
    # with its end kept for results at the floor, many more fit before a pass (a cache break).
    _, session, _ = open_session("share-reserve", window=WINDOW)
    rng = random.Random(3)
    session.user("Read every billing part and find where totals are rounded.")
    session.next_request()
    share = allocate(session._core.planner().current).tool_results
    assert _reserve(share) == share // 2  # a small window: the cap on the reserve binds
    pass_rounds = []
    for i in range(40):
        call = ToolCall(id=f"c{i}", name="read_file", arguments={"path": f"billing/part_{i}.py"})
        session.record_assistant(AssistantMessage(text="", tool_calls=(call,)))
        session.tool_result(call.id, _source(rng, 20_000))
        before = len(_pruned(session))
        built = session.next_request()
        assert built.result.tokens_by_class.get("tool_results", 0) <= share, i
        if len(_pruned(session)) > before:
            pass_rounds.append(i)
    # Without the reserve a pass came every fifth round here (8 passes in 40 rounds).
    assert 1 <= len(pass_rounds) <= 4, pass_rounds
    assert all(b - a >= 10 for a, b in zip(pass_rounds, pass_rounds[1:], strict=False)), pass_rounds
