"""Token counts of a session's request texts, reused from one build to the next.

Assembly sizes every part of every request, and a running session's requests share
nearly all of their parts (the same text objects, kept by the render memo). A count is
the estimator's raw count times the correction factor folded from the log; the raw
counts of the estimators shipped here are pure functions of the text, so a count is
reused only for the very same text object under the very same factor. Other
estimators are asked every time. The counts only ever size a request: the bytes it
carries depend on the recorded yields, which a rebuild replays.
"""

from __future__ import annotations

from collections.abc import Callable

from contextwright.budget.estimator import ExactEstimator, HeuristicEstimator, TokenEstimator, corrected_counter

__all__ = ["EstimateMemo"]


class EstimateMemo:
    """Counts by text object, kept for the texts of the last two builds."""

    def __init__(self) -> None:
        self._state: tuple[int, str, float] | None = None
        self._counts: _Counts | None = None

    def counter(self, estimator: TokenEstimator, model: str, *, factor: float) -> Callable[[str], int]:
        """A counter for ``model``, raw counts times ``factor``, for one build (call once per build: older counts age out).

        Under the same estimator, model and factor it is the same counter object, so what a
        build derives from its counts (a message's size) can be kept by that object."""
        corrected = corrected_counter(estimator, model=model, factor=factor)
        if type(estimator) not in _PURE_RAW_COUNTS:
            return corrected
        state = (id(estimator), model, factor)
        if state != self._state or self._counts is None:
            self._state, self._counts = state, _Counts(corrected)
        self._counts.age()
        return self._counts

    def current(self, estimator: TokenEstimator, model: str, *, factor: float) -> Callable[[str], int] | None:
        """The counter the last :meth:`counter` call handed out, if it was for this estimator, model and factor
        (it counts what a new one would; asking does not age its counts)."""
        if self._counts is not None and self._state == (id(estimator), model, factor):
            return self._counts
        return None


class _Counts:
    """A pure counter's results by text object, for the texts of this and the last build."""

    def __init__(self, corrected: Callable[[str], int]) -> None:
        self._corrected = corrected
        self._current: dict[int, tuple[str, int]] = {}
        self._previous: dict[int, tuple[str, int]] = {}

    def age(self) -> None:
        self._previous, self._current = self._current, {}

    def __call__(self, text: str) -> int:
        known = self._current.get(id(text)) or self._previous.get(id(text))
        if known is None or known[0] is not text:
            known = (text, self._corrected(text))
        self._current[id(text)] = known
        return known[1]


_PURE_RAW_COUNTS: tuple[type, ...] = (HeuristicEstimator, ExactEstimator)
"""Estimators whose raw count depends on the text alone."""
