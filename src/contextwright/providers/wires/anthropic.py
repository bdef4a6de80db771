"""Render a neutral request as an Anthropic Messages body, spending cache breakpoints deliberately.

``render(request, caps)`` returns the keyword arguments of
``client.messages.create(**body)``. The mapping:

* ``tools`` (name, description, input_schema) and ``system`` (one text block per
  region-A block, in assembly order) carry the frozen prefix;
* assistant parts become ``text`` and ``tool_use`` blocks, tool results become
  ``tool_result`` blocks that open their user message, followed by that message's
  text; consecutive messages of one role are merged, so roles alternate and the
  conversation starts with the user;
* empty and whitespace-only text parts are dropped (the API refuses them);
* ``thinking`` and ``redacted_thinking`` blocks of earlier answers go back verbatim,
  in the place they had in their answer, in every later request: the assistant
  turn that ended in ``tool_use`` must carry them, complete and unmodified, when its
  results are sent, and the API itself drops the ones a model does not keep
  (https://platform.claude.com/docs/en/build-with-claude/extended-thinking,
  "Preserving thinking blocks"; https://platform.claude.com/docs/build-with-claude/thinking-tool-workflows:
  echo the assistant message as received, ``redacted_thinking`` included). Leaving
  one out between others, or moving one, fails the prefix check of models with
  preserved thinking (https://platform.claude.com/docs/build-with-claude/preserved-thinking).
  Reasoning from another provider is not sent. On models that check that prefix
  (``caps.thinking_prefix_check``), thinking made stale by a change to earlier history
  (compaction, pruning) is left out instead: the docs' remedy for client-side
  summaries is to "remove thinking in the kept turns"; a change only voids the thinking
  already after it, and thinking produced later stays valid
  (https://platform.claude.com/docs/en/build-with-claude/preserved-thinking/prefix-checks).

Cache breakpoints (https://platform.claude.com/docs/en/build-with-claude/prompt-caching).
Positions count blocks in the order the provider renders them: each tool
definition, then each system block, then each content block of each message. At
most ``caps.max_breakpoints`` markers are placed, in this priority:

1. **prefix**: on the last system block (or the last tool when there is no system
   text). Tools render before the system, so this one entry covers both. It may
   carry the long TTL (``prefix_ttl``). A prefix shorter than
   ``caps.min_cacheable_tokens`` is silently not cached, so when a floor under its
   token count (:func:`~contextwright.providers.token_floor.token_floor`) does not
   reach the minimum, the marker moves to the first stable block at which the floor
   does, provided no pruning pass can change that block (see *settled* below).
2. **history**: on the last block of the byte-stable history, i.e. the end of the
   longest run of blocks that come from ``request.stable_messages`` and are not
   ``volatile``. It rolls forward as history grows; it is never placed on a
   volatile part or on anything after the stable history.
3. **lookback**: each breakpoint searches at most ``caps.lookback_blocks`` positions
   back (itself included) for an entry that an earlier request wrote. When
   ``previous`` is given, the longest of its entries whose prefix this request still
   has (its last one after an append; an earlier one after a pruning pass changed a
   block behind it) is read: if none of this request's breakpoints would reach it,
   one more is placed exactly there.
4. **settled**: on the last stable block before the first tool result still shown
   whole. Pruning turns results into pointers and never touches anything before
   that block, so the entry written here on every request is the one the request
   after a pruning pass reads (through its lookback marker), instead of resending
   the whole history.

Every marker after the prefix uses the 5-minute TTL, and one in front of a 1h marker
(a lookback target before a prefix marker that moved) takes 1h, so a longer TTL never
follows a shorter one. The automatic top-level ``cache_control`` is not used: it would
take a slot and could land on the volatile tail.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import operator
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, assert_never

from contextwright._optional import require
from contextwright.assembly.request import (
    Message,
    NeutralRequest,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolDefinition,
    ToolResultPart,
)
from contextwright.canonical import canonical_json
from contextwright.events.catalog import AssistantMessage, ReasoningBlock, ToolCall, Usage
from contextwright.providers._render_common import (
    RenderError,
    check_part_role,
    check_shape,
    is_blank,
    json_copy,
    native_declaration,
    reasoning_block,
)
from contextwright.providers.capabilities import ProviderCapabilities
from contextwright.providers.errors import from_sdk_exception, is_sdk_api_error, sdk_family
from contextwright.providers.shared_json import SharedArray, SharedObject, shared
from contextwright.providers.token_floor import token_floor
from contextwright.providers.tool_names import wire_tool_name
from contextwright.providers.usage import count, nested_count, usage_mapping
from contextwright.providers.wire import StreamingRequired, ThinkingBudgetInvalid, Ttl, Wire

__all__ = [
    "WIRE",
    "Breakpoint",
    "RenderError",
    "check_call",
    "check_thinking_budget",
    "parse_answer",
    "parse_usage",
    "plan_breakpoints",
    "render",
    "translate_error",
]

# tool_use ids must match this pattern or the API answers 400 ("String should match
# pattern"); ids imported from other agents can contain dots, colons or pipes.
_TOOL_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
_NOT_ID_CHAR = re.compile(r"[^a-zA-Z0-9_-]")


@dataclass(frozen=True, kw_only=True, slots=True)
class Breakpoint:
    """One ``cache_control`` marker: where it sits, how long it lives, why it is there."""

    position: int
    """Block index in render order (tools, then system blocks, then message content blocks)."""
    ttl: Ttl
    """Cache lifetime asked for."""
    reason: Literal["prefix", "history", "lookback", "settled"]
    """Which rule placed it."""


@dataclass(frozen=True, kw_only=True, slots=True)
class _Block:
    payload: SharedObject
    """The wire block without ``cache_control`` (read-only: every body that shows the block holds this object)."""
    stable: bool
    """From the byte-stable history and not volatile: may anchor a breakpoint."""
    is_result: bool = False
    prunable: bool = False
    """A tool result shown whole: a pruning pass may turn it into a pointer."""
    anchorable: bool = True
    """May carry ``cache_control`` (thinking blocks may not)."""
    floor: list[int] = field(init=False, compare=False, repr=False)
    """``[tokens, counted up to]``: a floor under the block's tokens, counted once and only as far as asked."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "floor", [0, 0])

    def tokens_at_least(self, enough: int) -> int:
        """A floor under the block's token count, exact up to ``enough`` (counting stops there)."""
        tokens, counted = self.floor
        if tokens < counted or counted >= enough:
            return tokens  # counted whole before, or as far as asked now
        tokens = token_floor(_reader_text(self.payload), enough=enough)
        self.floor[:] = [tokens, enough]
        return tokens


@dataclass(frozen=True, kw_only=True, slots=True)
class _Turn:
    role: Literal["user", "assistant"]
    blocks: tuple[_Block, ...]
    wire: SharedObject = field(init=False, compare=False, repr=False)
    """The turn as the wire shows it, holding the blocks' payloads (read-only: bodies share it, see :func:`_assemble`)."""
    run: tuple[bool, int | None] = field(init=False, compare=False, repr=False)
    """Whether every block is stable, and the offset of the last anchorable block of its leading stable run."""

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "wire", SharedObject(role=self.role, content=SharedArray(block.payload for block in self.blocks))
        )
        anchor = None
        for offset, block in enumerate(self.blocks):
            if not block.stable:
                object.__setattr__(self, "run", (False, anchor))
                return
            if block.anchorable:
                anchor = offset
        object.__setattr__(self, "run", (True, anchor))


_Mapped = tuple[Message, bool, tuple[_Block, ...]]
"""One message mapped: the message, whether it was stable, and its blocks."""


@dataclass(frozen=True, kw_only=True, slots=True)
class _Layout:
    tools: tuple[SharedObject, ...]
    system: tuple[SharedObject, ...]
    turns: tuple[_Turn, ...]
    source: tuple[object, object] = field(default=(None, None), compare=False, repr=False)
    """The request's tools and system objects these were mapped from (the next request of an epoch shares them)."""
    mapped: tuple[_Mapped, ...] = field(default=(), compare=False, repr=False)
    """Per message of the request, in order."""
    messages: tuple[Message, ...] = field(default=(), compare=False, repr=False)
    """The request's messages (``mapped``'s first members): the next request's scan for kept ones runs in C."""
    raw: tuple[tuple[str, tuple[_Block, ...]], ...] = field(default=(), compare=False, repr=False)
    """The turns before tool results were moved to the front of their user turn."""
    ends: tuple[tuple[int, int], ...] = field(default=(), compare=False, repr=False)
    """Per message: how many raw turns there were after it, and how many blocks the last of them had."""
    ends_at: tuple[int, ...] = field(default=(), compare=False, repr=False)
    """Per turn: the position just after its last block."""
    history_position: int | None = field(default=None, compare=False, repr=False)
    """Last block of the leading run of stable message blocks, if any."""
    whole_turns: int = field(default=0, compare=False, repr=False)
    """How many leading turns have only stable blocks (the next layout of an epoch starts its scan there)."""
    stable: int = field(default=0, compare=False, repr=False)
    """The request's ``stable_messages``."""
    settled: tuple[tuple[int, int | None] | None, int] = field(default=(None, 0), compare=False, repr=False)
    """``settled_positions``, and the index of the turn where the walk that found it stopped."""
    prefix_floor: list[int] = field(default_factory=lambda: [0, 0], compare=False, repr=False)
    """``[tokens, counted up to]`` of the tools and system together, as :attr:`_Block.floor`; the layouts that
    share their tools and system objects share this list, so the prefix is counted once per epoch, not per render."""

    @property
    def head(self) -> int:
        return len(self.tools) + len(self.system)

    @property
    def prefix_position(self) -> int | None:
        """Last block of the frozen prefix (tools + system), if there is one."""
        count = self.head
        return count - 1 if count else None

    @property
    def settled_positions(self) -> tuple[int, int | None] | None:
        """The first stable tool result still shown whole, and the last anchorable block before it.

        No pruning pass changes what comes before that result; ``None`` when there is no such
        result in the leading run of stable blocks. Found when the layout is made (see :func:`_settled`).
        """
        return self.settled[0]

    def floor_position(self, minimum: int, upto: int) -> int | None:
        """The first stable block, at or before ``upto``, where a floor under the prefix's tokens reaches ``minimum``.

        ``None`` when the tools and system alone reach it (the prefix marker already
        covers the minimum) and when no such block exists.
        """
        need = minimum - self.prefix_tokens_at_least(minimum)
        if need <= 0:
            return None
        position = self.head - 1
        for turn in self.turns:
            for block in turn.blocks:
                position += 1
                if position > upto or not block.stable:
                    return None
                need -= block.tokens_at_least(need)
                if need <= 0 and block.anchorable:
                    return position
        return None

    def prefix_tokens_at_least(self, enough: int) -> int:
        """A floor under the tokens of the tools and system together, exact up to ``enough`` (counting stops there)."""
        tokens, counted = self.prefix_floor
        if tokens < counted or counted >= enough:
            return tokens  # counted whole before, or as far as asked now
        tokens = 0
        for text in (*map(_reader_text, self.tools), *(system["text"] for system in self.system)):
            tokens += token_floor(text, enough=enough - tokens)
            if tokens >= enough:
                break
        self.prefix_floor[:] = [tokens, enough]
        return tokens

    def positions(self) -> Iterator[tuple[str, str, bool, dict[str, Any]]]:
        """What each position contributes to the prefix hash (role and message opening included), in order."""
        for tool in self.tools:
            yield "tools", "", False, tool
        for system in self.system:
            yield "system", "", False, system
        for turn in self.turns:
            for index, block in enumerate(turn.blocks):
                yield "messages", turn.role, index == 0, block.payload

    @property
    def size(self) -> int:
        """How many positions the layout has."""
        return self.ends_at[-1] if self.ends_at else self.head

    def same_prefix(self, other: _Layout, upto: int) -> bool:
        """True when positions ``0..upto`` would hash the same in both layouts (same canonical JSON)."""
        count = min(upto + 1, self.size)
        if count != min(upto + 1, other.size):
            return False
        head = self.head
        if count <= head or (len(self.tools), len(self.system)) != (len(other.tools), len(other.system)):
            pairs = itertools.islice(zip(self.positions(), other.positions(), strict=False), count)
            return all(mine[:3] == theirs[:3] and _same_json(mine[3], theirs[3]) for mine, theirs in pairs)
        if not all(map(_same_json, (*self.tools, *self.system), (*other.tools, *other.system))):
            return False
        # Turns a layout took over from the previous one are the same objects: no need to look inside.
        first = next(itertools.compress(itertools.count(), map(operator.is_not, self.turns, other.turns)), None)
        if first is None:
            first = min(len(self.turns), len(other.turns))
        left = count - (self.ends_at[first - 1] if first else head)
        # The message positions, turn by turn: equal roles, and turn openings at the same positions.
        for mine, theirs in zip(self.turns[first:], other.turns[first:], strict=False):
            if left <= 0:
                break
            shown = min(left, len(mine.blocks))
            left -= shown
            aligned = len(theirs.blocks) >= shown if left == 0 else len(theirs.blocks) == shown
            if mine.role != theirs.role or not aligned:
                return False
            ours, their = mine.blocks[:shown], theirs.blocks[:shown]
            if not all(map(operator.is_, ours, their)) and not all(
                _same_json(a.payload, b.payload) for a, b in zip(ours, their, strict=True)
            ):
                return False
        return left <= 0


def _same_json(a: Any, b: Any) -> bool:
    """Equal canonical JSON, decided without encoding: equal types at every depth (1, 1.0 and True differ there)."""
    if a is b:
        return True
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(map(_same_json, a, b))
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_json(value, b[key]) for key, value in a.items())
    if isinstance(a, float):
        return repr(a) == repr(b)  # -0.0 == 0.0, yet they encode differently
    return bool(a == b)


def _reader_text(payload: dict[str, Any]) -> str:
    """The text of a block or tool definition that the model reads as tokens (what its token floor counts)."""
    kind = payload.get("type")
    if kind == "text":
        return str(payload["text"])
    if kind == "tool_result":
        content = payload.get("content")
        return content if isinstance(content, str) else ""
    if kind == "tool_use":
        return f"{payload['name']} {canonical_json(payload['input'])}"
    if kind == "thinking":
        return str(payload.get("thinking", ""))
    if "input_schema" in payload:  # a tool definition
        return f"{payload['name']} {payload.get('description', '')} {canonical_json(payload['input_schema'])}"
    return ""


def render(
    request: NeutralRequest,
    caps: ProviderCapabilities,
    *,
    previous: NeutralRequest | None = None,
    prefix_ttl: Ttl = "5m",
) -> dict[str, Any]:
    """Return the keyword arguments for ``anthropic.Anthropic().messages.create(**body)``."""
    layout, previous_layout = _layouts(request, caps, previous)
    marks = _plan(layout, caps, prefix_ttl=prefix_ttl, previous=previous_layout)
    return _assemble(request, layout, marks)


def plan_breakpoints(
    request: NeutralRequest,
    caps: ProviderCapabilities,
    *,
    previous: NeutralRequest | None = None,
    prefix_ttl: Ttl = "5m",
) -> tuple[Breakpoint, ...]:
    """The breakpoints :func:`render` places, in render order (for telemetry and ``inspect``)."""
    layout, previous_layout = _layouts(request, caps, previous)
    return _plan(layout, caps, prefix_ttl=prefix_ttl, previous=previous_layout)


_RECENT_LAYOUTS = 4
_recent: OrderedDict[int, tuple[NeutralRequest, ProviderCapabilities, _Layout]] = OrderedDict()
_recent_lock = threading.Lock()


def _layouts(
    request: NeutralRequest, caps: ProviderCapabilities, previous: NeutralRequest | None
) -> tuple[_Layout, _Layout | None]:
    """The layouts of ``request`` and ``previous``; the messages ``previous`` already had keep their blocks.

    A session's successive requests share their history's message objects, so the blocks
    of those messages are mapped once. The few latest layouts are kept (by request object) so
    rendering again, or rendering the next request against this one, maps nothing twice.
    """
    previous_layout = _layout(previous, caps) if previous is not None else None
    return _layout(request, caps, reuse=previous_layout), previous_layout


def _layout(request: NeutralRequest, caps: ProviderCapabilities, *, reuse: _Layout | None = None) -> _Layout:
    with _recent_lock:
        known = _recent.get(id(request))
        if known is not None and known[0] is request and known[1] == caps:
            _recent.move_to_end(id(request))
            return known[2]
    layout = _map_layout(request, caps, reuse)
    with _recent_lock:
        _recent[id(request)] = (request, caps, layout)
        while len(_recent) > _RECENT_LAYOUTS:
            _recent.popitem(last=False)
    return layout


def _map_layout(request: NeutralRequest, caps: ProviderCapabilities, reuse: _Layout | None) -> _Layout:
    check_shape(request, caps, provider="anthropic")
    prefix_floor = [0, 0]
    if reuse is not None and reuse.source == (request.tools, request.system):
        tools, system, prefix_floor = reuse.tools, reuse.system, reuse.prefix_floor
    else:
        tools = tuple(_map_tool(tool) for tool in request.tools)
        system = tuple(SharedObject(type="text", text=block.text) for block in request.system if not is_blank(block.text))
    messages = request.messages
    # The messages the previous request also had, at the same places and equally stable, map and merge as they did.
    kept = 0
    if reuse is not None and reuse.mapped:
        kept = next(
            itertools.compress(itertools.count(), map(operator.is_not, messages, reuse.messages)),
            min(len(messages), len(reuse.mapped)),
        )
        if reuse.stable != request.stable_messages:
            kept = min(kept, reuse.stable, request.stable_messages)  # messages between the two counts changed stability
    mapped = list(reuse.mapped[:kept]) if reuse is not None else []
    raw: list[tuple[str, tuple[_Block, ...]]] = []
    ends = list(reuse.ends[:kept]) if reuse is not None else []
    if kept:
        turns_kept, last_blocks = ends[-1]
        assert reuse is not None
        raw = list(reuse.raw[:turns_kept])
        if turns_kept:
            raw[-1] = (raw[-1][0], raw[-1][1][:last_blocks])
    known = {id(m[0]): m for m in reuse.mapped[kept:]} if reuse is not None else {}

    for index in range(kept, len(messages)):
        message = messages[index]
        stable = index < request.stable_messages
        one = known.get(id(message))
        if one is None or one[0] is not message or one[1] != stable:
            # A message mapped before passed these checks then: they look at the message alone.
            for part in message.parts:
                check_part_role(request, index, message, part)
            mapping = (_map_part(part, stable, caps) for part in message.parts)
            one = (message, stable, tuple(block for block in mapping if block is not None))
        mapped.append(one)
        blocks = one[2]
        if blocks:
            if raw and raw[-1][0] == message.role:
                # The API would merge consecutive same-role turns anyway
                # (https://platform.claude.com/docs/en/api/messages); merging here keeps
                # our block positions equal to the provider's.
                raw[-1] = (message.role, raw[-1][1] + blocks)
            else:
                raw.append((message.role, blocks))
        ends.append((len(raw), len(raw[-1][1]) if raw else 0))
    if not raw:
        raise RenderError("the request has no message content to send", session_id=request.session_id)
    if raw[0][0] != "user":
        raise RenderError(
            "the conversation starts with an assistant message; the Messages API needs a user turn first",
            session_id=request.session_id,
        )
    # Turns before the last one kept are the same as the previous layout's, ordered and placed alike.
    settled = max(0, ends[kept - 1][0] - 1) if kept else 0
    assert reuse is not None or settled == 0
    turns = list(reuse.turns[:settled]) if reuse is not None else []
    ends_at = list(reuse.ends_at[:settled]) if reuse is not None else []
    position = ends_at[-1] if ends_at else len(tools) + len(system)
    for role, blocks in raw[settled:]:
        # tool_result blocks must open the user turn that answers a tool_use; text follows them
        # (https://platform.claude.com/docs/en/agents-and-tools/tool-use/implement-tool-use).
        if role == "user" and len(blocks) > 1:
            blocks = tuple(sorted(blocks, key=lambda b: not b.is_result))
        turns.append(_Turn(role=role, blocks=blocks))  # type: ignore[arg-type]  # roles come from messages
        position += len(blocks)
        ends_at.append(position)
    # The settled turns are the previous layout's: as many of them as it found whole still are.
    whole, anchor = _history_position(turns, ends_at, min(reuse.whole_turns, settled) if reuse is not None else 0)
    head = len(tools) + len(system)
    if reuse is not None and reuse.settled[1] < settled and reuse.head == head:
        found = reuse.settled  # the walk stopped inside the turns taken over: it would stop there again
    else:
        found = _settled(turns, head)
    return _Layout(
        tools=tools,
        system=system,
        turns=tuple(turns),
        source=(request.tools, request.system),
        mapped=tuple(mapped),
        messages=messages,
        raw=tuple(raw),
        ends=tuple(ends),
        ends_at=tuple(ends_at),
        history_position=anchor,
        whole_turns=whole,
        settled=found,
        stable=request.stable_messages,
        prefix_floor=prefix_floor,
    )


def _settled(turns: list[_Turn], head: int) -> tuple[tuple[int, int | None] | None, int]:
    """``settled_positions`` of a layout with these turns, and the index of the turn where its walk stopped.

    The walk reads blocks only up to where it stops, so a later layout that shares the turns
    up to and including that one has the same answer."""
    position = head - 1
    anchor = None
    for index, turn in enumerate(turns):
        for block in turn.blocks:
            position += 1
            if not block.stable:
                return None, index
            if block.prunable:
                return (position, anchor), index
            if block.anchorable:
                anchor = position
    return None, len(turns)


def _history_position(turns: list[_Turn], ends_at: list[int], known_whole: int) -> tuple[int, int | None]:
    """How many leading turns are whole (only stable blocks), and the last anchorable block of the leading stable run.

    The first ``known_whole`` turns are known to be whole. The run ends inside the first turn
    that is not whole (its leading stable blocks count); the anchor is found walking back from there."""
    whole = known_whole
    while whole < len(turns) and turns[whole].run[0]:
        whole += 1
    for index in range(min(whole, len(turns) - 1), -1, -1):
        offset = turns[index].run[1]
        if offset is not None:
            return whole, ends_at[index] - len(turns[index].blocks) + offset
    return whole, None


def _map_tool(tool: ToolDefinition) -> SharedObject:
    declared = native_declaration(tool, "anthropic")
    if declared is not None:
        return shared(declared)  # type: ignore[no-any-return]  # shared() keeps the container's kind
    out: dict[str, Any] = {"name": wire_tool_name(tool.name)}
    if tool.description:
        out["description"] = tool.description
    out["input_schema"] = json_copy(tool.input_schema)
    return shared(out)  # type: ignore[no-any-return]  # shared() keeps the container's kind


def _map_part(part: Part, stable: bool, caps: ProviderCapabilities) -> _Block | None:
    match part:
        case ReasoningPart():
            if part.provider != "anthropic":
                return None  # another provider's reasoning means nothing here
            if part.stale and caps.thinking_prefix_check:
                return None  # its prefix changed: sending it would fail the prefix check
            return _Block(payload=shared(json_copy(part.block)), stable=stable, anchorable=False)
        case TextPart():
            if is_blank(part.text):
                return None  # the API rejects empty and whitespace-only text blocks
            return _Block(payload=SharedObject(type="text", text=part.text), stable=stable and not part.volatile)
        case ToolCallPart():
            payload = {
                "type": "tool_use",
                "id": _wire_id(part.id),
                "name": wire_tool_name(part.name),
                "input": json_copy(part.arguments),
            }
            return _Block(payload=shared(payload), stable=stable)
        case ToolResultPart():
            result: dict[str, Any] = {"type": "tool_result", "tool_use_id": _wire_id(part.call_id)}
            if not is_blank(part.text):
                result["content"] = part.text
            result["is_error"] = part.is_error
            # Pointers and repeat stubs are already as small as a result gets.
            whole = part.budget_class == "tool_results"
            return _Block(payload=SharedObject(result), stable=stable, is_result=True, prunable=whole)
        case _:
            assert_never(part)


def _wire_id(call_id: str) -> str:
    """The id as sent: unchanged when valid, else cleaned plus a hash, so pairs still match.

    Deterministic (same bytes on every render) and collision-free in practice: two
    ids that clean to the same text keep different hash suffixes.
    """
    if _TOOL_ID.match(call_id):
        return call_id
    digest = hashlib.sha256(call_id.encode("utf-8")).hexdigest()[:12]
    return f"{_NOT_ID_CHAR.sub('_', call_id)}_{digest}"


def _plan(layout: _Layout, caps: ProviderCapabilities, *, prefix_ttl: Ttl, previous: _Layout | None) -> tuple[Breakpoint, ...]:
    if prefix_ttl not in caps.ttls:
        raise RenderError(f"prefix TTL {prefix_ttl!r} is not offered for {caps.model} (offered: {', '.join(caps.ttls)})")
    marks: list[Breakpoint] = []
    history = layout.history_position
    # The region no pruning pass changes: up to the first stable result shown whole, else the whole stable history.
    found = layout.settled_positions
    settled = found[1] if found is not None else None
    settled_end = settled if found is not None else history
    prefix = layout.prefix_position
    if prefix is not None and settled_end is not None and caps.min_cacheable_tokens > 0:
        # A prefix under the minimum is silently not cached
        # (https://platform.claude.com/docs/en/build-with-claude/prompt-caching): its marker
        # moves to the first block that surely reaches the minimum, if no pass changes that block.
        floor = layout.floor_position(caps.min_cacheable_tokens, settled_end)
        if floor is not None and (history is None or floor < history):
            prefix = floor
    if prefix is not None and len(marks) < caps.max_breakpoints:
        marks.append(Breakpoint(position=prefix, ttl=prefix_ttl, reason="prefix"))
    if history is not None and len(marks) < caps.max_breakpoints:
        # 5m after the prefix: a 1h marker may not follow a 5m one in render order
        # (https://platform.claude.com/docs/en/build-with-claude/prompt-caching).
        marks.append(Breakpoint(position=history, ttl="5m", reason="history"))
    if previous is not None and caps.lookback_blocks > 0 and len(marks) < caps.max_breakpoints:
        extra = _lookback(layout, caps, marks, previous, prefix_ttl)
        if extra is not None:
            marks.append(extra)
    if (
        settled is not None
        and len(marks) < caps.max_breakpoints
        and (prefix is None or settled > prefix)
        and (history is None or settled < history)
        and all(mark.position != settled for mark in marks)
    ):
        marks.append(Breakpoint(position=settled, ttl="5m", reason="settled"))
    # A 1h marker may not follow a 5m one; a marker in front of a 1h one takes 1h too, which
    # costs nothing more: the 1h write is billed up to the last 1h marker either way.
    last_long = max((mark.position for mark in marks if mark.ttl == "1h"), default=-1)
    marks = [replace(mark, ttl="1h") if mark.position < last_long else mark for mark in marks]
    return tuple(sorted(marks, key=lambda mark: mark.position))


def _lookback(
    layout: _Layout,
    caps: ProviderCapabilities,
    marks: list[Breakpoint],
    previous: _Layout,
    prefix_ttl: Ttl,
) -> Breakpoint | None:
    # The previous request's breakpoints are recomputed without its own `previous`:
    # its lookback marker only re-read an entry of the request before it, and the
    # entries that matter now are the ones it placed from its own layout.
    before = _plan(previous, caps, prefix_ttl=prefix_ttl, previous=None)
    stable_end = max((mark.position for mark in marks), default=-1)
    # Reads take the longest entry found, so only the last entry whose prefix this
    # request still has is worth a slot: after an append that is the previous history
    # marker; after a pruning pass, the settled marker in front of the first change.
    for target in sorted({mark.position for mark in before}, reverse=True):
        if target > stable_end:
            continue  # that block is not stable history here; a marker there could cache the tail
        if not layout.same_prefix(previous, target):
            continue  # changed since (pruning, compaction, epoch): that entry cannot hit
        # A breakpoint checks its own position and the lookback_blocks - 1 before it, and
        # only positions an earlier request wrote can hit
        # (https://platform.claude.com/docs/en/build-with-claude/prompt-caching); if one
        # of ours already reaches the target, another slot buys nothing.
        if any(0 <= mark.position - target < caps.lookback_blocks for mark in marks):
            return None
        return Breakpoint(position=target, ttl="5m", reason="lookback")
    return None


def _assemble(request: NeutralRequest, layout: _Layout, marks: tuple[Breakpoint, ...]) -> dict[str, Any]:
    # The body and its lists are the caller's own; the messages, blocks and values in them are the
    # layout's read-only objects, shared with every render that shows them, so a render costs what
    # changed rather than the whole history. A marked block is a copy that carries its marker.
    tools = list(layout.tools)
    system = list(layout.system)
    messages = [turn.wire for turn in layout.turns]
    head = layout.head
    for mark in marks:
        control = SharedObject(type="ephemeral")
        if mark.ttl != "5m":
            control = SharedObject(type="ephemeral", ttl=mark.ttl)  # 5m is the default; omitting it keeps the common wire shape
        # Positions count tools, then system blocks, then message blocks, in render order.
        if mark.position < len(tools):
            tools[mark.position] = _marked(tools[mark.position], control)
        elif mark.position < head:
            system[mark.position - len(tools)] = _marked(system[mark.position - len(tools)], control)
        else:
            index = bisect.bisect_right(layout.ends_at, mark.position)
            start = layout.ends_at[index - 1] if index else head
            turn = messages[index]
            content = list(turn["content"])
            content[mark.position - start] = _marked(content[mark.position - start], control)
            messages[index] = SharedObject(role=turn["role"], content=SharedArray(content))
    body: dict[str, Any] = {"model": request.model, "max_tokens": request.max_output_tokens}
    if system:
        body["system"] = system
    if tools:
        body["tools"] = tools
    body["messages"] = messages
    return body


def _marked(block: SharedObject, control: SharedObject) -> SharedObject:
    """``block`` with ``cache_control`` added last (where the wire has always carried it)."""
    return SharedObject(block, cache_control=control)


# -- answers and usage ----------------------------------------------------------------------


_ANTHROPIC_REASONING = frozenset({"thinking", "redacted_thinking"})


def parse_answer(data: Mapping[str, Any]) -> tuple[AssistantMessage, Usage | None]:
    """The assistant message and usage of a Messages answer (as JSON)."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[ReasoningBlock] = []
    for block in data.get("content") or ():
        kind = block.get("type")
        if kind == "text":
            texts.append(block.get("text", ""))
        elif kind == "tool_use":
            calls.append(ToolCall(id=block["id"], name=block["name"], arguments=dict(block.get("input") or {})))
        elif kind in _ANTHROPIC_REASONING:
            reasoning.append(reasoning_block("anthropic", block, texts, calls))
        # server-tool blocks are not replayed into history
    usage = parse_usage(data["usage"]) if data.get("usage") else None
    message = AssistantMessage(
        text="\n".join(t for t in texts if t),
        tool_calls=tuple(calls),
        model=data.get("model"),
        stop_reason=data.get("stop_reason"),
        reasoning=tuple(reasoning),
    )
    return message, usage


def parse_usage(raw: Any) -> Usage:
    """Parse an Anthropic Messages ``usage`` (or a whole message) into :class:`Usage`.

    Reads the TTL split in ``cache_creation`` when present; the older shape with only
    ``cache_creation_input_tokens`` predates 1-hour entries being reported, so it is
    counted as 5-minute writes.
    """
    usage = usage_mapping(raw, provider="anthropic", marker="input_tokens")
    input_tokens = count(usage, "input_tokens", provider="anthropic", required=True)
    read = count(usage, "cache_read_input_tokens", provider="anthropic")
    written_total = count(usage, "cache_creation_input_tokens", provider="anthropic")
    split = usage.get("cache_creation")
    if isinstance(split, Mapping):
        # https://github.com/anthropics/anthropic-sdk-python/blob/main/src/anthropic/types/usage.py:
        # cache_creation_input_tokens is the sum of the two TTL buckets.
        write_5m = count(split, "ephemeral_5m_input_tokens", provider="anthropic")
        write_1h = count(split, "ephemeral_1h_input_tokens", provider="anthropic")
    else:
        write_5m, write_1h = written_total, 0
    return Usage(
        input_tokens=input_tokens,
        cache_read_tokens=read,
        cache_write_5m_tokens=write_5m,
        cache_write_1h_tokens=write_1h,
        output_tokens=count(usage, "output_tokens", provider="anthropic"),
        # The SDK's own tracing reads usage.output_tokens_details.thinking_tokens (anthropic/_tracing.py).
        reasoning_output_tokens=nested_count(usage, "output_tokens_details", "thinking_tokens", provider="anthropic"),
    )


# -- the SDK's rules -----------------------------------------------------------------------
#
# A manual thinking budget: with ``thinking={"type": "enabled", "budget_tokens": N}`` the API
# wants N of at least 1,024 and below ``max_tokens``
# (``anthropic/types/thinking_config_enabled_param.py``: "Must be ≥1024 and less than
# `max_tokens`"); anything else is a 400 from the API. The engine sets ``max_tokens`` from
# the model's output reserve (and the Anthropic middleware caps the caller's at it), so a
# budget that fit the caller's own ``max_tokens`` can stop fitting: that is refused here with
# the numbers and the fix. ``adaptive`` and ``disabled`` thinking have no budget and pass.
#
# Long outputs: the SDK refuses a non-streamed ``messages.create`` before any HTTP call
# (``ValueError: Streaming is required for operations that may take longer than 10 minutes``)
# when the caller set no timeout of its own, the client keeps the SDK's default timeout, and
# either the expected time ``3600 s × max_tokens / 128,000`` exceeds 600 s (``max_tokens``
# above 21,333) or the model has a smaller non-streaming cap in the SDK's
# ``MODEL_NONSTREAMING_TOKENS`` (see ``anthropic._base_client.BaseClient._calculate_nonstreaming_timeout``).
# The rule is reproduced so that ``send()`` refuses with a typed error that names
# ``session.stream`` before anything is built.

MINIMUM_BUDGET = 1_024
"""The smallest ``budget_tokens`` the API accepts."""
MAXIMUM_SECONDS = 60 * 60
"""The longest a request may take, as the SDK assumes for 128,000 output tokens."""
DEFAULT_SECONDS = 60 * 10
"""The SDK's default timeout: a non-streamed call expected to take longer is refused."""
TOKENS_AT_MAXIMUM = 128_000

_STREAMING_MARK = "Streaming is required"


def check_thinking_budget(thinking: Any, *, max_tokens: int, model: str) -> None:
    """Raise :class:`ThinkingBudgetInvalid` when ``thinking`` asks for a budget the API refuses at ``max_tokens``."""
    if not isinstance(thinking, Mapping) or thinking.get("type") != "enabled":
        return
    budget = thinking.get("budget_tokens")
    if not isinstance(budget, int) or isinstance(budget, bool):
        raise ThinkingBudgetInvalid(
            f"thinking.budget_tokens must be an integer, got {budget!r}", model=model, budget_tokens=budget
        )
    if budget < MINIMUM_BUDGET:
        raise ThinkingBudgetInvalid(
            f"thinking.budget_tokens is {budget:,}; Anthropic accepts {MINIMUM_BUDGET:,} or more",
            model=model,
            budget_tokens=budget,
        )
    if budget >= max_tokens:
        raise ThinkingBudgetInvalid(
            f"thinking.budget_tokens {budget:,} must be below max_tokens, which the engine sets to {max_tokens:,} "
            f"(the output reserve of {model}): lower the budget or raise the model's output_reserve",
            model=model,
            budget_tokens=budget,
            max_tokens=max_tokens,
        )


def expected_seconds(max_tokens: int) -> float:
    """How long the anthropic SDK expects a call asking for ``max_tokens`` to take."""
    return MAXIMUM_SECONDS * max_tokens / TOKENS_AT_MAXIMUM


def streaming_required(max_tokens: int, *, nonstreaming_cap: int | None) -> bool:
    """The SDK's rule: too long for the default timeout, or above the model's non-streaming cap."""
    return expected_seconds(max_tokens) > DEFAULT_SECONDS or bool(nonstreaming_cap and max_tokens > nonstreaming_cap)


def check_non_streamed_call(call: Callable[..., Any], *, model: str, max_tokens: int, extra: Mapping[str, Any]) -> None:
    """Raise :class:`StreamingRequired` when the SDK would refuse this non-streamed ``call``."""
    if extra.get("stream") or "timeout" in extra:
        return
    client = getattr(getattr(call, "__self__", None), "_client", None)
    module = type(client).__module__ if client is not None else ""
    if not module.startswith("anthropic"):
        return  # not the SDK's own method (or a wrapper of it): the error is translated after the call
    constants = require("anthropic._constants", extra="anthropic", feature="sending through the anthropic SDK")
    if getattr(client, "timeout", None) != constants.DEFAULT_TIMEOUT:
        return  # the caller chose a timeout: the SDK trusts it
    cap = constants.MODEL_NONSTREAMING_TOKENS.get(model)
    if streaming_required(max_tokens, nonstreaming_cap=cap):
        raise _streaming_refusal(model=model, max_tokens=max_tokens)


def check_call(call: Callable[..., Any], *, model: str, max_tokens: int, extra: Mapping[str, Any], streamed: bool) -> None:
    """The SDK's rules for one call: the thinking budget, and for a non-streamed call the streaming rule."""
    check_thinking_budget(extra.get("thinking"), max_tokens=max_tokens, model=model)
    if not streamed:
        check_non_streamed_call(call, model=model, max_tokens=max_tokens, extra=extra)


def _streaming_refusal(*, model: str, max_tokens: int) -> StreamingRequired:
    return StreamingRequired(
        f"{model} may write up to {max_tokens:,} output tokens, which the anthropic SDK only accepts streamed "
        f"(about {expected_seconds(max_tokens) / 60:.0f} minutes at most): use "
        "`with session.stream(client.messages.stream) as stream:`, or pass an explicit timeout=, "
        "or lower the model's output_reserve",
        model=model,
        max_tokens=max_tokens,
    )


def translate_error(exc: BaseException, *, model: str | None = None, max_tokens: int | None = None) -> Exception | None:
    """The typed error for an anthropic SDK ``APIError``, or for the SDK's own refusal of a non-streamed call."""
    if isinstance(exc, ValueError) and _STREAMING_MARK in str(exc) and model is not None and max_tokens is not None:
        return _streaming_refusal(model=model, max_tokens=max_tokens)
    if sdk_family(exc) == "anthropic" and is_sdk_api_error(exc):
        return from_sdk_exception(exc)
    return None


def check_final(final: Any) -> str | None:
    """Why the stream's accumulated message is incomplete: it ended before ``message_delta`` gave a stop reason."""
    if getattr(final, "type", None) == "message" and getattr(final, "stop_reason", "") is None:
        return "the Anthropic stream ended before message_delta gave a stop reason; nothing was recorded"
    return None


def _recognizes(data: Mapping[str, Any]) -> bool:
    return data.get("type") == "message" and "content" in data


WIRE = Wire(
    name="anthropic",
    providers=("anthropic",),
    render=render,
    recognizes=_recognizes,
    parse_response=parse_answer,
    parse_usage=parse_usage,
    sdk_resources=(("anthropic.resources", ".messages"),),
    sdk_calls="client.messages.create / client.messages.stream",
    check_call=check_call,
    translate_error=translate_error,
    check_final=check_final,
)
"""The Anthropic Messages wire."""
