"""The render memo is a cache of pure functions: what it returns equals what is computed without it."""

from __future__ import annotations

from dataclasses import replace

from contextwright.assembly.assemble import VolatileTail, body_tokens, build
from contextwright.assembly.memo import RenderMemo
from contextwright.assembly.request import canonical_request
from contextwright.budget.allocator import allocate
from contextwright.budget.estimator import HeuristicEstimator
from contextwright.canonical import canonical_json, sha256_tagged
from contextwright.derive._surface import fold
from contextwright.events import AssistantMessage, ToolCall
from contextwright.runtime.estimates import EstimateMemo
from contextwright.testing.fakes import TEST_SECRET, open_session


def _session(turns: int = 3):
    engine, session, _ = open_session()
    for turn in range(turns):
        session.user(f"Turn {turn}: fix the rounding in billing and run the tests.")
        call = ToolCall(id=f"c{turn}", name="read_file", arguments={"path": f"src/f{turn}.py", "lines": [1, 2.5, True]})
        session.adapter.record_assistant(AssistantMessage(text="Reading.", tool_calls=(call,)))
        session.tool_result(call.id, f"def f{turn}(x):\n    return x\n" * 10, exit_code=0)
        session.next_request()
        session.adapter.record_assistant(AssistantMessage(text=f"Done {turn}."))
    session.user("Summarise.")
    return engine, session


def test_canonical_request_is_the_canonical_json_of_the_whole_request():
    engine, session = _session()
    request = session.next_request().neutral
    assert request.tools and request.system  # the spliced prefix is not empty
    with_metadata = replace(request, metadata={"system": [], "tools": [], "note": "x"})
    for value in (request, with_metadata, replace(request, tools=(), system=())):
        assert canonical_request(value) == canonical_json(value.to_dict())
    memo = RenderMemo()
    assert memo.canonical(request) == memo.canonical(request) == canonical_json(request.to_dict())
    assert memo.canonical(with_metadata) == canonical_json(with_metadata.to_dict())
    engine.close()


def test_builds_with_the_memo_size_and_hash_as_builds_without_it():
    engine, session = _session()
    plan = session.setup.plan
    counts = EstimateMemo()
    memo = RenderMemo()
    estimator = HeuristicEstimator()
    for factor in (1.0, 1.0, 1.25, 1.0):  # a changed correction factor is a new counter: nothing stale is reused
        surface = fold(session.id, session.history.events)
        inputs = dict(plan=plan, allocation=allocate(plan), surface=surface, tail=VolatileTail())
        counter = counts.counter(estimator, plan.model.id, factor=factor)
        kept = build(**inputs, secret=TEST_SECRET, estimate=counter, memo=memo)
        plain = build(**inputs, secret=TEST_SECRET, estimate=counter)
        assert kept == replace(plain, request=kept.request)
        assert kept.request == plain.request and memo.sha256(kept.request) == plain.request.sha256()
        raw = counts.counter(estimator, plan.model.id, factor=factor)
        assert body_tokens(kept.request.messages, raw, memo) == body_tokens(plain.request.messages, raw) == kept.body_tokens
        session.user(f"And then {factor}.")
    engine.close()


def test_the_resumed_hash_equals_the_hash_of_the_whole_canonical_request():
    engine, session = _session(turns=4)
    request = session.next_request().neutral
    messages = request.messages
    assert len(messages) > 6
    changed = replace(messages[3], parts=messages[4].parts)
    variants = [
        request,
        replace(request, messages=messages[:-2]),  # fewer messages: resumes inside the last list
        request,  # and more again
        replace(request, messages=(*messages[:3], changed, *messages[4:])),  # one changed in the middle
        replace(request, stable_messages=request.stable_messages + 1),  # after the messages: same opening
        replace(request, epoch=request.epoch + 1),  # before them: a new opening
        replace(request, metadata={"note": "x"}),
        replace(request, messages=()),
        replace(request, messages=messages[:1]),
        request,
    ]
    memo = RenderMemo()
    for variant in variants:
        assert memo.sha256(variant) == variant.sha256() == sha256_tagged(canonical_json(variant.to_dict()))
    engine.close()


def test_the_current_counter_is_the_last_one_handed_out_for_the_same_state():
    counts = EstimateMemo()
    estimator = HeuristicEstimator()
    assert counts.current(estimator, "claude-sonnet-4-6", factor=1.0) is None
    counter = counts.counter(estimator, "claude-sonnet-4-6", factor=1.0)
    assert counts.current(estimator, "claude-sonnet-4-6", factor=1.0) is counter
    assert counts.current(estimator, "claude-sonnet-4-6", factor=1.25) is None
    assert counts.current(estimator, "gpt-4.1", factor=1.0) is None
    assert counts.current(HeuristicEstimator(), "claude-sonnet-4-6", factor=1.0) is None
    text = "counted once"
    assert counter(text) == counts.current(estimator, "claude-sonnet-4-6", factor=1.0)(text)
    assert counts.counter(estimator, "claude-sonnet-4-6", factor=1.25) is not counter
    assert counts.current(estimator, "claude-sonnet-4-6", factor=1.0) is None
