"""What a client's request says, per wire: the agent's prefix, the model and the conversation as turns.

Three wires carry a conversation: Anthropic Messages (``/v1/messages``), OpenAI Responses
(``/v1/responses``) and OpenAI Chat Completions (``/v1/chat/completions``). Each parser
turns a request body into a :class:`Conversation`: the system text and tools the agent
sent (its prefix), the model, and the history as :class:`Turn` values in the order the
log records them (user text, one model answer, the results of its tool calls).

Every turn has a fingerprint: a content hash of what it says in neutral form (text,
tool calls with their ids and arguments, results), so the same turn has the same
fingerprint whichever way the client serialised it (cache markers, citations, block
ids and signed reasoning do not count). An answer the gateway recorded from the
provider gets the fingerprint the client's copy of it will have on the next request.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from contextwright.canonical import content_hash
from contextwright.events.catalog import AssistantMessage
from contextwright.items.region_a import ToolSpec
from contextwright.providers.responses import parse_response

WireName = Literal["anthropic", "openai_responses", "openai_chat"]
Provider = Literal["anthropic", "openai"]

PROVIDER_OF: dict[WireName, Provider] = {"anthropic": "anthropic", "openai_responses": "openai", "openai_chat": "openai"}


@dataclass(frozen=True, kw_only=True, slots=True)
class Result:
    """The output of one tool call, as the client sent it back."""

    call_id: str
    output: str
    is_error: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class Turn:
    """One step of a conversation, as the log records it."""

    kind: Literal["user", "assistant", "results"]
    text: str = ""
    author: Literal["user", "operator"] = "user"
    message: AssistantMessage | None = None
    results: tuple[Result, ...] = ()
    unsent: tuple[str, ...] = ()
    """Kinds of the client's content the log keeps only a placeholder for or nothing of (an image, a document,
    a server or hosted tool's call, a Responses compaction item): the engine's request could not show them to
    the model."""

    @property
    def fingerprint(self) -> str:
        """A content hash of what the turn says, the same for any serialisation of it."""
        if self.kind == "assistant":
            assert self.message is not None
            # A call's namespace and the text's phase count where they are set (a turn without them hashes as it always did).
            calls = [[c.id, c.name, c.arguments, *([c.namespace] if c.namespace else [])] for c in self.message.tool_calls]
            said: dict[str, Any] = {"kind": "assistant", "text": self.message.text, "calls": calls}
            if self.message.phase:
                said["phase"] = self.message.phase
            return content_hash(said)
        if self.kind == "results":
            return content_hash({"kind": "results", "results": [[r.call_id, r.output, r.is_error] for r in self.results]})
        return content_hash({"kind": "user", "author": self.author, "text": self.text})


@dataclass(frozen=True, kw_only=True, slots=True)
class Conversation:
    """A request body read as a conversation: the prefix the agent sent, the model, the turns."""

    wire: WireName
    model: str
    system: str
    tools: tuple[ToolSpec, ...]
    turns: tuple[Turn, ...]
    stream: bool = False
    hints: dict[str, str] = field(default_factory=dict)
    """What the body says about the session: ``metadata.user_id``, ``prompt_cache_key``, ``previous_response_id``,
    ``conversation`` (a conversation the provider stores)."""
    fingerprints: tuple[str, ...] = ()
    """The turns' fingerprints, in order (worked out from the turns when not given)."""

    def __post_init__(self) -> None:
        if len(self.fingerprints) != len(self.turns):
            object.__setattr__(self, "fingerprints", tuple(turn.fingerprint for turn in self.turns))

    @property
    def provider(self) -> Provider:
        """Whose API the wire belongs to."""
        return PROVIDER_OF[self.wire]

    @property
    def unsent(self) -> tuple[str, ...]:
        """Kinds of content in the conversation the engine's request would show only as placeholders or not at all, sorted."""
        return tuple(sorted({kind for turn in self.turns for kind in turn.unsent}))

    @property
    def first_user_text(self) -> str:
        """The text of the first user turn ('' when there is none)."""
        return next((t.text for t in self.turns if t.kind == "user" and t.author == "user"), "")


class NotAConversation(ValueError):
    """The body is not a request this wire's parser can read as a conversation (it is forwarded all the same)."""


def parse_request(wire: WireName, body: Any) -> Conversation:
    """The conversation of a request body on ``wire``; :class:`NotAConversation` when it holds none."""
    if not isinstance(body, Mapping):
        raise NotAConversation(f"the body is {type(body).__name__}, not a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise NotAConversation("the body names no model")
    try:
        if wire == "anthropic":
            return _anthropic(body, model)
        if wire == "openai_responses":
            return _responses(body, model)
        return _chat(body, model)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise NotAConversation(f"unreadable {wire} body: {type(exc).__name__}: {exc}") from exc


def answer_turn(answer: Mapping[str, Any]) -> Turn:
    """The assistant turn of a provider's answer (a whole message, completion or response)."""
    message, _ = parse_response(answer)
    return Turn(kind="assistant", message=message)


# -- Anthropic Messages -----------------------------------------------------------------


class _Read:
    """A message list already read: the messages, and the turns and fingerprints each one gave."""

    __slots__ = ("fingerprints", "messages", "turns")

    def __init__(self, messages: list[Any], turns: list[tuple[Turn, ...]], fingerprints: list[tuple[str, ...]]) -> None:
        self.messages = messages
        self.turns = turns
        self.fingerprints = fingerprints


class ReadMemo:
    """The message lists read last (a few conversations' worth), so the next request of one reads only its new tail.

    A client re-sends its whole history on every request; an Anthropic message reads to the
    same turns wherever it stands, so the messages equal to those read last time (compared
    as values, in order from the first) are not read again, nor their turns hashed again.
    Lists are found by their first message; the memo keeps :data:`MEMO_LISTS` of them."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._lists: OrderedDict[str, _Read] = OrderedDict()
        self._lock = threading.Lock()

    def read(self, messages: list[Any]) -> tuple[tuple[Turn, ...], tuple[str, ...]]:
        """The turns of ``messages`` and their fingerprints."""
        if not messages:
            return (), ()
        slot = json.dumps(messages[0], sort_keys=True, default=str)
        with self._lock:
            known = self._lists.get(slot)
        same = 0
        if known is not None:
            limit = min(len(known.messages), len(messages))
            while same < limit and known.messages[same] == messages[same]:
                same += 1
        turns = known.turns[:same] if known is not None else []
        fingerprints = known.fingerprints[:same] if known is not None else []
        for message in messages[same:]:
            read = tuple(_anthropic_turns(message))
            turns.append(read)
            fingerprints.append(tuple(turn.fingerprint for turn in read))
        with self._lock:
            self._lists[slot] = _Read(messages, turns, fingerprints)
            self._lists.move_to_end(slot)
            while len(self._lists) > self._size:
                self._lists.popitem(last=False)
        return tuple(t for read in turns for t in read), tuple(f for read in fingerprints for f in read)


MEMO_LISTS = 32
"""Message lists :data:`MEMO` keeps (each holds its request's parsed messages until pushed out)."""
MEMO = ReadMemo(MEMO_LISTS)


def _anthropic(body: Mapping[str, Any], model: str) -> Conversation:
    hints = {}
    metadata = body.get("metadata")
    if isinstance(metadata, Mapping) and isinstance(metadata.get("user_id"), str):
        hints["user_id"] = metadata["user_id"]
    turns, fingerprints = MEMO.read(_list(body.get("messages")))
    tools = tuple(
        _tool(t.get("name"), t.get("description"), t.get("input_schema"), kind=t.get("type"), native=_native("anthropic", t))
        for t in _list(body.get("tools"))
    )
    return Conversation(
        wire="anthropic",
        model=model,
        system=_system_text(body.get("system")),
        tools=tuple(t for t in tools if t is not None),
        turns=turns,
        stream=bool(body.get("stream")),
        hints=hints,
        fingerprints=fingerprints,
    )


_ANSWER_BLOCKS = frozenset({"text", "tool_use", "thinking", "redacted_thinking"})
"""The blocks of a Claude answer the log keeps."""


def _anthropic_turns(message: Mapping[str, Any]) -> list[Turn]:
    """The turns one Anthropic message gives: an answer; or tool results, then text (in that order)."""
    role = message.get("role")
    blocks = _blocks(message.get("content"))
    if role == "assistant":
        content = [b for b in blocks if isinstance(b, Mapping)]
        turn = answer_turn({"type": "message", "role": "assistant", "content": content})
        # A server tool's call and result (a web search and the pages it read) have no place in the log.
        dropped = tuple(str(b.get("type")) for b in content if b.get("type") not in _ANSWER_BLOCKS)
        return [replace(turn, unsent=dropped) if dropped else turn]
    turns: list[Turn] = []
    results, texts = [], []
    unsent: list[str] = []
    for block in blocks:
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "tool_result":
            results.append(
                Result(
                    call_id=str(block["tool_use_id"]),
                    output=_result_text(block.get("content"), unsent),
                    is_error=bool(block.get("is_error")),
                )
            )
        elif kind == "text":
            texts.append(str(block.get("text", "")))
        elif kind is not None:
            texts.append(_placeholder(block, unsent))
    if results:
        turns.append(Turn(kind="results", results=tuple(results), unsent=tuple(unsent)))
        unsent = []
    text = "\n\n".join(t for t in texts if t.strip())
    if text:
        # Claude Code sends its environment notes as a "system" message among the others.
        turns.append(Turn(kind="user", text=text, author="user" if role == "user" else "operator", unsent=tuple(unsent)))
    return turns


def _system_text(system: Any) -> str:
    if isinstance(system, str):
        return system
    return "\n\n".join(str(b.get("text", "")) for b in _list(system) if b.get("type", "text") == "text")


def _result_text(content: Any, unsent: list[str]) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    parts = []
    for block in _list(content):
        parts.append(str(block.get("text", "")) if block.get("type") == "text" else _placeholder(block, unsent))
    return "\n".join(parts)


def _placeholder(block: Mapping[str, Any], unsent: list[str]) -> str:
    """A short stand-in for a block the log keeps no text for (an image, a document, a block type added later);
    its kind is noted in ``unsent``."""
    unsent.append(str(block.get("type")))
    size = len(json.dumps(block, ensure_ascii=False, default=str))
    return f"[{block.get('type')} block, {size:,} bytes]"


# -- OpenAI Responses -------------------------------------------------------------------

_ANSWER_ITEMS = frozenset({"function_call", "custom_tool_call", "reasoning"})
_OUTPUT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output"})
# Any other input item is one the log cannot carry: a hosted tool's call (web_search_call,
# file_search_call, image_generation_call, code_interpreter_call, mcp_call, computer_call,
# local_shell_call, ...) or its output, a compaction item (its encrypted_content stands for the
# whole earlier history), an item_reference to an item the provider stored, and any kind added later.


def _responses(body: Mapping[str, Any], model: str) -> Conversation:
    hints = {k: body[k] for k in ("prompt_cache_key", "previous_response_id") if isinstance(body.get(k), str) and body[k]}
    stored = body.get("conversation")  # a Conversations API id, or an object holding it
    stored = stored.get("id") if isinstance(stored, Mapping) else stored
    if isinstance(stored, str) and stored:
        hints["conversation"] = stored
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    turns: list[Turn] = []
    answer: list[dict[str, Any]] = []
    results: list[Result] = []
    unsent: list[str] = []
    dropped: list[str] = []  # kinds of the items the log cannot carry, noted on the next turn made (else the last)

    def add(turn: Turn) -> None:
        if dropped:
            turn = replace(turn, unsent=(*turn.unsent, *dropped))
            dropped.clear()
        turns.append(turn)

    def flush() -> None:
        if answer:
            turn = answer_turn({"object": "response", "output": list(answer)})
            add(replace(turn, unsent=("phase",)) if _mixed_phases(answer) else turn)
            answer.clear()
        if results:
            add(Turn(kind="results", results=tuple(results), unsent=tuple(unsent)))
            results.clear()
            unsent.clear()

    for item in _list(items):
        kind = _item_kind(item)
        role = item.get("role")
        if kind == "message" and role == "assistant":
            if results:
                flush()
            said = {"type": "message", "role": "assistant", "content": _output_parts(item.get("content"), dropped)}
            answer.append({**said, "phase": item["phase"]} if item.get("phase") is not None else said)
        elif kind in _ANSWER_ITEMS:
            if results:
                flush()
            dropped.extend(_call_context(item))
            answer.append(_as_function_call(item))
        elif kind in _OUTPUT_ITEMS:
            if answer:
                flush()
            results.append(Result(call_id=str(item["call_id"]), output=_content_text(item.get("output"), unsent)))
        elif kind == "message":
            flush()
            author: Literal["user", "operator"] = "user" if role == "user" else "operator"
            shown: list[str] = []
            text = _content_text(item.get("content"), shown)
            if text.strip():
                add(Turn(kind="user", text=text, author=author, unsent=tuple(shown)))
        else:
            # The engine's request would go without it: noted, the client's request goes instead.
            dropped.append(kind)
    flush()
    if dropped and turns:
        turns[-1] = replace(turns[-1], unsent=(*turns[-1].unsent, *dropped))
    tools = tuple(
        _tool(t.get("name"), t.get("description"), t.get("parameters"), kind=t.get("type"), native=_native("openai_responses", t))
        for t in _list(body.get("tools"))
    )
    instructions = body.get("instructions")
    return Conversation(
        wire="openai_responses",
        model=model,
        system=instructions if isinstance(instructions, str) else "",
        tools=tuple(t for t in tools if t is not None),
        turns=tuple(turns),
        stream=bool(body.get("stream")),
        hints=hints,
    )


def _as_function_call(item: Mapping[str, Any]) -> dict[str, Any]:
    """A custom tool call (free-form input) read as a function call whose arguments hold that input."""
    if item.get("type") != "custom_tool_call":
        return dict(item)
    call = {
        "type": "function_call",
        "call_id": item["call_id"],
        "name": item["name"],
        "arguments": json.dumps({"input": item.get("input", "")}),
    }
    return {**call, "namespace": item["namespace"]} if item.get("namespace") is not None else call


def _mixed_phases(output: Sequence[Mapping[str, Any]]) -> bool:
    """True when an answer's messages with text are labelled with different phases (or some with none): the log
    keeps the answer's text as one, with one phase."""
    phases = {
        item.get("phase")
        for item in output
        if _item_kind(item) == "message" and any(p.get("text") for p in _list(item.get("content")))
    }
    return len(phases) > 1


def answer_unsent(answer: Mapping[str, Any]) -> tuple[str, ...]:
    """Kinds of what a Responses answer holds that the log keeps nothing of (a hosted tool's call, a refusal), sorted;
    () for an answer of another wire."""
    output = answer.get("output")
    if answer.get("object") != "response" or not isinstance(output, list):
        return ()
    kinds: list[str] = ["phase"] if _mixed_phases(_list(output)) else []
    for item in _list(output):
        kind = _item_kind(item)
        if kind == "message":
            _output_parts(item.get("content"), kinds)
        elif kind not in _ANSWER_ITEMS:
            kinds.append(kind)
        else:
            kinds.extend(_call_context(item))
    return tuple(sorted(set(kinds)))


def _call_context(item: Mapping[str, Any]) -> list[str]:
    """What a tool call item says of how it runs that the log keeps nothing of: a caller other than the model
    itself (a program item's call), an asynchronous run. The names are noted as unsent kinds."""
    caller = item.get("caller")
    noted = ["caller"] if isinstance(caller, Mapping) and caller.get("type", "direct") != "direct" else []
    return noted + (["async"] if item.get("async") else [])


def response_output_for_turn(output: Sequence[Any]) -> list[dict[str, Any]]:
    """A Responses answer's output items, with custom tool calls read as function calls."""
    return [_as_function_call(item) for item in output if isinstance(item, Mapping)]


def _item_kind(item: Mapping[str, Any]) -> str:
    """An input item's type: a message when it has a role and no type, an item reference when it has neither."""
    kind = item.get("type")
    if kind is None:
        return "message" if "role" in item else "item_reference"
    return str(kind)


def _output_parts(content: Any, unsent: list[str]) -> list[dict[str, Any]]:
    """An assistant message's text parts, as a recorded answer keeps them; the kinds of the others (a refusal) noted in
    ``unsent``, so the turn's fingerprint is the recorded answer's."""
    if not isinstance(content, list):
        return [{"type": "output_text", "text": _content_text(content, unsent)}]
    parts = _list(content)
    unsent.extend(str(p.get("type")) for p in parts if p.get("type") not in ("output_text", "text"))
    return [{"type": "output_text", "text": str(p.get("text", ""))} for p in parts if p.get("type") in ("output_text", "text")]


def _content_text(content: Any, unsent: list[str]) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in _list(content):
        kind = part.get("type")
        if kind in ("input_text", "output_text", "text"):
            parts.append(str(part.get("text", "")))
        elif kind == "refusal":
            parts.append(str(part.get("refusal", "")))
        else:
            parts.append(_placeholder(part, unsent))
    return "\n".join(p for p in parts if p)


# -- OpenAI Chat Completions ------------------------------------------------------------


def _chat(body: Mapping[str, Any], model: str) -> Conversation:
    system: list[str] = []
    turns: list[Turn] = []
    results: list[Result] = []
    unsent: list[str] = []
    leading = True
    for message in _list(body.get("messages")):
        role = message.get("role")
        if role != "tool" and results:
            turns.append(Turn(kind="results", results=tuple(results), unsent=tuple(unsent)))
            results, unsent = [], []
        if leading and role in ("system", "developer"):
            system.append(_content_text(message.get("content"), []))
            continue
        leading = False
        if role == "assistant":
            lost: list[str] = []
            turn = answer_turn({"choices": [{"message": _chat_answer(message, lost), "finish_reason": None}]})
            turns.append(replace(turn, unsent=tuple(lost)) if lost else turn)
        elif role == "tool":
            results.append(Result(call_id=str(message["tool_call_id"]), output=_content_text(message.get("content"), unsent)))
        else:
            shown = ["function"] if role == "function" else []  # a legacy function's result: the log has no call it answers
            text = _content_text(message.get("content"), shown)
            if text.strip():
                turns.append(Turn(kind="user", text=text, author="user" if role == "user" else "operator", unsent=tuple(shown)))
            elif shown and turns:
                turns[-1] = replace(turns[-1], unsent=(*turns[-1].unsent, *shown))
    if results:
        turns.append(Turn(kind="results", results=tuple(results), unsent=tuple(unsent)))
    tools = []
    for entry in _list(body.get("tools")):
        # A function's settings sit under "function", a custom tool's under "custom": under its type either way.
        kind = entry.get("type")
        settings = entry.get(kind) if isinstance(kind, str) and isinstance(entry.get(kind), Mapping) else {}
        function = settings if kind == "function" else {}
        tools.append(
            _tool(
                settings.get("name"),
                settings.get("description"),
                function.get("parameters"),
                kind=entry.get("type"),
                native=_native("openai_chat", entry),
            )
        )
    return Conversation(
        wire="openai_chat",
        model=model,
        system="\n\n".join(system),
        tools=tuple(t for t in tools if t is not None),
        turns=tuple(turns),
        stream=bool(body.get("stream")),
    )


_CHAT_ANSWER_EXTRAS = ("function_call", "audio", "refusal")
"""Keys of a Chat Completions assistant message the log keeps nothing of: a legacy function call (it has no id),
a reference to an earlier spoken answer, a refusal."""


def _chat_answer(message: Mapping[str, Any], unsent: list[str]) -> dict[str, Any]:
    """A Chat Completions assistant message as the log reads it: its content as text, its custom tool calls as
    function calls; the kinds of what it cannot carry noted in ``unsent``."""
    unsent.extend(key for key in _CHAT_ANSWER_EXTRAS if message.get(key))
    message = chat_message_for_turn(message)
    content = message.get("content")
    if not isinstance(content, list):
        return dict(message)
    texts = []
    for part in _list(content):
        if part.get("type") == "text":
            texts.append(str(part.get("text", "")))
        else:
            unsent.append(str(part.get("type")))  # a refusal part
    return {**message, "content": "\n".join(t for t in texts if t)}


def chat_message_for_turn(message: Mapping[str, Any]) -> Mapping[str, Any]:
    """A Chat Completions assistant message with its custom tool calls (free-form input) read as function calls
    whose arguments hold that input, as a Responses custom tool call is read (:func:`_as_function_call`)."""
    calls = message.get("tool_calls")
    if not isinstance(calls, list) or not any(isinstance(c, Mapping) and c.get("type") == "custom" for c in calls):
        return message
    return {**message, "tool_calls": [_chat_custom_as_function(c) if isinstance(c, Mapping) else c for c in calls]}


def _chat_custom_as_function(call: Mapping[str, Any]) -> Mapping[str, Any]:
    if call.get("type") != "custom":
        return call
    custom = call["custom"]
    arguments = json.dumps({"input": custom.get("input", "")})
    return {"id": call["id"], "type": "function", "function": {"name": custom["name"], "arguments": arguments}}


# -- shared -----------------------------------------------------------------------------


def _tool(name: Any, description: Any, schema: Any, *, kind: Any, native: dict[str, Any] | None) -> ToolSpec | None:
    """A tool the client advertises; a hosted tool (web search and the like) goes by its type.

    One the engine's function form would not send as the client did (``native``) is pinned with
    the client's declaration, which its wire sends unchanged."""
    name = name if isinstance(name, str) and name else kind if isinstance(kind, str) else None
    if not name:
        return None
    function_form = native is None and isinstance(schema, Mapping)
    return ToolSpec(
        name=name,
        description=description if isinstance(description, str) else "",
        input_schema=dict(schema) if function_form else {"type": "object", "properties": {}},
        native=native,
    )


_FUNCTION_KEYS: dict[str, frozenset[str]] = {
    # What each wire's function form writes again from name, description and schema alone
    # (a cache mark is the engine's to place, and a function is sent as not strict).
    "anthropic": frozenset({"name", "description", "input_schema", "cache_control", "type"}),
    "openai_responses": frozenset({"type", "name", "description", "parameters", "strict"}),
    "openai_chat": frozenset({"type", "function"}),
}
_FUNCTION_TYPES: dict[str, frozenset[Any]] = {
    "anthropic": frozenset({None, "custom"}),
    "openai_responses": frozenset({"function"}),
    "openai_chat": frozenset({"function"}),
}


def _native(wire: WireName, declared: Mapping[str, Any]) -> dict[str, Any] | None:
    """``{"wire": wire, "tool": declared}`` for a tool the function form would change, else None.

    That is a hosted or server tool, a namespace of tools, a free-form (grammar) tool, a strict
    function, or one with settings of its own; its cache mark is left out (the engine places them)."""
    kind = declared.get("type")
    function = declared.get("function") if wire == "openai_chat" else None
    plain = (
        kind in _FUNCTION_TYPES[wire]
        and set(declared) <= _FUNCTION_KEYS[wire]
        and not declared.get("strict")
        and (function is None or (isinstance(function, Mapping) and set(function) <= {"name", "description", "parameters"}))
    )
    if plain:
        return None
    return {"wire": wire, "tool": {k: v for k, v in declared.items() if k != "cache_control"}}


def _list(value: Any) -> list[Any]:
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return _list(content)
