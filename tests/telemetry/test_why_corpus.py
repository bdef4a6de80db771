"""On real transcripts: every string the evidence measure counts as missing, ``why`` puts down to a recorded step.

Each transcript is replayed through the engine at a small window (so relief works hard),
the evidence measure judges every (call, string) pair on the requests the engine built,
and ``why`` is asked about each miss on the request of its call, from the session's log
alone. It must name a step that hid the string, with the pointer to the original, and the
measure's cause must be that step or one of the steps the answer lists (an output
compressed on arrival and later pruned reads as ``compressed`` first, then ``pruned``).
"""

from __future__ import annotations

from collections import Counter

import pytest

from contextwright.compare import SentRequest, timeline_of
from contextwright.compare.evidence import judge_pairs
from contextwright.importers import load_transcripts
from contextwright.log import open_log
from contextwright.models import anthropic, with_window
from contextwright.replay import replay
from contextwright.runtime.engine import Engine
from contextwright.telemetry.why import HIDDEN, Explainer, artifact_reader

pytestmark = pytest.mark.corpus

WINDOW = 16_000
FEW = (
    "fe869ecb-c176-478f-9734-7e4b8ef12cff.jsonl",  # claude-code-jsonl: compressed, pruned and compacted misses
    "django__django-10097.json",  # openhands-llm-completions: pruned and compacted
    "astropy__astropy-13398.json",  # openhands-llm-completions: compressed on arrival
    "demo__ctf__rev__rock.traj",  # swe-agent
)


def _misses(transcript) -> tuple[list[tuple[str, str, object]], Explainer]:
    """Each missed pair as (cause, string, request built for its call), and the session's explainer."""
    timeline = timeline_of(transcript)
    engine = Engine(open_log("memory://"))
    try:
        result = replay(transcript, engine=engine, model=with_window(anthropic("claude-sonnet-4-6"), WINDOW))
        events = result.session.history.events
        explainer = Explainer(events, read_artifact=artifact_reader(engine.log))
    finally:
        engine.close()
    # Each recorded assistant message after a request built answers that request (as the comparison reads it).
    ordinals: list[int] = []
    built_since, ordinal = False, 0
    for event in events:
        if event.type == "context.request.built":
            built_since = True
        elif event.type == "message.assistant":
            if built_since:
                ordinals.append(ordinal)
            built_since, ordinal = False, ordinal + 1
    by_ordinal = dict(zip(ordinals, result.requests, strict=True))
    sent = [
        SentRequest(at=timeline.calls[0].at, body=built.anthropic(), task=None, relief=built.result.yields, ordinal=number)
        for number, built in by_ordinal.items()
    ]
    missed = [
        (judged.cause, judged.string.text, by_ordinal[judged.call.ordinal])
        for judged in judge_pairs(timeline, sent, strategy="contextwright")
        if judged.cause not in (None, "not_built")  # a call with no request has nothing to explain
    ]
    return missed, explainer


def test_why_names_the_step_that_hid_every_string_the_measure_counts_missing(traces_dir):
    causes: Counter[str] = Counter()
    for name in FEW:
        [path] = sorted(traces_dir.rglob(name))
        for transcript in load_transcripts([path]):
            missed, explainer = _misses(transcript)
            for cause, text, built in missed:
                answer = explainer.why(text, request_index=built.index, request=built.neutral)
                assert answer.fate in HIDDEN and answer.hidden_by is not None, (name, cause, text, answer.summary)
                assert answer.pointer, (name, text)
                named = {answer.fate, *(step.what for step in answer.steps)}
                assert cause in named, (name, cause, text, answer.fate, sorted(named))
                causes[cause] += 1
    # The transcripts exercise the main ways the engine hides evidence.
    assert {"compressed", "pruned", "compacted"} <= set(causes), causes
    assert sum(causes.values()) >= 50, causes
