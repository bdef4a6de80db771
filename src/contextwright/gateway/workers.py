"""Several gateways on one store: what a worker tracks in memory, brought up to the log before it decides.

Gateway workers behind one client address are stateless over the store, like the HTTP
service's: any of them may get the next request of a session. A worker keeps each run it
met as an open session (its recorded turns, whether it waits for an answer), and reads the
run's tail before it reconciles a request: when another worker appended, the run is
folded again from the log (:func:`catch_up`). Two more rules make the hand-over exact:

* The answer to a request is recorded by the worker that streamed it, after its last
  byte; the client may send its next request to another worker before that recording
  lands. A worker that finds the run waiting for an answer built elsewhere, while the
  request it got already holds that answer, waits for it (:func:`wait_for_answer`, up to
  ``GatewayConfig.answer_wait`` seconds, polling the log) instead of recording the answer a second time from the
  client's copy. A worker killed before its last byte recorded no answer: nothing waits
  for one, and the client's retry continues the run on whichever worker gets it.
* A new run of a session is numbered after every run in the log, not only those this
  worker tracks (the recorder reads them back first).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from contextwright.derive._framework_items import fold_seen_history
from contextwright.events.envelope import Event
from contextwright.gateway.config import ANSWER_WAIT
from contextwright.gateway.reconcile import Run

POLL = 0.02
"""Seconds between two reads of the log while waiting."""


def awaiting(events: Sequence[Event]) -> bool:
    """True when the last request built in these events has no answer after it."""
    built = [e.seq for e in events if e.type == "context.request.built"]
    answered = [e.seq for e in events if e.type == "message.assistant"]
    return bool(built) and (not answered or built[-1] > answered[-1])


def noted(events: Sequence[Event]) -> bool:
    """True unless the last answer in these events still lacks the note of its fingerprint (recorded right after it)."""
    answers = [e.seq for e in events if e.type == "message.assistant"]
    notes = [e.seq for e in events if e.type == "framework.history.seen"]
    return not answers or (bool(notes) and notes[-1] > answers[-1])


def catch_up(run: Run) -> bool:
    """Read the run's tail; when another worker appended to it, fold the run again from the log. True then.

    A run whose last answer is recorded but not yet noted counts as waiting for it: its turns
    are not all in the log's record of them yet. The request this worker built for it (kept
    for a retry) is dropped: it is no longer the last."""
    if not run.session.history.after(run.session.history.last_seq):
        return False
    events = run.session.history.events
    run.fingerprints = fold_seen_history(events)
    run.awaiting = awaiting(events) or not noted(events)
    run.request = None
    run.last_response = None
    return True


def wait_for_answer(run: Run, fingerprints: Sequence[str], *, timeout: float = ANSWER_WAIT) -> None:
    """Wait while another worker records the answer these turns already hold (see the module's notes).

    Returns at once unless the run waits for an answer to a request this worker did not build,
    and ``fingerprints`` go past the run's turns (the next one is that answer)."""
    deadline = time.monotonic() + timeout
    while _held_elsewhere(run, fingerprints):
        if time.monotonic() > deadline:
            return  # that worker is gone: the answer is recorded from the client's copy
        time.sleep(POLL)
        catch_up(run)


def _held_elsewhere(run: Run, fingerprints: Sequence[str]) -> bool:
    recorded = run.fingerprints
    return (
        run.awaiting
        and run.request is None
        and len(fingerprints) > len(recorded)
        and list(fingerprints[: len(recorded)]) == recorded
    )
