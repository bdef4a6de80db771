"""Errors a new user meets on the first lines they write say what to do instead."""

from __future__ import annotations

import pytest

from contextwright import Engine
from contextwright.errors import UsageError
from contextwright.events import AssistantMessage
from contextwright.runtime.errors import NothingToSend
from contextwright.testing.fakes import open_session


@pytest.mark.parametrize("url", [":memory:", "sqlite:///:memory:"])
def test_an_in_memory_sqlite_url_names_the_memory_store_url(url):
    with pytest.raises(UsageError) as info:
        Engine.open(url)
    assert "memory://" in str(info.value) and "InMemoryEventLog" not in str(info.value)


def test_next_request_on_a_session_with_no_message_says_to_record_one():
    _, session, _ = open_session()
    with pytest.raises(NothingToSend) as info:
        session.next_request()
    message = str(info.value)
    assert "no message yet" in message and "session.user(" in message and "own answer" not in message


def test_next_request_after_the_models_answer_still_says_so():
    _, session, _ = open_session()
    session.user("Hello.")
    session.next_request()
    session.adapter.record_assistant(AssistantMessage(text="Hi."))
    with pytest.raises(NothingToSend, match="the model's own answer"):
        session.next_request()
