"""Offline simulator of OpenAI prompt caching (Chat Completions and Responses bodies).

Follows https://developers.openai.com/api/docs/guides/prompt-caching (snapshot
Aug-Sep 2026), the launch post https://openai.com/index/api-prompt-caching/ and the
cookbook https://github.com/openai/openai-cookbook/blob/main/examples/Prompt_Caching_201.ipynb.

The prompt is split into blocks in render order: each tool definition, then (for
Responses) ``instructions``, then every message content part (a string ``content``
is one part; the other fields of a message such as ``tool_calls`` form one more
block) and every non-message input item. Settings that OpenAI renders into hidden
instructions (``parallel_tool_calls``, ``response_format`` / ``text``, reasoning
effort, verbosity, ``context_management``) are folded into the hash before the
first block, so changing them misses everything. ``tool_choice`` is not.

Two regimes, chosen by model:

* **Classic** (every model before GPT-5.6): caching is automatic. The hit is the
  longest prefix that a live earlier prompt under the same routing key shares,
  credited from 1,024 tokens and rounded down to a multiple of 128 (of 2,048 on
  GPT-5.5). Every request stores all its prefixes; there is no write charge and no
  write count. Entries live ``in_memory_ttl`` after their last use (default 5
  minutes: in-memory entries usually vanish after 5 to 10 idle minutes, and always
  within an hour) or, with ``prompt_cache_retention: "24h"``, ``extended_ttl``
  (default 30 minutes, what such entries usually get; at most 24 hours). Every hit
  refreshes them. GPT-5.5 supports only the extended retention.
* **Breakpoints** (GPT-5.6 and later): writes happen only at breakpoints: in
  ``implicit`` mode (default) the end of the latest eligible message (a user
  message; the last of a run of tool outputs; the last message of the opening
  developer block) plus explicit ``prompt_cache_breakpoint`` markers, at most 4
  written per request (the implicit one and the latest 3 explicit; in ``explicit``
  mode the latest 4). Lookup candidates, longest first, exact boundaries: the first
  2 and latest 50 explicit markers, and in implicit mode also the implicit
  breakpoint, up to 20 earlier eligible message endings and the end of the opening
  developer block. Nothing is credited below 1,024 tokens. The write charge covers
  the tokens from the hit to the furthest written breakpoint; entries live 30
  minutes (or the marker's ``ttl``) after their last write or reuse.

The routing key is (simulator scope, model, ``prompt_cache_key``): requests with
different keys never share entries, requests with the same key always do.

Assumptions (the documentation leaves these open or makes them probabilistic):

* Token counts per block are ``count_tokens(canonical JSON of the block)`` unless
  exact ``block_tokens`` are given; OpenAI's hidden system tokens are taken as 0.
* Matching is per block: a prefix that diverges inside a block is credited only up
  to the end of the last identical block (real caching can match a little further).
* Routing is perfect: no overflow above ~15 requests per minute per prefix, no
  best-effort misses. Results are therefore best case.
* The minimum for classic models is 1,024 although OpenAI says it may be higher
  depending on request settings.
* The default retention for classic models that support both is a constructor
  argument (``in_memory`` unless told otherwise) because the date OpenAI made
  ``24h`` the default is not documented.
* In the breakpoint regime a hit refreshes only the entry that was used, and the
  Responses ``instructions`` count as the first message of the developer block.
* Writes are reported in ``cache_write_5m_tokens`` whatever their TTL (OpenAI bills
  one write rate); the split by TTL is in ``SimulatedRequest.write_tokens_by_ttl``. A marker ``ttl`` of
  ``"12h"`` is accepted because the SDK types offer it, though the guide names only
  ``"30m"``.
* In implicit mode at most 3 explicit markers are written even when the request has
  no eligible message for the implicit breakpoint.
* An explicit marker inside ``instructions`` is refused as an invalid request (the
  guide says instructions cannot carry one; the API's wording is not known).
* Requests chained with ``previous_response_id`` or ``conversation`` are refused:
  the server-side part of their prompt is not in the body.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final, Literal

from contextwright.canonical import canonical_json
from contextwright.errors import UsageError
from contextwright.pricing.cache_sim.base import (
    Clockwork,
    CountTokens,
    Entry,
    PrefixReplayer,
    PriceLookup,
    SimRequest,
    SimulatedRequest,
    UnsupportedSimulation,
    body_model,
    chain,
    cumulative_tokens,
    default_price_lookup,
    price_and_cost,
)
from contextwright.pricing.prices import normalize_model_id
from contextwright.providers.capabilities import OPENAI_EXTENDED_CAP as EXTENDED_CAP
from contextwright.providers.capabilities import OPENAI_IN_MEMORY_CAP as IN_MEMORY_CAP
from contextwright.providers.errors import ProviderError, classify_provider_error
from contextwright.providers.usage import Usage

__all__ = [
    "OpenAICacheSimulator",
    "OpenAIRenderedBlock",
    "openai_regime",
    "render_openai_blocks",
]

Api = Literal["chat", "responses"]
MIN_CACHED: Final = 1024
CLASSIC_STEP: Final = 128
GPT55_STEP: Final = 2048
MAX_WRITES: Final = 4
FIRST_EXPLICIT: Final = 2
LATEST_EXPLICIT: Final = 50
EARLIER_ENDINGS: Final = 20
BREAKPOINT_TTLS: Final[dict[str, timedelta]] = {
    "30m": timedelta(minutes=30),
    "12h": timedelta(hours=12),
}

_HIDDEN_SETTINGS: Final = (
    "parallel_tool_calls",
    "response_format",
    "text",
    "reasoning",
    "reasoning_effort",
    "verbosity",
    "context_management",
)


@dataclass(frozen=True, kw_only=True, slots=True)
class OpenAIRenderedBlock:
    """One block of the rendered prompt, with what the breakpoint rules need to know."""

    index: int
    """Position in render order, from 0."""
    path: str
    """Where it sits in the body (``messages.2.content.0``, ``input.4``, ``tools.1``)."""
    text: str
    """Canonical JSON of the block without its breakpoint marker: what ``count_tokens`` sees."""
    identity: Any
    """What goes into the prefix hash."""
    message: int | None
    """Index of the message or input item this block belongs to (None for tools)."""
    marker_ttl: str | None
    """TTL of an explicit ``prompt_cache_breakpoint`` on this block, if any."""


@dataclass(frozen=True, kw_only=True, slots=True)
class _Message:
    index: int
    kind: Literal["user", "tool", "developer", "other"]
    end: int  # block index of the message's last block


def openai_regime(model: str) -> Literal["classic", "breakpoints"]:
    """``breakpoints`` for GPT-5.6 and later, ``classic`` for everything before."""
    match = re.match(r"gpt-(\d+)(?:\.(\d+))?", normalize_model_id(model))
    if match and (int(match[1]), int(match[2] or 0)) >= (5, 6):
        return "breakpoints"
    return "classic"


def render_openai_blocks(body: Mapping[str, Any]) -> tuple[OpenAIRenderedBlock, ...]:
    """Split a Chat Completions or Responses body into blocks in render order."""
    blocks, _ = _render(body)
    return blocks


class OpenAICacheSimulator(PrefixReplayer[OpenAIRenderedBlock]):
    """Replays Chat Completions or Responses bodies against a simulated OpenAI prompt cache."""

    def __init__(
        self,
        *,
        count_tokens: CountTokens | None = None,
        price_lookup: PriceLookup | None = default_price_lookup,
        scope: str = "default",
        default_retention: Literal["in_memory", "24h"] = "in_memory",
        in_memory_ttl: timedelta = timedelta(minutes=5),
        extended_ttl: timedelta = timedelta(minutes=30),
        context_window: int | None = None,
    ) -> None:
        """Configure the simulator; the TTL knobs are clamped to the documented caps (1 h, 24 h)."""
        if default_retention not in ("in_memory", "24h"):
            raise UsageError(f"default_retention must be 'in_memory' or '24h', got {default_retention!r}")
        self._count_tokens = count_tokens
        self._price_lookup = price_lookup
        self._scope = scope
        self._default_retention = default_retention
        self._in_memory_ttl = min(in_memory_ttl, IN_MEMORY_CAP)
        self._extended_ttl = min(extended_ttl, EXTENDED_CAP)
        self._window = context_window
        self._entries: dict[tuple[str, str, str | None, bytes], Entry] = {}
        self._clock = Clockwork()
        self._last: tuple[tuple[OpenAIRenderedBlock, ...], tuple[bytes, ...], tuple[int, ...]] | None = None

    def request(self, request: SimRequest) -> SimulatedRequest:
        """Replay one request; raises the provider error the API would return, leaving the cache untouched."""
        body = request.body
        model = body_model(body)
        for chained in ("previous_response_id", "conversation"):
            if body.get(chained):
                raise UnsupportedSimulation(
                    f"{chained} puts part of the prompt on the server; send the full input to simulate it"
                )
        blocks, messages = _render(body)
        cumulative, total = cumulative_tokens([b.text for b in blocks], request, self._count_tokens)
        if self._window is not None and total > self._window:
            raise _context_error(body, total, self._window)
        at = request.at
        index = self._clock.advance(at)
        self._entries = {key: e for key, e in self._entries.items() if e.expires_at > at}

        hashes = _prefix_hashes(body, blocks)
        key_scope = (self._scope, model, _optional_str(body.get("prompt_cache_key")))
        if openai_regime(model) == "breakpoints":
            usage, hit, written, points, by_ttl = self._breakpoint_regime(
                body, request, blocks, messages, cumulative, hashes, key_scope
            )
        else:
            usage, hit, written, points = self._classic_regime(body, request, cumulative, hashes, key_scope)
            by_ttl = {}
        self._last = (tuple(blocks), tuple(hashes), tuple(cumulative))
        return SimulatedRequest(
            index=index,
            at=at,
            model=model,
            usage=usage,
            cost=price_and_cost(self._price_lookup, model, at, usage),
            block_count=len(blocks),
            breakpoints=points,
            hit_block=hit,
            written_blocks=written,
            write_tokens_by_ttl=by_ttl,
        )

    def entry_ttl(self, body: Mapping[str, Any], marker_ttl: str | None = None) -> timedelta:
        """How long an entry this request writes at a block lives (``marker_ttl``: the block's marker)."""
        model = normalize_model_id(str(body.get("model", "")))
        if openai_regime(model) == "breakpoints":
            options = body.get("prompt_cache_options")
            default = options.get("ttl", "30m") if isinstance(options, Mapping) else "30m"
            return BREAKPOINT_TTLS.get(marker_ttl or default, BREAKPOINT_TTLS["30m"])
        retention = body.get("prompt_cache_retention") or self._default_retention
        if model.startswith("gpt-5.5"):
            retention = "24h"
        return self._extended_ttl if retention == "24h" else self._in_memory_ttl

    def _classic_regime(
        self,
        body: Mapping[str, Any],
        request: SimRequest,
        cumulative: Sequence[int],
        hashes: Sequence[bytes],
        key_scope: tuple[str, str, str | None],
    ) -> tuple[Usage, int | None, tuple[int, ...], tuple[int, ...]]:
        at = request.at
        model = normalize_model_id(str(body["model"]))
        retention = body.get("prompt_cache_retention") or self._default_retention
        if model.startswith("gpt-5.5"):
            retention = "24h"  # GPT-5.5 offers only extended retention
        ttl = self._extended_ttl if retention == "24h" else self._in_memory_ttl

        # Longest live prefix, found from the end.
        hit = next(
            (p for p in range(len(hashes) - 1, -1, -1) if (e := self._entries.get((*key_scope, hashes[p]))) and e.live(at)),
            None,
        )
        shared = cumulative[hit] if hit is not None else 0
        # Credited from 1,024 tokens in 128-token steps (2,048-token breakpoints on GPT-5.5).
        # https://openai.com/index/api-prompt-caching/ ; https://developers.openai.com/api/docs/guides/prompt-caching
        step = GPT55_STEP if model.startswith("gpt-5.5") else CLASSIC_STEP
        cached = (shared // step) * step if shared >= MIN_CACHED else 0
        available = at + request.first_token_after
        for p, digest in enumerate(hashes):
            key = (*key_scope, digest)
            entry = self._entries.get(key)
            if entry is not None and entry.expires_at > at:
                entry.expires_at = max(entry.expires_at, at + ttl)  # a hit (or a re-send) refreshes it
            else:
                self._entries[key] = Entry(ttl=ttl, available_at=available, expires_at=at + ttl, tokens=cumulative[p])
        total = cumulative[-1] if cumulative else 0
        usage = Usage(
            input_tokens=total - cached,
            cache_read_tokens=cached,
            output_tokens=request.output_tokens,
        )
        return usage, hit if cached else None, (), ()

    def _breakpoint_regime(
        self,
        body: Mapping[str, Any],
        request: SimRequest,
        blocks: Sequence[OpenAIRenderedBlock],
        messages: Sequence[_Message],
        cumulative: Sequence[int],
        hashes: Sequence[bytes],
        key_scope: tuple[str, str, str | None],
    ) -> tuple[Usage, int | None, tuple[int, ...], tuple[int, ...], dict[str, int]]:
        at = request.at
        options = body.get("prompt_cache_options")
        options = options if isinstance(options, Mapping) else {}
        mode = options.get("mode", "implicit")
        if mode not in ("implicit", "explicit"):
            raise _invalid(f"prompt_cache_options.mode must be 'implicit' or 'explicit', got {mode!r}")
        default_ttl = options.get("ttl", "30m")
        if default_ttl not in BREAKPOINT_TTLS:
            raise _invalid(f"prompt_cache_options.ttl must be one of {sorted(BREAKPOINT_TTLS)}, got {default_ttl!r}")

        explicit = [b.index for b in blocks if b.marker_ttl is not None]
        ttl_of = {b.index: b.marker_ttl for b in blocks if b.marker_ttl is not None}
        endings = _eligible_endings(messages)
        developer_end = _developer_block_end(messages)
        implicit = endings[-1] if mode == "implicit" and endings else None

        # Lookup candidates, exact boundaries, no rounding.
        # https://developers.openai.com/api/docs/guides/prompt-caching (GPT-5.6 and later)
        candidates = set(explicit[:FIRST_EXPLICIT]) | set(explicit[-LATEST_EXPLICIT:])
        if mode == "implicit":
            if implicit is not None:
                candidates.add(implicit)
                earlier = endings[:-1]
                candidates.update(earlier[max(0, len(earlier) - EARLIER_ENDINGS) :])
            if developer_end is not None:
                candidates.add(developer_end)
        hit: int | None = None
        for p in sorted(candidates, key=lambda p: cumulative[p], reverse=True):
            entry = self._entries.get((*key_scope, hashes[p]))
            if entry is not None and entry.live(at) and cumulative[p] >= MIN_CACHED:
                entry.expires_at = at + entry.ttl  # reuse restarts the 30-minute window
                hit = p
                break
        cached = cumulative[hit] if hit is not None else 0

        # At most 4 writes: in implicit mode the implicit breakpoint takes one slot and the
        # latest 3 explicit markers the rest; in explicit mode the latest 4 markers.
        if mode == "implicit":
            others = [b for b in explicit if b != implicit]
            slots = ([implicit] if implicit is not None else []) + others[-(MAX_WRITES - 1) :]
        else:
            slots = explicit[-MAX_WRITES:]
        written: list[int] = []
        by_ttl: dict[str, int] = {}
        furthest = cached
        for b in sorted(slots):
            if cumulative[b] < MIN_CACHED or cumulative[b] <= cached:
                continue
            ttl_name = ttl_of.get(b) or default_ttl
            if ttl_name not in BREAKPOINT_TTLS:
                raise _invalid(f"{blocks[b].path}.prompt_cache_breakpoint.ttl must be one of {sorted(BREAKPOINT_TTLS)}")
            ttl = BREAKPOINT_TTLS[ttl_name]
            self._entries[(*key_scope, hashes[b])] = Entry(
                ttl=ttl,
                available_at=at + request.first_token_after,
                expires_at=at + ttl,
                tokens=cumulative[b],
            )
            written.append(b)
            # The write charge runs from the hit to the furthest written breakpoint; attribute
            # each stretch to the TTL of the breakpoint that ends it.
            by_ttl[ttl_name] = by_ttl.get(ttl_name, 0) + cumulative[b] - furthest
            furthest = cumulative[b]
        write = furthest - cached
        total = cumulative[-1] if cumulative else 0
        usage = Usage(
            input_tokens=total - cached - write,
            cache_read_tokens=cached,
            cache_write_5m_tokens=write,
            output_tokens=request.output_tokens,
        )
        points = tuple(sorted({*explicit, *([implicit] if implicit is not None else [])}))
        return usage, hit, tuple(written), points, dict(sorted(by_ttl.items()))


def _render(
    body: Mapping[str, Any],
) -> tuple[tuple[OpenAIRenderedBlock, ...], tuple[_Message, ...]]:
    blocks: list[OpenAIRenderedBlock] = []
    messages: list[_Message] = []

    def add(path: str, value: Any, identity: Any, message: int | None, marker: str | None) -> None:
        blocks.append(
            OpenAIRenderedBlock(
                index=len(blocks),
                path=path,
                text=canonical_json(value),
                identity=identity,
                message=message,
                marker_ttl=marker,
            )
        )

    for i, tool in enumerate(_list(body.get("tools"), "tools")):
        add(f"tools.{i}", tool, {"tool": tool}, None, None)

    api: Api = "responses" if "input" in body or "instructions" in body else "chat"
    items: list[tuple[str, Any]] = []
    instructions = body.get("instructions")
    if isinstance(instructions, str):
        items.append(("instructions", {"role": "developer", "content": instructions, "_instructions": True}))
    elif instructions is not None:
        items.extend((f"instructions.{k}", item) for k, item in enumerate(_list(instructions, "instructions")))
    if api == "chat":
        items.extend((f"messages.{k}", m) for k, m in enumerate(_list(body.get("messages"), "messages")))
    else:
        raw_input = body.get("input")
        if isinstance(raw_input, str):
            items.append(("input", {"role": "user", "content": raw_input}))
        else:
            items.extend((f"input.{k}", item) for k, item in enumerate(_list(raw_input, "input")))

    for number, (path, item) in enumerate(items):
        if not isinstance(item, Mapping):
            raise _invalid(f"{path}: expected an object")
        from_instructions = path.startswith("instructions")
        role = item.get("role")
        if role is None or item.get("type") not in (None, "message"):
            # Non-message input items (function_call, function_call_output, reasoning, ...).
            add(path, item, {"item": item}, number, None)
            kind: Literal["user", "tool", "developer", "other"] = (
                "tool" if item.get("type") in ("function_call_output", "custom_tool_call_output") else "other"
            )
            messages.append(_Message(index=number, kind=kind, end=len(blocks) - 1))
            continue
        content = item.get("content")
        rest = {k: v for k, v in item.items() if k not in ("content", "role", "_instructions")}
        first = True
        if isinstance(content, str) or content is None:
            if content is not None or not rest:
                add(
                    f"{path}.content",
                    {"role": role, "content": content},
                    {"role": role, "first": True, "content": content},
                    number,
                    None,
                )
                first = False
        else:
            for j, part in enumerate(_list(content, f"{path}.content")):
                part_path = f"{path}.content.{j}"
                if not isinstance(part, Mapping):
                    raise _invalid(f"{part_path}: expected an object")
                marker = _marker(part, part_path)
                if marker is not None and from_instructions:
                    raise _invalid(f"{part_path}: instructions cannot carry prompt_cache_breakpoint")
                stripped = {k: v for k, v in part.items() if k != "prompt_cache_breakpoint"}
                add(
                    part_path,
                    stripped,
                    {"role": role, "first": first, "part": stripped},
                    number,
                    marker,
                )
                first = False
        if rest:
            add(path, rest, {"role": role, "first": first, "rest": rest}, number, None)
        kind = {
            "user": "user",
            "tool": "tool",
            "developer": "developer",
            "system": "developer",
        }.get(str(role), "other")  # type: ignore[assignment]  # every value is one of the message kinds
        messages.append(_Message(index=number, kind=kind, end=len(blocks) - 1))
    return tuple(blocks), tuple(messages)


def _eligible_endings(messages: Sequence[_Message]) -> list[int]:
    """Block indexes where an eligible message ends, in order."""
    endings: list[int] = []
    developer_end = _developer_block_end(messages)
    for k, message in enumerate(messages):
        if message.kind == "user":
            endings.append(message.end)
        elif message.kind == "tool" and (k + 1 == len(messages) or messages[k + 1].kind != "tool"):
            endings.append(message.end)  # the last of a run of tool outputs
        elif message.end == developer_end:
            endings.append(message.end)
    return sorted(set(endings))


def _developer_block_end(messages: Sequence[_Message]) -> int | None:
    end = None
    for message in messages:
        if message.kind != "developer":
            break
        end = message.end
    return end


def _marker(part: Mapping[str, Any], path: str) -> str | None:
    marker = part.get("prompt_cache_breakpoint")
    if marker is None:
        return None
    if not isinstance(marker, Mapping) or marker.get("mode") != "explicit":
        raise _invalid(f"{path}.prompt_cache_breakpoint: mode must be 'explicit'")
    ttl = marker.get("ttl", "")
    if ttl and ttl not in BREAKPOINT_TTLS:
        raise _invalid(f"{path}.prompt_cache_breakpoint.ttl must be one of {sorted(BREAKPOINT_TTLS)}, got {ttl!r}")
    return str(ttl)  # "" means "the request's default TTL"


def _prefix_hashes(body: Mapping[str, Any], blocks: Sequence[OpenAIRenderedBlock]) -> list[bytes]:
    # Settings rendered into hidden instructions change the prefix from its start.
    # https://developers.openai.com/api/docs/guides/prompt-caching (what changes the prefix)
    settings = {name: body.get(name) for name in _HIDDEN_SETTINGS if body.get(name) is not None}
    state = chain(b"contextwright/openai-prefix/v1", {"model": body.get("model"), "settings": settings})
    hashes = []
    for block in blocks:
        state = chain(state, block.identity)
        hashes.append(state)
    return hashes


def _context_error(body: Mapping[str, Any], total: int, window: int) -> ProviderError:
    if "messages" in body:
        # https://github.com/crewAIInc/crewAI-examples/issues/121
        message = (
            f"This model's maximum context length is {window} tokens. However, your messages resulted in "
            f"{total} tokens. Please reduce the length of the messages."
        )
        param = "messages"
    else:
        # https://github.com/anomalyco/opencode/issues/6071
        message = "Your input exceeds the context window of this model. Please adjust your input and try again."
        param = "input"
    error = {
        "message": message,
        "type": "invalid_request_error",
        "param": param,
        "code": "context_length_exceeded",
    }
    return classify_provider_error(400, {"error": error}, provider="openai")


def _invalid(message: str) -> ProviderError:
    error = {"message": message, "type": "invalid_request_error", "param": None, "code": None}
    return classify_provider_error(400, {"error": error}, provider="openai")


def _list(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    raise _invalid(f"{path}: expected a list")


def _optional_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
