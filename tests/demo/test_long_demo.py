"""Issue 19 item 9: a long demo session carries on in child runs when the engine asks for one."""

from __future__ import annotations

from contextwright.cli._demo import DEMO_START
from contextwright.clock import FixedClock
from contextwright.demo._drive import drive
from contextwright.demo.script import demo_script
from contextwright.log import open_log
from contextwright.models import anthropic, with_window
from contextwright.runtime.engine import Engine
from contextwright.testing.fakes import TEST_SECRET, sample_agent
from contextwright.testing.provider import ScriptedProvider

# A small window reaches the summary depth cap within a few dozen turns, so the
# escalation path runs in CI time; at 64k the same happens near turn 100.
WINDOW = 24_000
TURNS = 150


def test_a_150_turn_demo_continues_in_child_runs_and_completes(tmp_path):
    clock = FixedClock(DEMO_START)
    engine = Engine(open_log(f"sqlite:///{tmp_path / 'long.db'}", clock=clock), clock=clock, secret=TEST_SECRET)
    model = with_window(anthropic("claude-sonnet-4-6"), WINDOW)
    session = engine.session("long", agent=sample_agent(), model=model)
    steps = demo_script(turns=TURNS, seed=7)
    report = drive(session, steps, clock=clock, provider=ScriptedProvider(clock=clock))
    # Check every scripted turn and model answer was played, and the engine's requests to escalate were honoured.
    assert report.turns == TURNS
    assert len(report.requests) == sum(1 for s in steps if s.kind == "assistant")
    assert len(report.sessions) >= 2, "the summary depth cap was never reached"
    for parent, child in zip(report.sessions, report.sessions[1:], strict=False):
        started = [e.payload for e in parent.history.events if e.type == "child.started"]
        finished = [e.payload for e in parent.history.events if e.type == "child.finished"]
        assert [s.child_session_id for s in started] == [child.id] == [f.child_session_id for f in finished]
        # The child was seeded with pointers to the parent's compaction archives.
        assert "context_read_artifact" in started[0].seed
    # Check every request of every run fits the window, and each run keeps one prefix per epoch.
    limit = model.context_window - model.output_reserve
    assert all(r.result.total_tokens <= limit for r in report.requests)
    for run in report.sessions:
        stats = run.stats()
        assert all(count == 1 for count in stats.prefix_hashes_by_epoch.values())
    engine.close()
