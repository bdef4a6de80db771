"""Token counts for budgets aimed outside a session, such as the ``compress`` command.

A session counts with its model's estimator. Outside one there is no model, so the
count is the engine's calibrated estimate for ``o200k_base`` models: the same
heuristic, fitted so that it seldom falls below the exact count. Characters divided
by four undercount JSON, C++ and bracketed text by up to half.
"""

from __future__ import annotations

from contextwright.budget.estimator import HeuristicEstimator

COUNTING_MODEL = "gpt-4o"
"""The model whose calibration profile (``o200k``) counts tokens when no session names one."""

_ESTIMATOR = HeuristicEstimator()


def calibrated_token_count(text: str) -> int:
    """Tokens of ``text`` as the engine estimates them for an ``o200k_base`` model (errs high)."""
    return _ESTIMATOR.estimate(text, model=COUNTING_MODEL)
