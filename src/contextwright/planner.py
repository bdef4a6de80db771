"""The planner: pins the first plan, rotates epochs, and is rebuilt from the log.

The planner is pure. Its methods return a :class:`PlanDecision` holding the plan
and the events to append; the runtime appends them. A planner rebuilt with
:meth:`ContextPlanner.from_events` selects the greatest epoch recorded in the
log, so there is no second store of plans that could disagree with it.

Epochs rotate only for three reasons: the model or provider changed, an
operator forced an immediate revocation (the tool leaves the prefix), or the
prefix was edited on purpose. Revoking a tool the ordinary way does not touch
the plan (see :mod:`contextwright.policy`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from contextwright.assembly.prefix import render_prefix, rendered_prefix_sha256
from contextwright.budget.estimator import TokenEstimator
from contextwright.errors import PlanError, PrefixOverBudget, UsageError
from contextwright.events.catalog import EpochRotated, PlanCreated
from contextwright.events.envelope import Event, NewEvent
from contextwright.models import ResolvedModel
from contextwright.plan.budgets import BudgetConfig
from contextwright.plan.plan import DEFAULT_CACHE_TTL, CacheTtl, ContextPlan, Prefix


class PrefixChanged(PlanError):
    """The prefix differs from the pinned one; only an explicit edit may rotate the epoch."""


@dataclass(frozen=True, kw_only=True, slots=True)
class PlanDecision:
    """A plan and the events (possibly none) that record it."""

    plan: ContextPlan
    events: tuple[NewEvent, ...] = ()

    @property
    def changed(self) -> bool:
        """True when this decision created a new epoch."""
        return bool(self.events)


def measure_prefix(
    prefix: Prefix, model: ResolvedModel, *, session_id: str, secret: bytes, estimator: TokenEstimator
) -> tuple[dict[str, int], str]:
    """Tokens per prefix class, and how they were measured."""
    texts = render_prefix(prefix, session_id=session_id, secret=secret).by_class()
    counts = {name: (estimator.estimate(text, model=model.id) if text else 0) for name, text in texts.items()}
    how = "exact" if estimator.exact else "estimate"
    return counts, f"{how}:{type(estimator).__name__}"


def check_prefix_caps(prefix: Prefix, tokens: dict[str, int], budgets: BudgetConfig) -> None:
    """Raise :class:`PrefixOverBudget` naming the first class over its cap. Nothing is truncated."""
    if len(prefix.tools) > budgets.tools_count:
        raise PrefixOverBudget("tools", size=len(prefix.tools), cap=budgets.tools_count, unit="tools")
    if len(prefix.memory.facts) > budgets.memory_items:
        raise PrefixOverBudget("memory_snapshot", size=len(prefix.memory.facts), cap=budgets.memory_items, unit="items")
    caps = {
        "policy": budgets.policy_tokens,
        "framing": budgets.framing_tokens,
        "instructions": budgets.instructions_tokens,
        "tools": budgets.tools_tokens,
        "memory_snapshot": budgets.memory_tokens,
    }
    for name, cap in caps.items():
        if tokens[name] > cap:
            raise PrefixOverBudget(name, size=tokens[name], cap=cap)


class ContextPlanner:
    """Plans for one session; rebuild it from the log with :meth:`from_events`."""

    def __init__(
        self,
        session_id: str,
        *,
        estimator: TokenEstimator,
        secret: bytes,
        budgets: BudgetConfig | None = None,
        current: ContextPlan | None = None,
    ) -> None:
        self.session_id = session_id
        self.estimator = estimator
        self.secret = secret
        self.budgets = budgets or BudgetConfig()
        self.current = current

    @classmethod
    def from_events(
        cls,
        session_id: str,
        events: Iterable[Event],
        *,
        estimator: TokenEstimator,
        secret: bytes,
        budgets: BudgetConfig | None = None,
    ) -> ContextPlanner:
        """Rebuild from a session's events: the plan of the greatest epoch wins."""
        best: ContextPlan | None = None
        for event in events:
            if event.type in ("context.plan.created", "context.epoch.rotated"):
                plan = ContextPlan.from_dict(event.payload.plan)
                if plan.session_id != session_id:
                    raise PlanError(f"event {event.ref} holds a plan of session {plan.session_id!r}")
                if best is None or plan.epoch > best.epoch:
                    best = plan
        return cls(session_id, estimator=estimator, secret=secret, budgets=budgets, current=best)

    # -- decisions --------------------------------------------------------------

    def plan(
        self, model: ResolvedModel, prefix: Prefix, *, cache_ttl: CacheTtl = DEFAULT_CACHE_TTL, kept: Prefix | None = None
    ) -> PlanDecision:
        """Pin the first plan, or return the current one (idempotent).

        A different model or provider, or a different cache TTL, rotates the epoch.
        A different prefix is refused with :class:`PrefixChanged`: use :meth:`edit_prefix`.
        ``kept`` is the same prefix in the engine texts the current plan pinned, when they are
        not ``prefix``'s: the plan is compared with it, and a new epoch takes ``prefix``.
        """
        current = self.current
        if current is None:
            return self._new_plan(1, model, prefix, reason=None, cache_ttl=cache_ttl)
        if current.model != model:
            return self._new_plan(current.epoch + 1, model, prefix, reason="model_changed", cache_ttl=cache_ttl)
        if self._hash(kept or prefix) != current.prefix_sha256:
            raise PrefixChanged(
                f"session {self.session_id!r}: the prefix differs from epoch {current.epoch}'s; "
                "call edit_prefix() to start a new epoch on purpose",
                session_id=self.session_id,
                epoch=current.epoch,
            )
        if current.cache_ttl != cache_ttl:
            return self._new_plan(current.epoch + 1, model, prefix, reason="cache_ttl_changed", cache_ttl=cache_ttl)
        return PlanDecision(plan=current)

    def check_fits(self, model: ResolvedModel, prefix: Prefix) -> None:
        """Measure ``prefix`` for ``model`` and raise :class:`PrefixOverBudget` if a class exceeds its cap (B3)."""
        tokens, _ = measure_prefix(prefix, model, session_id=self.session_id, secret=self.secret, estimator=self.estimator)
        check_prefix_caps(prefix, tokens, self.budgets)

    def edit_prefix(
        self,
        prefix: Prefix,
        *,
        reason: Literal["prefix_edited", "memory_erased"] = "prefix_edited",
        note: str = "",
        kept: Prefix | None = None,
    ) -> PlanDecision:
        """Start a new epoch with an edited prefix (an explicit edit, or a memory item erased from the snapshot).

        ``kept`` as for :meth:`plan`: a prefix that is the current one in its pinned engine texts is no edit.
        """
        current = self._require_current("edit the prefix")
        if self._hash(kept or prefix) == current.prefix_sha256:
            return PlanDecision(plan=current)
        return self._new_plan(current.epoch + 1, current.model, prefix, reason=reason, cache_ttl=current.cache_ttl, note=note)

    def force_revocation(self, tool_name: str) -> PlanDecision:
        """Operator-forced immediate revocation: the tool leaves the prefix in a new epoch."""
        current = self._require_current("revoke a tool immediately")
        if tool_name not in current.prefix.tool_names():
            raise UsageError(f"tool {tool_name!r} is not in the prefix of epoch {current.epoch}")
        return self._new_plan(
            current.epoch + 1,
            current.model,
            current.prefix.without_tool(tool_name),
            reason="forced_revocation",
            cache_ttl=current.cache_ttl,
        )

    # -- internals ----------------------------------------------------------------

    def _hash(self, prefix: Prefix) -> str:
        return rendered_prefix_sha256(prefix, session_id=self.session_id, secret=self.secret)

    def _require_current(self, action: str) -> ContextPlan:
        if self.current is None:
            raise PlanError(f"session {self.session_id!r} has no plan yet; cannot {action}")
        return self.current

    def _new_plan(
        self,
        epoch: int,
        model: ResolvedModel,
        prefix: Prefix,
        *,
        reason: Literal["model_changed", "forced_revocation", "prefix_edited", "cache_ttl_changed", "memory_erased"] | None,
        cache_ttl: CacheTtl,
        note: str = "",
    ) -> PlanDecision:
        tokens, measured_by = measure_prefix(
            prefix, model, session_id=self.session_id, secret=self.secret, estimator=self.estimator
        )
        check_prefix_caps(prefix, tokens, self.budgets)
        plan = ContextPlan(
            session_id=self.session_id,
            epoch=epoch,
            model=model,
            budgets=self.budgets,
            prefix=prefix,
            prefix_tokens=tokens,
            prefix_sha256=self._hash(prefix),
            measured_by=measured_by,
            cache_ttl=cache_ttl,
        )
        payload: Any
        if reason is None:
            payload = PlanCreated(epoch=epoch, plan=plan.to_dict(), prefix_sha256=plan.prefix_sha256)
        else:
            assert self.current is not None
            payload = EpochRotated(
                epoch=epoch,
                plan=plan.to_dict(),
                prefix_sha256=plan.prefix_sha256,
                reason=reason,
                previous_prefix_sha256=self.current.prefix_sha256,
                note=note,
            )
        self.current = plan
        return PlanDecision(plan=plan, events=(NewEvent.of(payload, idempotency_key=f"plan/epoch/{epoch}"),))
