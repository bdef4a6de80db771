"""Reconciler: conservative factors, clamps, warm-up and rebuildable state."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwright.budget.reconcile import Reconciler
from contextwright.errors import UsageError

_OBS = st.lists(
    st.tuples(st.sampled_from(["gpt-4o", "claude-sonnet-4-5"]), st.integers(1, 10**6), st.integers(1, 10**6)),
    max_size=40,
)


def test_unobserved_model_has_factor_one() -> None:
    assert Reconciler().factor("gpt-4o") == 1.0


def test_factor_rises_when_the_provider_reports_more() -> None:
    r = Reconciler()
    for _ in range(30):
        r.observe("claude-sonnet-4-5", 1000, 1300)
    # Check the factor sits at or above the observed ratio (an upper quantile, not a mean).
    assert 1.3 <= r.factor("claude-sonnet-4-5") <= 2.0
    assert r.factor("gpt-4o") == 1.0


def test_factor_never_drops_below_one_during_warmup() -> None:
    r = Reconciler(warmup=8)
    for i in range(7):
        r.observe("claude-sonnet-4-5", 1000, 700)
        assert r.factor("claude-sonnet-4-5") == 1.0, i
    r.observe("claude-sonnet-4-5", 1000, 700)
    assert r.factor("claude-sonnet-4-5") < 1.0


def test_factor_shrinks_a_steady_overestimate_but_stays_above_the_ratios() -> None:
    r = Reconciler()
    ratios = [0.80, 0.84, 0.82, 0.86, 0.81, 0.83, 0.85, 0.82] * 4
    for ratio in ratios:
        r.observe("claude-sonnet-4-5", 10_000, round(10_000 * ratio))
    factor = r.factor("claude-sonnet-4-5")
    assert factor < 1.0
    assert factor >= max(ratios)  # corrected estimates still cover what was seen


def test_factor_is_clamped() -> None:
    r = Reconciler(warmup=0)
    for _ in range(20):
        r.observe("m", 100, 10_000)
    assert r.factor("m") == 2.0
    for _ in range(60):
        r.observe("n", 10_000, 100)
    assert r.factor("n") == 0.8


def test_invalid_observations_and_options() -> None:
    r = Reconciler()
    for bad in [(0, 5), (5, 0), (-1, 5), (1.5, 5), (True, 5)]:
        with pytest.raises(UsageError):
            r.observe("gpt-4o", *bad)  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        r.observe("", 1, 1)
    with pytest.raises(UsageError):
        Reconciler(alpha=0)
    with pytest.raises(UsageError):
        Reconciler(min_factor=1.2)
    with pytest.raises(UsageError):
        Reconciler.from_dict({"version": 99})
    with pytest.raises(UsageError):
        Reconciler.from_dict({"version": 1, "alpha": 0.2})


@settings(max_examples=100, deadline=None)
@given(_OBS)
def test_state_round_trips_through_json(observations: list[tuple[str, int, int]]) -> None:
    r = Reconciler.replay(observations)
    rebuilt = Reconciler.from_dict(json.loads(json.dumps(r.to_dict())))
    assert rebuilt.to_dict() == r.to_dict()
    for model in ("gpt-4o", "claude-sonnet-4-5"):
        assert rebuilt.factor(model) == r.factor(model)
        assert 0.8 <= r.factor(model) <= 2.0


@settings(max_examples=100, deadline=None)
@given(_OBS)
def test_replay_is_deterministic(observations: list[tuple[str, int, int]]) -> None:
    # Rebuilding from logged usage events gives the same factors as the live run.
    live = Reconciler()
    for model, estimated, actual in observations:
        live.observe(model, estimated, actual)
    assert Reconciler.replay(observations).to_dict() == live.to_dict()


def test_observe_returns_the_new_factor() -> None:
    r = Reconciler()
    assert r.observe("gpt-4o", 100, 120) == r.factor("gpt-4o")
    assert math.isfinite(r.factor("gpt-4o"))
