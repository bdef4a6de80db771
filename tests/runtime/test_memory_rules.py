"""D8 and privacy: corrections and erasures of the frozen snapshot reach the model at once.

The snapshot sits in the prefix, frozen for an epoch. A correction of one of its facts
shows as a correction line on the very next request; an erasure takes the fact out of
everything the model sees, the prefix included (a new epoch, recorded with its reason),
and out of every memory candidate offered later. The revision hook (ADR-0183) is a
cache only: ``None`` and a failing hook both mean a fresh read.
"""

from __future__ import annotations

import json

from contextwright.events import AssistantMessage, ToolCall, payload_json
from contextwright.runtime.ports import InMemoryMemory
from contextwright.testing.fakes import open_session, sample_agent, sample_model

SECRET_FACT = "The customer's home address is 12 Elm Street, Springfield."
STALE_FACT = "The service runs on Python 3.10."


def everything(request) -> str:
    """Every byte the model would see, on every wire the session's provider has."""
    return json.dumps(request.render("anthropic"), ensure_ascii=False)


def answer(session, call_id: str = "c1") -> None:
    session.adapter.record_assistant(AssistantMessage(text="", tool_calls=(ToolCall(id=call_id, name="grep", arguments={}),)))
    session.tool_result(call_id, "nothing found")


def test_a_corrected_snapshot_fact_gets_a_correction_line_on_the_next_request():
    memory = InMemoryMemory({"runtime": STALE_FACT})
    engine, _, _ = open_session()
    # No recall port: the snapshot in the prefix is the only way the fact reached the model.
    session = engine.session("snap", agent=sample_agent(), model=sample_model(), memory=memory)
    session.user("Which Python do we deploy?")
    first = session.next_request()
    assert STALE_FACT in everything(first)
    answer(session)
    session.memories.correct("runtime", "The service runs on Python 3.12.")
    second = session.next_request()
    body = everything(second)
    assert "Python 3.12" in body and "Correction" in body
    # The prefix stays (no new epoch for a correction): the line rides in the body.
    assert second.prefix_sha256 == first.prefix_sha256


def test_an_erased_snapshot_fact_leaves_every_later_request_prefix_included():
    memory = InMemoryMemory({"address": SECRET_FACT, "runtime": STALE_FACT})
    _, session, _ = open_session(memory=memory)
    session.user("Ship the invoice to the customer.")
    first = session.next_request()
    assert SECRET_FACT in everything(first)
    answer(session)
    session.memories.forget("address", reason="GDPR erasure request")
    later = [session.next_request()]
    for n in range(3):
        answer(session, f"c{n + 2}")
        later.append(session.next_request())
    for request in later:
        body = everything(request)
        assert "12 Elm Street" not in body
        assert STALE_FACT in body  # the other facts stay
    # The price of an erasure is one new epoch, recorded with its reason.
    rotations = [e.payload for e in session.history.events if e.type == "context.epoch.rotated"]
    assert [r.reason for r in rotations] == ["memory_erased"]
    assert later[0].plan.epoch == first.plan.epoch + 1
    assert len({r.prefix_sha256 for r in later}) == 1


def test_an_erasure_survives_a_resume():
    memory = InMemoryMemory({"address": SECRET_FACT})
    engine, session, _ = open_session(memory=memory, url="memory://")
    session.user("Ship the invoice.")
    session.next_request()
    answer(session)
    session.memories.forget("address")
    memory.write("address", SECRET_FACT)  # the port even has it again: the session's erasure still holds
    reopened = engine.session("s1", agent=sample_agent(), model=sample_model(), memory=memory, recall=memory)
    assert "12 Elm Street" not in everything(reopened.next_request())


def test_an_erased_fact_is_not_offered_back_as_a_memory_candidate():
    memory = InMemoryMemory({"address": SECRET_FACT})
    _, session, _ = open_session(memory=memory)
    session.user("Ship the invoice.")
    session.next_request()
    session.adapter.record_assistant(
        AssistantMessage(
            text="",
            tool_calls=(
                ToolCall(
                    id="w",
                    name="context_update_working_state",
                    arguments={"add_facts": [SECRET_FACT, "Invoices go out on the 1st."]},
                ),
            ),
        )
    )
    session.memories.forget("address")
    candidates = session.close().payload
    assert candidates.facts == ("Invoices go out on the 1st.",)
    assert candidates.withheld == 1


class FlakyRevision(InMemoryMemory):
    """A recall port whose revision hook says 'unknown' or fails, as a real store might."""

    def __init__(self, facts, *, mode: str) -> None:
        super().__init__(facts)
        self.mode = mode
        self.reads = 0

    def revision(self):  # type: ignore[override]  # the hook may return None or raise
        if self.mode == "none":
            return None
        raise ConnectionError("revision service unreachable")

    def current(self, ids, *, now):
        self.reads += 1
        return super().current(ids, now=now)


def _recall_session(memory):
    engine, _, _ = open_session()
    return engine.session(
        "hooked", agent=sample_agent(), model=sample_model(), memory=memory, recall=memory, reuse_recall_by_revision=True
    )


def test_a_revision_hook_that_knows_no_revision_means_a_fresh_read_every_time():
    memory = FlakyRevision({"py": "Python 3.10 support."}, mode="none")
    session = _recall_session(memory)
    session.user("python support")
    session.next_request()
    answer(session)
    session.next_request()
    memory.write("py", "Python 3.12 support.")
    answer(session, "c2")
    third = session.next_request()
    assert memory.reads == 3  # one fresh read per request: nothing reused
    assert "Python 3.12" in everything(third)


def test_a_failing_revision_hook_falls_back_to_a_fresh_read_and_is_recorded(caplog):
    memory = FlakyRevision({"py": "Python 3.10 support."}, mode="raise")
    session = _recall_session(memory)
    session.user("python support")
    session.next_request()
    memory.write("py", "Python 3.12 support.")
    answer(session)
    with caplog.at_level("WARNING", logger="contextwright"):
        second = session.next_request()
    assert "Python 3.12" in everything(second)
    failures = [e.payload for e in session.history.events if e.type == "context.recall.revision_failed"]
    # ADR-0183: only the exception's class is kept, in the log and in the event; its message may carry data.
    assert failures and failures[-1].error == "ConnectionError"
    assert not any("unreachable" in payload_json(e.payload) for e in session.history.events)
    assert "ConnectionError" in caplog.text and "unreachable" not in caplog.text
