"""The context plan: the frozen decisions of one (session, epoch).

A :class:`ContextPlan` pins the model, the budgets and the whole region-A prefix
(policy, framing, instructions, tool specs in canonical JSON, the memory
snapshot), together with the prefix's measured size and its ``prefix_sha256``.
It is written to the log whole, so a planner rebuilt from the log finds exactly
the same plan, and the same prefix bytes, after a restart.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Literal

from contextwright.canonical import content_hash, to_plain
from contextwright.items.region_a import (
    READ_TOOL_NAME,
    AgentInstructions,
    Framing,
    MemoryFact,
    MemorySnapshot,
    PlatformPolicy,
    ToolSpec,
)
from contextwright.models import ResolvedModel
from contextwright.plan.budgets import BudgetConfig

PREFIX_CLASSES: tuple[str, ...] = ("policy", "framing", "instructions", "tools", "memory_snapshot")

CacheTtl = Literal["5m", "1h"]
"""How long the provider keeps the cached prefix (Anthropic's two tiers; OpenAI ignores it)."""

DEFAULT_CACHE_TTL: CacheTtl = "5m"
CACHE_TTLS: tuple[CacheTtl, ...] = ("5m", "1h")


@dataclass(frozen=True, kw_only=True, slots=True)
class Prefix:
    """Region A content, in assembly order."""

    policy: PlatformPolicy
    framing: Framing
    instructions: AgentInstructions
    tools: tuple[ToolSpec, ...] = ()
    memory: MemorySnapshot = MemorySnapshot()

    def content(self) -> dict[str, Any]:
        """The canonical content that ``prefix_sha256`` covers."""
        return {
            "policy": self.policy.text,
            "framing": self.framing.text,
            "instructions": self.instructions.text,
            "tools": [tool.to_dict() for tool in self.tools],
            "memory": [{"id": fact.id, "text": fact.text, "trust": fact.trust} for fact in self.memory.facts],
        }

    def sha256(self) -> str:
        """Tagged SHA-256 of the canonical prefix content."""
        return content_hash(self.content())

    def tool_names(self) -> tuple[str, ...]:
        """Names of the pinned tools, in order."""
        return tuple(tool.name for tool in self.tools)

    def read_tool(self) -> str | None:
        """The tool markers name for reading a whole text back: the engine's, where this prefix pins it."""
        return READ_TOOL_NAME if any(tool.name == READ_TOOL_NAME for tool in self.tools) else None

    def without_tool(self, name: str) -> Prefix:
        """The same prefix minus one tool (only for an operator-forced immediate revocation)."""
        return Prefix(
            policy=self.policy,
            framing=self.framing,
            instructions=self.instructions,
            tools=tuple(t for t in self.tools if t.name != name),
            memory=self.memory,
        )

    def without_memory(self, memory_ids: Collection[str]) -> Prefix:
        """The same prefix minus some memory items (only when they were erased)."""
        kept = tuple(fact for fact in self.memory.facts if fact.id not in memory_ids)
        return Prefix(
            policy=self.policy,
            framing=self.framing,
            instructions=self.instructions,
            tools=self.tools,
            memory=MemorySnapshot(facts=kept),
        )

    @classmethod
    def from_content(cls, data: Any) -> Prefix:
        """Inverse of :meth:`content`."""
        return cls(
            policy=PlatformPolicy(text=data["policy"]),
            framing=Framing(text=data["framing"]),
            instructions=AgentInstructions(text=data["instructions"]),
            tools=tuple(
                ToolSpec(
                    name=t["name"],
                    description=t["description"],
                    input_schema=to_plain(t["input_schema"]),
                    native=to_plain(t["native"]) if "native" in t else None,
                )
                for t in data["tools"]
            ),
            memory=MemorySnapshot(facts=tuple(MemoryFact(id=m["id"], text=m["text"], trust=m["trust"]) for m in data["memory"])),
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class ContextPlan:
    """Immutable plan of one (session_id, epoch)."""

    session_id: str
    epoch: int
    model: ResolvedModel
    budgets: BudgetConfig
    prefix: Prefix
    prefix_tokens: dict[str, int]
    """Measured size of each prefix class, in tokens."""
    prefix_sha256: str
    """Hash of the prefix as rendered (system blocks and tools): every request of the epoch carries it."""
    measured_by: str
    """How the prefix was measured: ``exact:<encoding>`` or ``estimate:<estimator>``."""
    cache_ttl: CacheTtl = DEFAULT_CACHE_TTL
    """The agent profile's cache TTL for the prefix; a different TTL is a different plan (a new epoch)."""

    @property
    def key(self) -> tuple[str, int]:
        """The derivation key, ``(session_id, epoch)``."""
        return (self.session_id, self.epoch)

    @property
    def prefix_token_total(self) -> int:
        """Tokens of the whole prefix."""
        return sum(self.prefix_tokens.values())

    def to_dict(self) -> dict[str, Any]:
        """The whole plan as plain JSON values (the payload of the plan events)."""
        data: dict[str, Any] = {
            "session_id": self.session_id,
            "epoch": self.epoch,
            "model": self.model.to_dict(),
            "budgets": self.budgets.to_dict(),
            "prefix": self.prefix.content(),
            "prefix_tokens": dict(sorted(self.prefix_tokens.items())),
            "prefix_sha256": self.prefix_sha256,
            "measured_by": self.measured_by,
        }
        # Only a non-default TTL is written, so plans recorded before TTLs existed keep their bytes.
        if self.cache_ttl != DEFAULT_CACHE_TTL:
            data["cache_ttl"] = self.cache_ttl
        return data

    @classmethod
    def from_dict(cls, data: Any) -> ContextPlan:
        """Inverse of :meth:`to_dict`."""
        return cls(
            session_id=data["session_id"],
            epoch=data["epoch"],
            model=ResolvedModel.from_dict(data["model"]),
            budgets=BudgetConfig.from_dict(data["budgets"]),
            prefix=Prefix.from_content(data["prefix"]),
            prefix_tokens=dict(data["prefix_tokens"]),
            prefix_sha256=data["prefix_sha256"],
            measured_by=data["measured_by"],
            cache_ttl=data.get("cache_ttl", DEFAULT_CACHE_TTL),
        )
