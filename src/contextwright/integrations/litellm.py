"""Record LiteLLM answers and usage into a session: a ``CustomLogger`` for ``litellm.callbacks`` and the proxy.

Needs the ``litellm`` extra (``pip install "contextwright[litellm]"``)::

    import litellm
    from contextwright.integrations.litellm import ContextwrightLogger

    litellm.callbacks = [ContextwrightLogger(session)]
    litellm.completion(**session.next_request().render("litellm"))

Each successful call is recorded with :meth:`Session.record`: the answer (text, tool
calls, signed thinking) and its usage, 1-hour cache writes included; a streamed call
is recorded once, from the response LiteLLM assembles at its end.

LiteLLM keeps every logger it is given in process-wide lists, per-call ``callbacks=``
included (litellm ``litellm_core_utils/logging_callback_manager.py``), so a logger
hears every later call. A logger for one session therefore skips calls whose
metadata names another session (``metadata={"contextwright_session": id}``). On the
LiteLLM proxy one logger serves many conversations: give it a ``resolve`` function
instead, which picks the session from the call's keyword arguments (for example
from ``kwargs["litellm_params"]["metadata"]``) or returns ``None`` to skip the call.
See https://docs.litellm.ai/docs/observability/custom_callback and
https://docs.litellm.ai/docs/proxy/logging (``callbacks`` in the proxy config).
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from contextwright._optional import require

if TYPE_CHECKING:
    from contextwright.events.envelope import Event
    from contextwright.runtime.session import Session

_CustomLogger: Any = require("litellm.integrations.custom_logger", extra="litellm", feature="the LiteLLM logger").CustomLogger

__all__ = ["METADATA_KEY", "ContextwrightLogger", "call_metadata"]

Resolve = Callable[[dict[str, Any]], "Session | None"]
"""Picks the session a LiteLLM call belongs to from its keyword arguments; ``None`` skips it."""

METADATA_KEY = "contextwright_session"
"""The call metadata key that names the session a call belongs to."""

_REMEMBERED_CALLS = 4096
"""How many recent LiteLLM call ids a logger remembers to record each call once."""


class ContextwrightLogger(_CustomLogger):
    """A LiteLLM callback that records each successful answer and its usage into a session."""

    def __init__(self, session: Session | None = None, *, resolve: Resolve | None = None) -> None:
        if (session is None) == (resolve is None):
            from contextwright.errors import UsageError

            raise UsageError("give ContextwrightLogger either a session or a resolve function, not both or neither")
        super().__init__()
        self.session_id = session.id if session is not None else None
        """The session this logger records into, or None when ``resolve`` picks one per call.

        Public on purpose: LiteLLM tells loggers of one class apart by their public
        str/int/bool attributes, and would otherwise drop a second logger as a duplicate."""
        self._resolve: Resolve = resolve if resolve is not None else self._own_session(session)
        self.recorded: list[Event] = []
        """Events recorded through this logger, in order (for callers that report on them)."""
        # LiteLLM can hand one call to the same logger twice (it sits in the global list
        # and in the call's own ``callbacks=``), from different threads; record it once.
        self._seen_calls: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _own_session(session: Session | None) -> Resolve:
        def resolve(kwargs: dict[str, Any]) -> Session | None:
            named = call_metadata(kwargs).get(METADATA_KEY)
            return session if named is None or session is None or named == session.id else None

        return resolve

    def log_success_event(self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any) -> None:
        """Record the answer of a finished call (LiteLLM calls this for sync calls)."""
        session = self._resolve(kwargs)
        if session is None:
            return
        with self._lock:
            if self._already_heard(kwargs):
                return
            self.recorded.extend(session.record(response_obj))

    def _already_heard(self, kwargs: dict[str, Any]) -> bool:
        call_id = kwargs.get("litellm_call_id")
        if not isinstance(call_id, str):
            return False
        if call_id in self._seen_calls:
            return True
        self._seen_calls[call_id] = None
        if len(self._seen_calls) > _REMEMBERED_CALLS:
            self._seen_calls.popitem(last=False)
        return False

    async def async_log_success_event(self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any) -> None:
        """Async twin: the log write runs in a worker thread, off the proxy's event loop."""
        await asyncio.to_thread(self.log_success_event, kwargs, response_obj, start_time, end_time)


def call_metadata(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The metadata a LiteLLM call was made with (``litellm_params.metadata``), or an empty dict."""
    params = kwargs.get("litellm_params") or {}
    metadata = params.get("metadata") if isinstance(params, dict) else None
    return metadata if isinstance(metadata, dict) else {}
