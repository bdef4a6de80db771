"""Two requests of one session at once in manage mode: the second is recorded only after the first's answer."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from contextwright.gateway.recorder import Recorder
from contextwright.testing.upstream import Reply, anthropic_message
from tests.gateway.test_observe import CC_SESSION, FIRST, claude_body, post


def test_a_request_arriving_while_another_of_its_session_records_waits_for_that_ones_answer(
    make_gateway: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    gateway = make_gateway(mode="manage")
    gateway.replies(
        Reply(body=anthropic_message({"type": "text", "text": "One."})),
        Reply(body=anthropic_message({"type": "text", "text": "Two."})),
    )
    calls: list[str] = []
    recording = threading.Event()
    record_request, record_answer = Recorder.record_request, Recorder.record_answer

    def slow_request(self: Recorder, *args: Any, **kwargs: Any) -> Any:
        calls.append("request")
        if len(calls) == 1:
            recording.set()
            time.sleep(0.4)  # the first request is still being recorded when the second arrives
        return record_request(self, *args, **kwargs)

    def answer(self: Recorder, *args: Any, **kwargs: Any) -> Any:
        result = record_answer(self, *args, **kwargs)
        calls.append("answer")
        return result

    monkeypatch.setattr(Recorder, "record_request", slow_request)
    monkeypatch.setattr(Recorder, "record_answer", answer)
    responses: list[Any] = []
    first = threading.Thread(target=lambda: responses.append(post(gateway.url, claude_body(FIRST, stream=False))))
    first.start()
    assert recording.wait(10)
    later = [*FIRST, {"role": "assistant", "content": "One."}, {"role": "user", "content": "And there?"}]
    second = post(gateway.url, claude_body(later, stream=False))
    first.join(10)
    assert second.status_code == 200 and [r.status_code for r in responses] == [200]
    gateway.settled(CC_SESSION, 2)
    assert calls == ["request", "answer", "request", "answer"]  # never the second request before the first's answer
    types = gateway.types(CC_SESSION)
    assert types.count("context.request.built") == 2 and types.count("message.assistant") == 2
    assert gateway.log.sessions() == [CC_SESSION]  # one run: the second request continued the first's history
