"""Reopen a recorded session from its log alone (for inspect, stats and manual compaction)."""

from __future__ import annotations

from contextwright.errors import UsageError
from contextwright.planner import ContextPlanner
from contextwright.runtime.core import Resumed
from contextwright.runtime.engine import Engine
from contextwright.runtime.session import Session
from contextwright.runtime.spec import AgentSpec


def reopen(engine: Engine, session_id: str) -> Session:
    """A session with the agent and model of its latest plan, as recorded in the log."""
    events = engine.log.read(session_id)
    if not events:
        known = engine.log.sessions()
        hint = f"; sessions here: {', '.join(known[:5])}" + (" …" if len(known) > 5 else "") if known else "; the store is empty"
        raise UsageError(f"no session {session_id!r} in this store{hint}")
    # One read and one planning pass, with the session's own secret: the session adopts both.
    plan = ContextPlanner.from_events(
        session_id, events, estimator=engine.estimator, secret=engine.secret_for(session_id), budgets=engine.budgets
    ).current
    if plan is None:
        raise UsageError(f"session {session_id!r} has no context plan yet: no request was ever built for it")
    prefix = plan.prefix
    agent = AgentSpec(
        policy=prefix.policy.text,
        instructions=prefix.instructions.text,
        tools=prefix.tools,
        framing=prefix.framing.text,
        control_tools=False,  # the pinned tools already include them
        cache_ttl=plan.cache_ttl,
    )
    return engine.session(
        session_id, agent=agent, model=plan.model, budgets=plan.budgets, resumed=Resumed(history=events, plan=plan)
    )
