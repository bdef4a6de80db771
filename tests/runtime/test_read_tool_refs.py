"""Markers and pointer stubs name ``context_read_artifact`` only to a model whose prefix pins it.

An agent without the engine's control tools (the OpenAI Agents SDK integration runs tools
itself, an operator may revoke the tool) must not be told to call a tool it lacks: the
marker says where the whole text is kept instead. Requests recorded before named the tool
always, and still rebuild byte for byte.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from contextwright.assembly.request import TextPart, ToolResultPart
from contextwright.assembly.rules import rule_set
from contextwright.events import AssistantMessage, ToolCall
from contextwright.runtime import relief as relief_module
from contextwright.runtime import requests as requests_module
from contextwright.testing.fakes import open_session, sample_agent
from tests.runtime.conftest import old_rebuild_inputs

WINDOW = 32_000
REPORT = "A line of the pasted report, numbered and verbose enough.\n" * 1_200


def _source(n: int) -> str:
    return "".join(f"def helper_{n}_{i}(value):\n    return value * {i} + {n}  # keeps item {i}\n" for i in range(40))


def _session(*, control_tools: bool):
    agent = replace(sample_agent(), control_tools=control_tools)
    _, session, _ = open_session("reads", window=WINDOW, agent=agent)
    return session


def _work(session) -> list:
    """A pasted report (shown bounded), then files read until a pruning pass has run."""
    session.user("Fix the failing build.")
    session.next_request()
    session.adapter.record_assistant(AssistantMessage(text="Please paste the report."))
    session.user("Here it is:\n" + REPORT + "End of the report.")
    requests = [session.next_request()]
    for n in range(40):
        call = ToolCall(id=f"c{n}", name="read_file", arguments={"path": f"src/m{n}.py"})
        session.adapter.record_assistant(AssistantMessage(text=f"Reading {n}.", tool_calls=(call,)))
        session.tool_result(call.id, _source(n))
        requests.append(session.next_request())
        if "tool_results_to_pointers" in requests[-1].result.yields:
            break
    return requests


def _texts(request) -> list[str]:
    return [p.text for m in request.messages for p in m.parts if isinstance(p, TextPart | ToolResultPart)]


def _stubs(request) -> list[str]:
    return [p.text for m in request.messages for p in m.parts if isinstance(p, ToolResultPart) and "out of context" in p.text]


def test_a_model_without_the_read_tool_is_never_told_to_call_it():
    session = _session(control_tools=False)
    requests = _work(session)
    last = requests[-1]
    assert "tool_results_to_pointers" in last.result.yields, "the session should prune tool results"
    assert "context_read_artifact" not in {t.name for t in last.neutral.tools}
    # Check the bounded report and the pruned results say where the whole text is kept, naming no tool.
    texts = _texts(last.neutral)
    assert any("not shown here; the whole text is kept in the log" in t for t in texts)
    assert _stubs(last.neutral) and all("kept in the session log, ref=sha256:" in s for s in _stubs(last.neutral))
    assert not any("context_read_artifact" in t for r in requests for t in _texts(r.neutral))
    assert all(session.inspect(r.index).sha256() == r.neutral.sha256() for r in requests)


def test_a_model_with_the_read_tool_is_told_to_call_it():
    session = _session(control_tools=True)
    requests = _work(session)
    last = requests[-1]
    texts = _texts(last.neutral)
    assert any("; the whole text: context_read_artifact ref=" in t for t in texts)
    assert _stubs(last.neutral) and all("read: context_read_artifact ref=sha256:" in s for s in _stubs(last.neutral))


def test_a_log_that_named_the_read_tool_to_every_model_still_rebuilds_byte_for_byte(monkeypatch):
    # Requests recorded before carry no "read_refs" input and named the tool whatever the prefix pinned.
    with monkeypatch.context() as patch:
        patch.setattr(relief_module, "build", partial(relief_module.build, rules=rule_set(4)))
        patch.setattr(requests_module, "_rebuild_inputs", _without_read_refs)
        session = _session(control_tools=False)
        requests = _work(session)
    assert any("context_read_artifact" in t for t in _texts(requests[-1].neutral)), "the old rule named the tool"
    assert all("read_refs" not in e.payload.inputs for e in session.history.events if e.type == "context.request.built")
    assert all(session.inspect(r.index).sha256() == r.neutral.sha256() for r in requests)


def _without_read_refs(result, tail) -> dict:
    inputs = old_rebuild_inputs(views=True, pinned=True)(result, tail)
    return {**inputs, "bounded": "on_arrival", "views": "uncorrected", "pinned": "last"}


def test_a_child_without_the_read_tool_is_told_where_its_material_is_kept():
    session = _session(control_tools=True)
    requests = _work(session)
    pointer = _stubs(requests[-1].neutral)[0].rsplit("ref=", 1)[1].rstrip("]")
    with_tool = session.children.start("check the report", task="Summarise the failures.", pointers=(pointer,))
    without = session.children.start(
        "check the report",
        task="Summarise the failures.",
        pointers=(pointer,),
        agent=replace(sample_agent(), control_tools=False),
    )
    assert f"Material you can read with context_read_artifact: {pointer}" in with_tool.history.events[-1].payload.text
    assert f"Material kept in the session log: {pointer}" in without.history.events[-1].payload.text
