"""Which session a request belongs to, from what clients already send.

In order, the first that applies:

1. the ``x-contextwright-session`` header (any client, set by the user): the value as given;
2. Claude Code's session id, inside ``metadata.user_id`` (a JSON string with ``session_id``,
   or the older ``user_..._session_<uuid>`` form), else its ``x-claude-code-session-id``
   header: ``claude-code/<id>``;
3. OpenAI ``prompt_cache_key`` (Codex sets it to its conversation id): ``openai/<key>``;
4. OpenAI ``previous_response_id``: the session of the response it names, when this
   gateway recorded that response;
5. the fallback: ``anon/<hash>`` of the wire, the system text and the first user message.
   A conversation that only grows keeps its first message, so it stays one session;
   two conversations that open with the same words on the same agent share one, and
   the second one's different history starts a run of its own (see
   :mod:`contextwright.gateway.reconcile`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from contextwright.canonical import content_hash
from contextwright.gateway.wires import Conversation
from contextwright.log.base import MAX_SESSION_ID_LENGTH

SESSION_HEADER = "x-contextwright-session"
CLAUDE_CODE_HEADER = "x-claude-code-session-id"

_LEGACY_USER_ID = re.compile(r"_session_([0-9A-Za-z-]+)$")
# Room left in a session id for the run suffix (``~<n>``).
_KEY_CHARS = MAX_SESSION_ID_LENGTH - 12


def session_key(conversation: Conversation, headers: Mapping[str, str], *, responses: Mapping[str, str]) -> tuple[str, str]:
    """The session key of a request and how it was found (``header``, ``claude-code``, ``prompt_cache_key``, ...).

    ``responses`` maps response ids this gateway recorded to their session keys."""
    header = (headers.get(SESSION_HEADER) or "").strip()
    if header:
        return _bounded(header), "header"
    user_id = conversation.hints.get("user_id")
    found = claude_code_session(user_id) if user_id else None
    found = found or (headers.get(CLAUDE_CODE_HEADER) or "").strip()
    if found:
        return _bounded(f"claude-code/{found}"), "claude-code"
    key = conversation.hints.get("prompt_cache_key")
    if key:
        return _bounded(f"openai/{key}"), "prompt_cache_key"
    previous = conversation.hints.get("previous_response_id")
    if previous and previous in responses:
        return responses[previous], "previous_response_id"
    digest = content_hash({"wire": conversation.wire, "system": conversation.system, "first": conversation.first_user_text})
    return f"anon/{digest.split(':', 1)[1][:24]}", "fallback"


def claude_code_session(user_id: str) -> str | None:
    """The session id Claude Code puts in ``metadata.user_id``, or None."""
    try:
        value = json.loads(user_id)
    except ValueError:
        value = None
    if isinstance(value, Mapping):
        found = value.get("session_id")
        return found if isinstance(found, str) and found.strip() else None
    match = _LEGACY_USER_ID.search(user_id)
    return match.group(1) if match else None


def _bounded(key: str) -> str:
    """A key the log accepts as (the start of) a session id: printable, trimmed, not too long."""
    key = "".join(ch if ch.isprintable() else "?" for ch in key.strip())
    if len(key) <= _KEY_CHARS:
        return key
    return key[: _KEY_CHARS - 25] + "#" + content_hash(key).split(":", 1)[1][:24]
