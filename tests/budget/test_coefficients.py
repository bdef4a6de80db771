"""The fitted coefficients are package data that the benchmark writes and the estimator reads."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from types import ModuleType

from contextwright.budget import estimator
from contextwright.budget._content_kinds import CONTENT_KINDS, FEATURES


def test_the_coefficients_ship_as_package_data_for_every_family_and_kind() -> None:
    shipped = resources.files("contextwright.budget").joinpath(estimator.COEFFICIENTS_FILE)
    assert shipped.is_file()
    for family in ("o200k", "cl100k"):
        assert set(estimator._FITTED[family]) == set(CONTENT_KINDS)
        for weights in estimator._FITTED[family].values():
            assert set(weights) <= set(FEATURES)
            assert all(isinstance(w, float) and w > 0 for w in weights.values())


def test_the_benchmark_writes_exactly_the_file_the_estimator_reads(bench: ModuleType, tmp_path: Path) -> None:
    target = tmp_path / "coefficients.json"
    bench.write_coefficients(estimator._FITTED, target)
    shipped = resources.files("contextwright.budget").joinpath(estimator.COEFFICIENTS_FILE).read_bytes()
    assert target.read_bytes() == shipped


def test_the_benchmark_writes_exactly_the_surcharges_the_estimator_reads(bench: ModuleType, tmp_path: Path) -> None:
    target = tmp_path / "surcharges.json"
    bench.write_surcharges(estimator._SURCHARGES, target)
    shipped = resources.files("contextwright.budget").joinpath(estimator.SURCHARGES_FILE).read_bytes()
    assert target.read_bytes() == shipped
    # Only the features the fit may raise, and every family the corpus fit has.
    assert set(estimator._SURCHARGES) == set(estimator._FITTED)
    for weights in estimator._SURCHARGES.values():
        assert set(weights) <= set(bench.SURCHARGE_FEATURES) and all(w > 0 for w in weights.values())
