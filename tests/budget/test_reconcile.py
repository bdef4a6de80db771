"""Reconciler: conservative factors, outliers, the margin, clamps, warm-up and rebuildable state."""

from __future__ import annotations

import json
import math

import pytest

pytest.importorskip("hypothesis", reason='property tests need hypothesis: pip install "contextwright[dev]"')
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwright.budget._reconcile import DEFAULT_MAX_FACTOR, Reconciler
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
    assert 1.3 <= r.factor("claude-sonnet-4-5") <= DEFAULT_MAX_FACTOR
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
    assert r.factor("m") == DEFAULT_MAX_FACTOR
    for _ in range(60):
        r.observe("n", 10_000, 100)
    assert r.factor("n") == 0.5


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
    with pytest.raises(UsageError):
        Reconciler.from_dict({"version": 2, "alpha": 0.2})
    with pytest.raises(UsageError):
        Reconciler(margin=-0.1)


@settings(max_examples=100, deadline=None)
@given(_OBS)
def test_state_round_trips_through_json(observations: list[tuple[str, int, int]]) -> None:
    r = Reconciler.from_observations(observations)
    rebuilt = Reconciler.from_dict(json.loads(json.dumps(r.to_dict())))
    assert rebuilt.to_dict() == r.to_dict()
    for model in ("gpt-4o", "claude-sonnet-4-5"):
        assert rebuilt.factor(model) == r.factor(model)
        assert 0.5 <= r.factor(model) <= DEFAULT_MAX_FACTOR


@settings(max_examples=100, deadline=None)
@given(_OBS)
def test_rebuilding_from_observations_is_deterministic(observations: list[tuple[str, int, int]]) -> None:
    # Rebuilding from logged usage events gives the same factors as the live run.
    live = Reconciler()
    for model, estimated, actual in observations:
        live.observe(model, estimated, actual)
    assert Reconciler.from_observations(observations).to_dict() == live.to_dict()


def test_observe_returns_the_new_factor() -> None:
    r = Reconciler()
    assert r.observe("gpt-4o", 100, 120) == r.factor("gpt-4o")
    assert math.isfinite(r.factor("gpt-4o"))


def test_one_outlier_moves_the_factor_only_a_bounded_step() -> None:
    r = Reconciler()
    for _ in range(10):
        r.observe("claude-sonnet-4-5", 10_000, 8_000)
    steady = r.factor("claude-sonnet-4-5")
    # Check a report ten times too small (say, a truncated usage record) cannot collapse the factor ...
    low = Reconciler.from_dict(r.to_dict())
    low.observe("claude-sonnet-4-5", 10_000, 800)
    assert low.factor("claude-sonnet-4-5") >= steady * math.exp(-low.alpha * low.outlier_step) - 1e-12
    # ... and one ten times too large lifts it by a bounded step, not tenfold.
    high = Reconciler.from_dict(r.to_dict())
    high.observe("claude-sonnet-4-5", 10_000, 80_000)
    assert high.factor("claude-sonnet-4-5") < steady * 1.5
    # Check a real, lasting shift is still followed within a few reports.
    for _ in range(12):
        low.observe("claude-sonnet-4-5", 10_000, 6_000)
    assert low.factor("claude-sonnet-4-5") < 0.7


def test_the_margin_keeps_the_factor_above_a_steady_ratio() -> None:
    r = Reconciler(margin=0.05)
    for _ in range(20):
        r.observe("gpt-4o", 10_000, 9_000)
    # A perfectly steady ratio has no spread left: the margin alone keeps the factor above it.
    assert r.factor("gpt-4o") == pytest.approx(0.9 * math.exp(0.05), rel=1e-3)
    assert r.factor("gpt-4o") > 0.9
    bare = Reconciler.from_observations([("gpt-4o", 10_000, 9_000)] * 20, margin=0.0)
    assert bare.factor("gpt-4o") == pytest.approx(0.9, rel=1e-3)


def test_a_noisy_ratio_widens_the_margin() -> None:
    steady, noisy = Reconciler(), Reconciler()
    for i in range(20):
        steady.observe("m", 10_000, 8_000)
        noisy.observe("m", 10_000, 8_000 + (800 if i % 2 else -800))
    assert noisy.correction("m").spread > steady.correction("m").spread
    assert noisy.factor("m") > steady.factor("m")


def test_hidden_content_that_doubles_the_ratio_is_covered_once_it_persists() -> None:
    # A short estimated part and ~1,000 tokens the provider counts but the estimate never saw
    # (an agent's own reminders): the true ratio jumps from 1.02 to about 2.3-2.7 and stays.
    # One report moves the center only so far (outliers), but two reports later the projection
    # covers the real total again; a clamp at 2.0 kept every later call short.
    reports = [(500, 510), (550, 560), (600, 1_600), (650, 1_660), (700, 1_720), (750, 1_780), (800, 1_840)]
    covered = {}
    for clamp in (2.0, DEFAULT_MAX_FACTOR):
        r = Reconciler(max_factor=clamp)
        covered[clamp] = []
        for raw, actual in reports:
            covered[clamp].append(raw * r.factor("m") >= actual)
            r.observe("m", raw, actual)
    assert covered[DEFAULT_MAX_FACTOR][-3:] == [True, True, True]
    assert not any(covered[2.0][2:])
