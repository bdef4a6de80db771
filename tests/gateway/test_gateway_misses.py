"""Cache misses of gateway-observed sessions: every uncached token of the recorded runs named, and what the client changed."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from test_observe import ANSWER_1, ANSWER_2, CC_SESSION, FIRST, SECOND, TOOLS, claude_body, post
from typer.testing import CliRunner

from contextwright.cli import app as cli_app
from contextwright.cli._misses import attributed_summary
from contextwright.runtime.engine import Engine
from contextwright.telemetry.misses import CLIENT_CHANGES, ClientRequest, SessionMisses, client_misses, client_requests
from contextwright.telemetry.records import store_summary
from contextwright.testing.upstream import Reply, anthropic_message


def test_a_recorded_gateway_run_has_every_uncached_token_named(gateway: Any) -> None:
    gateway.replies(Reply(body=ANSWER_1), Reply(body=ANSWER_2))
    post(gateway.url, claude_body(FIRST))
    post(gateway.url, claude_body(SECOND))
    gateway.settled(CC_SESSION, 2)
    (summary,) = store_summary(gateway.log)
    attributed = attributed_summary(Engine(gateway.log), summary)
    assert attributed.uncached_input_tokens and attributed.uncached_input_tokens > 0
    assert sum(attributed.uncached_by_cause.values()) == attributed.uncached_input_tokens
    assert "new_content" in attributed.uncached_by_cause


def test_the_clients_own_changes_are_named_from_its_consecutive_bodies() -> None:
    # Claude Code's bodies as the gateway receives them: a turn, the tool result, then a mode
    # switch that rewrites the tool array, then a request that strips the earlier thinking.
    t0 = datetime(2026, 8, 1, 12, 0, tzinfo=UTC)
    # Deep copies: the message lists are shared with the observe tests.
    switched = copy.deepcopy(claude_body(SECOND))
    switched["tools"] = [*TOOLS, {"name": "ExitPlanMode", "description": "Leave plan mode.", "input_schema": {"type": "object"}}]
    stripped = copy.deepcopy(switched)
    stripped["messages"][1]["content"] = [c for c in stripped["messages"][1]["content"] if c["type"] != "thinking"]
    stripped["model"] = "claude-opus-4-6"  # keeps earlier thinking, so stripping it is the client's doing
    bodies = [copy.deepcopy(claude_body(FIRST)), copy.deepcopy(claude_body(SECOND)), switched, stripped]
    for body in bodies:
        body["model"] = stripped["model"]
        # Claude Code marks its last message for the cache.
        last = body["messages"][-1]
        if isinstance(last["content"], str):
            last["content"] = [{"type": "text", "text": last["content"]}]
        last["content"][-1] = {**last["content"][-1], "cache_control": {"type": "ephemeral"}}
    session = SessionMisses(count_tokens=lambda text: max(1, len(text) // 4))
    found = [session.add(t0 + timedelta(seconds=20 * i), body) for i, body in enumerate(bodies)]
    assert [f.main_cause for f in found] == ["new_content", "new_content", "tools_changed", "thinking_stripped"]
    for attribution in found:
        assert sum(attribution.by_cause.values()) == attribution.uncached_tokens


def _marked(body: dict[str, Any]) -> dict[str, Any]:
    """Claude Code marks its last message for the cache."""
    body = copy.deepcopy(body)
    last = body["messages"][-1]
    if isinstance(last["content"], str):
        last["content"] = [{"type": "text", "text": last["content"]}]
    last["content"][-1] = {**last["content"][-1], "cache_control": {"type": "ephemeral"}}
    return body


def _client_session() -> list[tuple[dict[str, Any], set[str]]]:
    """A Claude Code session whose client changes its prefix or history between requests: each body, and what it changed."""
    plan_mode = [*TOOLS, {"name": "ExitPlanMode", "description": "Leave plan mode.", "input_schema": {"type": "object"}}]
    answer_n = {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}
    first = claude_body(copy.deepcopy(FIRST))
    second = claude_body(copy.deepcopy(SECOND))
    # (a) a mode switch rewrites the tool array
    tools = {**copy.deepcopy(second), "tools": plan_mode}
    tools["messages"] += [answer_n, {"role": "user", "content": "Plan a test for it."}]
    # (b) the system text is edited
    system = copy.deepcopy(tools)
    system["system"] = [{"type": "text", "text": "You are a careful coding agent.", "cache_control": {"type": "ephemeral"}}]
    system["messages"] += [answer_n, {"role": "user", "content": "Write it."}]
    # (c) the model is switched (to one that keeps earlier thinking, so stripping it is the client's doing)
    model = {**copy.deepcopy(system), "model": "claude-opus-4-6"}
    model["messages"] += [answer_n, {"role": "user", "content": "Run it."}]
    # (d) the earlier thinking is stripped
    stripped = copy.deepcopy(model)
    stripped["messages"][1]["content"] = [c for c in stripped["messages"][1]["content"] if c["type"] != "thinking"]
    stripped["messages"] += [answer_n, {"role": "user", "content": "Commit it."}]
    # (d) an earlier message is edited
    edited = copy.deepcopy(stripped)
    edited["messages"][2]["content"][0]["content"] = "README.md\nsrc\ntests\n" * 2000
    edited["messages"] += [answer_n, {"role": "user", "content": "And push."}]
    return [
        (_marked(first), {"new_content"}),
        (_marked(second), {"new_content"}),
        (_marked(tools), {"tools_changed"}),
        (_marked(system), {"system_changed"}),
        (_marked(model), {"model_switch"}),
        (_marked(stripped), {"thinking_stripped"}),
        (_marked(edited), {"message_edited"}),
    ]


def _client_requests(gateway: Any, count: int) -> list[ClientRequest]:
    def found() -> list[ClientRequest] | None:
        events = [e for s in gateway.log.sessions() for e in gateway.log.read(s)]
        requests = client_requests(events).get(CC_SESSION, [])
        return requests if len(requests) >= count else None

    return gateway.wait_for(found)  # type: ignore[no-any-return]


def test_what_the_client_changed_is_named_across_the_runs_it_opened(gateway: Any) -> None:
    session = _client_session()
    gateway.replies(Reply(body=ANSWER_1), *[Reply(body=anthropic_message({"type": "text", "text": "Done."}))] * 6)
    for body, _ in session:
        assert post(gateway.url, body).status_code == 200
    requests = _client_requests(gateway, len(session))
    # Every body is rebuilt from the log exactly as the client sent it, whichever run it went to.
    assert [r.body for r in requests] == [json.loads(json.dumps(body)) for body, _ in session]
    assert [r.number for r in requests] == list(range(1, len(session) + 1))
    # New tools or system text go on in the same run (a new epoch); the model switch and the edited
    # message open runs; the stripped thinking does not (the gateway's fingerprints leave thinking out).
    runs = [r.session_id.removeprefix(CC_SESSION) for r in requests]
    assert runs == ["", "", "", "", "~2", "~2", "~3"]
    assert all(r.first_byte_after is not None for r in requests)

    found = client_misses(requests, count_tokens=lambda text: max(1, len(text) // 4))
    for (request, attribution), (_, expected) in zip(found, session, strict=True):
        client_causes = set(attribution.by_cause) & CLIENT_CHANGES
        assert client_causes == expected - {"new_content"}, (request.number, dict(attribution.by_cause))
        assert attribution.main_cause in expected | {"new_content"}
        assert sum(attribution.by_cause.values()) == attribution.uncached_tokens > 0
        assert all(tokens > 0 for tokens in attribution.by_cause.values())  # 0 uncached tokens without a cause
    for (_, attribution), (_, expected) in zip(found[2:], session[2:], strict=True):
        (change,) = expected
        assert attribution.by_cause[change] > 0

    # Where users look: stats --misses names them, per request and run.
    result = CliRunner().invoke(cli_app, ["stats", str(gateway.store), "--misses"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert f"gateway session {CC_SESSION}: 7 client request(s) over 3 run(s)" in text
    changes = [(3, "", "tools changed"), (4, "", "system changed"), (5, "~2", "model switch")]
    changes += [(6, "~2", "thinking stripped"), (7, "~3", "message edited")]
    for number, run, change in changes:
        assert f"request {number} ({CC_SESSION}{run}): {change}," in text


def test_a_restarted_gateway_stores_the_next_body_against_the_last_one_in_the_log(make_gateway: Any) -> None:
    first = make_gateway()
    first.replies(Reply(body=ANSWER_1), Reply(body=anthropic_message({"type": "text", "text": "Done."})))
    session = _client_session()
    for body, _ in session[:2]:
        post(first.url, body)
    _client_requests(first, 2)
    # A second gateway on the same store knows nothing of the key in memory: it reads the last body back.
    from contextwright.gateway import GatewayConfig, create_gateway_app
    from contextwright.testing.service import serving
    from contextwright.testing.upstream import FakeUpstream

    upstream = FakeUpstream()
    upstream.script = lambda received: Reply(body=anthropic_message({"type": "text", "text": "Done."}))
    with serving(upstream) as up_url:
        config = GatewayConfig(store=str(first.store), anthropic_upstream=up_url, openai_upstream=up_url, mode="observe")
        with serving(create_gateway_app(config)) as url:
            assert post(url, session[2][0]).status_code == 200
            requests = _client_requests(first, 3)
    assert requests[2].body == json.loads(json.dumps(session[2][0]))
    stored = [e.payload for s in first.log.sessions() for e in first.log.read(s) if e.type == "gateway.request.received"]
    last = max(stored, key=lambda p: p.number)
    assert last.number == 3 and last.base == 2  # numbered on from the log, stored against the last body in it
    assert "messages" in last.lists and "system" not in last.fields  # a change, not the whole body


def test_a_body_without_canonical_json_is_recorded_without_its_copy(gateway: Any) -> None:
    gateway.replies(Reply(body=ANSWER_1))
    # json.dumps writes NaN, and json.loads reads it: the gateway gets a body canonical JSON refuses.
    assert post(gateway.url, {**claude_body(copy.deepcopy(FIRST)), "temperature": float("nan")}).status_code == 200
    types = gateway.settled(CC_SESSION, 1)
    assert "context.request.built" in types and "gateway.request.received" not in types
