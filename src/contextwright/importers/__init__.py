"""Importers: real agent transcripts in, one neutral :class:`Transcript` shape out.

One module per source format; :func:`load_transcript` picks the right one::

    from contextwright.importers import load_transcript

    transcript = load_transcript("session.jsonl")       # format detected
    for message in transcript.messages:
        ...

The guarantees every importer gives are listed in :mod:`contextwright.importers.model`;
each format module documents its own mapping rules.
"""

from __future__ import annotations

from contextwright.importers.detect import FORMATS, detect_format, load_transcript, load_transcripts
from contextwright.importers.errors import TranscriptError
from contextwright.importers.model import ToolCall, ToolResult, Transcript, TranscriptMessage

__all__ = [
    "FORMATS",
    "ToolCall",
    "ToolResult",
    "Transcript",
    "TranscriptError",
    "TranscriptMessage",
    "detect_format",
    "load_transcript",
    "load_transcripts",
]
