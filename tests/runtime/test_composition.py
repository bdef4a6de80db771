"""The session by composition: acyclic runtime modules, reopen reads and plans once, a true Compactor protocol."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import contextwright.runtime as runtime_package
from contextwright import planner as planner_module
from contextwright.assembly.assemble import BudgetExceeded
from contextwright.errors import MalformedPayload
from contextwright.events import AssistantMessage
from contextwright.plan.budgets import BudgetConfig
from contextwright.relief.compactor import CompactionResult, compact
from contextwright.runtime.engine import Engine
from contextwright.runtime.reopen import reopen
from contextwright.testing.fakes import TEST_SECRET, open_session

RUNTIME = Path(runtime_package.__file__).parent
FACES = ("cli", "report", "compare", "demo", "importers", "replay", "service", "client", "integrations", "testing", "__main__")


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at module level, inside functions or under TYPE_CHECKING."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _runtime_graph() -> dict[str, set[str]]:
    modules = {f"contextwright.runtime.{p.stem}" for p in RUNTIME.glob("*.py") if p.stem != "__init__"}
    return {f"contextwright.runtime.{p.stem}": _imports(p) & modules for p in RUNTIME.glob("*.py") if p.stem != "__init__"}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_runtime_modules_import_each_other_without_cycles():
    graph = _runtime_graph()
    assert graph["contextwright.runtime.session"] >= {
        "contextwright.runtime.sending",
        "contextwright.runtime.relief",
        "contextwright.runtime.stages",
        "contextwright.runtime.tool_calls",
    }
    assert _cycle(graph) is None, _cycle(graph)


def test_the_cycle_check_finds_a_cycle():
    graph = _runtime_graph()
    graph["contextwright.runtime.sending"].add("contextwright.runtime.session")
    assert _cycle(graph) is not None


def test_the_runtime_never_imports_a_face():
    for path in RUNTIME.glob("*.py"):
        faces = {m for m in _imports(path) if m.split(".")[:2][-1] in FACES and m.startswith("contextwright.")}
        assert not faces, f"{path.name} imports {sorted(faces)}"


def test_no_runtime_module_uses_a_mixin():
    for path in RUNTIME.glob("*.py"):
        assert "Mixin" not in path.read_text(), path.name


def _recorded_session(url: str) -> None:
    engine, session, _ = open_session(url=url)
    session.setup.budgets = BudgetConfig(recall_tokens=1_234)
    session.user("Fix the export.")
    session.next_request()
    session.adapter.record_assistant(AssistantMessage(text="Done."))
    engine.close()


def test_reopen_reads_the_log_once_and_plans_once_with_the_real_secret_and_budgets(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 's.db'}"
    _recorded_session(url)
    engine = Engine.open(url, secret=TEST_SECRET)
    reads: list[int] = []
    plannings: list[bytes] = []
    real_read, real_from_events = engine.log.read, planner_module.ContextPlanner.from_events.__func__

    def counting_read(session_id, *, after_seq=0, limit=None):
        reads.append(after_seq)
        return real_read(session_id, after_seq=after_seq, limit=limit)

    def counting_from_events(cls, session_id, events, **options):
        plannings.append(options["secret"])
        return real_from_events(cls, session_id, events, **options)

    monkeypatch.setattr(engine.log, "read", counting_read)
    monkeypatch.setattr(planner_module.ContextPlanner, "from_events", classmethod(counting_from_events))
    session = reopen(engine, "s1")
    assert reads == [0] and plannings == [engine.secret_for("s1")]
    assert session.setup.budgets.recall_tokens == 1_234 and session.setup.plan is not None
    assert session.inspect(0).sha256() == session.history.rebuild(0)[1].request_sha256


def test_a_message_author_outside_user_and_operator_is_refused():
    _, session, _ = open_session()
    with pytest.raises(MalformedPayload, match="author"):
        session.user("hello", author="system")
    assert session.history.events == []


def test_relief_calls_the_compactor_as_its_protocol_says():
    calls: list[dict[str, object]] = []

    def recording(surface, *, epoch, trigger, max_summary_chars=16_000):
        calls.append({"trigger": trigger, "max_summary_chars": max_summary_chars, "entries": len(surface.entries)})
        return CompactionResult(compacted=None, reason="nothing to fold here")

    _, session, _ = open_session(window=16_000)
    session.setup.compactor = recording
    # Many messages, none oversized alone (one oversized message would be shown bounded instead).
    for n in range(12):
        session.user(f"{n} " + "word " * 750)
    with pytest.raises(BudgetExceeded):
        session.next_request()  # nothing can be folded, so the body does not fit
    # First the older part of the history (the newest entries left out), then all of it, then tighter summaries.
    assert [c["trigger"] for c in calls] == ["pressure"] * 4
    assert calls[0]["entries"] < calls[1]["entries"] == calls[2]["entries"]
    assert calls[0]["max_summary_chars"] == calls[1]["max_summary_chars"] == 16_000
    assert all(c["max_summary_chars"] == 1_000 for c in calls[2:])
    assert session.setup.compactor is recording and compact is not recording
