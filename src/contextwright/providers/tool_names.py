"""Tool names as the wire accepts them: recorded names that a provider rejects are mapped, reversibly.

Both APIs accept only ``^[a-zA-Z0-9_-]{1,64}$`` as a tool name
(https://platform.claude.com/docs/en/agents-and-tools/tool-use/define-tools and the
``name`` field of ``openai.types.shared_params.FunctionDefinition``), yet the log may
hold others: OpenAI models emit ``multi_tool_use.parallel`` unasked, and transcripts
of other agents name tools ``mcp.server/tool``. The log keeps the recorded name; the
renderers send :func:`wire_tool_name` of it, and an answer that uses a mapped name is
recorded under the original again (:func:`recorded_names`).

The mapping depends on the name alone, so a request renders to the same bytes
whatever else the history holds: a valid name is sent as it is; any other is made
safe by :func:`safe_tool_name` and given a hash of the original, so two names that
clean to the same text stay apart.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""The tool-name pattern both providers accept."""
MAX_TOOL_NAME = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_DIGEST_CHARS = 8


def safe_tool_name(name: str) -> str:
    """A provider-valid tool name (letters, digits, '_' and '-', at most 64); several names may share one."""
    return (_UNSAFE.sub("_", name) or "tool")[:MAX_TOOL_NAME]


def wire_tool_name(name: str) -> str:
    """The name sent for recorded tool name ``name``: itself when valid, else a safe name with a hash of it."""
    if TOOL_NAME.match(name):
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST_CHARS]
    return f"{safe_tool_name(name)[: MAX_TOOL_NAME - _DIGEST_CHARS - 1]}_{digest}"


def recorded_names(recorded: Iterable[str]) -> dict[str, str]:
    """Wire name → recorded name, for the recorded names that are sent under another name."""
    return {wire: name for name in recorded if (wire := wire_tool_name(name)) != name}
