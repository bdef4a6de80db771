import dataclasses

from contextwright.clock import FixedClock
from contextwright.log import InMemoryEventLog
from contextwright.testing.contract import EventLogContract


class TestInMemoryEventLog(EventLogContract):
    def make_log(self, clock: FixedClock) -> InMemoryEventLog:
        return InMemoryEventLog(clock=clock)

    def tamper(self, log: InMemoryEventLog, what: str, **details) -> None:
        if what == "checkpoint":
            kept = log._checkpoints[details["session_id"]]
            log._checkpoints[details["session_id"]] = dataclasses.replace(kept, **{details["column"]: details["value"]})
            return
        if what != "artifact":
            raise NotImplementedError  # the in-memory log keeps no counter apart from its rows
        log._artifacts[details["ref"]] = details["content"]


def test_the_rules_ask_the_store_only_about_calls_the_batch_did_not_open():
    """A result whose call an earlier event of the batch opens needs no look-up (and, on SQLite, no read of the events)."""
    from contextwright.events import AssistantMessage, ToolCall, ToolResult
    from contextwright.log._invariants import calls_to_look_up, check_batch
    from contextwright.log.base import prepare_events

    class Reader:
        asked: list[list[str]] = []

        def call_states(self, call_ids):
            self.asked.append(list(call_ids))
            return {"old": False}

        def any_calls(self):
            return True

        def plan_prefixes(self):
            return {}

        def requests_built(self):
            return 0

    def result(call_id: str) -> ToolResult:
        return ToolResult(call_id=call_id, tool_name="t", output="ok")

    batch = prepare_events(
        [result("new"), AssistantMessage(tool_calls=(ToolCall(id="new", name="t", arguments={}),)), result("new"), result("old")]
    )
    assert calls_to_look_up(batch) == ["new", "old"]
    assert calls_to_look_up(batch[1:]) == ["old"]
    reader = Reader()
    changes = check_batch("s", batch[1:], reader, first_seq=5)
    assert reader.asked == [["old"]]
    assert changes.calls_opened == [("new", 5)] and changes.calls_answered == [("new", 6), ("old", 7)]
