"""Token counts of a session's request texts, reused from one build to the next.

Assembly sizes every part of every request, and a running session's requests share
nearly all of their parts (the same text objects, kept by the render memo). A count is
the estimator's raw count times the correction factor folded from the log; the raw
counts of the estimators shipped here are pure functions of the text, so a count is
reused only for the very same text object under the very same factor. Other
estimators are asked every time. The counts only ever size a request: the bytes it
carries depend on the recorded yields, which a rebuild reuses.

A reopened session has no text objects yet: it may be given raw counts by the digest of
their text (:meth:`EstimateMemo.seed`, from a session checkpoint written by the same
estimator, see :func:`estimator_fingerprint`), so the first build after a reopen does not
count again every text of the history it already counted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping

from contextwright._version import __version__
from contextwright.budget.estimator import (
    ExactEstimator,
    HeuristicEstimator,
    TokenEstimator,
    corrected,
    corrected_counter,
    encoding_for,
    profile_for,
    raw_count,
)
from contextwright.canonical import canonical_json

__all__ = ["EstimateMemo"]


class EstimateMemo:
    """Counts by text object, kept for the texts of the last two builds."""

    def __init__(self) -> None:
        self._state: tuple[int, str, float] | None = None
        self._counts: _Counts | None = None
        self._seeds: dict[str, Mapping[bytes, int]] = {}

    def counter(self, estimator: TokenEstimator, model: str, *, factor: float) -> Callable[[str], int]:
        """A counter for ``model``, raw counts times ``factor``, for one build (call once per build: older counts age out).

        Under the same estimator, model and factor it is the same counter object, so what a
        build derives from its counts (a message's size) can be kept by that object."""
        if type(estimator) not in _PURE_RAW_COUNTS:
            return corrected_counter(estimator, model=model, factor=factor)
        state = (id(estimator), model, factor)
        if state != self._state or self._counts is None:
            self._state, self._counts = state, _Counts(estimator, model, factor, self._seeds.get(model, {}))
        self._counts.age()
        return self._counts

    def seed(self, model: str, raw_by_digest: Mapping[bytes, int]) -> None:
        """Raw counts of ``model`` by :func:`text_digest`, for texts no build of this process has counted yet."""
        self._seeds[model] = raw_by_digest
        self._state = self._counts = None

    def raw_counts(self, estimator: TokenEstimator, model: str, texts: Iterable[str]) -> dict[bytes, int]:
        """The raw counts of ``texts`` by :func:`text_digest` (those counted by the last builds are not counted again)."""
        counts = self._counts
        known = {} if counts is None or self._state is None or self._state[1] != model else counts.known()
        raw: dict[bytes, int] = {}
        for text in texts:
            found = known.get(id(text))
            count = found[1] if found is not None and found[0] is text else raw_count(estimator, text, model=model)
            raw[text_digest(text)] = count
        return raw

    def current(self, estimator: TokenEstimator, model: str, *, factor: float) -> Callable[[str], int] | None:
        """The counter the last :meth:`counter` call handed out, if it was for this estimator, model and factor
        (it counts what a new one would; asking does not age its counts)."""
        if self._counts is not None and self._state == (id(estimator), model, factor):
            return self._counts
        return None


class _Counts:
    """A pure counter's results by text object, for the texts of this and the last build."""

    def __init__(self, estimator: TokenEstimator, model: str, factor: float, seed: Mapping[bytes, int]) -> None:
        self._estimator = estimator
        self._model = model
        self._factor = factor
        self._seed = seed
        self._current: dict[int, tuple[str, int, int]] = {}
        self._previous: dict[int, tuple[str, int, int]] = {}

    def age(self) -> None:
        self._previous, self._current = self._current, {}

    def known(self) -> dict[int, tuple[str, int, int]]:
        """(text, raw count, count) of the texts of this build and the last, by text object."""
        return {**self._previous, **self._current}

    def __call__(self, text: str) -> int:
        known = self._current.get(id(text)) or self._previous.get(id(text))
        if known is None or known[0] is not text:
            raw = self._seed.get(text_digest(text)) if self._seed else None
            if raw is None:
                raw = raw_count(self._estimator, text, model=self._model)
            known = (text, raw, corrected(raw, self._factor))
        self._current[id(text)] = known
        return known[2]


def text_digest(text: str) -> bytes:
    """The key of a text's raw count in a seed (16 bytes of BLAKE2b)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def estimator_fingerprint(estimator: TokenEstimator, model: str) -> str | None:
    """What a raw count of ``model`` depends on besides its text (None: counts that cannot be reused).

    The package version stands for the counting code; the coefficients and the encoding for the data."""
    if type(estimator) is HeuristicEstimator:
        profile = profile_for(model, estimator.calibration)
        shape = [profile.name, {k: list(v) for k, v in sorted(profile.coefficients.items())}, profile.scale, profile.encoding]
    elif type(estimator) is ExactEstimator:
        shape = [encoding_for(model)]
    else:
        return None
    text = canonical_json([type(estimator).__name__, __version__, model, shape])
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


_PURE_RAW_COUNTS: tuple[type, ...] = (HeuristicEstimator, ExactEstimator)
"""Estimators whose raw count depends on the text alone."""
