"""R3, R4: relief runs in a fixed order, in batches, and is recorded."""

from __future__ import annotations

from contextwright.budget.allocator import allocate
from contextwright.events import AssistantMessage, ToolCall
from contextwright.plan.budgets import BudgetConfig
from contextwright.runtime.ports import InMemoryMemory
from contextwright.testing.fakes import open_session


def test_pruning_happens_in_batches_not_once_per_round():
    _, session, clock = open_session(window=32_000)
    session.user("Investigate the failing modules one by one.")
    requests = 0
    # Results are bounded at entry to the room their share has left, so the window fills slowly.
    for turn in range(90):
        session.next_request()
        requests += 1
        call = ToolCall(id=f"c{turn}", name="read_file", arguments={"path": f"src/m{turn}.py"})
        session.adapter.record_assistant(AssistantMessage(text=f"Reading module {turn}.", tool_calls=(call,)))
        source = "".join(f"def f_{turn}_{i}(value):\n    return value * {i} + {turn}\n\n" for i in range(20))
        session.tool_result(call.id, source)
        clock.advance(20)
    session.next_request()
    requests += 1
    passes = [e.payload for e in session.history.events if e.type == "context.pruned"]
    truncations = [
        e.payload
        for e in session.history.events
        if e.type == "context.layer.truncated" and e.payload.relief == "tool_results_to_pointers"
    ]
    built = [e.payload for e in session.history.events if e.type == "context.request.built"]
    # Check that relief happened, in few passes, each rewriting several results at once.
    assert passes, "no pruning under pressure"
    # Each pass sheds down to a low-water mark, so the next one is many rounds away.
    assert len(passes) <= requests // 5
    assert sum(len(p.call_ids) for p in passes) / len(passes) >= 4
    # Check that every pass is recorded on its request and as a layer-truncation event.
    assert len(truncations) == len(passes)
    assert sum("tool_results_to_pointers" in b.yields for b in built) == len(passes)
    assert all(b.total_tokens <= 32_000 for b in built)


def test_recall_yields_before_tool_results_and_compaction():
    notes = {f"n{i}": f"Billing rounding note {i}: " + " ".join(f"detail-{i}-{j}" for j in range(120)) for i in range(12)}
    memory = InMemoryMemory(notes)
    engine, _, _ = open_session(window=12_000)
    from contextwright.testing.fakes import sample_agent, sample_model

    # Recall only: the notes are not part of the session-open snapshot.
    session = engine.session("recall", agent=sample_agent(), model=sample_model(12_000), recall=memory)
    # A message that fits the window alone, but not together with the recalled notes.
    words = " ".join(f"context-{i}" for i in range(1_000))
    session.user("Explain the billing rounding notes and detail the rounding. " + words)
    built = session.next_request()
    assert built.result.yields == ("recall",)
    types = [e.type for e in session.history.events]
    assert "context.pruned" not in types and "context.compacted" not in types
    truncated = [e.payload for e in session.history.events if e.type == "context.layer.truncated"]
    assert [t.relief for t in truncated] == ["recall"]
    # The user's message never yields.
    assert any(
        "Explain the billing rounding notes" in p.text for m in built.neutral.messages for p in m.parts if hasattr(p, "text")
    )


def test_a_relief_pass_sheds_to_the_low_water_mark_counting_tool_call_arguments():
    # An agent that writes files: its tool calls carry the content, its tool results are short.
    _, session, clock = open_session("writer", window=32_000)
    session.user("Write the billing modules one by one.")
    built = []
    for turn in range(60):
        built.append(session.next_request())
        content = "".join(f"def total_{turn}_{i}(rows):\n    return sum(r.amount for r in rows) * {i}\n\n" for i in range(12))
        call = ToolCall(id=f"w{turn}", name="edit_file", arguments={"path": f"billing/m{turn}.py", "content": content})
        session.adapter.record_assistant(AssistantMessage(text=f"Writing module {turn}.", tool_calls=(call,)))
        session.tool_result(call.id, f"wrote billing/m{turn}.py (12 functions)")
        clock.advance(20)
    relieved = [i for i, b in enumerate(built) if {"tool_results_to_pointers", "compaction"} & set(b.result.yields)]
    assert relieved, "the window never filled"
    limit = built[0].plan.model.context_window - built[0].plan.model.output_reserve
    for i in relieved:
        # Each pass goes deep (a cache break buys many rounds), not just under the limit.
        assert built[i].plan.prefix_token_total + built[i].result.body_tokens <= 0.6 * limit, i
    assert len(relieved) <= len(built) // 8


def _module(turn: int) -> str:
    return "".join(f"def total_{turn}_{i}(rows):\n    return sum(r.amount for r in rows) * {i}\n\n" for i in range(12))


def test_a_compaction_prunes_the_current_runs_older_results_in_the_same_request():
    # A writing run fills the window; a reading run follows. The compaction folds the writing
    # run and rewrites everything after its summary, so pruning the reading run's older
    # results in that request costs no further cache read and puts the next pass off.
    _, session, clock = open_session("reader", window=32_000)
    # A deep low-water mark: the reading run's results pass it before its passes come due on their own;
    # one round kept whole, so the pass can reach that mark with these small results.
    session.setup.budgets = BudgetConfig(relief_tool_results_target=0.25, tool_results_floor_tokens=0, keep_recent_rounds=1)
    session.user("Write the billing modules one by one.")
    for turn in range(32):
        session.next_request()
        call = ToolCall(id=f"w{turn}", name="edit_file", arguments={"path": f"billing/m{turn}.py", "content": _module(turn)})
        session.adapter.record_assistant(AssistantMessage(text=f"Writing module {turn}.", tool_calls=(call,)))
        session.tool_result(call.id, f"wrote billing/m{turn}.py (12 functions)")
        clock.advance(20)
    session.next_request()
    session.adapter.record_assistant(AssistantMessage(text="All modules written."))
    session.user("Now read each module back and check the totals.")
    for turn in range(30):
        built = session.next_request()
        if "compaction" in built.result.yields:
            break
        call = ToolCall(id=f"r{turn}", name="read_file", arguments={"path": f"billing/m{turn}.py"})
        session.adapter.record_assistant(AssistantMessage(text=f"Reading module {turn}.", tool_calls=(call,)))
        session.tool_result(call.id, _module(turn))
        clock.advance(20)
    else:
        raise AssertionError("the window never filled")
    # Check the compaction's request also pruned the reading run's results, all but the last round,
    # oldest first: what the summary left of the writing run goes before the reading run's results.
    assert built.result.yields == ("compaction", "tool_results_to_pointers")
    [pruned] = [e.payload for e in session.history.events if e.type == "context.pruned"]
    runs = [c[0] for c in pruned.call_ids]
    assert "r" in runs and runs == sorted(runs, key="wr".index)
    assert f"r{turn - 1}" not in pruned.call_ids
    # Check the results left are under the low-water mark, and the pass is recorded and rebuilt.
    allocation = allocate(built.plan)
    low_water = allocation.tool_results * built.plan.budgets.relief_tool_results_target
    assert built.result.tokens_by_class["tool_results"] <= low_water
    truncated = [e.payload.relief for e in session.history.events if e.type == "context.layer.truncated"]
    assert truncated == ["compaction", "tool_results_to_pointers"]
    assert session.inspect(built.index).sha256() == built.neutral.sha256()


def test_older_results_become_pointers_first_whatever_the_stages_goal():
    # The oldest result matches the stage's goal and the newer ones do not: the pass still
    # takes the oldest first, so the newest outputs, the ones the model reads next, go last.
    _, session, clock = open_session("oldest-first", window=32_000)
    session.user("Find where invoice totals are rounded.")
    session.stages.open("search", goal="invoice totals rounding")
    for turn in range(40):
        session.next_request()
        call = ToolCall(id=f"c{turn}", name="read_file", arguments={"path": f"src/m{turn}.py"})
        session.adapter.record_assistant(AssistantMessage(text=f"Reading module {turn}.", tool_calls=(call,)))
        topic = "invoice totals rounding" if turn == 0 else "logging setup"
        source = "".join(f"# {topic}\ndef f_{turn}_{i}(value):\n    return value * {i}\n\n" for i in range(40))
        session.tool_result(call.id, source)
        clock.advance(20)
    passes = [e.payload.call_ids for e in session.history.events if e.type == "context.pruned"]
    assert passes
    pruned: set[str] = set()
    for call_ids in passes:
        pruned |= set(call_ids)
        # What the passes took so far is always the oldest results, c0 first.
        assert pruned == {f"c{k}" for k in range(len(pruned))}, sorted(pruned)


def _read_modules(session, clock, turns: int, lines: int) -> list:
    built = []
    for turn in range(turns):
        built.append(session.next_request())
        call = ToolCall(id=f"c{turn}", name="read_file", arguments={"path": f"src/m{turn}.py"})
        session.adapter.record_assistant(AssistantMessage(text=f"Reading module {turn}.", tool_calls=(call,)))
        source = "".join(f"def f_{turn}_{i}(value):\n    return value * {i} + {turn}\n\n" for i in range(lines))
        session.tool_result(call.id, source)
        clock.advance(20)
    built.append(session.next_request())
    return built


def test_every_pass_keeps_the_three_newest_rounds_whole():
    # An agent often works from an output a few calls after it arrived (it reads a file, greps,
    # then edits with the lines it read): a pass never takes the newest three rounds.
    _, session, clock = open_session("newest-three", window=32_000)
    session.user("Investigate the failing modules one by one.")
    built = _read_modules(session, clock, turns=60, lines=40)
    passes = [i for i, b in enumerate(built) if "tool_results_to_pointers" in b.result.yields]
    assert len(passes) >= 2, "the window never filled twice"
    events = [e.payload.call_ids for e in session.history.events if e.type == "context.pruned"]
    assert len(events) == len(passes)
    pruned: set[str] = set()
    for i, call_ids in zip(passes, events, strict=True):
        # Request i follows calls c0..c{i-1}: the three newest are c{i-3}, c{i-2} and c{i-1}.
        pruned |= set(call_ids)
        assert not {f"c{i - 3}", f"c{i - 2}", f"c{i - 1}"} & pruned, (i, sorted(pruned))
        shown = built[i].neutral.messages
        for k in (i - 3, i - 2, i - 1):
            assert any(f"def f_{k}_39(value)" in getattr(p, "text", "") for m in shown for p in m.parts), (i, k)


def test_the_kept_rounds_yield_to_the_results_high_water_mark_newest_last():
    # Three large outputs in a row: together they stand above the results' high-water mark (B2),
    # so the older two of the kept rounds yield, oldest first, only as far as the mark asks.
    _, session, clock = open_session("kept-yield", window=32_000)
    session.setup.budgets = BudgetConfig(tool_results_floor_tokens=16_000)  # a mark under three large outputs
    session.user("Read the three billing modules.")
    built = _read_modules(session, clock, turns=3, lines=400)[-1]
    allocation = allocate(built.plan)
    assert "tool_results_to_pointers" in built.result.yields
    [pruned] = [e.payload.call_ids for e in session.history.events if e.type == "context.pruned"]
    assert pruned == ("c0",)
    assert built.result.tokens_by_class["tool_results"] <= allocation.tool_results_high


def test_relief_follows_the_budgets_of_the_plan_in_force_not_later_defaults():
    # A session planned with one round kept (as plans recorded before the default became three):
    # its passes keep relieving that way when the setup's budgets change afterwards.
    _, session, clock = open_session("planned-one", window=32_000)
    session.setup.budgets = BudgetConfig(keep_recent_rounds=1)
    session.user("Investigate the failing modules one by one.")
    session.next_request()
    session.setup.budgets = BudgetConfig()
    built = _read_modules(session, clock, turns=60, lines=40)
    assert all(b.plan.budgets.keep_recent_rounds == 1 for b in built)
    passes = [i for i, b in enumerate(built) if "tool_results_to_pointers" in b.result.yields]
    events = [e.payload.call_ids for e in session.history.events if e.type == "context.pruned"]
    assert passes and len(events) == len(passes)
    # Request i follows calls c0..c{i-1}: with one round kept, a pass takes the second newest, c{i-2}, too.
    assert any(f"c{i - 2}" in call_ids for i, call_ids in zip(passes, events, strict=True))
