"""Stages and layers (issue: plan → implement → review on a small window)."""

from __future__ import annotations

import pytest

from contextwright.assembly.request import TextPart, ToolResultPart
from contextwright.errors import UsageError
from contextwright.events import AssistantMessage, ToolCall
from contextwright.relief.ranking import least_relevant_first, relevance
from contextwright.telemetry._stability import find_drift
from contextwright.testing.fakes import open_session

WINDOW = 8_000
PLAN_STEPS = [
    f"Step {i}: {text}"
    for i, text in enumerate(
        [
            "reproduce the failing export",
            "find the rounding code",
            "write a failing test",
            "switch totals to Decimal",
            "update the CSV writer",
            "run the full suite",
            "update the changelog",
            "open the pull request",
        ],
        start=1,
    )
]
STEERING = ["Keep the CSV column order exactly as it is today.", "Do not touch the PDF exporter in this change."]


def texts(built):
    return [p.text for m in built.neutral.messages for p in m.parts if isinstance(p, (TextPart, ToolResultPart))]


def call(session, call_id, name, output, *, exit_code=0, text="", **arguments):
    session.adapter.record_assistant(
        AssistantMessage(text=text, tool_calls=(ToolCall(id=call_id, name=name, arguments=arguments),))
    )
    if session.pending_tool_calls():
        session.tool_result(call_id, output, exit_code=exit_code)


def run_multi_stage_session():
    engine, session, clock = open_session("stages", window=WINDOW)
    built = []

    def request():
        built.append(session.next_request())
        return built[-1]

    session.user("The CSV export rounds totals wrongly. Plan the fix, implement it, then review it.")
    # Plan.
    session.stages.open("plan", goal="plan the fix for CSV export rounding of totals")
    request()
    call(session, "p1", "grep", "src/export/csv.py:88: total = round(total, 2)\n", pattern="round(", path="src/export")
    request()
    session.artifacts.declare(
        "plan",
        title="Fix plan",
        content="\n".join(PLAN_STEPS),
        summary="Eight steps from reproduction to pull request.",
        steps=PLAN_STEPS,
    )
    session.user(STEERING[0], steering=True)
    request()
    session.adapter.record_assistant(AssistantMessage(text="The plan is ready."))
    session.stages.close(outcome="an eight-step plan", rationale="rounding happens in the CSV writer only")
    # Implement: retries, duplicates, a chunked plan that advances.
    session.stages.open("implement", goal="switch CSV export totals to Decimal rounding")
    for step in range(1, 6):
        session.artifacts.advance("plan", step)
        request()
        call(
            session,
            f"t{step}",
            "run_tests",
            "tests/test_csv.py::test_totals FAILED\n1 failed, 40 passed\n",
            exit_code=1,
            path="tests/test_csv.py",
        )
        request()
        call(session, f"t{step}b", "run_tests", "41 passed\n", path="tests/test_csv.py")  # a retry that succeeds
        request()
        call(
            session, f"g{step}", "grep", "src/export/csv.py:88: total = round(total, 2)\n", pattern="round(", path="src/export"
        )  # a duplicate
        request()
        source = "".join(f"def helper_{step}_{i}(row):\n    return Decimal(row[{i}]).quantize(CENT)\n\n" for i in range(12))
        # The model explains at length: history, not only tool output, fills the small window.
        reasoning = "Reading this part to check how each helper rounds before the change. " * 20
        call(session, f"f{step}", "read_file", source, text=reasoning, path=f"src/export/part_{step}.py")
        if step == 3:
            session.user(STEERING[1], steering=True)
        clock.advance(60)
    request()
    session.adapter.record_assistant(AssistantMessage(text="Implemented."))
    session.stages.close(outcome="totals use Decimal with ROUND_HALF_UP", rationale="matches the accounting system")
    # Review.
    session.stages.open("review", goal="review the Decimal change in the CSV export")
    request()
    call(
        session,
        "r1",
        "read_file",
        "def write_totals(rows):\n    return [Decimal(r) for r in rows]\n" * 30,
        path="src/export/csv.py",
    )
    request()
    session.adapter.record_assistant(AssistantMessage(text="Looks good."))
    session.stages.close(outcome="approved")
    session.user("Thanks. Summarise what changed.")
    request()
    return engine, session, built


def test_a_multi_stage_session_on_an_8k_window():
    engine, session, built = run_multi_stage_session()
    events = session.history.events
    # No request over the window.
    for b in built:
        assert b.plan.prefix_token_total + b.result.body_tokens * 1.05 <= WINDOW - b.plan.model.output_reserve
    # Steering notes verbatim in every request after they were given.
    given = {text: min(e.seq for e in events if e.type == "message.user" and e.payload.text == text) for text in STEERING}
    for b in built:
        for text, seq in given.items():
            if b.result.upto_seq >= seq:
                assert any(text in t for t in texts(b)), (b.index, text)
    # A decision point for every closed stage (in L2, or graduated to L3 as a memory candidate).
    closed = [e.payload.stage_id for e in events if e.type == "stage.closed"]
    decisions = {e.payload.stage_id for e in events if e.type == "decision.point"}
    assert decisions == set(closed) == {"plan-1", "implement-2", "review-3"}
    last = built[-1]
    graduated = {s for e in events if e.type == "decision.graduated" for s in e.payload.stage_ids}
    visible = [
        p for m in last.neutral.messages for p in m.parts if isinstance(p, TextPart) and p.budget_class == "decision_points"
    ]
    assert len(visible) + len(graduated) == 3
    assert all(p.layer == "compressed_session" for p in visible)
    # Only the current plan step and its neighbours are in context.
    for b in built:
        plan_parts = [t for t in texts(b) if "Fix plan (v1)" in t]
        if not plan_parts:
            continue
        shown = [s for s in PLAN_STEPS if s in plan_parts[0]]
        assert 1 <= len(shown) <= 3
    mid = next(b for b in built if any("Fix plan (v1)" in t and "→ 4. Step 4" in t for t in texts(b)))
    plan_text = next(t for t in texts(mid) if "Fix plan (v1)" in t)
    assert "Step 3:" in plan_text and "Step 5:" in plan_text and "Step 1:" not in plan_text and "Step 8:" not in plan_text
    # The window was tight enough that relief ran.
    assert any(e.type in ("context.pruned", "context.compacted") for e in events)
    # Duplicates and superseded retries were counted.
    assert max(e.payload.dedupe_hits for e in events if e.type == "context.request.built") >= 2
    # One prefix hash per epoch.
    assert not find_drift(events)
    engine.close()


def test_a_child_run_has_its_own_plan_and_only_its_result_returns():
    engine, session, _ = open_session("parent", window=32_000)
    session.user("Investigate the flaky scheduler test.")
    session.next_request()
    session.adapter.record_assistant(
        AssistantMessage(text="Delegating.", tool_calls=(ToolCall(id="d1", name="deploy_preview", arguments={}),))
    )
    child = session.children.start("look at the scheduler logs", task="Find why test_scheduler is flaky.", call_id="d1")
    assert child.id == "parent/child-1"
    child.next_request()
    child.adapter.record_assistant(AssistantMessage(text="A race in the timer wheel; the lock is released too early."))
    session.children.finish(child, "Cause: a race in the timer wheel (lock released too early).")
    parent_request = session.next_request()
    joined = "".join(texts(parent_request))
    assert "race in the timer wheel" in joined and "Find why test_scheduler is flaky" not in joined
    child_events = engine.log.read(child.id)
    assert [e.type for e in child_events].count("context.plan.created") == 1
    assert not find_drift(child_events) and not find_drift(session.history.events)


def test_the_router_view_is_rebuilt_from_decision_points():
    engine, session, _ = run_multi_stage_session()
    view = session.children.router_view()
    assert view.startswith("Task: The CSV export rounds totals wrongly.")
    assert "Stage 'review' closed" in view and STEERING[0] in view
    assert "tests/test_csv.py::test_totals FAILED" not in view  # no execution history
    engine.close()


def test_ranking_drops_the_least_relevant_first():
    items = [("a", "notes about the pdf exporter"), ("b", "csv export totals rounding"), ("c", "unrelated logs")]
    ordered = least_relevant_first(items, goal="fix csv export rounding", text=lambda i: i[1], age=lambda i: ord(i[0]))
    assert [i[0] for i in ordered] == ["a", "c", "b"]
    assert relevance("fix csv export rounding", "csv rounding") == 0.5


def test_stage_misuse_is_refused():
    _, session, _ = open_session()
    with pytest.raises(UsageError):
        session.stages.close(outcome="x")
    session.stages.open("plan", goal="g")
    with pytest.raises(UsageError):
        session.stages.open("again", goal="g")
    with pytest.raises(UsageError):
        session.artifacts.advance("nope", 1)


def test_escalation_continues_in_a_child_seeded_with_task_state_and_archives():
    _, session, _ = open_session("deep", window=32_000)
    session.user("Port the billing module to Decimal.")
    session.next_request()
    session.adapter.record_assistant(
        AssistantMessage(
            text="",
            tool_calls=(ToolCall(id="w", name="context_update_working_state", arguments={"add_constraints": ["Keep the API."]}),),
        )
    )
    session.next_request()
    session.adapter.record_assistant(AssistantMessage(text="Started."))
    session.user("Continue.")
    archive = session.compact().payload.archive
    child = session.children.escalate()
    seed = [e.payload.text for e in child.history.events if e.type == "message.user"][0]
    assert "Port the billing module to Decimal." in seed and archive.ref in seed
    # The working state reaches the child as its working state (data), not as the user's words.
    assert "Keep the API." not in seed
    assert child.working_state.constraints == ("Keep the API.",)
    # The child can read the archive through its own pointer table.
    child.next_request()
    child.adapter.record_assistant(
        AssistantMessage(
            text="",
            tool_calls=(ToolCall(id="r", name="context_read_artifact", arguments={"ref": archive.ref, "grep": "Decimal"}),),
        )
    )
    result = [e.payload for e in child.history.events if e.type == "tool.result"][0]
    assert not result.is_error and "Decimal" in result.output
    # The archive holds the user's words and the assistant's: read back, it is data, never platform text.
    assert result.trust != "platform"
