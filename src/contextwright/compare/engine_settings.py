"""What the engine row of a comparison runs with, where a what-if run changes the replay's defaults.

A comparison replays every transcript with :data:`~contextwright.replay.transcript.REPLAY_BUDGETS`
and the default estimator. :class:`EngineSettings` changes named budgets and the
reconciler's margin for the engine row only (the baselines do not use them), so a question
such as "what would the share be without the tool-result share?" is one command, not an
edit::

    python bench/cache_bench.py --engine-budget tool_results_share=0.99 --reconcile-margin 0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any

from contextwright.budget._reconcile import Reconciler
from contextwright.budget.estimator import HeuristicEstimator
from contextwright.errors import UsageError
from contextwright.plan.budgets import BudgetConfig
from contextwright.replay.transcript import REPLAY_BUDGETS

__all__ = ["EngineSettings"]


@dataclass(frozen=True, kw_only=True, slots=True)
class EngineSettings:
    """Budgets and the reconciler's margin for the engine row; empty means the replay's defaults."""

    budgets: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    """:class:`~contextwright.plan.budgets.BudgetConfig` fields to change, by name."""
    reconcile_margin: float | None = None
    """The reconciler's smallest log-margin (None: its default)."""

    def __post_init__(self) -> None:
        self.budget_config()  # names and values are checked when the settings are made
        if self.reconcile_margin is not None and self.reconcile_margin < 0:
            raise UsageError(f"the reconcile margin must be 0 or more, got {self.reconcile_margin!r}")

    @classmethod
    def parse(cls, assignments: Sequence[str], *, reconcile_margin: float | None = None) -> EngineSettings:
        """Settings from ``NAME=VALUE`` strings (each a budget field), as a command line gives them."""
        kinds = {f.name: f.type for f in fields(BudgetConfig)}
        budgets: dict[str, float] = {}
        for assignment in assignments:
            name, sep, text = assignment.partition("=")
            name = name.strip()
            if not sep or not name:
                raise UsageError(f"expected NAME=VALUE for an engine budget, got {assignment!r}")
            if name not in kinds:
                raise _unknown_budget(name)
            try:
                budgets[name] = int(text) if kinds[name] in (int, "int") else float(text)
            except ValueError:
                raise UsageError(f"budget {name} needs a number, got {text!r}") from None
        return cls(budgets=MappingProxyType(budgets), reconcile_margin=reconcile_margin)

    @property
    def default(self) -> bool:
        """True when nothing differs from the replay's defaults."""
        return not self.budgets and self.reconcile_margin is None

    def budget_config(self) -> BudgetConfig:
        """The replay's budgets with :attr:`budgets` changed (checked as any budget is)."""
        unknown = sorted(set(self.budgets) - {f.name for f in fields(BudgetConfig)})
        if unknown:
            raise _unknown_budget(unknown[0])
        changes: dict[str, Any] = dict(self.budgets)  # each field's own check runs in BudgetConfig
        return replace(REPLAY_BUDGETS, **changes)

    def estimator(self) -> HeuristicEstimator | None:
        """An estimator whose reconciler keeps :attr:`reconcile_margin` (None: the engine's default)."""
        if self.reconcile_margin is None:
            return None
        return HeuristicEstimator(reconciler=Reconciler(margin=self.reconcile_margin))

    def describe(self) -> str:
        """What the engine row ran with, for a report line."""
        if self.default:
            return "the replay's default budgets and reconciler"
        parts = [f"{name}={value:g}" for name, value in sorted(self.budgets.items())]
        if self.reconcile_margin is not None:
            parts.append(f"reconcile margin {self.reconcile_margin:g}")
        return ", ".join(parts)


def _unknown_budget(name: str) -> UsageError:
    names = ", ".join(sorted(f.name for f in fields(BudgetConfig)))
    return UsageError(f"no budget named {name!r}; choose from {names}")
