"""``why`` and ``inspect --diff`` on a session that meets every fate, on SQLite and on PostgreSQL.

The session: a task; a test run whose passing lines are compressed away on arrival; a
read-back of one of them; a stage whose output is folded into its decision point; file
reads that a pruning pass turns into pointers; a pasted log shown as its head and tail; a
manual compaction; a last question. A second session erases memory: from its
snapshot (a new epoch) and from recalled evidence. Each text asked about has one fate by one request,
and the answer names the step and the pointer to the original.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from typer.testing import CliRunner

from contextwright.cli import app
from contextwright.clock import FixedClock
from contextwright.events import AssistantMessage, ToolCall
from contextwright.plan.budgets import BudgetConfig
from contextwright.runtime import Engine
from contextwright.runtime.ports import InMemoryMemory
from contextwright.telemetry._request_diff import diff_requests
from contextwright.telemetry.why import HIDDEN, Explainer, artifact_reader
from contextwright.testing.fakes import sample_agent, sample_model

SESSION = "why-fates"
TASK = "Fix the rounding bug in billing/ledger.py. The customer reference is ACME-77812."
PASSING = "\n".join(f"tests/test_mod.py::test_ok_{i} PASSED" for i in range(300))
TEST_RUN = (
    "============ test session starts ============\n"
    f"{PASSING}\n"
    "tests/test_mod.py::test_round FAILED\n"
    "E   AssertionError: 10.004 != 10.0\n"
    "==== 1 failed, 300 passed in 2.1s ===="
)
PASTE = "Here is the log you asked for. " + " ".join(f"line{i}-marker" for i in range(9000)) + " END-OF-PASTE"


def _source(rng: random.Random, tag: str, chars: int) -> str:
    lines = [f"# {tag}"]
    while sum(len(line) + 1 for line in lines) < chars:
        lines.append(f"def {tag}_fn_{len(lines)}(a, b): return a * {rng.randrange(10**6)} + b")
    return "\n".join(lines)


@dataclass
class Scene:
    """The recorded session, and the request numbers at which things happened."""

    url: str
    engine: Any
    session: Any
    marks: dict[str, int]

    def explainer(self) -> Explainer:
        return Explainer(self.session.history.events, read_artifact=artifact_reader(self.engine.log))

    def why(self, text: str, index: int) -> Any:
        return self.explainer().why(text, request_index=index, request=self.session.inspect(index))


def _record(url: str) -> Scene:
    rng = random.Random(7)
    # The store's own secret (no injected one), so the command line rebuilds the same bytes.
    engine = Engine.open(url, clock=FixedClock("2026-03-01T22:30:00Z"))
    session = engine.session(SESSION, agent=sample_agent(), model=sample_model(64_000))
    # A results mark the eight reads pass (16,000 tokens), so a pruning pass takes the oldest before the paste.
    session.setup.budgets = BudgetConfig(tool_results_floor_tokens=16_000)
    marks: dict[str, int] = {}
    session.user(TASK)
    session.next_request()
    session.adapter.record_assistant(
        AssistantMessage(text="Running the tests.", tool_calls=(ToolCall(id="t1", name="run_tests", arguments={}),))
    )
    run = session.tool_result("t1", TEST_RUN, exit_code=1)
    marks["after_test_run"] = session.next_request().index
    read = ToolCall(id="rb1", name="context_read_artifact", arguments={"ref": run.payload.artifact.ref, "grep": "test_ok_17 "})
    session.adapter.record_assistant(AssistantMessage(text="", tool_calls=(read,)))
    marks["after_read_back"] = session.next_request().index
    session.stages.open("survey", goal="Find where totals are rounded.")
    session.adapter.record_assistant(
        AssistantMessage(text="Searching.", tool_calls=(ToolCall(id="g1", name="grep", arguments={"pattern": "round("}),))
    )
    session.tool_result("g1", "billing/rounding_helpers.py:12: return round(total_amount, 2)")
    marks["in_stage"] = session.next_request().index
    session.adapter.record_assistant(AssistantMessage(text="Rounding happens in one helper."))
    session.stages.close(outcome="found the helper")
    session.user("Now read the billing parts.")
    marks["after_stage"] = session.next_request().index
    for i in range(8):
        call = ToolCall(id=f"r{i}", name="read_file", arguments={"path": f"billing/part_{i}.py"})
        session.adapter.record_assistant(AssistantMessage(text=f"Reading part {i}.", tool_calls=(call,)))
        session.tool_result(f"r{i}", _source(rng, f"part{i}", 6_000))
        session.next_request()
    marks["after_reads"] = session.history.requests_built - 1
    session.adapter.record_assistant(AssistantMessage(text="Read them all."))
    session.user(PASTE)
    marks["after_paste"] = session.next_request().index
    assert session.compact() is not None
    session.adapter.record_assistant(AssistantMessage(text="The paste shows the failing totals."))
    session.user("Thanks. What next?")
    marks["after_compaction"] = session.next_request().index
    return Scene(url=url, engine=engine, session=session, marks=marks)


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def scene(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scene]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('why')}/store.db"
        schema = None
    else:
        dsn = request.getfixturevalue("postgres_dsn")
        schema = f"cw_why_{uuid.uuid4().hex[:12]}"
        url = f"{dsn}?schema={schema}"
    recorded = _record(url)
    try:
        yield recorded
    finally:
        recorded.engine.close()
        if schema is not None:
            import psycopg

            with psycopg.connect(request.getfixturevalue("postgres_dsn"), autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def _pruned_part(scene: Scene) -> int:
    """A read whose result a pruning pass turned into a pointer before the paste."""
    pruned = [c for e in scene.session.history.events if e.type == "context.pruned" for c in e.payload.call_ids]
    assert pruned, "the reads should exceed the tool-result share and be pruned"
    return int(pruned[0][1:])


def test_a_text_shown_whole_names_its_block_and_where_it_entered(scene):
    answer = scene.why("ACME-77812", scene.marks["after_test_run"])
    assert answer.fate == "shown" and not answer.hidden
    assert answer.entered is not None and answer.entered.seq == 1 and answer.pointer == f"{SESSION}#1"
    assert any("(user)" in where and "whole" in where for where in answer.shown_in)


def test_a_passing_test_line_was_compressed_on_arrival_and_the_pointer_leads_to_the_original(scene):
    answer = scene.why("test_ok_250", scene.marks["after_test_run"])
    assert answer.fate == "compressed" and answer.hidden
    assert answer.hidden_by is not None and answer.hidden_by.what == "compressed"
    assert "pytest" in answer.hidden_by.detail
    assert answer.pointer is not None and answer.pointer.startswith("sha256:")
    assert "test_ok_250" in scene.engine.log.get_artifact(answer.pointer)


def test_a_line_read_back_is_shown_through_the_read_back_and_the_history_says_when(scene):
    before = scene.why("test_ok_17 PASSED", scene.marks["after_test_run"])
    assert before.fate == "compressed"
    answer = scene.why("test_ok_17 PASSED", scene.marks["after_read_back"])
    assert answer.fate == "read_back"
    whats = [step.what for step in answer.steps]
    assert whats[:3] == ["entered", "compressed", "read_back"]
    # Check: asked about the request before the read, the read is listed as after it.
    assert [s.what for s in before.later] == ["read_back"]


def test_a_closed_stage_folds_its_outputs_into_its_decision_point(scene):
    assert scene.why("rounding_helpers.py", scene.marks["in_stage"]).fate == "shown"
    answer = scene.why("rounding_helpers.py", scene.marks["after_stage"])
    assert answer.fate == "stage_closed"
    assert answer.hidden_by is not None and "survey" in answer.hidden_by.detail


def test_a_pruned_output_names_the_pass_and_leaves_a_pointer(scene):
    part = _pruned_part(scene)
    answer = scene.why(f"part{part}_fn_3", scene.marks["after_reads"])
    assert answer.fate == "pruned"
    pass_seq = next(e.seq for e in scene.session.history.events if e.type == "context.pruned")
    assert answer.hidden_by is not None and answer.hidden_by.seq == pass_seq
    assert answer.left and "out of context" in answer.left[0]
    assert answer.pointer is not None and f"part{part}_fn_3" in scene.engine.log.get_artifact(answer.pointer)


def test_a_huge_paste_is_bounded_from_its_first_request_and_its_ends_stay(scene):
    index = scene.marks["after_paste"]
    answer = scene.why("line4000-marker", index)
    assert answer.fate == "bounded"
    assert answer.left and "characters not shown here" in answer.left[0]
    assert answer.hidden_by is not None and "more than 25% of the history budget" in answer.hidden_by.detail
    paste_seq = next(
        e.seq for e in scene.session.history.events if e.type == "message.user" and e.payload.text.startswith("Here is")
    )
    assert answer.pointer == f"{SESSION}#{paste_seq}"
    assert scene.why("END-OF-PASTE", index).fate == "shown"


def test_a_compacted_output_names_the_compaction_and_the_summary_line_left_of_it(scene):
    index = scene.marks["after_compaction"]
    last_read = scene.why("part7_fn_3", scene.marks["after_paste"])
    assert last_read.fate == "shown"
    answer = scene.why("part7_fn_3", index)
    assert answer.fate == "compacted"
    compaction = next(e for e in scene.session.history.events if e.type == "context.compacted")
    assert answer.hidden_by is not None and answer.hidden_by.seq == compaction.seq
    assert answer.left == (f"read_file: ok {answer.pointer[:19]}",)


def test_a_text_that_entered_later_or_never_says_so(scene):
    answer = scene.why("What next?", scene.marks["after_test_run"])
    assert answer.fate == "not_entered" and answer.entered is not None
    assert answer.entered.seq > 0 and "not yet in the log" in answer.summary
    assert scene.why("nothing like this was ever said", scene.marks["after_compaction"]).fate == "not_in_log"
    with pytest.raises(ValueError, match="empty"):
        scene.why("  \n ", 0)


def test_the_diff_after_a_pruning_pass_shows_the_pointer_and_where_the_cache_breaks(scene):
    events = scene.session.history.events
    pass_event = next(e for e in events if e.type == "context.pruned")
    index = next(e.payload.request_index for e in events if e.type == "context.request.built" and e.seq > pass_event.seq)
    changes = diff_requests(scene.session.inspect(index), scene.session.inspect(index - 1), events, index=index)
    changed = [c for c in changes.changes if c.status == "changed" and c.block.kind == "tool_result"]
    assert changed and all(c.block.call_id in pass_event.payload.call_ids for c in changed)
    assert all(c.cause.startswith(f"pruned to a pointer at seq {pass_event.seq}") for c in changed)
    assert all(c.after.shaped_by.startswith("pointer stub (pruned)") for c in changed)
    # Check: blocks before the first change are read from the cache; the changed ones are written.
    first = changes.first_difference
    assert first is not None and first <= min(c.after.position for c in changed)
    assert all(c.cache == "read" for c in changes.changes if c.after is not None and c.after.position < first)
    assert all(c.cache == "written" for c in changed)
    assert changes.events_between.get("context.pruned") == 1
    assert changes.causes["pruned"] == len(changed) and set(changes.causes) <= {"pruned", "new"}


def test_the_diff_after_a_compaction_removes_what_it_folded_and_adds_its_summary(scene):
    index = scene.marks["after_compaction"]
    session = scene.session
    changes = diff_requests(session.inspect(index), session.inspect(index - 1), session.history.events, index=index)
    compaction = next(e for e in session.history.events if e.type == "context.compacted")
    removed = [c for c in changes.changes if c.status == "removed"]
    assert removed and all(c.cause.startswith(f"folded by the compaction at seq {compaction.seq}") for c in removed)
    summary = [c for c in changes.changes if c.status == "added" and c.block.budget_class == "summary"]
    assert len(summary) == 1 and summary[0].block.ref == compaction.ref
    assert changes.causes["compacted"] == len(removed) + 1 and changes.causes["new"] >= 1
    assert changes.count("kept") >= 3  # the prefix at least
    # Check: a block whose labels moved (the run it belongs to ended) sends the same bytes: kept, not changed.
    relabelled = [c for c in changes.changes if c.status == "kept" and c.before is not None and c.before.layer != c.block.layer]
    assert relabelled and not [c for c in changes.changes if c.status == "changed" and c.before.text == c.block.text]
    assert not changes.prefix_changed
    # Check: the first request has nothing before it; everything is added.
    first = diff_requests(session.inspect(0), None, session.history.events, index=0)
    assert first.previous is None and {c.status for c in first.changes} == {"added"}
    assert json.loads(json.dumps(changes.to_dict()))["counts"]["removed"] == len(removed)


def test_every_hidden_fate_names_its_step(scene):
    index = scene.marks["after_compaction"]
    explainer = scene.explainer()
    neutral = scene.session.inspect(index)
    for text in ("test_ok_250", "part0_fn_3", "line4000-marker", "part7_fn_3"):
        answer = explainer.why(text, request_index=index, request=neutral)
        assert answer.fate in HIDDEN and answer.hidden_by is not None, (text, answer.fate)
        assert answer.pointer, text


runner = CliRunner()


def test_the_commands_answer_why_and_diff_from_the_store(scene):
    store = scene.url
    index = scene.marks["after_compaction"]
    result = runner.invoke(app, ["why", store, "part7_fn_3", "-s", SESSION, "-r", str(index)])
    assert result.exit_code == 0, result.output
    assert "compacted" in result.output and "the original: sha256:" in result.output
    # Check: a text every read holds has a long history: the table shows its first step and its latest ones.
    common = scene.why("def part", index)
    assert len(common.steps) > 12
    folded = runner.invoke(app, ["why", store, "def part", "-s", SESSION], env={"COLUMNS": "240"})
    assert folded.exit_code == 0 and f"{len(common.steps) - 12} more step(s)" in folded.output
    as_json = runner.invoke(app, ["why", store, "test_ok_250", "-s", SESSION, "--json"])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.output)["fate"] == "compressed"
    diff = runner.invoke(app, ["inspect", store, "-s", SESSION, "-r", str(index), "--diff"], env={"COLUMNS": "240"})
    assert diff.exit_code == 0, diff.output
    assert "removed" in diff.output and "folded by the compaction" in diff.output
    assert "Events between the two requests" in diff.output and "Causes of the differences: new ×" in diff.output
    as_json = runner.invoke(app, ["inspect", store, "-s", SESSION, "-r", str(index), "--diff", "--json"])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.output)["causes"]["compacted"] >= 1
    # Check: mistakes are told in one line a person can act on.
    wrong = runner.invoke(app, ["inspect", store, "-s", SESSION, "--diff"])
    assert wrong.exit_code == 1 and "--diff needs --request N" in wrong.output
    beyond = runner.invoke(app, ["why", store, "x", "-s", SESSION, "-r", "999"])
    assert beyond.exit_code == 1 and "there is no request 999" in beyond.output


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/store.db"
    return f"{request.getfixturevalue('postgres_dsn')}?schema={request.getfixturevalue('postgres_schema')}"


def test_memory_erased_from_the_snapshot_starts_an_epoch_and_recalled_evidence_is_erased(store_url):
    memory = InMemoryMemory({"style": "House style: money values use Decimal-FMT-9931 formatting."})
    engine = Engine.open(store_url, clock=FixedClock("2026-03-01T22:30:00Z"))
    session = engine.session("why-memory", agent=sample_agent(), model=sample_model(64_000), memory=memory, recall=memory)
    session.user("Start the billing work.")
    first = session.next_request().index
    session.adapter.record_assistant(AssistantMessage(text="Started."))
    memory.write("ledger", "The ledger rounding owner is team KESTREL-204 billing.")
    session.user("Who owns ledger rounding in billing?")
    recalled = session.next_request().index
    session.adapter.record_assistant(AssistantMessage(text="The billing team."))
    session.memories.forget("ledger")
    session.memories.forget("style")
    session.user("Thanks.")
    last = session.next_request().index
    explainer = Explainer(session.history.events)

    def fate(text: str, index: int) -> Any:
        return explainer.why(text, request_index=index, request=session.inspect(index))

    # Check: the snapshot's fact is in the prefix until its erasure rotates the epoch.
    assert fate("Decimal-FMT-9931", first).shown_in[0].startswith("system")
    gone = fate("Decimal-FMT-9931", last)
    rotation = next(e for e in session.history.events if e.type == "context.epoch.rotated")
    assert gone.fate == "epoch" and gone.hidden_by is not None and gone.hidden_by.seq == rotation.seq
    assert "memory erased" in gone.summary
    # Check: recalled evidence enters with its frame, is shown, then is erased.
    assert fate("KESTREL-204", first).fate == "not_entered"
    assert fate("KESTREL-204", recalled).fate == "shown"
    erased = fate("KESTREL-204", last)
    erasure = next(e for e in session.history.events if e.type == "memory.erased" and e.payload.memory_id == "ledger")
    assert erased.fate == "erased" and erased.hidden_by is not None and erased.hidden_by.seq == erasure.seq
    engine.close()
