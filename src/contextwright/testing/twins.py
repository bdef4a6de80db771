"""Twin sessions: one never closed, one on a store that is reopened by a fresh engine when asked.

Both twins take the same steps; every request they build is compared byte for byte, so a test
driving them proves that reopening (from the log, or from a checkpoint) changes nothing a
provider would see.
"""

from __future__ import annotations

import json
from typing import Any

from contextwright.events import AssistantMessage
from contextwright.runtime.session import Session
from contextwright.testing.fakes import open_session


class Twins:
    """One session never closed (in memory) and its twin on ``url``, reopened by a fresh engine on :meth:`reopen`."""

    def __init__(
        self,
        url: str,
        session_id: str,
        *,
        live_options: dict[str, Any] | None = None,
        stored_options: dict[str, Any] | None = None,
    ) -> None:
        self.url = url
        self.session_id = session_id
        self.stored_options = stored_options or {}
        self.live_engine, self.live, self.live_clock = open_session(session_id, **(live_options or {}))
        self.engine, self.reopened, self.clock = open_session(session_id, url=url, **self.stored_options)
        self.reopens = 0

    def both(self) -> tuple[Session, Session]:
        return self.live, self.reopened

    def advance(self, seconds: int) -> None:
        self.live_clock.advance(seconds)
        self.clock.advance(seconds)

    def reopen(self) -> None:
        # A new process: a fresh engine on the same store, every cache empty.
        self.engine.close()
        self.engine, self.reopened, _ = open_session(self.session_id, url=self.url, clock=self.clock, **self.stored_options)
        self.reopens += 1

    def request(self, answer: AssistantMessage | None = None) -> None:
        """Build the next request on both twins, compare them byte for byte, record the same answer on both."""
        live, other = self.live.next_request(), self.reopened.next_request()
        assert other.neutral == live.neutral
        assert other.previous == live.previous
        assert json.dumps(other.anthropic()) == json.dumps(live.anthropic())
        assert other.event.payload == live.event.payload
        answer = answer or AssistantMessage(text=f"Answered request {live.index}.")
        for session in self.both():
            session.adapter.record_assistant(answer)

    def close(self) -> None:
        self.engine.close()
        self.live_engine.close()
