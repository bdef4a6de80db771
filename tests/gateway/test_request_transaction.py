"""One request's appends are one transaction: a request that fails midway leaves nothing of it, and its retry records it once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from contextwright.gateway.recorder import Recorder
from contextwright.gateway.wires import parse_request
from contextwright.log import open_log
from contextwright.runtime.engine import Engine
from contextwright.runtime.session import Session
from tests.gateway.test_observe import ANSWER_1, CC_SESSION, FIRST, SECOND, claude_body
from tests.service.conftest import _store_url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    urls = _store_url(request.param, tmp_path_factory, request)
    yield next(urls)
    next(urls, None)


def test_a_request_that_fails_midway_leaves_nothing_and_its_retry_records_it_once(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_log(store_url) as log:
        recorder = Recorder(Engine(log), manage=True)
        first = recorder.record_request(CC_SESSION, parse_request("anthropic", claude_body(FIRST)))
        assert first.built
        recorder.record_answer(first, ANSWER_1)
        before = log.read(CC_SESSION)

        built = Session.next_request

        def fails(self: Session, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("the worker dies while it builds")

        # The tool result and the note of the turns are appended, then the build fails.
        monkeypatch.setattr(Session, "next_request", fails)
        failed = recorder.record_request(CC_SESSION, parse_request("anthropic", claude_body(SECOND)))
        assert not failed.built
        assert log.read(CC_SESSION) == before  # nothing of the request: all of it or none

        monkeypatch.setattr(Session, "next_request", built)
        retried = recorder.record_request(CC_SESSION, parse_request("anthropic", claude_body(SECOND)))
        assert retried.built and retried.request is not None
        events = log.read(CC_SESSION)
    types = [e.type for e in events]
    assert types.count("tool.result") == 1 and types.count("context.request.built") == 2
    assert types.count("framework.history.seen") == 3  # the first turns, the answer, the result: each once
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert log_sessions(store_url) == [CC_SESSION]


def log_sessions(url: str) -> list[str]:
    with open_log(url) as log:
        return [s for s in log.sessions() if s.startswith(CC_SESSION)]
