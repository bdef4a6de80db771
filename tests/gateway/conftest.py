"""A gateway and a scripted fake provider, both real HTTP servers on 127.0.0.1."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason='the gateway needs its extra: pip install "contextwright[gateway]"')
pytest.importorskip("uvicorn", reason='the gateway needs its extra: pip install "contextwright[gateway]"')

from contextwright.gateway import GatewayConfig, create_gateway_app
from contextwright.log import EventLog, open_log
from contextwright.testing.service import serving
from contextwright.testing.upstream import FakeUpstream, Reply, Script


@dataclass
class Gateway:
    """A running gateway in front of a fake provider."""

    url: str
    upstream: FakeUpstream
    store: Path
    log: EventLog
    upstream_url: str = ""
    """The fake provider's address (for another gateway in front of it)."""

    def script(self, script: Script) -> None:
        """Answer the next conversation requests with ``script``."""
        self.upstream.script = script

    def replies(self, *replies: Reply) -> None:
        """Answer the next conversation requests with these replies, in order."""
        queue = list(replies)
        self.upstream.script = lambda received: queue.pop(0)

    def events(self, session_id: str) -> list[Any]:
        return self.log.read(session_id)

    def wait_for(self, check: Callable[[], Any], timeout: float = 15.0) -> Any:
        """Poll until ``check()`` is truthy (the answer is recorded after the client has its last byte)."""
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError("the gateway did not record in time")
            time.sleep(0.02)

    def types(self, session_id: str) -> list[str]:
        return [e.type for e in self.events(session_id)]

    def settled(self, session_id: str, answers: int) -> list[str]:
        """The session's event types once ``answers`` answers are recorded in it."""
        self.wait_for(lambda: self.types(session_id).count("message.assistant") >= answers)
        time.sleep(0.1)  # the fingerprint note follows the answer in the same job
        return self.types(session_id)


@pytest.fixture
def make_gateway(tmp_path: Path) -> Iterator[Callable[..., Gateway]]:
    stack: list[Any] = []

    def make(**options: Any) -> Gateway:
        upstream = FakeUpstream()
        up = serving(upstream)
        up_url = up.__enter__()
        stack.append(up)
        store = tmp_path / f"gateway{len(stack)}.db"
        options.setdefault("mode", "observe")
        config = GatewayConfig(store=str(store), anthropic_upstream=up_url, openai_upstream=up_url, **options)
        gw = serving(create_gateway_app(config))
        url = gw.__enter__()
        stack.append(gw)
        log = open_log(str(store), read_only=True)
        stack.append(log)
        return Gateway(url=url, upstream=upstream, store=store, log=log, upstream_url=up_url)

    yield make
    for item in reversed(stack):
        if isinstance(item, EventLog):
            item.close()
        else:
            item.__exit__(None, None, None)


@pytest.fixture
def gateway(make_gateway: Callable[..., Gateway]) -> Gateway:
    return make_gateway()
