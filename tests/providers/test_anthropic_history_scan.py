"""The Anthropic layout finds its history anchor from where the previous layout of the epoch left off."""

from __future__ import annotations

from contextwright.events import AssistantMessage, ToolCall
from contextwright.providers.wires import anthropic
from contextwright.testing.fakes import open_session


class _CountingList(list):
    """A list that counts the items read from it (by index or by iteration)."""

    reads = 0

    def __getitem__(self, index):
        _CountingList.reads += 1
        return super().__getitem__(index)

    def __iter__(self):
        for item in super().__iter__():
            _CountingList.reads += 1
            yield item


def test_each_request_reads_a_bounded_number_of_turns_to_place_the_history_anchor(monkeypatch):
    original = anthropic._history_position
    reads_per_request: list[tuple[int, int]] = []

    def counted(turns, *args):
        _CountingList.reads = 0
        result = original(_CountingList(turns), *args)
        reads_per_request.append((len(turns), _CountingList.reads))
        return result

    monkeypatch.setattr(anthropic, "_history_position", counted)
    _, session, _ = open_session("anchor")
    for turn in range(60):
        session.user(f"Turn {turn}: run the checks.")
        session.next_request().anthropic()
        call = ToolCall(id=f"c{turn}", name="run_tests", arguments={"turn": turn})
        session.adapter.record_assistant(AssistantMessage(text="Checking.", tool_calls=(call,)))
        session.tool_result(call.id, f"module {turn}: 12 passed", exit_code=0)
        session.next_request().anthropic()
        session.adapter.record_assistant(AssistantMessage(text="Done."))
    late = [reads for turns, reads in reads_per_request if turns > 100]
    assert late, "the history never grew past 100 turns: the test would prove nothing"
    # Turns the last layout found whole are not walked again; the walk back to an anchor is short.
    assert max(late) <= 12, reads_per_request[-5:]
