"""The log side of the gateway: each request's new turns and built request, then its answer and usage.

Every call runs in a worker thread, and one session key's calls run one at a time in
the order the requests arrived (:class:`KeyQueue`): a request's answer is recorded
before the next request of the same key is reconciled, however the threads are
scheduled.

Each run is an ordinary engine session (``Engine.session`` with the agent the client
sent: its system text as the instructions, its tools; in manage mode the engine's read
tool after them, see :mod:`~contextwright.gateway.readback`), so ``inspect``,
``stats``, the console and the cache simulators read it like any other. For each
request the gateway records what is new, then builds the request the engine would
send (``context.request.built``): in observe mode that request is not sent, it is the
record of what the engine makes of the conversation, and the provider's usage is
recorded against it. A session that cannot be recorded (a prefix over any budget the
window allows, a store that fails) is logged and skipped; the client's traffic never
waits on it or fails because of it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal, TypeVar

from contextwright.canonical import canonical_json
from contextwright.clock import FixedClock
from contextwright.derive._framework_items import fold_seen_history
from contextwright.errors import CanonicalJsonError, ContextLengthExceeded, ContextwrightError, SeqConflict, UsageError
from contextwright.events.catalog import FrameworkHistorySeen, GatewayRequestPassed, GatewayRequestReceived
from contextwright.events.envelope import Event, NewEvent
from contextwright.gateway.body_bytes import BodyWriter
from contextwright.gateway.config import ANSWER_WAIT
from contextwright.gateway.reconcile import (
    Run,
    agent_signature,
    changed_prefix_run,
    continued_run,
    prefix_change_note,
    record_turns,
    run_id,
    run_number,
    tool_row,
)
from contextwright.gateway.tenancy import Registry
from contextwright.gateway.wires import (
    Conversation,
    Turn,
    WireName,
    answer_turn,
    answer_unsent,
    chat_message_for_turn,
    response_output_for_turn,
)
from contextwright.gateway.workers import awaiting, catch_up, noted, wait_for_answer
from contextwright.items.region_a import READ_TOOL_NAME, ToolSpec
from contextwright.log.memory import InMemoryEventLog
from contextwright.models import ResolvedModel, resolve
from contextwright.plan.budgets import BudgetConfig
from contextwright.providers.errors import classify_provider_error
from contextwright.providers.responses import parse_response
from contextwright.runtime.engine import SECRET_SETTING, Engine
from contextwright.runtime.errors import RoundLimitExceeded
from contextwright.runtime.reopen import reopen
from contextwright.runtime.requests import BuiltRequest, RoundPolicy
from contextwright.runtime.spec import CONTROL_TOOLS, AgentSpec
from contextwright.telemetry.misses import body_delta, client_requests

logger = logging.getLogger("contextwright.gateway")

_orjson: Any
try:
    import orjson as _orjson
except ImportError:  # the fast extra is not installed
    _orjson = None

MAX_RESPONSE_IDS = 10_000
"""Response ids remembered for ``previous_response_id`` (the oldest are forgotten first)."""

CONFLICT_ATTEMPTS = 3
"""Attempts at recording a request whose run another worker keeps appending to."""

_OUTPUT_LIMITS = frozenset({"max_tokens", "max_output_tokens", "max_completion_tokens"})
_COUNTED_KEYS = ("model", "system", "messages", "tools")
"""What of the engine's request a ``count_tokens`` body takes (the endpoint refuses ``max_tokens`` and the like)."""
STORED_CONVERSATION = "stored_conversation"
"""The kind noted for a conversation the provider keeps and the log does not (``previous_response_id``
naming a response no gateway on the store recorded, or a Responses ``conversation``)."""
_CHAIN_KEYS = frozenset({"previous_response_id", "conversation"})
"""Keys of a Responses body that make the provider put a stored conversation before the input."""
_RENDERING = ThreadPoolExecutor(max_workers=4, thread_name_prefix="contextwright-render")
"""Renders the engine's requests beside their transactions' commits (see :meth:`Recorder.record_request`)."""

UNKNOWN_MODEL_WINDOW = 200_000
"""The window assumed for a model the engine's table does not know (its requests still pass unchanged)."""

T = TypeVar("T")

READ_TOOL = next(tool for tool in CONTROL_TOOLS if tool.name == READ_TOOL_NAME)
"""The engine's read tool, which manage mode pins after the client's tools."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Ticket:
    """What recording a request left for recording its answer."""

    key: str
    run: Run | None
    built: bool
    request: BuiltRequest | None = None
    """The engine's request for these turns (what manage mode sends)."""
    passed: str | None = None
    """Why the engine built no request for these turns (``round_cap``, ``not_built``, ``unsent_content``), when it built none."""
    body: bytes | None = None
    """The engine's request as it goes upstream, when recording was asked to render it (see :meth:`Recorder.record_request`)."""


class KeyQueue:
    """Runs jobs one at a time per key, in the order they were queued (not the order threads wake up).

    A worker thread may also take a key that has nothing queued or running (:meth:`claim`) and do that
    key's first job itself, with no trip back to the event loop; the key stays taken until the job handed
    over with :meth:`submit_claimed` ends (or :meth:`release`), and jobs queued meanwhile wait for it."""

    def __init__(self) -> None:
        self._tails: dict[str, Future[None]] = {}
        self._lock = threading.Lock()
        """Guards ``_tails``: :meth:`claim` runs in worker threads, the rest on the event loop."""

    def submit(self, key: str, job: Callable[[], Awaitable[T]]) -> asyncio.Task[T]:
        """Queue ``job`` behind the key's earlier jobs; the task ends when it has run."""
        done: Future[None] = Future()
        with self._lock:
            previous = self._tails.get(key)
            self._tails[key] = done
        return asyncio.create_task(self._run(key, job, previous, done))

    def claim(self, key: str) -> Future[None] | None:
        """Take ``key`` when nothing is queued or running for it (from any thread); None when something is."""
        with self._lock:
            if key in self._tails:
                return None
            claim: Future[None] = Future()
            self._tails[key] = claim
            return claim

    def submit_claimed(self, key: str, claim: Future[None], job: Callable[[], Awaitable[T]]) -> asyncio.Task[T]:
        """Run ``job`` as the claimed key's next job (at once); the key is free again when it ends."""
        return asyncio.create_task(self._run(key, job, None, claim))

    def release(self, key: str, claim: Future[None]) -> None:
        """Free a key taken with :meth:`claim` whose work stopped before a job was handed over."""
        with self._lock:
            if self._tails.get(key) is claim:
                del self._tails[key]
        claim.set_result(None)

    async def _run(self, key: str, job: Callable[[], Awaitable[T]], previous: Future[None] | None, done: Future[None]) -> T:
        try:
            if previous is not None:
                # Shielded: a cancelled waiter must not cancel the job before it (wrap_future passes cancellation on).
                await asyncio.shield(asyncio.wrap_future(previous))
            return await job()
        finally:
            self.release(key, done)


class Recorder:
    """Records conversations into engine sessions, one run per uninterrupted history."""

    def __init__(self, engine: Engine, *, max_keys: int = 256, registry: Registry | None = None, manage: bool = False) -> None:
        self.engine = engine
        self.manage = manage
        """Manage mode: new runs of a client with tools pin the engine's read tool after them (see
        :mod:`~contextwright.gateway.readback`), and a request the engine builds none for is
        recorded as passed on (``gateway.request.passed``)."""
        self.answer_wait = ANSWER_WAIT
        """Seconds to wait for another worker's recording of an answer the client already holds (``GatewayConfig.answer_wait``)."""
        self.rounds: RoundPolicy | None = None
        """Round governance of the runs opened here (the engine's default when None)."""
        self.registry = registry
        """Where each run opened here is listed for the HTTP service's tenant (None: nowhere)."""
        self.max_keys = max_keys
        """Session keys whose runs stay open in memory; the least recently used are read back from the log when they return."""
        self._runs: OrderedDict[str, list[Run]] = OrderedDict()
        self._lock = threading.Lock()
        self.responses = ResponseIds(engine.log)
        """Response ids recorded here or by any gateway on the store → their session key (for ``previous_response_id``)."""
        self._clients: OrderedDict[str, tuple[int, dict[str, Any]]] = OrderedDict()
        """Per session key, the number and body of the last request its client sent (the base of the next one's record)."""

    # -- requests ---------------------------------------------------------------------

    def record_request(
        self,
        key: str,
        conversation: Conversation,
        client: Received | None = None,
        *,
        render: tuple[WireName, Mapping[str, Any]] | None = None,
    ) -> Ticket:
        """Record what is new in the request and build the engine's request; never raises.

        ``client`` is the body as the client sent it (observe mode): it is stored, as its change
        from the key's previous one, in the run the request goes to. ``render`` (manage mode: the
        client's wire and body): the engine's request is rendered too (:meth:`managed_body`), into
        the ticket's ``body``."""
        for attempt in range(1, CONFLICT_ATTEMPTS + 1):
            try:
                return self._record_request(key, conversation, client, render)
            except SeqConflict:
                # Another worker appended to the run between this one's read and its write: read it again.
                logger.info("gateway: session %s moved on another worker (attempt %d)", key, attempt)
                self._forget(key)
            except Exception:
                logger.exception("gateway: the request of session %s was not recorded", key)
                self._forget(key)
                break
        return Ticket(key=key, run=None, built=False)

    def _record_request(
        self, key: str, conversation: Conversation, client: Received | None, render: tuple[WireName, Mapping[str, Any]] | None
    ) -> Ticket:
        turns = conversation.turns
        if not turns:
            return Ticket(key=key, run=None, built=False)
        fingerprints = list(conversation.fingerprints)
        agent = agent_signature(conversation.provider, conversation.model, conversation.system, conversation.tools)
        runs = self._known_runs(key)
        for known in runs:
            if known.agent == agent or self._same_model(known, conversation):
                wait_for_answer(known, fingerprints, timeout=self.answer_wait)
        previous = conversation.hints.get("previous_response_id")
        chained = self._chained(runs, previous)
        unsent = conversation.unsent
        # The provider puts a conversation it stores before the input, and the log holds none of it
        # (a Conversations API id, or a response no gateway on this store recorded): the engine's
        # request would lose it, so the client's goes, and so do those chaining on its answers.
        stored = bool(conversation.hints.get("conversation")) or (bool(previous) and chained is None)
        if stored:
            unsent = tuple(sorted({*unsent, STORED_CONVERSATION}))
        if chained is not None:
            # A stored conversation: the client sends only what follows the response it names,
            # not what the earlier answers held that the log keeps nothing of (noted when they were recorded).
            run: Run | None = chained
            new = turns
            fingerprints = chained.fingerprints + fingerprints
            chained.unsent = tuple(sorted({*chained.unsent, *self.responses.unsent(str(previous))}))
            unsent = tuple(sorted({*unsent, *chained.unsent}))
        else:
            run = continued_run(runs, fingerprints, agent)
            if run is None:
                runs = self._with_runs_opened_elsewhere(key, runs)
                run = continued_run(runs, fingerprints, agent)
        # One transaction for what the request adds (a new epoch, its turns and the note of them, the
        # client's body, the request built): one commit, and a worker killed before it leaves no part.
        # Nothing in it waits for another worker (the waits above come first).
        with self.engine.log.transaction():
            if run is None and chained is None:
                run = self._new_epoch(runs, fingerprints, conversation, agent)
            opened = run is None
            if run is None:
                number = 1 + max([self._last_run_number(key), *(run_number(key, r.session_id) or 0 for r in runs)])
                session_id = run_id(key, number)
                run = Run(session_id=session_id, agent=agent, session=self._session(self.engine, session_id, conversation))
                runs.append(run)
                if number > 1:
                    logger.info("gateway: session %s continues in a new run %s (its history was rewritten)", key, session_id)
            if chained is None:
                new = turns[len(run.fingerprints) :]
            if stored:
                run.unsent = tuple(sorted({*run.unsent, STORED_CONVERSATION}))
            ticket = self._record_in(key, run, runs, new, fingerprints, client, unsent=unsent)
            # Rendered while the transaction commits: the commit waits on the disk, the render on the CPU.
            # The body is given only once the commit is done, so nothing goes upstream that the log lacks.
            rendering = _RENDERING.submit(self.managed_body, ticket, *render) if render and ticket.request else None
        if opened and self.registry is not None:
            self.registry.register(run.session_id, run.session.agent, run.session.model)  # listed once it is stored
        return replace(ticket, body=rendering.result()) if rendering is not None else ticket

    def _record_in(
        self,
        key: str,
        run: Run,
        runs: list[Run],
        new: Sequence[Turn],
        fingerprints: list[str],
        client: Received | None,
        *,
        unsent: Sequence[str] = (),
    ) -> Ticket:
        """Record the new turns in ``run`` and build the engine's request for them (inside the request's transaction).

        In manage mode, a conversation holding content the engine's request would show only as a placeholder
        or not at all (``unsent``: an image, a document, a hosted tool's call, an answer's item the log keeps
        nothing of) is recorded but builds nothing: the client's request goes as it came, so the model sees
        what the client sent."""
        session = run.session
        if new:
            record_turns(session, new)
            session.adapter.append([FrameworkHistorySeen(fingerprints=tuple(fingerprints[len(run.fingerprints) :]))])
            run.fingerprints = list(fingerprints)
        if client is not None:
            self._note_client(key, runs, run, client)
        if self.manage and unsent:
            run.awaiting, run.request = False, None
            kinds = ", ".join(unsent)
            session.adapter.append(
                [GatewayRequestPassed(reason="unsent_content", message=f"content the log keeps no text for: {kinds}")]
            )
            return Ticket(key=key, run=run, built=False, passed="unsent_content")
        if not new and run.awaiting and (run.request is not None or not self.manage):
            return Ticket(key=key, run=run, built=True, request=run.request)  # a retry: the request is built already
        # Manage mode, a retry of a request another worker built (and died sending, or is still
        # sending): it is built here from the log, like any request, and recorded.
        try:
            built = session.next_request()
        except ContextwrightError as exc:
            logger.warning("gateway: no request built for session %s: %s", run.session_id, exc)
            run.awaiting, run.request = False, None
            cap = isinstance(exc, RoundLimitExceeded)
            reason: Literal["round_cap", "not_built"] = "round_cap" if cap else "not_built"
            if self.manage:
                session.adapter.append([GatewayRequestPassed(reason=reason, message=str(exc)[:500])])
            return Ticket(key=key, run=run, built=False, passed=reason)
        run.awaiting, run.request = True, built
        return Ticket(key=key, run=run, built=True, request=built)

    def managed_body(self, ticket: Ticket, wire: WireName, client: Mapping[str, Any]) -> bytes | None:
        """Manage mode: the engine's request for the client's wire, with the client's other options; None when there is none.

        The engine's keys win (model, system or instructions, messages or input, tools); a Responses
        body's ``previous_response_id`` and ``conversation`` go (the engine's input is the whole
        conversation); every other key of the client's body is kept (``stream``, ``thinking``, ``metadata``, ``temperature``, ...),
        and an output limit is the smaller of the client's and the engine's."""
        if ticket.request is None:
            return None
        try:
            body = dict(ticket.request.render(wire))
            for name, value in client.items():
                if name in _CHAIN_KEYS:
                    continue  # the engine's request holds the whole conversation: the provider's stored one must not precede it
                if name not in body:
                    body[name] = value
                elif name in _OUTPUT_LIMITS and isinstance(value, int) and isinstance(body[name], int):
                    body[name] = min(value, body[name])
            return dumps(body)
        except Exception:
            logger.exception("gateway: the engine's request for %s could not be rendered; the client's goes instead", ticket.key)
            return None

    def counted_body(self, key: str, conversation: Conversation, client: Mapping[str, Any]) -> bytes | None:
        """Manage mode, ``count_tokens``: the body to count, what the engine would send for this conversation now.

        Built on a scratch copy of the run it continues (its events, in memory, with their times
        and the store's envelope secret), so nothing is appended to the store. The engine's
        system, messages and tools replace the client's; the client's other keys (``thinking``,
        ``tool_choice``, ...) are kept. None when the engine would build none (the client's body
        is counted then)."""
        if not conversation.turns or conversation.unsent:
            return None  # nothing to count, or what goes is the client's body (it holds blocks the log cannot show)
        try:
            fingerprints = list(conversation.fingerprints)
            agent = agent_signature(conversation.provider, conversation.model, conversation.system, conversation.tools)
            # The runs tracked here are only looked at (a request of the key may be recording in them);
            # the run's events are read from the store.
            with self._lock:
                tracked = list(self._runs.get(key) or ())
            run = continued_run(tracked or self._known_runs(key), fingerprints, agent)
            events = self.engine.log.read(run.session_id) if run is not None else []
            seen = fold_seen_history(events)
            if run is None or fingerprints[: len(seen)] != seen:
                run, events, seen = None, [], []
            clock = FixedClock(events[0].at if events else self.engine.clock.now())
            scratch = InMemoryEventLog(clock=clock)
            engine = Engine(scratch, secret=bytes.fromhex(self.engine.log.setting(SECRET_SETTING, secrets.token_hex(32))))
            session_id = run.session_id if run is not None else key
            copy_events(events, scratch, clock, session_id)
            now = self.engine.clock.now()
            if now > clock.now():
                clock.set(now)
            session = reopen(engine, session_id) if run is not None else self._session(engine, key, conversation)
            record_turns(session, conversation.turns[len(seen) :])
            rendered = session.next_request().render(conversation.wire)
        except Exception as exc:
            logger.info("gateway: the engine's request for %s was not counted: %s", key, exc)
            return None
        body = {name: value for name, value in client.items() if name not in _COUNTED_KEYS}
        body.update({name: rendered[name] for name in _COUNTED_KEYS if name in rendered})
        return dumps(body, keep=False)  # a scratch session's objects: never shown again

    def recover(self, ticket: Ticket, status: int, error_body: bytes) -> Ticket | None:
        """Manage mode, the provider refused the engine's request as too long: relieve once and rebuild.

        The relief is the engine's own (prune, then compact, archive first), recorded with a
        ``context.overflow`` event, as ``Session.send`` does. None when the error is another one,
        or relief freed nothing: the provider's error then goes to the client as it came."""
        run, request = ticket.run, ticket.request
        if run is None or request is None:
            return None
        try:
            document: Any = json.loads(error_body)
        except ValueError:
            document = error_body.decode("utf-8", "replace")
        error = classify_provider_error(status, document, provider=run.session.model.provider)
        if not isinstance(error, ContextLengthExceeded):
            return None
        try:
            rebuilt = run.session.adapter.after_send_error(error, request, 0)
        except ContextwrightError as exc:
            logger.warning("gateway: session %s is too long and could not be relieved: %s", run.session_id, exc)
            return None
        except Exception:
            logger.exception("gateway: relief of session %s failed", run.session_id)
            self._forget(ticket.key)
            return None
        run.request = rebuilt
        return Ticket(key=ticket.key, run=run, built=True, request=rebuilt)

    # -- answers ----------------------------------------------------------------------

    def record_answer(self, ticket: Ticket, answer: Mapping[str, Any] | None, *, seen: Mapping[str, Any] | None = None) -> None:
        """Record the provider's answer and usage in the ticket's run (nothing for None); never raises.

        ``seen`` is the answer as the client got it, when the gateway changed it (read-backs taken
        out, parts joined): its fingerprint is the one the client's next request holds."""
        run = ticket.run
        if run is None or answer is None:
            return
        try:
            answer = _as_recorded(answer)
            seen = _as_recorded(seen) if seen is not None else answer
            turn = answer_turn(seen)
            with self.engine.log.transaction():  # the answer, its usage and the note of its fingerprint: one commit
                if ticket.built and run.awaiting:
                    run.session.record(answer)
                else:
                    run.session.adapter.record_assistant(parse_response(answer)[0])
                run.session.adapter.append([FrameworkHistorySeen(fingerprints=(turn.fingerprint,))])
            run.fingerprints.append(turn.fingerprint)
            run.awaiting = False
            dropped = answer_unsent(answer)
            if dropped:
                # A client chaining on this answer will not send these again: its requests go as they came.
                run.unsent = tuple(sorted({*run.unsent, *dropped}))
            if isinstance(seen.get("id"), str) and seen.get("object") == "response":
                run.last_response = seen["id"]
                self.responses.note(seen["id"], ticket.key, run.session_id, len(run.fingerprints), unsent=run.unsent)
        except Exception:
            logger.exception("gateway: the answer in session %s was not recorded", run.session_id)
            self._forget(ticket.key)

    def reads_back(self, ticket: Ticket) -> bool:
        """True when the ticket's request offers the engine's read tool (its calls are then answered here)."""
        request = ticket.request
        return request is not None and request.plan.prefix.read_tool() is not None

    def read_back(self, ticket: Ticket, answer: Mapping[str, Any]) -> Ticket | None:
        """Manage mode: record an answer whose only calls are read-backs (the engine answers them) and build the next request.

        The client never sees this answer alone, so no fingerprint is noted for it: the answer
        that follows continues it. None when no request could be built (the answer is then the
        client's as it is)."""
        run = ticket.run
        if run is None or not run.awaiting:
            return None
        try:
            run.session.record(_as_recorded(answer))
            if run.session.pending_tool_calls():
                return None
            built = run.session.next_request()
        except ContextwrightError as exc:
            logger.warning("gateway: no request built after a read-back in session %s: %s", run.session_id, exc)
            run.awaiting, run.request = False, None
            return None
        except Exception:
            logger.exception("gateway: the read-back in session %s was not answered", run.session_id)
            self._forget(ticket.key)
            return None
        run.awaiting, run.request = True, built
        return Ticket(key=ticket.key, run=run, built=True, request=built)

    # -- what the client sent ---------------------------------------------------------

    def _note_client(self, key: str, runs: list[Run], run: Run, client: Received) -> None:
        """Store the client's body in ``run`` as its change from the key's previous body (``gateway.request.received``).

        A body with no canonical JSON form (a NaN, say) is not stored; the request is recorded all the same."""
        try:
            canonical_json(client.body)
        except ValueError as exc:
            logger.warning("gateway: the body sent in session %s is not stored: %s", key, exc)
            return
        last = self._last_client(key, runs)
        fields, lists, dropped = body_delta(last[1] if last else None, client.body)
        number = last[0] + 1 if last else 1
        note = GatewayRequestReceived(
            key=key,
            number=number,
            base=last[0] if last else None,
            wire=client.wire,
            received_at=client.at.isoformat(),
            first_byte_ms=client.first_byte_ms,
            fields=fields,
            lists=lists,
            dropped=tuple(dropped),
        )
        run.session.adapter.append([note])
        with self._lock:
            self._clients[key] = (number, client.body)
            self._clients.move_to_end(key)
            while len(self._clients) > self.max_keys:
                self._clients.popitem(last=False)

    def _last_client(self, key: str, runs: list[Run]) -> tuple[int, dict[str, Any]] | None:
        """The number and body of the key's last client request: in memory, or rebuilt from its runs in the log.

        The memory holds while the runs' last stored body is its (another gateway on the store may have stored one)."""
        numbers = [e.payload.number for r in runs for e in r.session.history.events if e.type == "gateway.request.received"]
        if not numbers:
            return None
        with self._lock:
            known = self._clients.get(key)
        if known is not None and known[0] == max(numbers):
            return known
        events = [e for s in self.engine.log.sessions() if run_number(key, s) is not None for e in self.engine.log.read(s)]
        found = client_requests(events).get(key)
        return (found[-1].number, found[-1].body) if found else None

    # -- runs -------------------------------------------------------------------------

    def _chained(self, runs: list[Run], previous: str | None) -> Run | None:
        """The run whose last answer is the response ``previous`` names (OpenAI ``previous_response_id``).

        Known from this worker's memory, or from the store when another worker recorded it."""
        if not previous:
            return None
        found = next((run for run in runs if run.last_response == previous and not run.awaiting), None)
        if found is not None:
            return found
        place = self.responses.place(previous)
        if place is None:
            return None
        session_id, turns = place
        return next((r for r in runs if r.session_id == session_id and len(r.fingerprints) == turns and not r.awaiting), None)

    def _known_runs(self, key: str) -> list[Run]:
        """The key's runs: tracked in memory, or read back from the log once (after a restart)."""
        with self._lock:
            runs = self._runs.get(key)
            tracked = runs is not None
            if runs is not None:
                self._runs.move_to_end(key)
            else:
                runs = self._runs[key] = []
                while len(self._runs) > self.max_keys:
                    self._runs.popitem(last=False)
        if tracked:
            for run in runs:
                catch_up(run)  # another worker may have appended to it
            return runs
        for session_id in self.engine.log.sessions():
            if run_number(key, session_id) is None:
                continue
            try:
                session = reopen(self.engine, session_id)
            except UsageError:
                continue  # no request was built in it: nothing to continue
            if self.registry is not None:
                self.registry.register(session_id, session.agent, session.model)  # recorded before it was listed
            events = session.history.events
            runs.append(
                Run(
                    session_id=session_id,
                    agent=agent_signature(
                        session.model.provider, session.model.id, session.agent.instructions, session.agent.tools
                    ),
                    session=session,
                    fingerprints=fold_seen_history(events),
                    awaiting=awaiting(events) or not noted(events),
                )
            )
        return runs

    def _new_epoch(self, runs: list[Run], fingerprints: Sequence[str], conversation: Conversation, agent: str) -> Run | None:
        """The run these turns continue with other tools or system text, gone on in a new epoch; None when there is none.

        The prefix edit is recorded with a note of what changed. A new prefix the run's budgets
        do not hold leaves the run as it was: the request opens a new run instead (never an error)."""
        run = changed_prefix_run(runs, fingerprints, conversation.provider, conversation.model)
        if run is None:
            return None
        session = run.session
        edited = replace(session.agent, instructions=conversation.system, tools=self._tools(conversation))
        note = prefix_change_note(session.agent, edited)
        try:
            session.setup.edit_prefix(edited, note=note)
        except ContextwrightError as exc:
            logger.info("gateway: run %s keeps its prefix (%s); the request opens a new run", run.session_id, exc)
            return None
        run.agent = agent
        logger.info("gateway: run %s goes on in a new epoch (%s)", run.session_id, note)
        return run

    @staticmethod
    def _same_model(run: Run, conversation: Conversation) -> bool:
        model = run.session.model
        return bool(model.provider == conversation.provider and model.id == conversation.model)

    def _with_runs_opened_elsewhere(self, key: str, runs: list[Run]) -> list[Run]:
        """``runs``, read back again from the log when it holds runs of ``key`` this worker does not track."""
        tracked = {run.session_id for run in runs}
        if all(run_number(key, s) is None or s in tracked for s in self.engine.log.sessions()):
            return runs
        self._forget(key)
        return self._known_runs(key)

    def _last_run_number(self, key: str) -> int:
        return max((run_number(key, s) or 0 for s in self.engine.log.sessions()), default=0)

    def _forget(self, key: str) -> None:
        """Drop what is tracked for ``key``: the next request reads its runs back from the log."""
        with self._lock:
            self._runs.pop(key, None)

    def _session(self, engine: Engine, session_id: str, conversation: Conversation) -> Any:
        """A new run's session on ``engine``: the client's system text and tools (and the read tool, in manage mode)."""
        agent = AgentSpec(
            policy="",
            instructions=conversation.system,
            tools=self._tools(conversation),
            control_tools=False,
        )
        return engine.session(
            session_id,
            agent=agent,
            model=model_for(conversation),
            budgets=budgets_for(conversation, self.engine.budgets),
            rounds=self.rounds,
        )

    def _tools(self, conversation: Conversation) -> tuple[ToolSpec, ...]:
        """The tools a run pins for the client's: in manage mode, the read tool after them."""
        tools = conversation.tools
        if self.manage and tools and all(tool.name != READ_TOOL_NAME for tool in tools):
            # A client with tools gets tool outputs, which pointers replace; one without gets no tool it never asked for.
            tools = (*tools, READ_TOOL)
        return tools


RESPONSE_SETTING = "gateway.response:"
"""The store setting that names the run of a Responses answer: this prefix and the response id."""
UNSENT_SETTING = "gateway.response.unsent:"
"""The store setting that lists the kinds of what the run's answers up to a Responses answer held that the log
keeps nothing of (set only when there are any): this prefix and the response id."""


class ResponseIds(Mapping[str, str]):
    """Response ids → session keys: in memory for those recorded here, in the store for every gateway on it.

    Each answer with an id is noted in the store's settings (``gateway.response:<id>``, its
    session key, run and number of turns; the first write wins, and an id names one answer),
    so a worker that never saw a response finds the run it continues. When the run's answers
    held content the log keeps nothing of, its kinds are noted too (``gateway.response.unsent:<id>``),
    so a request chained on the response goes as it came on any worker. A lookup of an id no
    gateway recorded leaves an empty setting under it."""

    def __init__(self, log: Any) -> None:
        self._log = log
        self._known: OrderedDict[str, tuple[str, str, int, tuple[str, ...]]] = OrderedDict()
        self._lock = threading.Lock()

    def note(self, response_id: str, key: str, session_id: str, turns: int, *, unsent: Sequence[str] = ()) -> None:
        """Remember that ``response_id`` is the answer after ``turns`` turns of run ``session_id`` of ``key``, and the
        kinds of what that run's answers held that the log keeps nothing of (``unsent``)."""
        with self._lock:
            self._known[response_id] = (key, session_id, turns, tuple(unsent))
            while len(self._known) > MAX_RESPONSE_IDS:
                self._known.popitem(last=False)
        if len(RESPONSE_SETTING) + len(response_id) > 200:
            return
        try:
            if unsent and len(UNSENT_SETTING) + len(response_id) <= 200:
                # Before the run's note: a worker that finds the run finds the kinds too (the first write wins).
                self._log.setting(UNSENT_SETTING + response_id, json.dumps(list(unsent)))
            self._log.setting(RESPONSE_SETTING + response_id, json.dumps([key, session_id, turns]))
        except Exception as exc:
            logger.warning("gateway: response %s is not noted in the store: %s", response_id[:60], exc)

    def _lookup(self, response_id: str) -> tuple[str, str, int, tuple[str, ...]] | None:
        with self._lock:
            known = self._known.get(response_id)
        if known is not None or len(RESPONSE_SETTING) + len(response_id) > 200 or not response_id:
            return known
        try:
            stored = json.loads(self._log.setting(RESPONSE_SETTING + response_id, "") or "null")
            if not (isinstance(stored, list) and len(stored) == 3):
                return None
            unsent_key = UNSENT_SETTING + response_id
            kinds = json.loads(self._log.setting(unsent_key, "") or "[]") if len(unsent_key) <= 200 else []
        except Exception as exc:
            logger.warning("gateway: response %s could not be looked up in the store: %s", response_id[:60], exc)
            return None
        unsent = tuple(str(kind) for kind in kinds) if isinstance(kinds, list) else ()
        found = (str(stored[0]), str(stored[1]), int(stored[2]), unsent)
        with self._lock:
            self._known[response_id] = found
        return found

    def place(self, response_id: str) -> tuple[str, int] | None:
        """The run the response ends, and its number of turns then."""
        found = self._lookup(response_id)
        return (found[1], found[2]) if found is not None else None

    def unsent(self, response_id: str) -> tuple[str, ...]:
        """The kinds of what the answers of the run up to the response held that the log keeps nothing of."""
        found = self._lookup(response_id)
        return found[3] if found is not None else ()

    def __getitem__(self, response_id: str) -> str:
        found = self._lookup(response_id)
        if found is None:
            raise KeyError(response_id)
        return found[0]

    def __contains__(self, response_id: object) -> bool:
        return isinstance(response_id, str) and self._lookup(response_id) is not None

    def __iter__(self) -> Iterator[str]:
        with self._lock:
            return iter(list(self._known))

    def __len__(self) -> int:
        return len(self._known)


@dataclass(frozen=True, kw_only=True, slots=True)
class Received:
    """A request body as the client sent it, when it arrived, and how long its answer took to start."""

    wire: WireName
    body: dict[str, Any]
    at: datetime
    first_byte_ms: int | None = None


_BODIES = BodyWriter()
"""Writes the bodies sent upstream, each message of a session's history once (see :mod:`~contextwright.gateway.body_bytes`)."""


def dumps(document: dict[str, Any], *, keep: bool = True) -> bytes:
    """A body as canonical JSON bytes (keys sorted, compact): the same bytes whether or not the fast encoder is
    installed. A body with no canonical form (a NaN a client sent, say) is written by the standard library.

    ``keep``: the bytes of the body's shared objects are kept for the next request that shows them."""
    try:
        return _BODIES.write(document, keep=keep)
    except CanonicalJsonError:
        return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()


def loads(raw: bytes) -> Any:
    """A body read as JSON: with ``orjson`` when it is installed, else (or for what it refuses, a NaN) the standard library."""
    if _orjson is not None:
        try:
            return _orjson.loads(raw)
        except ValueError:
            pass
    return json.loads(raw)


def copy_events(events: Sequence[Event], log: InMemoryEventLog, clock: FixedClock, session_id: str) -> None:
    """Append ``events`` to ``log`` (whose clock is ``clock``) under ``session_id`` as they were: in their batches, at their times."""
    batch: list[NewEvent] = []
    at = None
    for event in [*events, None]:
        if batch and (event is None or event.at != at):
            if at is not None and at > clock.now():
                clock.set(at)
            log.append(session_id, batch, expected_seq=log.last_seq(session_id))
            batch = []
        if event is not None:
            at = event.at
            batch.append(NewEvent(type=event.type, payload=event.payload, idempotency_key=event.idempotency_key))


def _as_recorded(answer: Mapping[str, Any]) -> Mapping[str, Any]:
    """A Responses answer's or a chat completion's custom tool calls read as function calls (as the client's copy
    of it is read)."""
    if isinstance(answer.get("output"), list):
        return {**answer, "output": response_output_for_turn(answer["output"])}
    choices = answer.get("choices")
    if (
        isinstance(choices, list)
        and choices
        and isinstance(choices[0], Mapping)
        and isinstance(choices[0].get("message"), Mapping)
    ):
        message = choices[0]["message"]
        read = chat_message_for_turn(message)
        if read is not message:
            return {**answer, "choices": [{**choices[0], "message": read}, *choices[1:]]}
    return answer


def model_for(conversation: Conversation) -> ResolvedModel:
    """The engine's model for the request's model id (a window of 200,000 tokens when the table does not know it)."""
    try:
        return resolve(conversation.provider, conversation.model)
    except UsageError:
        return resolve(conversation.provider, conversation.model, context_window=UNKNOWN_MODEL_WINDOW)


def budgets_for(conversation: Conversation, base: BudgetConfig) -> BudgetConfig:
    """Budgets whose prefix caps hold the client's own system text and tools (the client owns its prefix)."""
    tools_chars = len(canonical_json([tool_row(t) for t in conversation.tools]))
    return replace(
        base,
        instructions_tokens=max(base.instructions_tokens, 2 * len(conversation.system) + 1024),
        tools_tokens=max(base.tools_tokens, 2 * tools_chars + 1024),
        tools_count=max(base.tools_count, len(conversation.tools)),
    )
