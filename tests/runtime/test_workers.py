"""Two workers (two engines on one store) serving one session: nothing decided in process."""

from __future__ import annotations

from contextwright.events import AssistantMessage
from contextwright.runtime.ports import InMemoryMemory
from contextwright.runtime.spec import AgentSpec
from contextwright.testing.fakes import open_session, sample_agent, sample_model


def test_a_worker_opened_before_another_pinned_the_plan_serves_the_next_request(store_url):
    # Two workers open the session before any plan, each reading the memory port as it is then.
    memory_a = InMemoryMemory({"py": "The project supports Python 3.10."})
    memory_b = InMemoryMemory({"py": "The project supports Python 3.12.", "style": "Use Decimal for money."})
    _, worker_a, _ = open_session(url=store_url, memory=memory_a)
    _, worker_b, _ = open_session(url=store_url, memory=memory_b)
    # Worker A pins the plan with its snapshot.
    worker_a.user("Which Python do we support?")
    first = worker_a.next_request()
    worker_a.adapter.record_assistant(AssistantMessage(text="3.10."))
    # Check: worker B serves the next turn on the plan in the log, not on what it read at open.
    worker_b.user("And which style rules apply?")
    second = worker_b.next_request()
    assert second.plan == first.plan and second.prefix_sha256 == first.prefix_sha256
    assert "3.10" in second.neutral.system[-1].text and "Decimal" not in second.neutral.system[-1].text
    # Check: worker B rebuilds worker A's request byte for byte, and A rebuilds B's.
    assert worker_b.inspect(first.index).sha256() == first.neutral.sha256()
    assert worker_a.inspect(second.index).sha256() == second.neutral.sha256()


def two_workers_after_one_turn(store_url):
    """Two workers open one session; the first serves a turn (and pins the plan)."""
    _, worker_a, _ = open_session(url=store_url)
    _, worker_b, _ = open_session(url=store_url)
    worker_a.user("Start.")
    worker_a.next_request()
    worker_a.adapter.record_assistant(AssistantMessage(text="Started."))
    return worker_a, worker_b


def test_a_prefix_edit_on_one_worker_is_adopted_by_the_other(store_url):
    worker_a, worker_b = two_workers_after_one_turn(store_url)
    stricter = AgentSpec(policy=sample_agent().policy, instructions="Never touch the migrations.", tools=sample_agent().tools)
    edited = worker_a.setup.edit_prefix(stricter, note="operator: migrations frozen")
    assert edited is not None
    # Check: worker B, which still holds the old agent, builds on the edited epoch.
    worker_b.user("Go on.")
    built = worker_b.next_request()
    assert built.plan.epoch == edited.epoch and "Never touch the migrations." in str(built.render("anthropic")["system"])


def test_a_model_change_on_one_worker_is_adopted_by_the_other(store_url):
    worker_a, worker_b = two_workers_after_one_turn(store_url)
    worker_a.model = sample_model(window=100_000)
    worker_a.user("Smaller window now.")
    rotated = worker_a.next_request()
    worker_a.adapter.record_assistant(AssistantMessage(text="Fine."))
    # Check: worker B does not rotate back to the model it was opened with.
    worker_b.user("Next.")
    built = worker_b.next_request()
    assert built.plan.epoch == rotated.plan.epoch and worker_b.model.context_window == 100_000
    epochs = [e for e in worker_b.history.events if e.type == "context.epoch.rotated"]
    assert len(epochs) == 1
