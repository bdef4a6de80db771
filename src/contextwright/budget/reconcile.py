"""Per-model correction factors learned from provider-reported usage.

Each observation is the uncorrected heuristic estimate of a request's input and the
input token count the provider reported for it. The reconciler keeps, per model, an
exponentially weighted mean and variance of ``log(actual / estimated)`` and turns them
into a factor that multiplies later estimates.

The factor is an upper quantile, not a mean: ``exp(mean + Z * sd)`` with
``Z = 2.326`` (the one-sided 99% point of a normal). A mean would push half of the
corrected estimates below the true count; the quantile keeps the estimator's promise
(below the true count on at most about 1% of requests) while still shrinking a
systematic overestimate, which is what the Claude profile's assumed factor can be.

The factor is clamped to [``min_factor``, ``max_factor``] (default [0.8, 2.0]) so
that a few odd observations cannot zero or explode a budget. Until ``warmup``
observations have been seen for a model, the factor never goes below 1.0: the raw
estimate is already calibrated to be conservative, and a handful of requests is too
little evidence to undercut it.

State is plain data (:meth:`Reconciler.to_dict` / :meth:`Reconciler.from_dict`), and
replaying the same observations in the same order rebuilds the same factors, so the
reconciler can be rebuilt from logged usage events.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from contextwright.errors import UsageError

Z_99: Final[float] = 2.326
"""One-sided 99% point of the standard normal distribution."""

STATE_VERSION: Final[int] = 1
"""Version of the :meth:`Reconciler.to_dict` format."""

_PRIOR_VARIANCE: Final[float] = 0.05**2  # a 5% spread until observations say otherwise


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelCorrection:
    """Running statistics of ``log(actual / estimated)`` for one model."""

    observations: int = 0
    """How many usage reports have been folded in."""

    mean: float = 0.0
    """Exponentially weighted mean of the log ratio."""

    variance: float = _PRIOR_VARIANCE
    """Exponentially weighted variance of the log ratio."""


class Reconciler:
    """Learns a conservative per-model correction factor from (estimated, actual) pairs."""

    def __init__(
        self,
        *,
        alpha: float = 0.2,
        min_factor: float = 0.8,
        max_factor: float = 2.0,
        warmup: int = 8,
    ) -> None:
        if not 0.0 < alpha <= 1.0:
            raise UsageError(f"alpha must be in (0, 1], got {alpha!r}", alpha=alpha)
        if not 0.0 < min_factor <= 1.0 <= max_factor:
            raise UsageError(
                f"need 0 < min_factor <= 1 <= max_factor, got {min_factor!r}, {max_factor!r}",
                min_factor=min_factor,
                max_factor=max_factor,
            )
        if warmup < 0:
            raise UsageError(f"warmup must be >= 0, got {warmup!r}", warmup=warmup)
        self.alpha = alpha
        """Weight of the newest observation in the running statistics."""
        self.min_factor = min_factor
        """Lowest factor ever returned."""
        self.max_factor = max_factor
        """Highest factor ever returned."""
        self.warmup = warmup
        """Observations needed before a factor may go below 1.0."""
        self._models: dict[str, ModelCorrection] = {}
        self._lock = threading.Lock()

    def observe(self, model: str, estimated: int, actual: int) -> float:
        """Fold in one usage report and return the model's new factor.

        ``estimated`` must be the uncorrected estimate (for example
        ``HeuristicEstimator.raw_estimate`` summed over the request), never one that the
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
                mean, variance = ratio, _PRIOR_VARIANCE
            else:
                # West's exponentially weighted mean and variance update.
                delta = ratio - state.mean
                mean = state.mean + self.alpha * delta
                variance = (1.0 - self.alpha) * (state.variance + self.alpha * delta * delta)
            self._models[model] = replace(state, observations=state.observations + 1, mean=mean, variance=variance)
            return self._factor(self._models[model])

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
        upper = math.exp(state.mean + Z_99 * math.sqrt(max(state.variance, 0.0)))
        low = self.min_factor if state.observations >= self.warmup else 1.0
        return min(self.max_factor, max(low, upper))

    def to_dict(self) -> dict[str, Any]:
        """Return the state as JSON-ready data."""
        return {
            "version": STATE_VERSION,
            "alpha": self.alpha,
            "min_factor": self.min_factor,
            "max_factor": self.max_factor,
            "warmup": self.warmup,
            "models": {
                model: {"observations": s.observations, "mean": s.mean, "variance": s.variance}
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
                min_factor=float(data["min_factor"]),
                max_factor=float(data["max_factor"]),
                warmup=int(data["warmup"]),
            )
            for model, entry in data["models"].items():
                _check_model(model)
                reconciler._models[model] = ModelCorrection(
                    observations=int(entry["observations"]),
                    mean=float(entry["mean"]),
                    variance=float(entry["variance"]),
                )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise UsageError(f"malformed reconciler state: {exc}", state=data) from exc
        return reconciler

    @classmethod
    def replay(cls, observations: Iterable[tuple[str, int, int]], **options: Any) -> Reconciler:
        """Rebuild a reconciler by observing ``(model, estimated, actual)`` in order."""
        reconciler = cls(**options)
        for model, estimated, actual in observations:
            reconciler.observe(model, estimated, actual)
        return reconciler


def _check_model(model: object) -> None:
    if not isinstance(model, str) or not model:
        raise UsageError(f"model must be a non-empty string, got {model!r}", model=model)
