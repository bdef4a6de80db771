"""An oversized item is shown bounded from the first request it appears in, and stays so.

Bounding a message that the previous request did not carry changes no cached block, so it
is no reason to compact (a full rewrite of the history after the summary). Bounding it on
arrival, whatever the pressure, decides its view once: bounding it later, when the window
fills, would rewrite every cached block after it. Logs recorded before, when items were
bounded only under pressure, still rebuild byte for byte.
"""

from __future__ import annotations

from functools import partial
from itertools import pairwise

from contextwright.assembly.request import NeutralRequest, TextPart
from contextwright.assembly.rules import rule_set
from contextwright.events import AssistantMessage, ToolCall
from contextwright.runtime import relief as relief_module
from contextwright.runtime import requests as requests_module
from contextwright.runtime.relief import bounds_only_new
from contextwright.testing.fakes import open_session
from tests.runtime.conftest import old_rebuild_inputs

WINDOW = 32_000
LARGE = "A line of the pasted report, numbered and verbose enough.\n" * 3_000
DENSE = '{"k": [1, 2, 3], "v": "0x1f"},\n' * 3_000
"""About one token per character: a view of it is sized in a few halvings, so the factor decides its size."""


def _rounds(session, count: int, *, start: int = 0) -> None:
    for n in range(start, start + count):
        session.next_request()
        session.adapter.record_assistant(
            AssistantMessage(text=f"Looking ({n}).", tool_calls=(ToolCall(id=f"c{n}", name="run_tests", arguments={}),))
        )
        session.tool_result(f"c{n}", f"{n} passed")


def _repeats_cached(request: NeutralRequest, previous: NeutralRequest) -> bool:
    return bounds_only_new(request, previous)


def test_a_new_oversized_message_is_bounded_without_compaction():
    _, session, _ = open_session(window=WINDOW)
    session.user("Fix the failing build.")
    _rounds(session, 4)
    before = session.next_request()
    session.adapter.record_assistant(AssistantMessage(text="Please paste the report."))
    session.user("Here it is:\n" + LARGE + "End of the report.")
    after = session.next_request()
    # Check nothing was compacted, the report is bounded (a rule, not a yield), and every message
    # the previous request cached is repeated as it was.
    assert after.result.yields == ()
    assert _report_shown(after.neutral) == "bounded"
    assert _repeats_cached(after.neutral, before.neutral)
    text = "\n".join(p.text for m in after.neutral.messages for p in m.parts if isinstance(p, TextPart))
    assert "Fix the failing build." in text and "End of the report." in text
    # Check the next request shows the message bounded the same way (the cached bytes hold).
    session.adapter.record_assistant(
        AssistantMessage(text="Reading it.", tool_calls=(ToolCall(id="r", name="run_tests", arguments={}),))
    )
    session.tool_result("r", "ok")
    later = session.next_request()
    assert "compaction" not in later.result.yields
    assert _repeats_cached(later.neutral, after.neutral)
    # Check a rebuild from the log gives the same bytes.
    assert session.inspect(later.index).sha256() == later.neutral.sha256()


def test_bounding_an_item_already_cached_whole_is_not_new():
    _, session, _ = open_session(window=WINDOW)
    session.user("Fix the failing build.")
    _rounds(session, 2)
    first = session.next_request()
    # The same history with an earlier message changed is not a repeat of what was cached.
    changed = first.neutral.messages[0]
    edited = type(changed)(role=changed.role, parts=changed.parts[:-1])
    request = NeutralRequest(**{**_fields(first.neutral), "messages": (edited, *first.neutral.messages[1:])})
    assert not bounds_only_new(request, first.neutral)
    assert bounds_only_new(first.neutral, None)


def _fields(request: NeutralRequest) -> dict:
    return {name: getattr(request, name) for name in request.__dataclass_fields__}


def test_a_manual_compaction_after_a_bounded_request_is_not_followed_by_another():
    _, session, _ = open_session(window=WINDOW)
    session.user("Fix the failing build.")
    _rounds(session, 4)
    session.next_request()
    session.adapter.record_assistant(AssistantMessage(text="Please paste the report."))
    session.user("Here it is:\n" + LARGE + "End of the report.")
    bounded = session.next_request()
    assert _report_shown(bounded.neutral) == "bounded"
    session.adapter.record_assistant(
        AssistantMessage(text="Reading it.", tool_calls=(ToolCall(id="r", name="run_tests", arguments={}),))
    )
    session.tool_result("r", "ok")
    assert session.compact() is not None
    after = session.next_request()
    # Check the history the manual compaction rewrote is measured afresh, not compacted again.
    assert "compaction" not in after.result.yields
    assert sum(1 for e in session.history.events if e.type == "context.compacted") == 1


def _answer_with_usage(session, text: str, ratio: float, *, call: str | None = None) -> None:
    """Record an answer whose provider usage reports the request as ``ratio`` times its raw estimate."""
    built = [e.payload for e in session.history.events if e.type == "context.request.built"][-1]
    content: list[dict] = [{"type": "text", "text": text}]
    if call is not None:
        content.append({"type": "tool_use", "id": call, "name": "run_tests", "input": {}})
    session.record(
        {
            "id": f"msg_{built.request_index}",
            "type": "message",
            "role": "assistant",
            "model": session.model.id,
            "content": content,
            "stop_reason": "tool_use" if call else "end_turn",
            "usage": {"input_tokens": built.exact_tokens + round(ratio * built.raw_estimate_tokens), "output_tokens": 9},
        }
    )
    if call is not None:
        session.tool_result(call, "3 passed")


def _bounded_while_the_factor_moves(session) -> list:
    """A pasted report shown bounded over four requests, each answered with usage that moves the factor."""
    session.user("Fix the failing build.")
    session.next_request()
    _answer_with_usage(session, "Please paste the report.", 0.6)
    session.user("Here it is:\n" + DENSE + "End of the report.")
    requests = []
    for n in range(4):
        requests.append(session.next_request())
        _answer_with_usage(session, f"Reading it ({n}).", 0.6, call=f"r{n}")
    return requests


def _bounded_message(request: NeutralRequest) -> str:
    [text] = [p.text for m in request.messages for p in m.parts if isinstance(p, TextPart) and "not shown here" in p.text]
    return text


def test_a_bounded_view_keeps_its_bytes_when_the_estimate_is_reconciled():
    _, session, _ = open_session(window=WINDOW)
    requests = _bounded_while_the_factor_moves(session)
    factors = [e.payload.estimate_factor for e in session.history.events if e.type == "context.request.built"]
    assert len(set(factors[1:])) > 1, "the provider reports should move the correction factor"
    # Check every request shows the report bounded the same way and repeats what the previous one cached.
    assert all("compaction" not in r.result.yields for r in requests)
    assert len({_bounded_message(r.neutral) for r in requests}) == 1
    assert all(bounds_only_new(later.neutral, earlier.neutral) for earlier, later in pairwise(requests))
    # Check a rebuild from the log gives the same bytes.
    assert all(session.inspect(r.index).sha256() == r.neutral.sha256() for r in requests)


def test_a_log_whose_views_were_sized_with_the_factor_still_rebuilds_byte_for_byte(monkeypatch):
    # Requests recorded before views were sized uncorrected carry no "views" input and were
    # sized with the recorded factor (rule set 1): rebuilding them must still give the bytes that were sent.
    with monkeypatch.context() as patch:
        patch.setattr(relief_module, "build", partial(relief_module.build, rules=rule_set(1)))
        patch.setattr(requests_module, "_rebuild_inputs", old_rebuild_inputs(views=False, pinned=False))
        _, session, _ = open_session(window=WINDOW)
        requests = _bounded_while_the_factor_moves(session)
    assert all("views" not in e.payload.inputs for e in session.history.events if e.type == "context.request.built")
    assert len({_bounded_message(r.neutral) for r in requests}) > 1, "the old sizing moved with the factor"
    assert all(session.inspect(r.index).sha256() == r.neutral.sha256() for r in requests)


def _fill_until_compacted(session, report: str) -> list:
    """A pasted report, then notes that fill the window until relief compacts: the requests up to that one."""
    session.user("Fix the failing build.")
    requests = [session.next_request()]
    session.adapter.record_assistant(AssistantMessage(text="Please paste the report."))
    session.user("Here it is:\n" + report + "End of the report.")
    requests.append(session.next_request())
    for n in range(40):
        session.adapter.record_assistant(AssistantMessage(text=f"Noted part {n}."))
        session.user(f"Part {n} of the notes: " + "the build log repeats this warning line again. " * 250)
        requests.append(session.next_request())
        if requests[-1].result.yields:
            break
    return requests


def test_an_oversized_item_is_bounded_on_arrival_even_with_room_to_spare():
    # A report that would fit whole at first (a fifth of the window's history budget and more)
    # is bounded anyway: later turns fill the window, and bounding it then would rewrite the
    # history from the report on.
    _, session, _ = open_session(window=WINDOW)
    requests = _fill_until_compacted(session, LARGE[: len(LARGE) // 5])
    pasted = requests[1]
    assert pasted.result.total_tokens < (WINDOW - pasted.plan.model.output_reserve) // 2, "the whole report had room"
    assert _report_shown(pasted.neutral) == "bounded"
    assert "oversized_items" not in pasted.result.yields
    # Check no request before the first relief pass changes what the one before it cached.
    relieved = next(i for i, r in enumerate(requests) if r.result.yields)
    for earlier, later in pairwise(requests[:relieved]):
        assert bounds_only_new(later.neutral, earlier.neutral)
    assert all(_report_shown(r.neutral) == "bounded" for r in requests[1:relieved])
    assert all(session.inspect(r.index).sha256() == r.neutral.sha256() for r in requests)


def test_an_item_under_the_cap_is_shown_whole():
    _, session, _ = open_session(window=WINDOW)
    requests = _fill_until_compacted(session, LARGE[: len(LARGE) // 20])
    assert _report_shown(requests[1].neutral) == "whole"
    assert "not shown here" not in "".join(_text(m) for m in requests[1].neutral.messages)


def test_a_log_that_bounded_items_only_under_pressure_still_rebuilds_byte_for_byte(monkeypatch):
    # Requests recorded before items were bounded on arrival carry no "bounded" input: they showed
    # the report whole until the body did not fit, then bounded it under the "oversized_items" yield.
    with monkeypatch.context() as patch:
        # Rule set 3: items whole until the body did not fit, views sized uncorrected, pinned items last.
        patch.setattr(relief_module, "build", partial(relief_module.build, rules=rule_set(3)))
        patch.setattr(requests_module, "_rebuild_inputs", old_rebuild_inputs(views=True, pinned=True))
        _, session, _ = open_session(window=WINDOW)
        requests = _fill_until_compacted(session, LARGE[: len(LARGE) // 5])
    shown = [_report_shown(r.neutral) for r in requests[1:]]
    assert shown[0] == "whole" and "bounded" in shown, "the old rule bounded the report only when the window filled"
    assert any("oversized_items" in r.result.yields for r in requests)
    assert all("bounded" not in e.payload.inputs for e in session.history.events if e.type == "context.request.built")
    assert all(session.inspect(r.index).sha256() == r.neutral.sha256() for r in requests)


def _text(message) -> str:
    return "\n".join(p.text for p in message.parts if isinstance(p, TextPart))


def _source(n: int) -> str:
    return "".join(f"def helper_{n}_{i}(value):\n    return value * {i} + {n}  # keeps item {i}\n" for i in range(40))


def _read_round(session, n: int):
    session.adapter.record_assistant(
        AssistantMessage(text=f"Reading {n}.", tool_calls=(ToolCall(id=f"c{n}", name="read_file", arguments={}),))
    )
    session.tool_result(f"c{n}", _source(n))
    return session.next_request()


def _report_shown(request: NeutralRequest) -> str:
    [message] = [m for m in request.messages if "End of the report." in _text(m)]
    return "bounded" if "not shown here" in _text(message) else "whole"


def test_a_pruning_pass_keeps_a_bounded_item_bounded():
    # Files read, then a pasted report that later turns push into a bounded view; then a
    # pruning pass (B2) frees room. Showing the report whole again would rewrite the history
    # from the report on, and the next few requests would bound it again: a second rewrite.
    _, session, _ = open_session(window=WINDOW)
    session.user("Fix the failing build.")
    session.next_request()
    for n in range(8):
        _read_round(session, n)
    session.adapter.record_assistant(AssistantMessage(text="Please paste the report."))
    session.user("Here it is:\n" + LARGE[: len(LARGE) // 3] + "End of the report.")
    requests = [session.next_request()]
    for n in range(8, 32):
        requests.append(_read_round(session, n))
    bounded_at = next(i for i, r in enumerate(requests) if _report_shown(r.neutral) == "bounded")
    passes = [i for i, r in enumerate(requests) if "tool_results_to_pointers" in r.result.yields and i > bounded_at]
    assert passes, "the scenario should prune tool results after the report was bounded"
    # Check the pass shows the report as the request before it did, and no later request rewrites the cached history.
    assert all(_report_shown(requests[i].neutral) == "bounded" for i in passes)
    for earlier, later in pairwise(requests[bounded_at:]):
        if "tool_results_to_pointers" not in later.result.yields:
            assert bounds_only_new(later.neutral, earlier.neutral)
    assert all(session.inspect(r.index).sha256() == r.neutral.sha256() for r in requests[bounded_at:])
