"""ContextwrightSession behaves like the SDK's own SQLiteSession (ported from the SDK's tests/memory/test_session.py
and test_session_limit.py), on SQLite and PostgreSQL, and never deletes anything from the log."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("agents", reason="needs the OpenAI Agents SDK (the agents extra)")

from agents import Agent, RunConfig, Runner, SessionSettings, SQLiteSession
from agents.memory import Session as SessionProtocol
from agents.testing import ScriptedModel, assistant_message

from contextwright.integrations.agents import ContextwrightSession
from contextwright.integrations.errors import FrameworkSessionClosed
from contextwright.log import open_log

Factory = Callable[..., Any]


@pytest.fixture(params=["sdk-sqlite", "cw-sqlite", "cw-postgres"])
def make_session(request: pytest.FixtureRequest, tmp_path) -> Iterator[Factory]:
    """Sessions of one kind sharing one store; the SDK's SQLiteSession is the reference."""
    opened: list[Any] = []
    if request.param == "sdk-sqlite":
        path = tmp_path / "sdk.db"

        def make(session_id: str, **options: Any) -> Any:
            opened.append(SQLiteSession(session_id, path, **options))
            return opened[-1]

    else:
        if request.param == "cw-sqlite":
            log = open_log(f"sqlite:///{tmp_path / 'cw.db'}")
        else:
            dsn = request.getfixturevalue("postgres_dsn")
            schema = request.getfixturevalue("postgres_schema")
            log = open_log(f"{dsn}?schema={schema}")

        def make(session_id: str, **options: Any) -> Any:
            opened.append(ContextwrightSession(session_id, log, **options))
            return opened[-1]

    yield make
    for session in opened:
        session.close()
    if request.param != "sdk-sqlite":
        log.close()


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def _conversation(n: int) -> list[dict[str, str]]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"Message {i}"} for i in range(n)]


def test_is_a_session_by_the_sdk_protocol(make_session):
    assert isinstance(make_session("s"), SessionProtocol)


def test_pop_item_is_last_in_first_out_and_none_when_empty(make_session):
    session = make_session("pop_test")

    async def scenario():
        assert await session.pop_item() is None
        items = [
            {"role": "user", "content": "Hello"},
            {"role": "assistant", "content": "Hi there!"},
            {"role": "user", "content": "How are you?"},
        ]
        await session.add_items(items)
        assert await session.get_items() == items
        # Check: items come back newest first, then None.
        assert await session.pop_item() == items[2]
        assert (await session.get_items())[-1]["content"] == "Hi there!"
        assert await session.pop_item() == items[1]
        assert await session.pop_item() == items[0]
        assert await session.pop_item() is None
        assert await session.get_items() == []

    run(scenario())


def test_sessions_are_isolated_by_id(make_session):
    one, two = make_session("session_1"), make_session("session_2")

    async def scenario():
        await one.add_items([{"role": "user", "content": "one"}])
        await two.add_items([{"role": "user", "content": "two"}, {"role": "assistant", "content": "two!"}])
        assert (await one.pop_item())["content"] == "one"
        assert await one.get_items() == []
        assert [i["content"] for i in await two.get_items()] == ["two", "two!"]
        await two.clear_session()
        assert await two.get_items() == []

    run(scenario())


def test_limit_returns_the_latest_n_in_order(make_session):
    session = make_session("count_test")
    items = _conversation(6)

    async def scenario():
        await session.add_items(items[:2])
        await session.add_items(items[2:])
        assert await session.get_items() == items
        assert await session.get_items(limit=2) == items[-2:]
        assert await session.get_items(limit=4) == items[-4:]
        assert await session.get_items(limit=10) == items
        assert await session.get_items(limit=0) == []
        # A negative limit is SQL's LIMIT -1 in the SDK's session: no limit.
        assert await session.get_items(limit=-1) == items

    run(scenario())


def test_settings_limit_applies_and_an_explicit_limit_wins(make_session):
    assert make_session("plain").session_settings == SessionSettings()
    session = make_session("limited", session_settings={"limit": 3})
    assert session.session_settings == SessionSettings(limit=3)

    async def scenario():
        await session.add_items(_conversation(5))
        assert [i["content"] for i in await session.get_items()] == ["Message 2", "Message 3", "Message 4"]
        assert [i["content"] for i in await session.get_items(limit=1)] == ["Message 4"]

    run(scenario())
    with pytest.raises(TypeError, match="Unknown session settings"):
        make_session("bad", session_settings={"limt": 3})


def test_clear_then_add_starts_afresh(make_session):
    session = make_session("clear_test")

    async def scenario():
        await session.add_items(_conversation(3))
        await session.clear_session()
        assert await session.get_items() == []
        await session.add_items([{"role": "user", "content": "again"}])
        assert await session.get_items() == [{"role": "user", "content": "again"}]
        assert (await session.pop_item())["content"] == "again"

    run(scenario())


def test_unicode_and_sql_special_characters_round_trip(make_session):
    session = make_session("unicode'; DROP TABLE agent_messages; --")
    items = [
        {"role": "user", "content": "こんにちは 😊👍"},
        {"role": "assistant", "content": 'O\'Reilly "quoted" ; DROP TABLE x; -- \\ \n\t \u2028'},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"nested": {"a": [1, 2.5, null, true]}}'},
    ]

    async def scenario():
        await session.add_items(items)
        assert await session.get_items() == items

    run(scenario())


def test_concurrent_adds_keep_every_item(make_session):
    session = make_session("concurrent_test")

    async def scenario():
        await asyncio.gather(*(session.add_items([{"role": "user", "content": f"m{i}"}]) for i in range(10)))
        stored = await session.get_items()
        assert sorted(i["content"] for i in stored) == sorted(f"m{i}" for i in range(10))

    run(scenario())


@pytest.mark.parametrize("runner_method", ["run", "run_sync", "run_streamed"])
def test_runner_prepends_history_on_the_second_turn(make_session, runner_method):
    session = make_session("runner_test")
    model = ScriptedModel()
    agent = Agent(name="test", model=model)

    async def call(text: str) -> Any:
        if runner_method == "run":
            return await Runner.run(agent, text, session=session)
        if runner_method == "run_sync":
            return await asyncio.to_thread(lambda: Runner.run_sync(agent, text, session=session))
        result = Runner.run_streamed(agent, text, session=session)
        async for _ in result.stream_events():
            pass
        return result

    async def scenario():
        model.enqueue([assistant_message("San Francisco")])
        assert (await call("What city is the Golden Gate Bridge in?")).final_output == "San Francisco"
        model.enqueue([assistant_message("California")])
        assert (await call("What state is it in?")).final_output == "California"
        # Check: the second call saw the first exchange, and the session holds both turns in order.
        texts = [str(i.get("content")) for i in model.calls[-1].input]
        assert "What city is the Golden Gate Bridge in?" in texts[0]
        stored = await session.get_items()
        assert stored[0] == {"role": "user", "content": "What city is the Golden Gate Bridge in?"}
        assert stored[2] == {"role": "user", "content": "What state is it in?"}
        assert len(stored) == 4

    run(scenario())


def test_runner_settings_override_limits_the_history(make_session):
    session = make_session("settings_override")
    model = ScriptedModel()
    agent = Agent(name="test", model=model)

    async def scenario():
        await session.add_items(_conversation(6))
        model.enqueue([assistant_message("ok")])
        await Runner.run(agent, "new", session=session, run_config=RunConfig(session_settings=SessionSettings(limit=2)))
        # Check: two history items plus the new input reached the model.
        assert [i.get("content") for i in model.calls[-1].input] == ["Message 4", "Message 5", "new"]

    run(scenario())


def test_pop_and_clear_are_events_and_the_log_keeps_every_item(tmp_path):
    log = open_log(f"sqlite:///{tmp_path / 'cw.db'}")
    session = ContextwrightSession("audit", log)
    items = _conversation(4)

    async def scenario():
        await session.add_items(items)
        await session.pop_item()
        await session.clear_session()
        await session.add_items([{"role": "user", "content": "after"}])

    run(scenario())
    events = log.read("audit")
    assert [e.type for e in events] == [
        "framework.items.added",
        "framework.item.popped",
        "framework.items.cleared",
        "framework.items.added",
    ]
    # Check: the popped and cleared items are still stored, verbatim.
    assert list(events[0].payload.items) == items
    assert events[1].payload.position == 3 and events[2].payload.count == 3
    # Check: a second session object on the same store folds to the same items.
    assert run(ContextwrightSession("audit", log).get_items()) == [{"role": "user", "content": "after"}]
    log.close()


def test_a_closed_session_refuses_with_a_typed_error():
    session = ContextwrightSession("closed")
    session.close()
    with pytest.raises(FrameworkSessionClosed, match="closed") as info:
        run(session.add_items([]))
    # Check: callers written for SQLiteSession catch RuntimeError.
    assert isinstance(info.value, RuntimeError)


def test_items_without_a_json_form_are_refused_and_nothing_is_stored():
    from contextwright.errors import MalformedPayload

    session = ContextwrightSession("bad")
    with pytest.raises(MalformedPayload, match="no JSON form"):
        run(session.add_items([{"role": "user", "content": {1, 2}}]))
    assert run(session.get_items()) == []


@pytest.mark.parametrize("operation", ["add", "pop", "clear"])
def test_a_cancelled_write_finishes_before_the_cancellation_propagates(tmp_path, operation):
    import threading

    from contextwright.log.base import EventLog

    log = open_log(f"sqlite:///{tmp_path / 'cw.db'}")
    session = ContextwrightSession("cancel", log)
    item = {"role": "user", "content": "once"}
    if operation != "add":
        run(session.add_items([item]))
    started, release = threading.Event(), threading.Event()
    real_append = EventLog.append

    def slow_append(self, *args, **kwargs):
        started.set()
        release.wait(10)
        return real_append(self, *args, **kwargs)

    expected = {"add": "framework.items.added", "pop": "framework.item.popped", "clear": "framework.items.cleared"}[operation]

    async def scenario():
        EventLog.append = slow_append
        try:
            write = {"add": lambda: session.add_items([item]), "pop": session.pop_item, "clear": session.clear_session}[operation]
            task = asyncio.ensure_future(write())
            await asyncio.to_thread(started.wait, 10)
            task.cancel()
            await asyncio.sleep(0)
            threading.Timer(0.2, release.set).start()
            with pytest.raises(asyncio.CancelledError):
                await task
            # Check: the cancellation arrives only once the write is in the log.
            assert log.read("cancel")[-1].type == expected
        finally:
            release.set()
            EventLog.append = real_append

    run(scenario())
    # Check: the write happened although its caller was cancelled.
    assert run(session.get_items()) == ([item] if operation == "add" else [])
    log.close()


def test_sqlite_session_constructor_spelling_is_accepted(tmp_path):
    session = ContextwrightSession("spelling", db_path=tmp_path / "items.db", session_settings=SessionSettings(limit=1))
    run(session.add_items(_conversation(2)))
    session.close()
    # Check: the items went to that SQLite file, and a new session object reads them back.
    again = ContextwrightSession("spelling", f"sqlite:///{tmp_path / 'items.db'}")
    assert run(again.get_items()) == _conversation(2)
    again.close()
