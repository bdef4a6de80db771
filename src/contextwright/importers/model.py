"""The neutral transcript: what every importer produces, whatever the source format.

Guarantees every importer gives (checked on the whole shared corpus by the tests):

* messages are in chronological order (file order for formats without timestamps);
* every :class:`ToolResult` answers a :class:`ToolCall` of an earlier assistant message,
  and every tool call has exactly one result. A call that never got a result (the run
  ended, or the recording stopped, right after it) is removed from its message and
  counted in :attr:`Transcript.dropped_tool_calls`; nothing is invented for it;
* tool call ids are unique within a transcript: an id the source reuses after its
  first call was answered gets a ``#<n>`` suffix (on the call and its result);
* tool results travel only on ``role="tool"`` messages; text a source record carried
  next to its results becomes a separate ``user`` message right after;
* images and other binary blocks are replaced by a short placeholder that names the
  media type and size, never by base64 text;
* the leading system prompt, when the format records one, is in :attr:`Transcript.system`
  and not repeated as a message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCall:
    """One tool invocation requested by the model."""

    id: str
    """The call id, as recorded, or a deterministic one derived from the record."""
    name: str
    """The tool name."""
    arguments: dict[str, Any]
    """Decoded arguments; arguments that were not a JSON object are kept as ``{"_raw": text}``."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolResult:
    """The output of one tool call, as the model saw it."""

    call_id: str
    """The :attr:`ToolCall.id` this result answers."""
    output: str
    """The output text (binary parts replaced by placeholders)."""
    is_error: bool = False
    """True when the format marks the result as a failure of the tool itself."""
    exit_code: int | None = None
    """The process exit code, when the format records one."""


@dataclass(frozen=True, kw_only=True, slots=True)
class TranscriptMessage:
    """One message of the conversation, in provider-independent form."""

    role: Role
    """Who speaks: ``system``, ``user``, ``assistant`` or ``tool`` (tool results)."""
    text: str
    """The message text; empty when the message only carries tool calls or results."""
    tool_calls: tuple[ToolCall, ...] = ()
    """Tool calls requested by an assistant message."""
    tool_results: tuple[ToolResult, ...] = ()
    """Tool results, on ``tool`` messages only."""
    at: str | None = None
    """When it was recorded (ISO-8601 UTC), if the format has timestamps."""
    usage: dict[str, Any] | None = None
    """Provider usage as recorded for the model call that produced this message."""
    model: str | None = None
    """The model that produced this message, when recorded."""
    source_line: int | None = None
    """1-based line (or record index, for JSON documents) in the source file."""
    meta: bool = False
    """True for injected user messages (reminders, command echoes, framework notices)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Transcript:
    """One recorded session, in neutral form."""

    session_id: str
    """The session id the format records, else one derived from the file name."""
    format: str
    """The source format name (see :data:`contextwright.importers.FORMATS`)."""
    source: str
    """The path the transcript was read from."""
    messages: tuple[TranscriptMessage, ...]
    """The conversation, in chronological order."""
    tools: tuple[dict[str, Any], ...] = ()
    """Tool JSON schemas, when the format records the ones sent to the model."""
    system: str | None = None
    """The system prompt, when the format records it."""
    skipped: int = 0
    """Records skipped as malformed or unknown (lenient mode only; always 0 in strict mode)."""
    unsupported_blocks: dict[str, int] = field(default_factory=dict)
    """Content blocks of types the importer does not know, carried as opaque text parts, by type."""
    task: str | None = None
    """The original task statement: the text of the first non-meta user message."""
    dropped_tool_calls: int = 0
    """Tool calls removed because no result was ever recorded for them."""
