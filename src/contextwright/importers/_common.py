"""Helpers every format module shares: reading, error reporting, pairing, placeholders."""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from contextwright.clock import format_instant
from contextwright.importers.errors import TranscriptError
from contextwright.importers.model import Transcript, TranscriptMessage

PathLike = str | Path
TOO_DEEP = "JSON nested too deeply to read"
LONE_SURROGATE = "text holds a lone UTF-16 surrogate escape (such as \\ud800), which is not valid Unicode"


class RecordProblem(Exception):
    """Raised by ``_map_*`` helpers; the caller turns it into a rejection with a line."""


@dataclass(kw_only=True, slots=True)
class Reader:
    """Per-file state: where we read, whether to skip bad records, how many we skipped."""

    path: str
    lenient: bool
    strict: bool = False
    """Fail on content blocks of unknown types instead of carrying them as opaque parts."""
    skipped: int = 0
    unsupported: dict[str, int] = field(default_factory=dict)
    """Content blocks of unknown types carried as opaque parts, by type."""

    def reject(self, line: int | None, problem: str, *, column: int | None = None) -> None:
        """Raise for a bad record in strict mode; count it and carry on in lenient mode."""
        if not self.lenient:
            raise TranscriptError(self.path, problem, line=line, column=column)
        self.skipped += 1

    def opaque(self, block: object, *, where: str, line: int | None) -> str:
        """The stand-in text for a content block of an unknown type (or an error with ``strict``).

        New block types appear in real transcripts before importers know them; the rest
        of the record is still good, so the block is kept as a counted, visible part.
        """
        kind = str(block.get("type")) if isinstance(block, dict) else type(block).__name__
        if self.strict:
            raise TranscriptError(self.path, f"unknown {where} block type {kind!r} (strict mode)", line=line)
        self.unsupported[kind] = self.unsupported.get(kind, 0) + 1
        size = len(json.dumps(block, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass"))
        return f"[unsupported block: {kind}, {size:,} bytes]"

    def fail(self, problem: str, *, line: int | None = None) -> TranscriptError:
        """An error for problems no lenient mode can skip (the file as a whole is bad)."""
        return TranscriptError(self.path, problem, line=line)


def read_text(path: PathLike) -> str:
    """Read a file as UTF-8, turning every OS or decoding failure into a TranscriptError."""
    name = str(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise TranscriptError(name, "no such file") from None
    except IsADirectoryError:
        raise TranscriptError(name, "is a directory, not a transcript file") from None
    except OSError as exc:
        raise TranscriptError(name, f"cannot read: {exc.strerror or exc}") from exc
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TranscriptError(name, "not valid UTF-8 text", line=line) from exc


def parse_json_document(reader: Reader, text: str) -> Any:
    """Parse a whole-file JSON document; a syntax error names its line."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TranscriptError(reader.path, f"invalid JSON: {exc.msg}", line=exc.lineno, column=exc.colno) from None
    except RecursionError:
        raise reader.fail(TOO_DEEP) from None
    if _has_lone_surrogate(text, value):
        raise reader.fail(LONE_SURROGATE)
    return value


def iter_jsonl(reader: Reader, text: str) -> Iterator[tuple[int, Any]]:
    """Yield ``(line number, value)`` for each non-blank JSONL line; bad lines are rejected."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            reader.reject(number, f"invalid JSON: {exc.msg}", column=exc.colno)
            continue
        except RecursionError:
            reader.reject(number, TOO_DEEP)
            continue
        if _has_lone_surrogate(line, value):
            reader.reject(number, LONE_SURROGATE)
            continue
        yield number, value


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _has_lone_surrogate(raw: str, value: Any) -> bool:
    """True when a \\u escape in ``raw`` decoded to half a surrogate pair (text no store can hold)."""
    if _SURROGATE_ESCAPE.search(raw) is None:
        return False  # the text itself is decoded UTF-8; only escapes can make a lone surrogate
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def to_utc(value: object) -> str:
    """Normalise an ISO-8601 instant or Unix seconds to canonical UTC text.

    Naive ISO times are taken as UTC: the formats that write them (OpenHands) do not
    record a zone, and guessing the machine's local zone would make imports depend on
    where they run.
    """
    if isinstance(value, bool):
        raise RecordProblem(f"timestamp {value!r} is not a time")
    if isinstance(value, int | float):
        when = _dt.datetime.fromtimestamp(value, tz=_dt.UTC)
    elif isinstance(value, str):
        try:
            when = _dt.datetime.fromisoformat(value)
        except ValueError:
            raise RecordProblem(f"timestamp {value!r} is not ISO-8601") from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=_dt.UTC)
    else:
        raise RecordProblem(f"timestamp {value!r} is not a time")
    return format_instant(when)


def base64_size(data: str) -> int:
    """The decoded size of base64 text, computed without decoding it."""
    stripped = "".join(data.split())
    padding = len(stripped) - len(stripped.rstrip("="))
    return max(0, len(stripped) * 3 // 4 - padding)


def placeholder(kind: str, media_type: str | None, size: int | None) -> str:
    """The short text that stands in for a binary block (the bytes are never kept)."""
    details = [media_type or "unknown type"]
    if size is not None:
        details.append(f"{size:,} bytes")
    return f"[{kind} omitted: {', '.join(details)}]"


_DATA_URL = re.compile(r"^data:(?P<type>[^;,]*)(?:;[^,]*)?,(?P<data>.*)$", re.DOTALL)


def url_placeholder(kind: str, url: str) -> str:
    """A placeholder for a data: URL; ordinary URLs are short and kept as they are."""
    match = _DATA_URL.match(url)
    if match is None:
        return f"[{kind}: {url}]"
    return placeholder(kind, match["type"] or None, base64_size(match["data"]))


def json_arguments(raw: object) -> dict[str, Any]:
    """Decode tool-call arguments; anything that is not a JSON object is kept as ``_raw``."""
    if isinstance(raw, dict):
        return raw
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):
            return {"_raw": raw}
        if isinstance(value, dict):
            return value
    # Models do emit malformed arguments; the call still happened, so keep the text.
    return {"_raw": raw if isinstance(raw, str) else json.dumps(raw)}


def entries(value: object, *, where: str) -> Sequence[Any]:
    """A list field's entries; absent, null or empty is none, anything else but a list is a :class:`RecordProblem`."""
    if not value:
        return ()
    if not isinstance(value, list):
        raise RecordProblem(f"{where} is {type(value).__name__}, expected a list")
    return value


def text_of(value: object, *, where: str) -> str:
    """A field that must be text (None reads as empty)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise RecordProblem(f"{where} is {type(value).__name__}, expected text")
    return value


def pair_tool_results(reader: Reader, messages: Iterable[TranscriptMessage]) -> tuple[tuple[TranscriptMessage, ...], int]:
    """Enforce the pairing invariant; return the messages and the number of dropped calls.

    A result that answers no open call (unknown id, or answered already) is a malformed
    record, and so is a call reusing the id of a call still waiting for its result. An
    id reused *after* its call was answered is unambiguous (hand-written demos do it)
    and is made unique with a ``#<n>`` suffix, on the call and on its result. A call
    left without a result is removed from its message and counted.
    """
    uses: dict[str, int] = {}
    open_calls: dict[str, str] = {}  # recorded id -> id in the transcript
    kept: list[TranscriptMessage] = []
    for message in messages:
        if message.tool_calls:
            calls = []
            for call in message.tool_calls:
                if call.id in open_calls:
                    reader.reject(
                        message.source_line,
                        f"tool call id {call.id!r} is reused before its first call got a result",
                    )
                    continue
                uses[call.id] = uses.get(call.id, 0) + 1
                unique = call.id if uses[call.id] == 1 else f"{call.id}#{uses[call.id]}"
                open_calls[call.id] = unique
                calls.append(call if unique == call.id else replace(call, id=unique))
            if calls != list(message.tool_calls):
                message = replace(message, tool_calls=tuple(calls))
        if message.tool_results:
            results = []
            for result in message.tool_results:
                if result.call_id not in open_calls:
                    state = "was answered already" if result.call_id in uses else "was never made"
                    reader.reject(
                        message.source_line,
                        f"tool result for call {result.call_id!r}, which {state}",
                    )
                    continue
                unique = open_calls.pop(result.call_id)
                results.append(result if unique == result.call_id else replace(result, call_id=unique))
            if not results and not message.text:
                continue
            if results != list(message.tool_results):
                message = replace(message, tool_results=tuple(results))
        kept.append(message)
    dropped = set(open_calls.values())
    if dropped:
        kept = [_without_calls(message, dropped) for message in kept]
    return tuple(kept), len(dropped)


def _without_calls(message: TranscriptMessage, dropped: set[str]) -> TranscriptMessage:
    if not any(call.id in dropped for call in message.tool_calls):
        return message
    calls = tuple(call for call in message.tool_calls if call.id not in dropped)
    return replace(message, tool_calls=calls)


def first_task(messages: Iterable[TranscriptMessage]) -> str | None:
    """The first non-meta user text; failing that, the first injected text that is not a command echo.

    The fallback covers sessions opened by a command (a slash command whose echo and
    expanded prompt are both injected): the expanded prompt is what was asked, and the
    echo (``<command-name>/init</command-name>``, tags only) only names the command; it is
    the task when nothing follows it.
    """
    users = [m for m in messages if m.role == "user" and m.text.strip()]
    chosen = next((m for m in users if not m.meta), None)
    if chosen is None:
        chosen = next((m for m in users if not _COMMAND_ECHO.match(m.text)), users[0] if users else None)
    return chosen.text if chosen else None


_COMMAND_ECHO = re.compile(r"^\s*(?:<(?P<tag>[a-z][a-z0-9-]*)>.*?</(?P=tag)>\s*)+$", re.DOTALL)
"""A text made only of tagged parts: a harness's echo of a command, not a prompt."""


def build_transcript(
    reader: Reader,
    *,
    format: str,
    session_id: str,
    messages: Iterable[TranscriptMessage],
    system: str | None = None,
    tools: Iterable[dict[str, Any]] = (),
) -> Transcript:
    """Pair tool results, derive the task, and assemble the Transcript."""
    paired, dropped = pair_tool_results(reader, messages)
    return Transcript(
        session_id=session_id,
        format=format,
        source=reader.path,
        messages=paired,
        tools=tuple(tools),
        system=system,
        skipped=reader.skipped,
        unsupported_blocks=dict(sorted(reader.unsupported.items())),
        task=first_task(paired),
        dropped_tool_calls=dropped,
    )
