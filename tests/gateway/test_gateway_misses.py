"""Cache misses of gateway-observed sessions: every uncached token of the recorded runs named, and what the client changed."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from test_observe import ANSWER_1, ANSWER_2, CC_SESSION, FIRST, SECOND, TOOLS, claude_body, post

from contextwright.cli._misses import attributed_summary
from contextwright.runtime.engine import Engine
from contextwright.telemetry.misses import SessionMisses
from contextwright.telemetry.records import store_summary
from contextwright.testing.upstream import Reply


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
