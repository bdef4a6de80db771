"""Token estimators: a conservative heuristic default and exact OpenAI counts.

Budgets are absolute, so a size estimate that comes out low can overflow a context
window. The default :class:`HeuristicEstimator` is therefore built to err high: it
weighs a :class:`~contextwright.budget._content_kinds.CharCensus` with coefficients
fitted as an upper quantile (99.5%) of exact token counts, per content kind and per
tokenizer family, with non-negative weights so that more text never costs less.
``bench/estimator_bench.py --fit --write`` refits the coefficients (``coefficients.json``,
package data next to this module) from the shared corpora and prints how often the
estimate falls below the exact count.

Model families map to calibration profiles:

* OpenAI ``o200k_base`` models (gpt-4o, gpt-4.1, gpt-4.5, gpt-5*, o-series, gpt-oss):
  the ``o200k`` fit.
* OpenAI ``cl100k_base`` models (gpt-4, gpt-3.5-turbo, text-embedding-3/ada-002): the
  ``cl100k`` fit.
* Anthropic ``claude-*``: no public tokenizer, so the ``o200k`` fit times
  :data:`ANTHROPIC_FACTOR` (models up to 4.6) or :data:`ANTHROPIC_47_FACTOR` (4.7 and
  newer, whose tokenizer is denser). The factors are assumptions (Claude tokenizers generally
  produce more tokens than o200k for the same text), corrected at run time by
  :class:`~contextwright.budget._reconcile.Reconciler` from provider-reported usage.
* Anything else: the element-wise maximum of both fits times :data:`UNKNOWN_FACTOR`,
  the most conservative profile.

Weights come in calibrations (:data:`CALIBRATIONS`). ``corpus`` is the fit above alone;
``stress`` (the default) adds per-family surcharges (``surcharges.json``) for the text
shapes the corpora hardly hold and that tokenize worst: ANSI escapes, short-key JSON,
long letter-digit runs (base64), scripts, made-up Cyrillic words. They are fitted on the
payloads of :mod:`contextwright.testing.stress` by ``bench/estimator_bench.py --stress
--fit-stress --write``. A recorded request names the calibration it was sized with, so
rebuilding it sizes it the same way however the default moves on.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import operator
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final, Protocol, runtime_checkable

from contextwright._optional import require
from contextwright.budget._content_kinds import (
    CONTENT_KINDS,
    FEATURES,
    CharCensus,
    ContentKind,
    census,
    census_between,
    classify,
)
from contextwright.budget._reconcile import Reconciler
from contextwright.canonical import canonical_json
from contextwright.errors import UsageError

BODY_MARGIN: Final[float] = 0.05
"""Safety margin added on top of body (non-prefix) estimates."""

ANTHROPIC_FACTOR: Final[float] = 1.3
"""Assumed Claude (up to 4.6) to o200k token ratio, reconciled from provider usage.

Measured chars-per-token ratios against o200k run from 1.05 (English prose) to 1.28
(TypeScript, schema-like JSON) for these models, so 1.3 covers the measured range."""

ANTHROPIC_47_FACTOR: Final[float] = 1.7
"""Assumed ratio for Claude 4.7 and newer, whose tokenizer yields 1.3-1.7x o200k's
count on prose, code and JSON (up to about 1.95x on minified schema-like JSON, which
reconciliation against provider usage has to catch)."""

UNKNOWN_FACTOR: Final[float] = 1.7
"""Extra factor for models of unknown family, on top of the larger of both fits: as
large as the largest known family's, so an unknown model is never sized below one."""

CORPUS_CALIBRATION: Final[str] = "corpus"
"""The weights fitted on the shared corpora and translation catalogs alone (``coefficients.json``)."""

STRESS_CALIBRATION: Final[str] = "stress"
"""The corpus weights plus per-family surcharges for the text shapes that tokenize worst (ANSI
escapes, short-key JSON, long letter-digit runs, scripts, made-up Cyrillic words), fitted on
:mod:`contextwright.testing.stress` payloads. English prose without them costs the same."""

CALIBRATIONS: Final[tuple[str, ...]] = (CORPUS_CALIBRATION, STRESS_CALIBRATION)
"""Every calibration a :class:`HeuristicEstimator` can use, oldest first. Requests record the one
they were sized with, so a rebuild sizes them with it again."""

DEFAULT_CALIBRATION: Final[str] = STRESS_CALIBRATION


DEFAULT_MEMO_SIZE: Final[int] = 4096
MEMO_TEXT_KEY_CHARS: Final[int] = 16_384
"""Texts up to this length key the memo themselves (a str caches its own hash), longer ones by digest."""
"""How many raw estimates a :class:`HeuristicEstimator` keeps by default."""
CENSUS_REUSE_MIN_CHARS: Final[int] = 1024
"""Censuses of texts at least this long are kept, so a text that wraps one in a first and last line scans only those."""
CENSUS_MEMO_CHARS: Final[int] = 8_000_000
"""At most this many characters of text key kept censuses (the texts are held, not copied)."""


@runtime_checkable
class TokenEstimator(Protocol):
    """Sizes text in tokens for a given model, exactly or conservatively."""

    @property
    def exact(self) -> bool:
        """True when counts are exact tokenizer counts, False for upper-bound estimates."""
        ...

    def estimate(self, text: str, *, model: str, kind: str | None = None) -> int:
        """Return the token count (or conservative estimate) of ``text`` for ``model``."""
        ...

    def estimate_json(self, value: Any, *, model: str, kind: str | None = None) -> int:
        """Return :meth:`estimate` of the canonical JSON text of ``value``."""
        ...


@dataclass(frozen=True, kw_only=True, slots=True)
class CalibrationProfile:
    """Per-kind heuristic coefficients for one tokenizer family."""

    name: str
    """Profile name: ``o200k``, ``cl100k``, ``anthropic`` or ``unknown``."""

    coefficients: Mapping[ContentKind, tuple[float, ...]]
    """One weight per :data:`~contextwright.budget._content_kinds.FEATURES` entry, per kind."""

    scale: float = 1.0
    """Multiplier applied to every estimate of this profile."""

    encoding: str | None = None
    """The exact tokenizer encoding of the family, when one is public."""

    calibration: str = CORPUS_CALIBRATION
    """Which of :data:`CALIBRATIONS` the weights belong to."""

    def raw(self, counts: CharCensus, kind: ContentKind) -> float:
        """Return the uncorrected, unrounded estimate for a census of the given kind."""
        # Summed in a fixed order, so the same census always gives the same float.
        weighted: float = sum(map(operator.mul, self.coefficients[kind], counts.counts))
        return self.scale * weighted


def apply_margin(tokens: int, margin: float = BODY_MARGIN) -> int:
    """Return ``tokens`` raised by ``margin`` (a fraction), rounded up."""
    if margin < 0:
        raise UsageError(f"margin must be >= 0, got {margin!r}", margin=margin)
    return math.ceil(tokens * (1.0 + margin) - 1e-9)


COEFFICIENTS_FILE: Final[str] = "coefficients.json"
"""The fitted weights, package data next to this module, written by ``bench/estimator_bench.py --fit --write``."""

SURCHARGES_FILE: Final[str] = "surcharges.json"
"""Per-family weights the ``stress`` calibration adds to every kind's fitted ones, written by
``bench/estimator_bench.py --fit-stress --write``."""


def _load(file: str) -> Any:
    return json.loads(resources.files("contextwright.budget").joinpath(file).read_text(encoding="utf-8"))


def _load_fitted() -> dict[str, dict[str, dict[str, float]]]:
    """Family → content kind → feature name → weight, as the benchmark fitted them."""
    fitted: dict[str, dict[str, dict[str, float]]] = _load(COEFFICIENTS_FILE)
    return fitted


_FITTED: Final = _load_fitted()
_SURCHARGES: Final[dict[str, dict[str, float]]] = _load(SURCHARGES_FILE)


def _dense(weights: Mapping[str, float]) -> tuple[float, ...]:
    unknown = set(weights) - set(FEATURES)
    if unknown:  # a stale fit must fail loudly rather than drop weights
        raise ValueError(f"fitted coefficients name unknown features: {sorted(unknown)}")
    return tuple(float(weights.get(name, 0.0)) for name in FEATURES)


def _fitted(family: str, calibration: str) -> dict[ContentKind, tuple[float, ...]]:
    extra = _dense(_SURCHARGES[family] if calibration == STRESS_CALIBRATION else {})
    # Added only where a surcharge is: an unchanged weight keeps its exact float.
    return {
        kind: tuple(w + x if x else w for w, x in zip(_dense(_FITTED[family][kind]), extra, strict=True))
        for kind in CONTENT_KINDS
    }


def _elementwise_max(*tables: Mapping[ContentKind, tuple[float, ...]]) -> dict[ContentKind, tuple[float, ...]]:
    return {kind: tuple(map(max, *(t[kind] for t in tables))) for kind in CONTENT_KINDS}


@dataclass(frozen=True, kw_only=True, slots=True)
class _Profiles:
    o200k: CalibrationProfile
    cl100k: CalibrationProfile
    anthropic: CalibrationProfile
    anthropic_47: CalibrationProfile
    unknown: CalibrationProfile


def _profiles(calibration: str) -> _Profiles:
    o200k = CalibrationProfile(
        name="o200k", coefficients=_fitted("o200k", calibration), encoding="o200k_base", calibration=calibration
    )
    cl100k = CalibrationProfile(
        name="cl100k", coefficients=_fitted("cl100k", calibration), encoding="cl100k_base", calibration=calibration
    )
    return _Profiles(
        o200k=o200k,
        cl100k=cl100k,
        anthropic=CalibrationProfile(
            name="anthropic", coefficients=o200k.coefficients, scale=ANTHROPIC_FACTOR, calibration=calibration
        ),
        anthropic_47=CalibrationProfile(
            name="anthropic-4.7", coefficients=o200k.coefficients, scale=ANTHROPIC_47_FACTOR, calibration=calibration
        ),
        unknown=CalibrationProfile(
            name="unknown",
            coefficients=_elementwise_max(o200k.coefficients, cl100k.coefficients),
            scale=UNKNOWN_FACTOR,
            calibration=calibration,
        ),
    )


_PROFILES: Final[dict[str, _Profiles]] = {name: _profiles(name) for name in CALIBRATIONS}

O200K: Final = _PROFILES[DEFAULT_CALIBRATION].o200k
"""Profile for OpenAI ``o200k_base`` models."""

CL100K: Final = _PROFILES[DEFAULT_CALIBRATION].cl100k
"""Profile for OpenAI ``cl100k_base`` models."""

ANTHROPIC: Final = _PROFILES[DEFAULT_CALIBRATION].anthropic
"""Profile for Claude models up to 4.6: the o200k fit times :data:`ANTHROPIC_FACTOR`."""

ANTHROPIC_47: Final = _PROFILES[DEFAULT_CALIBRATION].anthropic_47
"""Profile for Claude 4.7 and newer: the o200k fit times :data:`ANTHROPIC_47_FACTOR`."""

UNKNOWN: Final = _PROFILES[DEFAULT_CALIBRATION].unknown
"""Profile for models of unknown family: the most conservative one."""

_CLAUDE_47_MODEL = re.compile(r"claude-(opus-4-[789]|opus-[5-9]|sonnet-[5-9]|haiku-[5-9]|fable|mythos)")
_O200K_MODEL = re.compile(r"^(?:chatgpt-4o|gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|gpt-oss|o\d)(?:\b|[-_.:])")
_CL100K_MODEL = re.compile(r"^(?:gpt-4|gpt-3\.5|gpt-35|text-embedding-3|text-embedding-ada-002)(?:\b|[-_.:])")


def check_calibration(calibration: str) -> str:
    """Return ``calibration`` when it is one of :data:`CALIBRATIONS`, else raise :class:`UsageError`."""
    if calibration not in _PROFILES:
        raise UsageError(f"unknown calibration {calibration!r}; choose one of {CALIBRATIONS}", calibration=calibration)
    return calibration


def profile_for(model: str, calibration: str = DEFAULT_CALIBRATION) -> CalibrationProfile:
    """Return the calibration profile of ``model`` (unknown families get the most conservative)."""
    if type(model) is str and type(calibration) is str:
        # A session asks with the same few names again and again: the answer depends on the name alone.
        return _profile_of_name(model, calibration)
    return _profile_of(_model_name(model), check_calibration(calibration))


@functools.lru_cache(maxsize=256)
def _profile_of_name(model: str, calibration: str) -> CalibrationProfile:
    return _profile_of(_model_name(model), check_calibration(calibration))


def _profile_of(name: str, calibration: str) -> CalibrationProfile:
    profiles = _PROFILES[calibration]
    if _O200K_MODEL.match(name):
        return profiles.o200k
    if _CL100K_MODEL.match(name):
        return profiles.cl100k
    if "claude" in name:
        return profiles.anthropic_47 if _CLAUDE_47_MODEL.search(name) else profiles.anthropic
    return profiles.unknown


def encoding_for(model: str) -> str | None:
    """Return the public tokenizer encoding of ``model``, or None when there is none."""
    return profile_for(model).encoding


def _model_name(model: str) -> str:
    if not isinstance(model, str) or not model.strip():
        raise UsageError(f"model must be a non-empty string, got {model!r}", model=model)
    # Routers write "openai/gpt-4o" or "bedrock/anthropic.claude-..."; the family is in the last part.
    return model.strip().lower().rsplit("/", 1)[-1]


def _check_kind(kind: str | None) -> ContentKind | None:
    if kind is None or kind in CONTENT_KINDS:
        return kind
    raise UsageError(f"unknown content kind {kind!r}; choose one of {CONTENT_KINDS}", kind=kind)


class HeuristicEstimator:
    """Conservative estimates from character classes, memoized, corrected per model.

    Raw estimates are memoized in an LRU keyed by (model, kind, payload), a long payload by its hash. The
    reconciler's current correction factor for the model is applied on every call, so
    a factor learned from provider usage also re-sizes payloads seen before. With
    unchanged state (same reconciler factors), the same call returns the same number.
    ``calibration`` picks the weights (one of :data:`CALIBRATIONS`); :meth:`calibrated`
    gives an estimator of another one, to size requests recorded under it.
    """

    def __init__(
        self,
        *,
        reconciler: Reconciler | None = None,
        memo_size: int = DEFAULT_MEMO_SIZE,
        calibration: str = DEFAULT_CALIBRATION,
    ) -> None:
        if memo_size < 0:
            raise UsageError(f"memo_size must be >= 0, got {memo_size!r}", memo_size=memo_size)
        self.reconciler = reconciler if reconciler is not None else Reconciler()
        """Source of the per-model correction factors."""
        self.calibration = check_calibration(calibration)
        """Which of :data:`CALIBRATIONS` the raw estimates use."""
        self._siblings: dict[str, HeuristicEstimator] = {calibration: self}
        self._memo_size = memo_size
        self._memo: OrderedDict[tuple[str, str | None, str | bytes], float] = OrderedDict()
        self._lock = threading.Lock()
        self.memo_hits = 0
        """How many raw estimates were answered from the memo."""
        self.memo_misses = 0
        """How many raw estimates were computed."""
        self._censuses: OrderedDict[str, CharCensus] = OrderedDict()
        self._census_chars = 0

    @property
    def exact(self) -> bool:
        """Always False: these are upper-bound estimates."""
        return False

    def calibrated(self, calibration: str) -> HeuristicEstimator:
        """This estimator under ``calibration``: itself, or a sibling with the same reconciler and memo size (kept)."""
        with self._lock:
            sibling = self._siblings.get(calibration)
            if sibling is None:
                sibling = HeuristicEstimator(reconciler=self.reconciler, memo_size=self._memo_size, calibration=calibration)
                sibling._siblings = self._siblings
                self._siblings[calibration] = sibling
            return sibling

    def raw(self, text: str, *, model: str, kind: str | None = None) -> float:
        """Return the memoized estimate before correction and rounding."""
        checked = _check_kind(kind)
        key = None
        if self._memo_size and isinstance(text, str) and text and isinstance(model, str):
            # Re-estimating a text the session already holds then costs no re-encoding and no digest;
            # only long texts are digested, so the memo never pins large strings.
            digest = text if len(text) <= MEMO_TEXT_KEY_CHARS else hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
            key = (model, checked, digest)
            with self._lock:
                cached = self._memo.get(key)
                if cached is not None:
                    # Only a model that profile_for accepted is ever a key: a hit needs no second look.
                    self._memo.move_to_end(key)
                    self.memo_hits += 1
                    return cached
        profile = profile_for(model, self.calibration)
        if not isinstance(text, str):
            raise UsageError(f"text must be str, got {type(text).__name__}")
        if not text:
            return 0.0
        if key is None:
            counts = self._census(text)
            self.memo_misses += 1
            return profile.raw(counts, checked if checked is not None else classify(counts))
        counts = self._census(text)
        value = profile.raw(counts, checked if checked is not None else classify(counts))
        with self._lock:
            self.memo_misses += 1
            self._memo[key] = value
            if len(self._memo) > self._memo_size:
                self._memo.popitem(last=False)
        return value

    def _census(self, text: str) -> CharCensus:
        """``census(text)``; a long text whose lines between its first and last were counted before
        (a tool output inside its envelope) scans only those two lines. Exact either way."""
        if not self._memo_size or len(text) < CENSUS_REUSE_MIN_CHARS:
            return census(text)
        counts = None
        first, last = text.find("\n"), text.rfind("\n")
        if first < last:
            body = text[first + 1 : last]
            with self._lock:
                inner = self._censuses.get(body)
            if inner is not None:
                counts = census_between(text[:first], inner, body, text[last + 1 :])
        if counts is None:
            counts = census(text)
        with self._lock:
            if len(text) <= CENSUS_MEMO_CHARS // 8 and text not in self._censuses:
                self._censuses[text] = counts
                self._census_chars += len(text)
                while self._census_chars > CENSUS_MEMO_CHARS:
                    old, _ = self._censuses.popitem(last=False)
                    self._census_chars -= len(old)
        return counts

    def raw_estimate(self, text: str, *, model: str, kind: str | None = None) -> int:
        """Return the uncorrected estimate, rounded up; feed this to the reconciler."""
        return math.ceil(self.raw(text, model=model, kind=kind) - 1e-9)

    def estimate(self, text: str, *, model: str, kind: str | None = None) -> int:
        """Return the corrected conservative estimate of ``text`` for ``model``."""
        raw = self.raw(text, model=model, kind=kind)
        return math.ceil(raw * self.reconciler.factor(model) - 1e-9)

    def estimate_json(self, value: Any, *, model: str, kind: str | None = None) -> int:
        """Return :meth:`estimate` of the canonical JSON of ``value``."""
        return self.estimate(canonical_json(value), model=model, kind=kind)

    def estimate_body(self, text: str, *, model: str, kind: str | None = None, margin: float = BODY_MARGIN) -> int:
        """Return :meth:`estimate` plus the body safety margin."""
        return apply_margin(self.estimate(text, model=model, kind=kind), margin)

    def clear(self) -> None:
        """Forget every memoized raw estimate."""
        with self._lock:
            self._memo.clear()
            self._censuses.clear()
            self._census_chars = 0

    def __len__(self) -> int:
        """Number of memoized raw estimates."""
        return len(self._memo)


class ExactEstimator:
    """Exact token counts for OpenAI encodings via tiktoken ([tiktoken] extra).

    Raises :class:`~contextwright.errors.MissingDependencyError` (an ImportError) when
    tiktoken is not installed, and :class:`~contextwright.errors.UsageError` for a model
    without a public encoding.
    """

    def __init__(self) -> None:
        require("tiktoken", extra="tiktoken", feature="exact token counting")
        self._counters: dict[str, Callable[[str], int]] = {}
        self._lock = threading.Lock()

    @property
    def exact(self) -> bool:
        """Always True."""
        return True

    def estimate(self, text: str, *, model: str, kind: str | None = None) -> int:
        """Return the exact token count of ``text`` under the model's encoding."""
        _check_kind(kind)
        encoding = encoding_for(model)
        if encoding is None:
            raise UsageError(f"model {model!r} has no public tokenizer; use a HeuristicEstimator", model=model)
        return self._counter(encoding)(text)

    def estimate_json(self, value: Any, *, model: str, kind: str | None = None) -> int:
        """Return the exact token count of the canonical JSON of ``value``."""
        return self.estimate(canonical_json(value), model=model, kind=kind)

    def estimate_body(self, text: str, *, model: str, kind: str | None = None, margin: float = BODY_MARGIN) -> int:
        """Return the exact count plus the body safety margin."""
        return apply_margin(self.estimate(text, model=model, kind=kind), margin)

    def _counter(self, encoding: str) -> Callable[[str], int]:
        with self._lock:
            counter = self._counters.get(encoding)
            if counter is None:
                from contextwright.budget._tokenizers import exact_token_counter

                counter = self._counters[encoding] = exact_token_counter(encoding)
            return counter


def calibration_of(estimator: TokenEstimator) -> str | None:
    """The calibration a heuristic estimator sizes with; None for any other (an exact count has none)."""
    return estimator.calibration if isinstance(estimator, HeuristicEstimator) else None


def as_calibrated(estimator: TokenEstimator, calibration: str) -> TokenEstimator:
    """``estimator`` under ``calibration`` when it is a heuristic one, else ``estimator`` itself."""
    return estimator.calibrated(calibration) if isinstance(estimator, HeuristicEstimator) else estimator


def raw_count(estimator: TokenEstimator, text: str, *, model: str) -> int:
    """The estimate of ``text`` before any correction factor: what reconciliation learns on.

    A :class:`HeuristicEstimator`'s raw estimate; any other estimator's own count
    (an exact text count still misses the provider's framing, which the factor learns).
    """
    raw = getattr(estimator, "raw_estimate", None)
    if raw is not None:
        value: int = raw(text, model=model)
        return value
    return estimator.estimate(text, model=model)


def corrected_counter(estimator: TokenEstimator, *, model: str, factor: float) -> Callable[[str], int]:
    """A ``text -> tokens`` counter: the raw count of ``text`` times ``factor``, rounded up."""
    if factor == 1.0:
        return lambda text: raw_count(estimator, text, model=model)
    return lambda text: corrected(raw_count(estimator, text, model=model), factor)


def corrected(raw: int, factor: float) -> int:
    """A raw count times ``factor``, rounded up (a product a hair over a whole number stays that number)."""
    return raw if factor == 1.0 else math.ceil(raw * factor - 1e-9)


def prefix_estimator(model: str, *, fallback: TokenEstimator) -> TokenEstimator:
    """Return an exact estimator for ``model`` when it has a usable tokenizer, else ``fallback``.

    The prefix is measured once per plan, so it is worth an exact count wherever one
    exists; when tiktoken is not installed or the model has no public encoding, the
    (conservative) fallback measures it instead.
    """
    if encoding_for(model) is None:
        return fallback
    try:
        return ExactEstimator()
    except ImportError:
        return fallback
