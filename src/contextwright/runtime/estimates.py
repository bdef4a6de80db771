"""Token counts of a session's request texts, reused from one build to the next.

Assembly sizes every part of every request, and a running session's requests share
nearly all of their parts (the same text objects, kept by the render memo). The
estimators shipped here are pure functions of the text and of a state that is cheap
to read (the reconciler's current factor for the model; nothing for exact counts), so
a count is reused only for the very same text object under the very same state. Other
estimators are asked every time. The counts only ever size a request: the bytes it
carries depend on the recorded yields, which a rebuild replays.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from contextwright.budget.estimator import ExactEstimator, HeuristicEstimator, TokenEstimator

__all__ = ["EstimateMemo"]


class EstimateMemo:
    """Counts by text object, kept for the texts of the last two builds."""

    def __init__(self) -> None:
        self._state: tuple[int, str, Hashable] | None = None
        self._current: dict[int, tuple[str, int]] = {}
        self._previous: dict[int, tuple[str, int]] = {}

    def counter(self, estimator: TokenEstimator, model: str) -> Callable[[str], int]:
        """A token counter for ``model`` for one build (call once per build: older counts age out)."""
        stamp = _state_of(estimator, model)
        if stamp is None:
            return lambda text: estimator.estimate(text, model=model)
        state = (id(estimator), model, stamp)
        if state != self._state:
            self._state, self._current, self._previous = state, {}, {}
        self._previous, self._current = self._current, {}
        current, previous = self._current, self._previous

        def count(text: str) -> int:
            known = current.get(id(text)) or previous.get(id(text))
            if known is None or known[0] is not text:
                known = (text, estimator.estimate(text, model=model))
            current[id(text)] = known
            return known[1]

        return count


def _state_of(estimator: TokenEstimator, model: str) -> Hashable | None:
    """What an estimator's answers depend on besides the text, or None when that is not known."""
    if type(estimator) is HeuristicEstimator:
        return estimator.reconciler.factor(model)
    if type(estimator) is ExactEstimator:
        return ()
    return None
