"""Claude Code session files (``~/.claude/projects/<project>/<session>.jsonl``).

The file is an append-only log of records, not a list of API messages. The rules:

* Only ``user`` and ``assistant`` records carry conversation; the other known record
  types (``system``, ``summary``, ``progress``, ...) are skipped, but their ``uuid`` and
  ``parentUuid`` still link the thread. An unknown ``type`` is a malformed record.
* Side chains (``isSidechain``: sub-agent work) are skipped.
* **Active thread.** Records form a tree through ``parentUuid`` (``logicalParentUuid``
  bridges a compaction boundary). After a rewind the file holds abandoned branches,
  so we keep the chain of ancestors of the *last* main-thread user/assistant record.
  One exception: Claude Code parents each result of a parallel tool call to the line
  holding that call, so only the last result lies on the chain; a ``user`` record
  made only of tool results answering calls on the chain is kept too. Files whose
  records carry no ``uuid`` are taken whole, in file order.
* One API response is split over several lines sharing ``message.id``; they are merged
  into one assistant message placed at the first line. ``usage`` repeats on every
  line, so it is taken once (from the last line), never summed.
* ``thinking`` blocks are dropped (they are not replayed). Image and document blocks
  become placeholders. Blocks of any other type (``tool_reference``, types added
  later) become an ``[unsupported block: <type>, <size> bytes]`` text part, counted in
  :attr:`Transcript.unsupported_blocks`; ``strict=True`` fails on them instead.
* In lenient mode a skipped line does not cut the thread: a record whose parent was
  on a skipped line is linked to the record just before that line.
* A user record's ``tool_result`` blocks become a ``tool`` message; any other blocks in
  the same record become a ``user`` message right after it.
* ``meta`` is set for ``isMeta`` and ``isCompactSummary`` records and for echoes of
  local commands (``<command-name>``, ``<bash-input>``, ...), which the user typed for
  the terminal, not as a prompt.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextwright.importers._common import (
    PathLike,
    Reader,
    RecordProblem,
    base64_size,
    build_transcript,
    iter_jsonl,
    placeholder,
    read_text,
    text_of,
    to_utc,
)
from contextwright.importers.model import ToolCall, ToolResult, Transcript, TranscriptMessage

FORMAT = "claude-code-jsonl"

_CONVERSATION = frozenset({"user", "assistant"})
# Record types that are part of the format but carry no conversation.
_NON_CONVERSATION = frozenset(
    {
        "system",
        "summary",
        "file-history-snapshot",
        "queue-operation",
        "attachment",
        "progress",
        "permission-mode",
        "last-prompt",
    }
)
_DROPPED_BLOCKS = frozenset({"thinking", "redacted_thinking"})
_LOCAL_COMMAND_TAGS = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
)


def parse(path: PathLike, *, lenient: bool = False, strict: bool = False) -> list[Transcript]:
    """Read one Claude Code session file; ``strict`` fails on content blocks of unknown types."""
    reader = Reader(path=str(path), lenient=lenient, strict=strict)
    text = read_text(path)
    mapped: list[_Mapped] = []
    parents: dict[str, str | None] = {}
    bridges: dict[str, str] = {}
    previous: str | None = None
    skipped_before = 0
    session_id: str | None = None
    for line, record in iter_jsonl(reader, text):
        if not isinstance(record, dict):
            reader.reject(line, f"record is {type(record).__name__}, expected an object")
            continue
        kind = record.get("type")
        if kind not in _CONVERSATION and kind not in _NON_CONVERSATION:
            reader.reject(line, f"unknown record type {kind!r}")
            continue
        uuid = record.get("uuid")
        if isinstance(uuid, str) and uuid not in parents:
            parents[uuid] = record.get("parentUuid") or record.get("logicalParentUuid")
            if reader.skipped > skipped_before and previous is not None:
                # A skipped line lies between this record and the previous one: if its parent
                # was the skipped record, the chain continues through the previous record.
                bridges[uuid] = previous
            previous, skipped_before = uuid, reader.skipped
        if kind not in _CONVERSATION or record.get("isSidechain"):
            continue
        if session_id is None and isinstance(record.get("sessionId"), str):
            session_id = record["sessionId"]
        # Map every record now, so problems surface in file order, off-thread ones too.
        try:
            mapped.append(_map_record(record, line, reader))
        except RecordProblem as problem:
            reader.reject(line, str(problem))

    messages = _assemble(_active_thread(mapped, parents, bridges))
    return [
        build_transcript(
            reader,
            format=FORMAT,
            session_id=session_id or Path(path).stem,
            messages=messages,
        )
    ]


@dataclass(kw_only=True, slots=True)
class _Mapped:
    """One main-thread record, already checked and mapped."""

    line: int
    uuid: str | None
    at: str | None
    msg_id: str | None = None
    texts: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    model: str | None = None
    user: list[TranscriptMessage] | None = None
    """Set for user records: the tool and/or user messages the record becomes."""


def _active_thread(mapped: list[_Mapped], parents: dict[str, str | None], bridges: dict[str, str]) -> list[_Mapped]:
    leaf = next((m.uuid for m in reversed(mapped) if m.uuid is not None), None)
    if leaf is None:
        return mapped
    chain: set[str] = set()
    node: str | None = leaf
    while node is not None and node not in chain:
        chain.add(node)
        parent = parents.get(node)
        if parent is not None and parent not in parents:
            parent = bridges.get(node)  # the parent's line was skipped (lenient mode)
        node = parent
    calls_on_chain = {call.id for m in mapped if m.uuid in chain for call in m.calls}
    return [m for m in mapped if m.uuid is None or m.uuid in chain or _answers_only(m, calls_on_chain)]


def _answers_only(mapped: _Mapped, calls: set[str]) -> bool:
    if not mapped.user:
        return False
    return all(message.role == "tool" and all(r.call_id in calls for r in message.tool_results) for message in mapped.user)


def _assemble(mapped: list[_Mapped]) -> list[TranscriptMessage]:
    """Merge the lines of each model call (shared ``message.id``) at its first line."""
    slots: list[TranscriptMessage | list[_Mapped]] = []
    groups: dict[str, list[_Mapped]] = {}
    for item in mapped:
        if item.user is not None:
            slots.extend(item.user)
        elif item.msg_id is not None and item.msg_id in groups:
            groups[item.msg_id].append(item)
        else:
            group = [item]
            if item.msg_id is not None:
                groups[item.msg_id] = group
            slots.append(group)
    return [slot if isinstance(slot, TranscriptMessage) else _merge(slot) for slot in slots]


def _merge(lines: list[_Mapped]) -> TranscriptMessage:
    first = lines[0]
    # Usage and model repeat on every line of a call; the last line has the final values.
    usage = next((m.usage for m in reversed(lines) if m.usage is not None), None)
    model = next((m.model for m in reversed(lines) if m.model is not None), None)
    return TranscriptMessage(
        role="assistant",
        text="\n\n".join(t for m in lines for t in m.texts),
        tool_calls=tuple(call for m in lines for call in m.calls),
        at=first.at,
        usage=usage,
        model=model,
        source_line=first.line,
    )


def _map_record(record: dict[str, Any], line: int, reader: Reader) -> _Mapped:
    message = record.get("message")
    if not isinstance(message, dict):
        raise RecordProblem(f"{record['type']} record has no message object")
    uuid = record.get("uuid") if isinstance(record.get("uuid"), str) else None
    at = to_utc(record["timestamp"]) if "timestamp" in record else None
    if record["type"] == "user":
        return _Mapped(line=line, uuid=uuid, at=at, user=_map_user(record, message, line=line, at=at, reader=reader))
    mapped = _Mapped(
        line=line,
        uuid=uuid,
        at=at,
        msg_id=message.get("id") if isinstance(message.get("id"), str) else None,
        usage=dict(message["usage"]) if isinstance(message.get("usage"), dict) else None,
        model=message.get("model") if isinstance(message.get("model"), str) else None,
    )
    content = message.get("content")
    blocks: object = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(blocks, list):
        raise RecordProblem("assistant message.content is neither text nor a list of blocks")
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            mapped.texts.append(text_of(block.get("text"), where="text block"))
        elif kind == "tool_use":
            call_id, name, arguments = block.get("id"), block.get("name"), block.get("input", {})
            if not isinstance(call_id, str) or not isinstance(name, str):
                raise RecordProblem("tool_use block without a string id and name")
            if not isinstance(arguments, dict):
                raise RecordProblem(f"tool_use {call_id!r} input is not an object")
            mapped.calls.append(ToolCall(id=call_id, name=name, arguments=arguments))
        elif kind in _DROPPED_BLOCKS:
            continue
        elif kind in ("image", "document"):
            mapped.texts.append(_binary(block))
        else:
            mapped.texts.append(reader.opaque(block, where="assistant content", line=line))
    return mapped


def _map_user(
    record: dict[str, Any], message: dict[str, Any], *, line: int, at: str | None, reader: Reader
) -> list[TranscriptMessage]:
    content = message.get("content")
    if isinstance(content, str):
        blocks: list[Any] = [{"type": "text", "text": content}]
    elif isinstance(content, list):
        blocks = content
    else:
        raise RecordProblem("user message.content is neither text nor a list of blocks")
    results: list[ToolResult] = []
    texts: list[str] = []
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "tool_result":
            call_id = block.get("tool_use_id")
            if not isinstance(call_id, str):
                raise RecordProblem("tool_result block without a tool_use_id")
            results.append(
                ToolResult(
                    call_id=call_id,
                    output=_result_text(block.get("content"), reader=reader, line=line),
                    is_error=bool(block.get("is_error")),
                )
            )
        elif kind == "text":
            texts.append(text_of(block.get("text"), where="text block"))
        elif kind in ("image", "document"):
            texts.append(_binary(block))
        else:
            texts.append(reader.opaque(block, where="user content", line=line))
    out: list[TranscriptMessage] = []
    if results:
        out.append(TranscriptMessage(role="tool", text="", tool_results=tuple(results), at=at, source_line=line))
    if texts:
        text = "\n\n".join(texts)
        meta = bool(record.get("isMeta") or record.get("isCompactSummary"))
        meta = meta or text.lstrip().startswith(_LOCAL_COMMAND_TAGS)
        out.append(TranscriptMessage(role="user", text=text, at=at, source_line=line, meta=meta))
    return out


def _result_text(content: object, *, reader: Reader, line: int) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise RecordProblem("tool_result content is neither text nor a list of blocks")
    parts: list[str] = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            parts.append(text_of(block.get("text"), where="tool_result text block"))
        elif kind in ("image", "document"):
            parts.append(_binary(block))
        else:
            parts.append(reader.opaque(block, where="tool_result content", line=line))
    return "\n".join(parts)


def _binary(block: dict[str, Any]) -> str:
    source = block.get("source")
    kind = str(block.get("type"))
    if not isinstance(source, dict):
        return placeholder(kind, None, None)
    if source.get("type") == "base64" and isinstance(source.get("data"), str):
        return placeholder(kind, source.get("media_type"), base64_size(source["data"]))
    if source.get("type") == "url" and isinstance(source.get("url"), str):
        return f"[{kind}: {source['url']}]"
    return placeholder(kind, source.get("media_type"), None)
