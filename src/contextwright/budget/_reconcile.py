"""Per-model correction factors learned from provider-reported usage.

A built request is sized in two parts (both recorded on ``context.request.built``):
the *exact* part, counted with a real tokenizer (the prefix, where one exists), and
the *estimated* part, the uncorrected heuristic estimate of everything else. When
the provider reports the request's whole input, the reconciler learns from the
estimated part alone: ``actual_estimated = provider_total - exact`` against the raw
estimate. Dividing a whole total (exact part included) by a factor would let the
factor feed on itself.

Per model, the reconciler tracks a *center* and a *spread* of ``log(actual / raw)``:

* The center moves toward each new observation, but by at most ``outlier_step``
  (Huber-style: one odd report, a retry counted twice or a vendor-side system
  prompt, can shift it only so far) or ``outlier_spreads`` times the current
  spread, whichever is larger.
* The factor is ``exp(center + margin)`` with ``margin = max(margin, Z * spread)``:
  an upper bound, never a mean, so the corrected estimate stays above the real
  input total on all but about 1% of requests. The default margin is measured on
  the shared transcripts with provider usage (``bench/estimator_bench.py``).
* It is clamped to [``min_factor``, ``max_factor``], and until ``warmup``
  observations have been seen for a model it never goes below 1.0: the raw
  estimate is already calibrated to err high, and one report is too little
  evidence to undercut it.

State is rebuilt from the log (:class:`UsageFold` folds ``model.response`` events
with the split of the request each answers), so a restart, or a second worker on
the same store, lands on the same factor: in-process state is only a cache.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from contextwright.errors import UsageError
from contextwright.events.envelope import Event

Z_99: Final[float] = 2.326
"""One-sided 99% point of the standard normal distribution."""

STATE_VERSION: Final[int] = 2
"""Version of the :meth:`Reconciler.to_dict` format."""

DEFAULT_MARGIN: Final[float] = 0.07
"""Log-margin kept above the center (about +7%): the smallest that kept projections below the
provider's total on under 1% of the Claude Code calls with provider usage in the shared transcripts,
with a median over-estimate under 5% (``bench/estimator_bench.py --usage``)."""

DEFAULT_MAX_FACTOR: Final[float] = 3.0
"""Highest factor by default. Content the provider counts but the estimate never saw (an agent's
own reminders, attached file state) is additive: on a short estimated part it can more than
double the ratio, and a clamp at 2.0 then kept projections below the real total for several calls
in a row. Over-estimating only costs slack, so the clamp sits well above any ratio seen."""

_PRIOR_SPREAD: Final[float] = 0.02  # until observations say otherwise


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelCorrection:
    """Running statistics of ``log(actual / estimated)`` for one model."""

    observations: int = 0
    """How many usage reports have been folded in."""

    center: float = 0.0
    """Outlier-bounded running center of the log ratio."""

    spread: float = _PRIOR_SPREAD
    """Running mean absolute deviation of the log ratio from the center (outliers capped)."""


class Reconciler:
    """Learns a conservative per-model correction factor from (estimated, actual) pairs."""

    def __init__(
        self,
        *,
        alpha: float = 1.0,
        margin: float = DEFAULT_MARGIN,
        outlier_step: float = 0.1,
        outlier_spreads: float = 3.0,
        min_factor: float = 0.5,
        max_factor: float = DEFAULT_MAX_FACTOR,
        warmup: int = 2,
    ) -> None:
        if not 0.0 < alpha <= 1.0:
            raise UsageError(f"alpha must be in (0, 1], got {alpha!r}", alpha=alpha)
        if margin < 0 or outlier_step <= 0 or outlier_spreads <= 0:
            raise UsageError(
                f"need margin >= 0 and positive outlier bounds, got {margin!r}, {outlier_step!r}, {outlier_spreads!r}",
                margin=margin,
            )
        if not 0.0 < min_factor <= 1.0 <= max_factor:
            raise UsageError(
                f"need 0 < min_factor <= 1 <= max_factor, got {min_factor!r}, {max_factor!r}",
                min_factor=min_factor,
                max_factor=max_factor,
            )
        if warmup < 0:
            raise UsageError(f"warmup must be >= 0, got {warmup!r}", warmup=warmup)
        self.alpha = alpha
        """Weight of the newest observation (after outlier capping)."""
        self.margin = margin
        """Smallest log-margin kept above the center."""
        self.outlier_step = outlier_step
        """Largest move of the center one observation may cause, in log units (at least)."""
        self.outlier_spreads = outlier_spreads
        """Largest move of the center one observation may cause, in spreads (at least)."""
        self.min_factor = min_factor
        """Lowest factor ever returned."""
        self.max_factor = max_factor
        """Highest factor ever returned."""
        self.warmup = warmup
        """Observations needed before a factor may go below 1.0."""
        self._models: dict[str, ModelCorrection] = {}
        self._lock = threading.Lock()

    def options(self) -> dict[str, Any]:
        """The settings (not the state), to build a reconciler that learns the same way."""
        return {
            "alpha": self.alpha,
            "margin": self.margin,
            "outlier_step": self.outlier_step,
            "outlier_spreads": self.outlier_spreads,
            "min_factor": self.min_factor,
            "max_factor": self.max_factor,
            "warmup": self.warmup,
        }

    def observe(self, model: str, estimated: int, actual: int) -> float:
        """Fold in one usage report and return the model's new factor.

        ``estimated`` must be the uncorrected estimate of the estimated part, and
        ``actual`` the provider's count of that same part, never a number the
        current factor already multiplied, or the factor would feed on itself.
        """
        _check_model(model)
        for name, value in (("estimated", estimated), ("actual", actual)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UsageError(f"{name} must be a positive int, got {value!r}", **{name: value})
        ratio = math.log(actual / estimated)
        with self._lock:
            state = self._models.get(model, ModelCorrection())
            if state.observations == 0:
                center, spread = ratio, state.spread
            else:
                limit = max(self.outlier_step, self.outlier_spreads * state.spread)
                step = min(limit, max(-limit, ratio - state.center))
                center = state.center + self.alpha * step
                spread = (1.0 - self.alpha) * state.spread + self.alpha * abs(step)
            self._models[model] = updated = ModelCorrection(observations=state.observations + 1, center=center, spread=spread)
            return self._factor(updated)

    def factor(self, model: str) -> float:
        """Return the current correction factor for ``model`` (1.0 when never observed)."""
        state = self._models.get(model)
        return 1.0 if state is None else self._factor(state)

    def correction(self, model: str) -> ModelCorrection:
        """Return the running statistics for ``model``."""
        return self._models.get(model, ModelCorrection())

    def _factor(self, state: ModelCorrection) -> float:
        if state.observations == 0:
            return 1.0
        upper = math.exp(state.center + max(self.margin, Z_99 * state.spread))
        low = self.min_factor if state.observations >= self.warmup else 1.0
        return min(self.max_factor, max(low, upper))

    def to_dict(self) -> dict[str, Any]:
        """Return the state as JSON-ready data."""
        return {
            "version": STATE_VERSION,
            **self.options(),
            "models": {
                model: {"observations": s.observations, "center": s.center, "spread": s.spread}
                for model, s in sorted(self._models.items())
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Reconciler:
        """Rebuild a reconciler from :meth:`to_dict` output."""
        if not isinstance(data, Mapping) or data.get("version") != STATE_VERSION:
            raise UsageError(f"not a version {STATE_VERSION} reconciler state", state=data)
        try:
            reconciler = cls(
                alpha=float(data["alpha"]),
                margin=float(data["margin"]),
                outlier_step=float(data["outlier_step"]),
                outlier_spreads=float(data["outlier_spreads"]),
                min_factor=float(data["min_factor"]),
                max_factor=float(data["max_factor"]),
                warmup=int(data["warmup"]),
            )
            for model, entry in data["models"].items():
                _check_model(model)
                reconciler._models[model] = ModelCorrection(
                    observations=int(entry["observations"]),
                    center=float(entry["center"]),
                    spread=float(entry["spread"]),
                )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise UsageError(f"malformed reconciler state: {exc}", state=data) from exc
        return reconciler

    @classmethod
    def from_observations(cls, observations: Iterable[tuple[str, int, int]], **options: Any) -> Reconciler:
        """Rebuild a reconciler by observing ``(model, estimated, actual)`` in order."""
        reconciler = cls(**options)
        for model, estimated, actual in observations:
            reconciler.observe(model, estimated, actual)
        return reconciler


@dataclass(frozen=True, kw_only=True, slots=True)
class RequestSplit:
    """How a built request was sized: the exactly counted part and the raw estimate of the rest."""

    model: str
    """The model the request was sized for (its plan's)."""
    exact_tokens: int
    """Tokens counted with a real tokenizer (or a provider count)."""
    raw_tokens: int
    """The uncorrected heuristic estimate of everything else."""


class UsageFold:
    """Folds a session's events into a :class:`Reconciler`, incrementally and deterministically.

    Each ``model.response`` whose ``request_index`` names a ``context.request.built``
    that recorded its split becomes one observation of the estimated part (unless it is
    a replayed transcript's usage, which belongs to another request). Requests
    recorded before the split existed (older logs) are skipped: their totals mix the
    exact and estimated parts, and guessing the split could only mislead the factor.
    """

    def __init__(self, reconciler: Reconciler | None = None) -> None:
        self.reconciler = reconciler if reconciler is not None else Reconciler()
        """The reconciler the observations go to."""
        self.upto_seq = 0
        """The last event folded."""
        self._models: dict[int, str] = {}  # epoch -> the plan's model id
        self._splits: dict[int, RequestSplit] = {}  # request index -> its split

    def feed(self, events: Iterable[Event]) -> Reconciler:
        """Fold the events after :attr:`upto_seq` (earlier ones are skipped) and return the reconciler."""
        for event in events:
            if event.seq <= self.upto_seq:
                continue
            self.upto_seq = event.seq
            payload = event.payload
            if event.type in ("context.plan.created", "context.epoch.rotated"):
                self._models[payload.epoch] = payload.plan["model"]["id"]
            elif event.type == "context.request.built":
                split = _split_of(payload, self._models.get(payload.epoch))
                if split is not None:
                    self._splits[payload.request_index] = split
            elif event.type == "model.response" and payload.request_index is not None and not payload.replayed:
                self._observe(self._splits.get(payload.request_index), payload.usage)
        return self.reconciler

    def snapshot(self) -> dict[str, Any]:
        """The fold as plain JSON data: its position, the plans' models, the splits and the per-model statistics."""
        corrections = self.reconciler._models
        return {
            "options": self.reconciler.options(),
            "upto_seq": self.upto_seq,
            "models": [[epoch, model] for epoch, model in self._models.items()],
            "splits": [[index, s.model, s.exact_tokens, s.raw_tokens] for index, s in self._splits.items()],
            "corrections": [[model, c.observations, c.center, c.spread] for model, c in corrections.items()],
        }

    @classmethod
    def restore(cls, data: Any, reconciler: Reconciler | None = None) -> UsageFold:
        """The fold :meth:`snapshot` wrote, going on with ``reconciler`` (its settings must be the written ones).

        Raises :class:`UsageError` for data it did not write: the caller folds the log instead."""
        fold = cls(reconciler)
        if data["options"] != fold.reconciler.options():
            raise UsageError("the usage fold was written with other reconciler settings")
        fold.upto_seq = _whole(data["upto_seq"])
        fold._models = {_whole(epoch): _name(model) for epoch, model in data["models"]}
        fold._splits = {
            _whole(index): RequestSplit(model=_name(model), exact_tokens=_whole(exact), raw_tokens=_whole(raw))
            for index, model, exact, raw in data["splits"]
        }
        for model, observations, center, spread in data["corrections"]:
            if not all(isinstance(v, float) and math.isfinite(v) for v in (center, spread)):
                raise UsageError("a correction's statistics must be finite numbers")
            fold.reconciler._models[_name(model)] = ModelCorrection(
                observations=_whole(observations), center=center, spread=spread
            )
        return fold

    def _observe(self, split: RequestSplit | None, usage: Any) -> None:
        if split is None or split.raw_tokens < 1:
            return
        total = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_5m_tokens + usage.cache_write_1h_tokens
        estimated_part = total - split.exact_tokens
        if estimated_part < 1:
            return  # a report below the exact part is no evidence about the estimate
        self.reconciler.observe(split.model, split.raw_tokens, estimated_part)


def reconciled_total(built: Any) -> int:
    """A recorded request's projected input total: the exact part plus the corrected estimate.

    ``built`` is a ``context.request.built`` payload; one recorded before the split
    existed gives its ``total_tokens``."""
    exact, raw, factor = built.exact_tokens, built.raw_estimate_tokens, built.estimate_factor
    if exact is None or raw is None:
        return int(built.total_tokens)
    return int(exact + math.ceil(raw * (factor or 1.0) - 1e-9))


def _split_of(payload: Any, model: str | None) -> RequestSplit | None:
    exact, raw = payload.exact_tokens, payload.raw_estimate_tokens
    if model is None or exact is None or raw is None:
        return None
    return RequestSplit(model=model, exact_tokens=exact, raw_tokens=raw)


def _whole(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise UsageError(f"expected a count, got {value!r}")
    return value


def _name(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise UsageError(f"expected a model id, got {value!r}")
    return value


def _check_model(model: object) -> None:
    if not isinstance(model, str) or not model:
        raise UsageError(f"model must be a non-empty string, got {model!r}", model=model)
