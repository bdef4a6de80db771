"""An oversized item that arrives new is shown bounded without a compaction, and stays bounded.

Bounding a message that the previous request did not carry changes no cached block, so it
is no reason to compact (a full rewrite of the history after the summary). Once shown
bounded, later requests show it the same way: showing it whole again would rewrite every
cached block after it.
"""

from __future__ import annotations

from contextwright.assembly.request import NeutralRequest, TextPart
from contextwright.events import AssistantMessage, ToolCall
from contextwright.runtime.relief import bounds_only_new
from contextwright.testing.fakes import open_session

WINDOW = 32_000
LARGE = "A line of the pasted report, numbered and verbose enough.\n" * 3_000


def _rounds(session, count: int, *, start: int = 0) -> None:
    for n in range(start, start + count):
        session.next_request()
        session.record_assistant(
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
    session.record_assistant(AssistantMessage(text="Please paste the report."))
    session.user("Here it is:\n" + LARGE + "End of the report.")
    after = session.next_request()
    # Check nothing was compacted and every message the previous request cached is repeated as it was.
    assert "compaction" not in after.result.yields
    assert "oversized_items" in after.result.yields
    assert _repeats_cached(after.neutral, before.neutral)
    text = "\n".join(p.text for m in after.neutral.messages for p in m.parts if isinstance(p, TextPart))
    assert "Fix the failing build." in text and "End of the report." in text
    # Check the next request shows the message bounded the same way (the cached bytes hold).
    session.record_assistant(AssistantMessage(text="Reading it.", tool_calls=(ToolCall(id="r", name="run_tests", arguments={}),)))
    session.tool_result("r", "ok")
    later = session.next_request()
    assert "oversized_items" in later.result.yields and "compaction" not in later.result.yields
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
    session.record_assistant(AssistantMessage(text="Please paste the report."))
    session.user("Here it is:\n" + LARGE + "End of the report.")
    bounded = session.next_request()
    assert "oversized_items" in bounded.result.yields
    session.record_assistant(AssistantMessage(text="Reading it.", tool_calls=(ToolCall(id="r", name="run_tests", arguments={}),)))
    session.tool_result("r", "ok")
    assert session.compact() is not None
    after = session.next_request()
    # Check the history the manual compaction rewrote is measured afresh, not compacted again.
    assert "compaction" not in after.result.yields
    assert sum(1 for e in session.events if e.type == "context.compacted") == 1
