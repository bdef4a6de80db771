"""Region A as text: the one rendering of the prefix that measuring and building share.

The planner measures exactly these strings and the builder sends exactly these
strings, so the measured prefix size is the size of what goes out.
"""

from __future__ import annotations

from dataclasses import dataclass

from contextwright.assembly.envelope import Attribution, envelope
from contextwright.assembly.request import SystemBlock, ToolDefinition
from contextwright.canonical import canonical_json, content_hash, to_plain
from contextwright.items.region_a import MemorySnapshot, ToolSpec
from contextwright.plan.plan import Prefix


@dataclass(frozen=True, kw_only=True, slots=True)
class PrefixTexts:
    """The prefix classes as the model receives them."""

    policy: str
    framing: str
    instructions: str
    tools: tuple[str, ...]
    """Each tool's canonical JSON."""
    memory: str
    """The enveloped memory snapshot ('' when empty)."""

    def system_blocks(self) -> tuple[SystemBlock, ...]:
        """The system prompt blocks, in assembly order (memory only when there is some)."""
        blocks = [
            SystemBlock(budget_class="policy", text=self.policy),
            SystemBlock(budget_class="framing", text=self.framing),
            SystemBlock(budget_class="instructions", text=self.instructions),
        ]
        if self.memory:
            blocks.append(SystemBlock(budget_class="memory_snapshot", text=self.memory))
        return tuple(blocks)

    def by_class(self) -> dict[str, str]:
        """Class name → text, the unit of prefix measurement."""
        return {
            "policy": self.policy,
            "framing": self.framing,
            "instructions": self.instructions,
            "tools": "\n".join(self.tools),
            "memory_snapshot": self.memory,
        }


def prefix_sha256(system: tuple[SystemBlock, ...], tools: tuple[ToolDefinition, ...]) -> str:
    """The hash of a request's prefix exactly as rendered: system blocks, then tools."""
    return content_hash(
        {
            "system": [{"class": b.budget_class, "text": b.text} for b in system],
            "tools": [t.to_dict() for t in tools],
        }
    )


def tool_definitions(prefix: Prefix) -> tuple[ToolDefinition, ...]:
    """The pinned tools as sent to providers."""
    return tuple(
        ToolDefinition(
            name=t.name,
            description=t.description,
            input_schema=to_plain(t.input_schema),
            native=to_plain(t.native) if t.native is not None else None,
        )
        for t in prefix.tools
    )


def rendered_prefix_sha256(prefix: Prefix, *, session_id: str, secret: bytes) -> str:
    """The prefix hash a request under this prefix must carry."""
    texts = render_prefix(prefix, session_id=session_id, secret=secret)
    return prefix_sha256(texts.system_blocks(), tool_definitions(prefix))


def render_prefix(prefix: Prefix, *, session_id: str, secret: bytes) -> PrefixTexts:
    """Render region A deterministically."""
    return PrefixTexts(
        policy=prefix.policy.text,
        framing=prefix.framing.text,
        instructions=prefix.instructions.text,
        tools=tuple(render_tool(tool) for tool in prefix.tools),
        memory=render_memory(prefix.memory, session_id=session_id, secret=secret),
    )


def render_tool(tool: ToolSpec) -> str:
    """A tool's canonical JSON."""
    return canonical_json(tool.to_dict())


def render_memory(snapshot: MemorySnapshot, *, session_id: str, secret: bytes) -> str:
    """The snapshot as one block per fact, each in its own envelope (memory is not platform text)."""
    if not snapshot.facts:
        return ""
    blocks = ["Memory as of the start of this session:"]
    for fact in snapshot.facts:
        blocks.append(
            envelope(
                fact.text,
                Attribution(
                    source=f"memory:{fact.id}", trust=fact.trust, ref=f"{session_id}/memory/{fact.id}", session=session_id
                ),
                secret=secret,
            )
        )
    return "\n".join(blocks)
