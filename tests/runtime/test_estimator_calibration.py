"""A request records the estimator calibration it was sized with, and rebuilds with it.

The default calibration moved from ``corpus`` to ``stress`` (surcharges for ANSI escapes,
scripts, base64 and the like). Requests recorded before carry no ``estimator`` input and
were sized with the corpus weights: a rebuild must size them so again, or a bounded view
of coloured or non-Latin text would come out a different size than was sent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from contextwright.budget.estimator import CORPUS_CALIBRATION, STRESS_CALIBRATION, HeuristicEstimator
from contextwright.errors import StorageCorrupted
from contextwright.runtime import requests as requests_module
from contextwright.testing.fakes import open_session

WINDOW = 32_000
REPORT = "".join(f"\x1b[1;32mok\x1b[0m \x1b[31m{n}\x1b[0m \x1b[36mщёфэюж\x1b[0m\n" for n in range(3_000))
"""Coloured, partly Cyrillic test output: the two calibrations size its bounded view differently."""


def _session_with_report(url: str, estimator: HeuristicEstimator) -> tuple[object, list]:
    _, session, _ = open_session(url=url, window=WINDOW, estimator=estimator)
    session.user("Fix the failing build.")
    first = session.next_request()
    session.user("Here it is:\n" + REPORT + "End of the report.")
    return session, [first, session.next_request()]


def _built_inputs(session) -> list[dict]:
    return [e.payload.inputs for e in session.history.events if e.type == "context.request.built"]


def test_new_requests_record_the_calibration_and_rebuild_with_it_under_another_default(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/store.db"
    session, requests = _session_with_report(url, HeuristicEstimator())
    assert [i.get("estimator") for i in _built_inputs(session)] == [STRESS_CALIBRATION] * 2
    # Reopened by a process whose estimator defaults to the corpus weights: still the bytes sent.
    _, reopened, _ = open_session(url=url, window=WINDOW, estimator=HeuristicEstimator(calibration=CORPUS_CALIBRATION))
    assert [reopened.inspect(r.index).sha256() for r in requests] == [r.neutral.sha256() for r in requests]


def test_a_log_recorded_before_calibrations_still_rebuilds_byte_for_byte(tmp_path: Path, monkeypatch) -> None:
    url = f"sqlite:///{tmp_path}/store.db"
    with monkeypatch.context() as patch:
        # As versions before calibrations recorded: corpus weights, no "estimator" input.
        patch.setattr(requests_module, "_estimator_inputs", lambda core: {})
        session, requests = _session_with_report(url, HeuristicEstimator(calibration=CORPUS_CALIBRATION))
    assert all("estimator" not in i for i in _built_inputs(session))
    sent = [r.neutral.sha256() for r in requests]
    _, reopened, _ = open_session(url=url, window=WINDOW)  # the default estimator: stress weights
    assert [reopened.inspect(r.index).sha256() for r in requests] == sent
    # Check the sizing matters here: under the new weights the report's view would differ.
    with monkeypatch.context() as patch:
        patch.setattr(requests_module, "CORPUS_CALIBRATION", STRESS_CALIBRATION)
        _, resized, _ = open_session(url=url, window=WINDOW)
        with pytest.raises(StorageCorrupted, match="the rebuilt request hashes to"):
            resized.inspect(requests[1].index)


def test_a_rebuild_under_an_older_calibration_keeps_the_current_counts_apart(tmp_path: Path, monkeypatch) -> None:
    url = f"sqlite:///{tmp_path}/store.db"
    with monkeypatch.context() as patch:
        patch.setattr(requests_module, "_estimator_inputs", lambda core: {})
        _session_with_report(url, HeuristicEstimator(calibration=CORPUS_CALIBRATION))
    estimator = HeuristicEstimator()
    _, reopened, _ = open_session(url=url, window=WINDOW, estimator=estimator)
    reopened.inspect(1)
    # The old request was counted by the corpus sibling; the session's own estimator counted nothing for it.
    assert estimator.calibrated(CORPUS_CALIBRATION).memo_misses > 0
    assert estimator.calibrated(CORPUS_CALIBRATION) is not estimator
    assert estimator.calibrated(STRESS_CALIBRATION) is estimator
