"""The engine: opens a store and hands out sessions."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from typing import Any

from contextwright.budget.estimator import HeuristicEstimator, TokenEstimator
from contextwright.clock import Clock, SystemClock
from contextwright.errors import UsageError
from contextwright.log import EventLog, open_log
from contextwright.models import ResolvedModel
from contextwright.plan.budgets import BudgetConfig
from contextwright.relief.compactor import Compactor, compact
from contextwright.runtime.checkpoint import DEFAULT_CHECKPOINT_EVERY
from contextwright.runtime.core import Resumed
from contextwright.runtime.ports import MemoryPort, RecallPort
from contextwright.runtime.session import RoundPolicy, Session, session_secret
from contextwright.runtime.spec import AgentSpec

SECRET_SETTING = "envelope_secret"


class Engine:
    """Holds the store, the clock, the estimator and the envelope secret."""

    def __init__(
        self,
        log: EventLog,
        *,
        clock: Clock | None = None,
        estimator: TokenEstimator | None = None,
        budgets: BudgetConfig | None = None,
        secret: bytes | None = None,
        checkpoint_every: int = DEFAULT_CHECKPOINT_EVERY,
    ) -> None:
        self.log = log
        self.clock = clock or log.clock or SystemClock()
        # An empty estimator is falsy (it has a length): test for None, never for truth.
        self.estimator = estimator if estimator is not None else HeuristicEstimator()
        self.budgets = budgets or BudgetConfig()
        if not isinstance(checkpoint_every, int) or isinstance(checkpoint_every, bool) or checkpoint_every < 0:
            raise UsageError(f"checkpoint_every must be an integer >= 0 (0: no checkpoints), got {checkpoint_every!r}")
        self.checkpoint_every = checkpoint_every
        """Events between two checkpoints of a session, at least; 0 reads and writes none."""
        # The store keeps one random secret so that every worker, and every later
        # rebuild, derives the same envelope nonces for a session.
        self._secret = secret if secret is not None else bytes.fromhex(self.log.setting(SECRET_SETTING, secrets.token_hex(32)))

    @classmethod
    def open(
        cls, url: str | os.PathLike[str] = "sqlite:///contextwright.db", *, clock: Clock | None = None, **options: Any
    ) -> Engine:
        """Open (creating if needed) the store at ``url`` and return an engine on it."""
        return cls(open_log(url, clock=clock), clock=clock, **options)

    def session(
        self,
        session_id: str,
        *,
        agent: AgentSpec,
        model: ResolvedModel,
        memory: MemoryPort | None = None,
        recall: RecallPort | None = None,
        rounds: RoundPolicy | None = None,
        reuse_recall_by_revision: bool = False,
        budgets: BudgetConfig | None = None,
        resumed: Resumed | None = None,
        count_prefix: Callable[..., Any] | None = None,
        compactor: Compactor | None = None,
    ) -> Session:
        """Open or resume a session (``budgets`` overrides the engine's for this session).

        ``count_prefix`` (opt-in, Anthropic models): the SDK's ``client.messages.count_tokens``;
        each epoch's prefix is then counted exactly once, and estimates are reconciled on the body alone.

        ``compactor`` (default: the extractive :func:`contextwright.relief.compactor.compact`) is
        called like it (see :class:`~contextwright.relief.compactor.Compactor`) and may summarise
        with a model. Its labels are checked before anything is adopted
        (:mod:`contextwright.relief.compaction_check`): the header is the platform's, each line
        keeps the trust of what it came from (no untrusted text under a trusted label), and a
        pointer keeps its output's trust. A proposal that breaks them is rejected, not raised: a
        ``context.compaction.rejected`` event names the compactor and each breach, a warning is
        logged, and the extractive summary of the same history is adopted instead, so a faulty
        plugin never stops a session nor puts untrusted text in a trusted voice. Child runs use
        the same compactor."""
        if compactor is not None and not callable(compactor):
            raise UsageError(f"compactor must be callable like contextwright.relief.compactor.compact, got {compactor!r}")
        return Session(
            log=self.log,
            session_id=session_id,
            agent=agent,
            model=model,
            clock=self.clock,
            secret=self.secret_for(session_id),
            estimator=self.estimator,
            budgets=budgets or self.budgets,
            memory=memory,
            recall=recall,
            rounds=rounds,
            reuse_recall_by_revision=reuse_recall_by_revision,
            compactor=compactor or compact,
            # Child runs share the parent's ports, its prefix counter and its compactor.
            engine_session=lambda sid, **kw: self.session(
                sid, **{"memory": memory, "recall": recall, "count_prefix": count_prefix, "compactor": compactor, **kw}
            ),
            resumed=resumed,
            count_prefix=count_prefix,
            checkpoint_every=self.checkpoint_every,
        )

    def secret_for(self, session_id: str) -> bytes:
        """The envelope secret of session ``session_id``."""
        return session_secret(self._secret, session_id)

    def close(self) -> None:
        """Close the store."""
        self.log.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
