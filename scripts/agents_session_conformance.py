"""Run the OpenAI Agents SDK's own session tests against ``ContextwrightSession``.

A pytest plugin: before the SDK's tests are collected it replaces ``agents.SQLiteSession``
with a ``ContextwrightSession`` that takes ``SQLiteSession``'s constructor, so every test
written for the SDK's reference session runs against the event log instead. The SDK's
tests are not shipped in its wheel; take them from a checkout of openai-agents-python::

    git clone https://github.com/openai/openai-agents-python && cd openai-agents-python
    pip install pytest-asyncio pytest-mock inline-snapshot   # the SDK's own test dependencies
    PYTHONPATH=/path/to/contextwright/scripts python -m pytest -p agents_session_conformance \\
        tests/memory/test_session.py tests/memory/test_session_limit.py \\
        tests/memory/test_session_context_wrapper.py tests/utils/test_simple_session.py

Without the plugin the same command runs the tests against ``SQLiteSession`` itself.
The tests that read ``SQLiteSession``'s internals (its connections, locks, corrupt rows,
its closed-session message) cannot pass against another class; docs/integrations.md
lists the result.
"""

from __future__ import annotations

from typing import Any


def pytest_configure(config: Any) -> None:
    import agents
    import agents.memory

    from contextwright.integrations.agents import ContextwrightSession

    class SQLiteShapedSession(ContextwrightSession):
        """``ContextwrightSession`` with ``SQLiteSession``'s constructor (the table names mean nothing to a log)."""

        def __init__(
            self,
            session_id: str,
            db_path: Any = ":memory:",
            sessions_table: str = "agent_sessions",
            messages_table: str = "agent_messages",
            session_settings: Any = None,
        ) -> None:
            super().__init__(session_id, db_path, session_settings=session_settings)

    agents.SQLiteSession = SQLiteShapedSession  # type: ignore[misc]
    agents.memory.SQLiteSession = SQLiteShapedSession  # type: ignore[misc]
