"""Summaries of a soak run's per-turn costs: window medians and a least-squares trend."""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def windows(values: Sequence[float], count: int = 10) -> list[float]:
    """Medians over ``count`` consecutive windows of the run."""
    size = max(1, len(values) // count)
    return [statistics.median(values[i : i + size]) for i in range(0, size * count, size) if values[i : i + size]]


def window_ratios(numerators: Sequence[float], denominators: Sequence[float], count: int = 10) -> list[float]:
    """Per window, the sum of ``numerators`` over the sum of ``denominators`` (nan where the latter is 0)."""
    size = max(1, len(numerators) // count)
    ratios = []
    for i in range(0, size * count, size):
        top, bottom = sum(numerators[i : i + size]), sum(denominators[i : i + size])
        if i < len(numerators):
            ratios.append(top / bottom if bottom > 0 else float("nan"))
    return ratios


def fit(y: Sequence[float], *columns: Sequence[float]) -> list[float]:
    """Least-squares coefficients of ``y ≈ b0 + b1·x1 + …`` (normal equations; a handful of columns)."""
    rows = [[1.0, *(float(c[i]) for c in columns)] for i in range(len(y))]
    width = len(columns) + 1
    gram = [[sum(r[a] * r[b] for r in rows) for b in range(width)] for a in range(width)]
    moment = [sum(r[a] * float(v) for r, v in zip(rows, y)) for a in range(width)]
    return _solve(gram, moment)


def _solve(matrix: list[list[float]], vector: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting; a singular system gives zeros for its free terms."""
    n = len(vector)
    a = [row[:] + [vector[i]] for i, row in enumerate(matrix)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        if abs(a[pivot][col]) < 1e-12:
            continue
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(n):
            if r != col and a[r][col]:
                factor = a[r][col] / a[col][col]
                a[r] = [x - factor * p for x, p in zip(a[r], a[col])]
    return [a[i][n] / a[i][i] if abs(a[i][i]) >= 1e-12 else 0.0 for i in range(n)]
