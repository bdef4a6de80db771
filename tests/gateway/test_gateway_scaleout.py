"""Two gateway processes on one store, behind one client: a session alternates between them, one is killed mid-stream.

The requests of one Claude Code session go to worker A, then B, then A; A is killed
(SIGKILL, by its PID) while it streams the third answer. No part of that answer is in
the log; the client's retry through B records the whole answer once, in the same run,
and the next request through B continues it.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from typer.testing import CliRunner

from contextwright.cli import app as cli_app
from contextwright.errors import UsageError
from contextwright.log import open_log
from contextwright.testing.service import free_port, serving
from contextwright.testing.sse import stream_bytes
from contextwright.testing.upstream import FakeUpstream, Reply, anthropic_message
from tests.gateway.test_observe import ANSWER_1, ANSWER_2, CC_SESSION, FIRST, KEY, SECOND, claude_body
from tests.service.conftest import _store_url

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
PARTIAL = "The first half of an answer"
ANSWER_WAIT = 60.0
"""Seconds a worker waits for the other's recording of an answer, and the test for the log: generous, as CI runs
the whole suite on 2 cores (a fixed few seconds ran out there)."""
WHOLE = anthropic_message({"type": "text", "text": "All 42 tests pass."})
LAST = anthropic_message({"type": "text", "text": "You are welcome."})


class GatewayProcess:
    """``contextwright gateway`` in its own process on a loopback port, to kill by its PID."""

    def __init__(self, store: str, upstream: str, mode: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.stderr = tempfile.TemporaryFile(mode="a+b")
        command = [sys.executable, "-m", "contextwright", "gateway", "--store", store, "--port", str(self.port)]
        command += ["--mode", mode, "--anthropic-upstream", upstream, "--openai-upstream", upstream]
        command += ["--answer-wait", str(ANSWER_WAIT)]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=self.stderr)

    def wait_ready(self, timeout: float = 60.0) -> GatewayProcess:
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"the gateway exited at start: {self.errors()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the gateway did not start in {timeout} s") from None
                time.sleep(0.05)

    def errors(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    urls = _store_url(request.param, tmp_path_factory, request)
    yield next(urls)
    next(urls, None)


def headers() -> dict[str, str]:
    return {"x-api-key": KEY, "anthropic-version": "2023-06-01", "content-type": "application/json"}


def send(url: str, body: dict[str, Any]) -> httpx2.Response:
    return httpx2.post(url + "/v1/messages", content=json.dumps(body).encode(), headers=headers(), timeout=60)


def settled(log: Any, *, answers: int) -> list[Any]:
    """The session's events once ``answers`` answers and the note of the last one are in the log (polled, up to ANSWER_WAIT)."""
    deadline = time.monotonic() + ANSWER_WAIT
    while True:
        events = log.read(CC_SESSION)
        types = [e.type for e in events]
        if types.count("model.response") >= answers and types[-1] == "framework.history.seen":
            return events  # type: ignore[no-any-return]
        if time.monotonic() > deadline:
            raise AssertionError(f"the gateways did not record {answers} answers in {ANSWER_WAIT} s: {types}")
        time.sleep(0.05)


@pytest.mark.parametrize("mode", ["manage", "observe"])
def test_two_gateways_share_a_session_and_a_killed_one_leaves_no_partial_answer(store_url: str, mode: str) -> None:
    upstream = FakeUpstream()
    partial = anthropic_message({"type": "text", "text": PARTIAL + " that never ends." * 20})
    replies = [Reply(body=ANSWER_1), Reply(body=ANSWER_2), Reply(body=partial), Reply(body=WHOLE), Reply(body=LAST)]
    upstream.script = lambda received: replies.pop(0)
    third = SECOND + [{"role": "assistant", "content": ANSWER_2["content"]}, {"role": "user", "content": "Run the tests."}]
    fourth = third + [{"role": "assistant", "content": WHOLE["content"]}, {"role": "user", "content": "Thanks."}]
    with serving(upstream) as up:
        a, b = GatewayProcess(store_url, up, mode), GatewayProcess(store_url, up, mode)
        log = None
        try:
            a.wait_ready(), b.wait_ready()
            # Each request goes out as soon as the answer before it is read: A, B, then A again.
            assert send(a.url, claude_body(FIRST)).status_code == 200
            assert send(b.url, claude_body(SECOND)).status_code == 200

            # A streams the third answer slowly and is killed once the client has its first bytes.
            upstream.event_delay = 0.1
            got = b""
            with pytest.raises(httpx2.HTTPError):  # the cut comes while the stream is read
                with httpx2.stream(
                    "POST", a.url + "/v1/messages", content=json.dumps(claude_body(third)).encode(), headers=headers(), timeout=60
                ) as response:
                    assert response.status_code == 200
                    for chunk in response.iter_raw():
                        got += chunk
                        if got.count(b"text_delta") >= 4 and a.process.poll() is None:
                            a.kill()
            assert a.process.returncode == -signal.SIGKILL
            upstream.event_delay = 0.0

            log = open_log(store_url)
            assert b'"The fir"' in got and b'"st half"' in got  # the client had the start of the answer
            assert not any("The first" in repr(e.payload) for e in log.read(CC_SESSION))
            assert [e.type for e in log.read(CC_SESSION)].count("message.assistant") == 2

            # The client's retry through B: the same session, its run goes on, the whole answer once.
            retried = send(b.url, claude_body(third))
            assert retried.status_code == 200 and retried.content == stream_bytes(WHOLE), b.errors()[-3000:]
            assert send(b.url, claude_body(fourth)).status_code == 200
            # The last answer and the note of its fingerprint are recorded after the client has its last byte.
            events = settled(log, answers=4)
            types = [e.type for e in events]
            assert [s for s in log.sessions() if s.startswith(CC_SESSION)] == [CC_SESSION]  # one run: none was rewritten
            answers = [e.payload.text for e in events if e.type == "message.assistant"]
            assert answers == ["", "A README and a src folder.", "All 42 tests pass.", "You are welcome."]
            assert [e.payload.text for e in events if e.type == "message.user"] == ["What is here?", "Run the tests.", "Thanks."]
            assert types.count("tool.result") == 1
            usage = [e.payload.request_index for e in events if e.type == "model.response"]
            if mode == "observe":
                assert types.count("context.request.built") == 4 and usage == [0, 1, 2, 3]
            else:
                # The retry is built again from the log on B, like any managed request: A's request 2 went
                # unanswered, and request 3 is what B sent.
                assert types.count("context.request.built") == 5 and usage == [0, 1, 3, 4]
                retry = upstream.conversations[3]
                assert retry.body != json.dumps(claude_body(third)).encode()
                inspected = CliRunner().invoke(
                    cli_app, ["inspect", store_url, "-s", CC_SESSION, "-r", "3", "--wire", "anthropic"]
                )
                assert inspected.exit_code == 0, inspected.output
                rebuilt = json.loads(inspected.output)
                assert {k: rebuilt[k] for k in ("system", "messages", "tools")} == {
                    k: retry.json[k] for k in ("system", "messages", "tools")
                }
        finally:
            for worker in (a, b):
                worker.stop()
            if log is not None:
                log.close()
        assert "Traceback" not in b.errors(), b.errors()[-3000:]


def test_a_worker_waits_for_the_answer_another_worker_is_recording(tmp_path: Any) -> None:
    """The client has the answer and sends its next request to worker B before worker A recorded it: B waits for A."""
    from contextwright.gateway.recorder import Recorder
    from contextwright.gateway.wires import parse_request
    from contextwright.runtime.engine import Engine

    store = f"sqlite:///{tmp_path}/store.db"
    with open_log(store) as log_a, open_log(store) as log_b:
        a, b = Recorder(Engine(log_a)), Recorder(Engine(log_b))
        ticket = a.record_request(CC_SESSION, parse_request("anthropic", claude_body(FIRST)))
        assert ticket.built
        late = threading.Timer(0.5, a.record_answer, args=(ticket, ANSWER_1))
        late.start()
        started = time.monotonic()
        second = b.record_request(CC_SESSION, parse_request("anthropic", claude_body(SECOND)))
        waited = time.monotonic() - started
        late.join()
        b.record_answer(second, ANSWER_2)
        events = log_b.read(CC_SESSION)
        runs = [s for s in log_b.sessions() if s.startswith(CC_SESSION)]
    assert 0.4 < waited < 5
    types = [e.type for e in events]
    # A's answer once, with its usage; then B's request and answer: no answer recorded twice, no usage lost.
    assert types.count("message.assistant") == 2 and types.count("context.request.built") == 2
    assert [e.payload.request_index for e in events if e.type == "model.response"] == [0, 1]
    assert runs == [CC_SESSION]


def test_the_wait_for_an_answer_a_gone_worker_never_records_ends_at_the_setting(tmp_path: Any) -> None:
    """Worker A built a request and died before recording its answer: B waits ``answer_wait`` seconds, then goes on."""
    from contextwright.gateway import GatewayConfig
    from contextwright.gateway.recorder import Recorder
    from contextwright.gateway.wires import parse_request
    from contextwright.runtime.engine import Engine

    assert GatewayConfig().answer_wait == 15.0  # the default: an answer is recorded milliseconds after its last byte
    with pytest.raises(UsageError):
        GatewayConfig(answer_wait=-1)
    store = f"sqlite:///{tmp_path}/store.db"
    with open_log(store) as log_a, open_log(store) as log_b:
        a, b = Recorder(Engine(log_a)), Recorder(Engine(log_b))
        b.answer_wait = 0.5
        assert a.record_request(CC_SESSION, parse_request("anthropic", claude_body(FIRST))).built
        started = time.monotonic()
        second = b.record_request(CC_SESSION, parse_request("anthropic", claude_body(SECOND)))
        waited = time.monotonic() - started
        events = log_b.read(CC_SESSION)
    assert second.built and 0.45 < waited < 10
    types = [e.type for e in events]
    # The answer is recorded once, from the client's copy, and the run goes on.
    assert types.count("message.assistant") == 1 and types.count("context.request.built") == 2


def test_a_response_one_worker_recorded_is_continued_through_another(store_url: str) -> None:
    """OpenAI Responses, manage mode: worker B gets ``previous_response_id`` naming an answer worker A recorded."""
    from contextwright.gateway import GatewayConfig, create_gateway_app
    from contextwright.testing.upstream import responses_answer

    def said(text: str, number: int) -> dict[str, Any]:
        part = {"type": "output_text", "text": text, "annotations": []}
        return {"type": "message", "id": f"msg_{number}", "role": "assistant", "status": "completed", "content": [part]}

    upstream = FakeUpstream()
    replies = [
        responses_answer(said("Hi.", 1), response_id="resp_a1"),
        responses_answer(said("Then this.", 2), response_id="resp_b2"),
    ]
    upstream.script = lambda received: Reply(body=replies.pop(0))
    auth = {"authorization": "Bearer sk-x"}
    with serving(upstream) as up:
        config = GatewayConfig(store=store_url, anthropic_upstream=up, openai_upstream=up, mode="manage")
        with serving(create_gateway_app(config)) as a, serving(create_gateway_app(config)) as b, open_log(store_url) as log:

            def answers() -> int:
                return sum([e.type for e in log.read(s)].count("message.assistant") for s in log.sessions())

            def noted() -> bool:
                return all(log.read(s)[-1].type == "framework.history.seen" for s in log.sessions())

            first = {"model": "gpt-5", "input": "hello", "stream": False}
            assert httpx2.post(a + "/v1/responses", json=first, headers=auth, timeout=30).json()["id"] == "resp_a1"
            deadline = time.monotonic() + ANSWER_WAIT
            while answers() < 1 and time.monotonic() < deadline:
                time.sleep(0.02)
            # A stored conversation: the client sends only what is new, naming the response it follows, to B.
            follow = {"model": "gpt-5", "input": "and then?", "previous_response_id": "resp_a1", "stream": False}
            assert httpx2.post(b + "/v1/responses", json=follow, headers=auth, timeout=30).status_code == 200
            while not (answers() >= 2 and noted()) and time.monotonic() < deadline:  # the note follows the answer
                time.sleep(0.02)
            (run,) = log.sessions()  # the same run: B found it from the store
            events = log.read(run)
    assert [e.payload.text for e in events if e.type == "message.user"] == ["hello", "and then?"]
    assert [e.payload.text for e in events if e.type == "message.assistant"] == ["Hi.", "Then this."]
    sent = upstream.conversations[1].json
    # The engine's request holds the whole conversation, so the provider's stored one is not named.
    assert "previous_response_id" not in sent and "hello" in json.dumps(sent["input"])
