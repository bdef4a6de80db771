"""Relief sizes a pruning pass through a memo of its own: the same decisions and bytes as sizing from scratch."""

from __future__ import annotations

import random

from contextwright.assembly.assemble import VolatileTail, render_messages
from contextwright.events import AssistantMessage, ToolCall
from contextwright.runtime.relief import Relief
from contextwright.testing.fakes import open_session


def _run(session_id: str, *, turns: int = 40) -> tuple[list[str], list[str]]:
    """A pressured session: the sha256 of every request and the relief passes it took."""
    rng = random.Random(5)
    _, session, _ = open_session(session_id, window=16_000)
    for turn in range(turns):
        session.user(f"Turn {turn}: run the checks for module {turn % 7}.")
        session.next_request()
        call = ToolCall(id=f"c{turn}", name="run_tests", arguments={"module": turn % 7})
        session.record_assistant(AssistantMessage(text="Checking.", tool_calls=(call,)))
        lines = [f"tests/m{turn}/test_{i}.py::test_case_{i} PASSED" for i in range(rng.randrange(20, 400))]
        session.tool_result(call.id, "\n".join(lines), exit_code=0)
        session.next_request()
        session.record_assistant(AssistantMessage(text=f"Module {turn % 7} passes."))
    hashes = [e.payload.request_sha256 for e in session.events if e.type == "context.request.built"]
    passes = [e.type for e in session.events if e.type in ("context.pruned", "context.compacted")]
    return hashes, passes


def test_memoised_sizing_builds_the_same_requests_as_sizing_from_scratch(monkeypatch):
    memoised = _run("memo")
    calls = []

    def from_scratch(self, plan, allocation):
        calls.append(1)
        return render_messages(plan=plan, surface=self.core.surface(), tail=VolatileTail(), secret=self.core.secret)

    monkeypatch.setattr(Relief, "_last_messages", from_scratch)
    scratch = _run("memo")
    assert calls, "the session never sized a pruning pass: the test would prove nothing"
    assert memoised == scratch
    assert memoised[1], "no relief pass ran"
