"""Relief sizes a pruning pass through a memo of its own: the same decisions and bytes as sizing from scratch."""

from __future__ import annotations

import random
import statistics

from contextwright.assembly.assemble import VolatileTail, render_messages
from contextwright.budget.allocator import allocate
from contextwright.events import AssistantMessage, ToolCall
from contextwright.plan.budgets import BudgetConfig
from contextwright.runtime.relief import Relief
from contextwright.testing.fakes import open_session


def _run(session_id: str, *, turns: int = 40) -> tuple[list[str], list[str]]:
    """A pressured session: the sha256 of every request and the relief passes it took."""
    rng = random.Random(5)
    _, session, _ = open_session(session_id, window=16_000)
    # The share alone as the high-water mark: a pass is asked for on most requests, which is what is sized here.
    session.setup.budgets = BudgetConfig(tool_results_floor_tokens=0)
    for turn in range(turns):
        session.user(f"Turn {turn}: run the checks for module {turn % 7}.")
        session.next_request()
        call = ToolCall(id=f"c{turn}", name="run_tests", arguments={"module": turn % 7})
        session.adapter.record_assistant(AssistantMessage(text="Checking.", tool_calls=(call,)))
        lines = [f"tests/m{turn}/test_{i}.py::test_case_{i} PASSED" for i in range(rng.randrange(20, 400))]
        session.tool_result(call.id, "\n".join(lines), exit_code=0)
        session.next_request()
        session.adapter.record_assistant(AssistantMessage(text=f"Module {turn % 7} passes."))
    hashes = [e.payload.request_sha256 for e in session.history.events if e.type == "context.request.built"]
    passes = [e.type for e in session.history.events if e.type in ("context.pruned", "context.compacted")]
    return hashes, passes


def test_memoised_sizing_builds_the_same_requests_as_sizing_from_scratch(monkeypatch):
    memoised = _run("memo")
    calls = []

    def from_scratch(self, plan, allocation):
        calls.append(1)
        return render_messages(
            plan=plan,
            allocation=allocation,
            surface=self.core.surface(),
            tail=VolatileTail(),
            secret=self.core.secret,
            view_estimate=self.core.view_estimate(plan),
        )

    monkeypatch.setattr(Relief, "_last_messages", from_scratch)
    scratch = _run("memo")
    assert calls, "the session never sized a pruning pass: the test would prove nothing"
    assert memoised == scratch
    assert memoised[1], "no relief pass ran"


def _counting_raw_counts_in_prune(monkeypatch) -> tuple[list[int], int]:
    """Patch the estimator's raw count and Relief._prune: raw counts made inside each pruning pass."""
    import contextwright.budget.estimator as estimator

    per_pass: list[int] = []
    inside = [False]
    original_count, original_prune = estimator.raw_count, Relief._prune

    def raw_count(*args, **kwargs):
        if inside[0]:
            per_pass[-1] += 1
        return original_count(*args, **kwargs)

    def prune(self, *args, **kwargs):
        per_pass.append(0)
        inside[0] = True
        try:
            return original_prune(self, *args, **kwargs)
        finally:
            inside[0] = False

    monkeypatch.setattr(estimator, "raw_count", raw_count)
    monkeypatch.setattr(Relief, "_prune", prune)
    hashes, _ = _run("counted", turns=70)
    return per_pass, len(hashes)


def test_a_pruning_pass_does_not_size_again_the_results_it_sized_before(monkeypatch):
    per_pass, _ = _counting_raw_counts_in_prune(monkeypatch)
    assert len(per_pass) > 20, "too few pruning passes were asked for: the test would prove nothing"
    # Each request adds one tool result; a pass sizes what came or changed since the last one
    # (a handful of texts; all that follows a pass that pruned), not every result of the history again.
    assert statistics.median(per_pass) <= 6, str(per_pass)


def test_pruning_passes_with_memoised_result_sizes_decide_as_from_scratch(monkeypatch):
    memoised = _run("sizes")
    from contextwright.assembly.memo import RenderMemo

    class Forgetful(RenderMemo):
        def per_items(self, items, by, derive):
            return [derive(item) for item in items]

    original_init = Relief.__init__

    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        self._result_sizes = Forgetful()

    monkeypatch.setattr(Relief, "__init__", init)
    assert _run("sizes") == memoised
    assert memoised[1], "no relief pass ran"


def test_sizing_shows_oversized_items_bounded_as_the_build_does():
    # Sized whole, a pasted report would count thousands of tokens the request never carries,
    # and a pruning pass would shed tool results to make room that is already there.
    _, session, _ = open_session("sizing", window=32_000)
    session.user("Fix the failing build.")
    session.next_request()
    session.adapter.record_assistant(AssistantMessage(text="Please paste the report."))
    session.user("Here it is:\n" + "A line of the pasted report, numbered and verbose enough.\n" * 3_000)
    built = session.next_request()
    sized = Relief(session._core, compactor=None)._last_messages(built.plan, allocate(built.plan))
    # The request's messages less its volatile tail (sizing renders none).
    assert sized == built.neutral.messages[: built.neutral.stable_messages]
    assert any("not shown here" in getattr(p, "text", "") for m in sized for p in m.parts)
