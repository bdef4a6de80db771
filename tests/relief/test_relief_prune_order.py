"""The order a pruning pass takes tool results in: superseded outputs first, then the oldest, the newest last."""

from __future__ import annotations

from contextwright.derive._surface import Exchange, ResultEntry
from contextwright.events import AssistantMessage, ToolCall
from contextwright.events.catalog import ToolResult
from contextwright.runtime.relief import distinctive_names, prune_order
from contextwright.testing.fakes import open_session

WINDOW = 32_000


def _exchange(seq: int, call_id: str, name: str, arguments: dict, output: str = "out", **marks) -> Exchange:
    call = ToolCall(id=call_id, name=name, arguments=arguments)
    result = ResultEntry(seq=seq + 1, ref=f"r{seq}", result=ToolResult(call_id=call_id, tool_name=name, output=output), **marks)
    return Exchange(seq=seq, ref=f"e{seq}", message=AssistantMessage(text="", tool_calls=(call,)), results=(result,))


def _results(entries: list[Exchange]) -> list[ResultEntry]:
    return [r for e in entries for r in e.results]


def test_an_output_read_again_later_goes_before_older_ones_and_the_newest_stays_last():
    entries = [
        _exchange(10, "a", "read_file", {"path": "config.py"}),
        _exchange(20, "b", "read_file", {"path": "rates.py"}),
        _exchange(30, "c", "bash", {"command": "pytest -q"}),
        _exchange(40, "d", "read_file", {"path": "config.py"}),
        _exchange(50, "e", "bash", {"command": "pytest -q"}),
        _exchange(60, "f", "read_file", {"path": "config.py", "offset": 100}),
    ]
    order = [r.result.call_id for r in prune_order(_results(entries), entries)]
    # Check the superseded outputs (config.py read again, the same command run again) come first, oldest first,
    # then the rest oldest first; another part of the same file is not the same read.
    assert order == ["a", "c", "b", "d", "e", "f"]


def test_a_later_output_supersedes_only_when_it_is_shown_and_succeeded():
    entries = [
        _exchange(10, "a", "read_file", {"path": "config.py"}),
        _exchange(20, "b", "read_file", {"path": "rates.py"}),
        _exchange(30, "c", "read_file", {"path": "config.py"}, pruned=True),
        _exchange(40, "d", "read_file", {"path": "rates.py"}),
    ]
    entries.append(_exchange(50, "e", "read_file", {"path": "rates.py"}, duplicate_of="d"))
    failed = _exchange(60, "f", "read_file", {"path": "missing.py"})
    entries.insert(0, _exchange(5, "g", "read_file", {"path": "missing.py"}))
    entries.append(failed)
    entries[-1] = Exchange(
        seq=60,
        ref="e60",
        message=failed.message,
        results=(
            ResultEntry(
                seq=61, ref="r60", result=ToolResult(call_id="f", tool_name="read_file", output="no such file", is_error=True)
            ),
        ),
    )
    candidates = [r for r in _results(entries) if not r.pruned]
    order = [r.result.call_id for r in prune_order(candidates, entries)]
    # Check a pointer (c) supersedes nothing, a failure (f) supersedes nothing, a duplicate's stub (e) is no
    # candidate and supersedes nothing, while the result it repeats (d) supersedes the older read (b).
    assert order == ["b", "g", "a", "d", "f"]


def test_an_output_the_agent_quoted_since_goes_after_those_it_did_not():
    entries = [
        _exchange(10, "a", "read_file", {"path": "billing/rates.py"}, output="def round_total(amount): ..."),
        _exchange(20, "b", "read_file", {"path": "billing/tax.py"}, output="def apply_tax(amount): ..."),
        _exchange(30, "c", "grep", {"pattern": "Invoice"}, output="billing/invoice.py:12: class InvoiceLine"),
        # The agent then works from the first output: it calls what that output defines.
        _exchange(40, "d", "edit_file", {"path": "billing/total.py", "content": "return round_total(x)"}),
    ]
    order = [r.result.call_id for r in prune_order(_results(entries), entries)]
    # Check the outputs it has not named since go first, oldest first, the newest among them too, and the one
    # it quoted after them; a name said before the output arrived (its own call's path) does not count.
    assert order == ["b", "c", "d", "a"]


def test_a_name_its_own_call_said_or_that_many_outputs_hold_is_no_quote():
    root = "/workspace/billing_app"
    entries = [
        _exchange(10, "a", "bash", {"command": f"ls -R {root}"}, output=f"{root}:\ntotal 2"),
        _exchange(20, "b", "read_file", {"path": "rates.py"}, output=f"{root}/rates.py: def round_total(x)"),
        _exchange(30, "c", "read_file", {"path": "tax.py"}, output=f"{root}/tax.py: def apply_tax(x)"),
        _exchange(40, "d", "read_file", {"path": "fees.py"}, output=f"{root}/fees.py: def add_fee(x) uses {root}/lib"),
        _exchange(50, "e", "bash", {"command": f"cd {root} && pytest -q"}, output="3 passed"),
    ]
    order = [r.result.call_id for r in prune_order(_results(entries), entries)]
    # Check the repository root the agent keeps typing quotes neither the listing (its own call said it)
    # nor the reads (three outputs hold it): all go oldest first.
    assert order == ["a", "b", "c", "d", "e"]


def test_distinctive_names_are_identifiers_and_paths_not_plain_words():
    names = distinctive_names("The build_filter in db/models/query.py calls SimpleCol; amount rounded")
    assert names == {"build_filter", "db/models/query.py", "SimpleCol"}


def _passes(session) -> list[tuple[str, ...]]:
    return [e.payload.call_ids for e in session.history.events if e.type == "context.pruned"]


def test_a_pass_prunes_the_file_read_again_before_older_files_read_once():
    _, session, clock = open_session("rereads", window=WINDOW)
    session.user("Fix the rating modules; the settings file says how amounts are rounded.")
    reads: list[str] = []
    gone: set[str] = set()
    took_settings = False
    for turn in range(60):
        seen = len(_passes(session))
        session.next_request()
        for call_ids in _passes(session)[seen:]:
            older = [c for c in reads if c.startswith("s")][:-1]
            taken = [c for c in call_ids if c in older]
            # Check a pass takes the settings reads a later one replaces first, all of them before any other
            # result, and then the others oldest first.
            assert list(call_ids[: len(taken)]) == taken
            assert set(older) <= gone | set(call_ids)
            rest = list(call_ids[len(taken) :])
            assert rest == sorted(rest, key=lambda c: int(c[1:]))
            took_settings |= bool(taken)
            gone.update(call_ids)
        if turn % 3 == 2:
            call = ToolCall(id=f"s{turn}", name="read_file", arguments={"path": "settings.py"})
            # The file changes between reads (the agent edits it), so no read repeats another.
            output = f"# revision {turn}\n" + "".join(f"ROUND_{i} = {i}  # rounding step {i}\n" for i in range(40))
        else:
            call = ToolCall(id=f"m{turn}", name="read_file", arguments={"path": f"rating/m{turn}.py"})
            output = "".join(f"def rate_{turn}_{i}(amount):\n    return round(amount * {i} / 7, 2)\n\n" for i in range(12))
        session.adapter.record_assistant(AssistantMessage(text=f"Reading {call.arguments['path']}.", tool_calls=(call,)))
        session.tool_result(call.id, output)
        reads.append(call.id)
        clock.advance(20)
    assert gone and took_settings, _passes(session)
    # Check the newest settings read is still shown whole, and so is the newest module.
    assert [c for c in reads if c.startswith("s")][-1] not in gone
    assert reads[-1] not in gone
