"""Relief under a high-water mark: results grow to the mark, a pass sheds to a low-water mark, and
between passes every request extends the one before it; compaction folds the older part only."""

from __future__ import annotations

from contextwright.budget.allocator import allocate
from contextwright.events import AssistantMessage, ToolCall
from contextwright.plan.budgets import BudgetConfig
from contextwright.replay import visible_in
from contextwright.testing.fakes import open_session

WINDOW = 32_000


def _source(turn: int) -> str:
    return "".join(f"def rate_{turn}_{i}(amount):\n    return round(amount * {i} / 7, 2)\n\n" for i in range(45))


def _pruned(session) -> list[tuple[str, ...]]:
    return [e.payload.call_ids for e in session.history.events if e.type == "context.pruned"]


def test_passes_are_batched_and_leave_the_cached_history_alone_between_them():
    _, session, clock = open_session("high-water", window=WINDOW)
    # The opt-in floor (a departure from B2) lets the results grow past the share before a pass.
    session.setup.budgets = BudgetConfig(tool_results_floor_tokens=16_000)
    session.user("Read the rating modules and find where amounts are rounded.")
    built = [session.next_request()]
    allocation = allocate(built[0].plan)
    for turn in range(60):
        call = ToolCall(id=f"c{turn}", name="read_file", arguments={"path": f"rating/m{turn}.py"})
        session.adapter.record_assistant(AssistantMessage(text=f"Reading module {turn}.", tool_calls=(call,)))
        session.tool_result(call.id, _source(turn))
        clock.advance(20)
        built.append(session.next_request())
    passes = _pruned(session)
    assert passes, "the results never reached their high-water mark"
    shown = [b.result.tokens_by_class.get("tool_results", 0) for b in built]
    # Check the results grew past the share before any pass: at 32k the opted-in floor is the mark.
    first = next(i for i, b in enumerate(built) if b.result.yields)
    assert max(shown[:first]) > allocation.tool_results
    assert all(s <= allocation.tool_results_high for s in shown)
    # Check each pass is deep and rare: many results at once, many rounds apart.
    assert len(passes) <= len(built) // 6
    assert min(len(p) for p in passes) >= 4
    # Check every request without a pass repeats the whole cached history of the one before it.
    for previous, current in zip(built, built[1:], strict=False):
        if current.result.yields:
            continue
        stable = previous.neutral.messages[: previous.neutral.stable_messages]
        assert current.neutral.messages[: len(stable)] == stable, current.index
    # Check the newest outputs go last: every pass takes only results older than every one still whole.
    gone: set[str] = set()
    for call_ids in passes:
        gone.update(call_ids)
        whole = [turn for turn in range(60) if f"c{turn}" not in gone]
        assert max(int(c[1:]) for c in call_ids) < min(whole)
    assert "c59" not in gone


def test_a_compaction_folds_the_older_turns_and_keeps_the_newest_verbatim():
    # A conversation without tool output: nothing to prune, so pressure is relieved by compaction.
    _, session, clock = open_session("chat", window=WINDOW)
    task = "Design the invoice rounding rules; amounts must never be rounded before tax."
    session.user(task)
    said = []
    compacted_at = None
    for turn in range(80):
        built = session.next_request()
        if "compaction" in built.result.yields:
            compacted_at = turn
            break
        reply = f"Rule {turn}: " + " ".join(f"invoice_line_{turn}_{k} rounds at step {k}." for k in range(60))
        session.adapter.record_assistant(AssistantMessage(text=reply))
        said.append(reply)
        session.user(f"Next rule after {turn}, please.")
        clock.advance(20)
    assert compacted_at is not None, "the window never filled"
    # Check the task statement survives verbatim, and the newest turns are shown whole.
    assert visible_in(built.neutral, task)
    assert visible_in(built.neutral, said[-1]) and visible_in(built.neutral, said[-2])
    # Check the oldest turns were folded into the summary, not kept.
    assert not visible_in(built.neutral, said[0])
    [compacted] = [e.payload for e in session.history.events if e.type == "context.compacted"]
    assert compacted.upto_seq < max(e.seq for e in session.history.events if e.type == "message.assistant")
    # Check the request stands at the relief target, not at the bare summary.
    target = built.plan.budgets.relief_target * WINDOW
    assert target / 3 < built.result.total_tokens <= target
    assert session.inspect(built.index).sha256() == built.neutral.sha256()


def test_a_compaction_inside_a_long_run_folds_the_runs_older_rounds():
    # One instruction, then many rounds whose weight is in the assistant's own tool calls (files it
    # writes), not in tool output: pruning frees little, so compaction relieves the pressure. The
    # older part reaches into the current run; folding only what came before the run would shed one
    # short exchange and leave the request near the limit.
    _, session, clock = open_session("long-run", window=WINDOW)
    session.user("Outline how the rating modules should round amounts.")
    # The earlier run's answer is about as large as one round: folding only it would just make room.
    session.adapter.record_assistant(AssistantMessage(text=" ".join(f"Module {i} rounds at step {i}." for i in range(300))))
    seed = "Now write one rating module per step; amounts are rounded only after tax."
    session.user(seed)
    written: list[str] = []
    for turn in range(80):
        built = session.next_request()
        if "compaction" in built.result.yields:
            break
        call = ToolCall(id=f"w{turn}", name="write_file", arguments={"path": f"rating/m{turn}.py", "content": _source(turn)})
        session.adapter.record_assistant(AssistantMessage(text=f"Writing module {turn}.", tool_calls=(call,)))
        session.tool_result(call.id, f"wrote rating/m{turn}.py")
        written.append(f"Writing module {turn}.")
        clock.advance(20)
    else:
        raise AssertionError("the window never filled")
    # Check the run's first message stays verbatim and its newest round is shown whole.
    assert visible_in(built.neutral, seed)
    assert visible_in(built.neutral, written[-1])
    # Check the run's own older rounds were folded, so the request fell to the relief target.
    assert not visible_in(built.neutral, written[len(written) // 2])
    assert built.result.total_tokens <= built.plan.budgets.relief_target * WINDOW
    assert session.inspect(built.index).sha256() == built.neutral.sha256()
