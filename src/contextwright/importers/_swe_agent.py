"""SWE-agent trajectory files (``*.traj``, one JSON object).

``history`` is the chat as sent to the model and is preferred; without it the last
step's ``messages`` (newer files) stand in, and failing both the ``trajectory`` steps
are used on their own. Rules:

* ``is_demo`` messages (in-context demonstrations) are skipped;
* function-calling histories keep their ``tool_calls`` and ``tool`` observations;
* in text-mode histories an assistant entry with an ``action`` becomes a ``thought``
  plus one ``bash`` tool call ``{"command": action}`` with id ``step-<n>`` (SWE-agent
  runs every command line in its shell), and the next ``user`` entry is its result;
* the final step's observation was never sent back to the model, so ``history`` ends
  with an unanswered action; it and any later steps are completed from ``trajectory``
  (step *n* is the *n*-th action) rather than dropped;
* the format has no timestamps, usage or per-message model; ``source_line`` is the
  1-based ``history`` index, or the step number for messages rebuilt from a step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contextwright.importers._common import (
    PathLike,
    Reader,
    RecordProblem,
    build_transcript,
    parse_json_document,
    read_text,
    text_of,
)
from contextwright.importers._openai import content_text, map_tool_call
from contextwright.importers.model import ToolCall, ToolResult, Transcript, TranscriptMessage

FORMAT = "swe-agent-traj"


def looks_like(document: object) -> bool:
    """True for an object with a ``trajectory`` list (``history`` alone is not enough)."""
    return isinstance(document, dict) and isinstance(document.get("trajectory"), list)


def parse(path: PathLike, *, lenient: bool = False) -> list[Transcript]:
    """Read one SWE-agent trajectory."""
    reader = Reader(path=str(path), lenient=lenient)
    document = parse_json_document(reader, read_text(path))
    if not isinstance(document, dict) or not (
        isinstance(document.get("trajectory"), list) or isinstance(document.get("history"), list)
    ):
        raise reader.fail("not a SWE-agent trajectory (needs 'trajectory' or 'history')")
    trajectory = document.get("trajectory")
    steps: list[Any] = trajectory if isinstance(trajectory, list) else []
    history = document.get("history")
    if not (isinstance(history, list) and history) and steps and isinstance(steps[-1], dict):
        history = steps[-1].get("messages")
    walk = _Walk(reader=reader, steps=steps)
    if isinstance(history, list) and history:
        walk.history(history)
    walk.complete_from_steps()
    return [
        build_transcript(
            reader,
            format=FORMAT,
            session_id=Path(path).stem,
            messages=walk.out,
            system="\n\n".join(walk.system) if walk.system else None,
        )
    ]


class _Walk:
    """Builds messages from ``history``, then from the steps it did not cover."""

    __slots__ = ("actions", "out", "pending", "reader", "steps", "system")

    def __init__(self, *, reader: Reader, steps: list[Any]) -> None:
        self.reader = reader
        self.steps = steps
        self.out: list[TranscriptMessage] = []
        self.system: list[str] = []
        self.actions = 0
        # The text-mode call still waiting for its observation, if any.
        self.pending: str | None = None

    def history(self, history: list[Any]) -> None:
        """Map the chat history (see the module rules)."""
        leading = True
        for index, item in enumerate(history):
            line = index + 1
            try:
                if not isinstance(item, dict):
                    raise RecordProblem(f"history[{index}] is {type(item).__name__}, expected an object")
                if item.get("is_demo"):
                    continue
                role = item.get("role")
                text = content_text(item.get("content"), where=f"history[{index}]")
                if role == "system" and leading:
                    self.system.append(text)
                    continue
                leading = False
                self._entry(item, role, text, line, where=f"history[{index}]")
            except RecordProblem as problem:
                self.reader.reject(line, str(problem))

    def _entry(self, item: dict[str, Any], role: object, text: str, line: int, *, where: str) -> None:
        if role == "assistant":
            thought = item.get("thought")
            said = thought if isinstance(thought, str) else text
            if item.get("tool_calls"):
                calls = tuple(map_tool_call(c, where=f"{where}.tool_calls") for c in item["tool_calls"])
                self._assistant(said, calls, line, text_mode=False)
            elif isinstance(item.get("action"), str) and item["action"].strip():
                self._assistant(said, (self._text_call(item["action"]),), line, text_mode=True)
            else:
                self.out.append(TranscriptMessage(role="assistant", text=text, source_line=line))
        elif role == "tool":
            ids = item.get("tool_call_ids") or [item.get("tool_call_id")]
            if not all(isinstance(i, str) for i in ids):
                raise RecordProblem(f"{where} is a tool message without tool_call_ids")
            results = tuple(ToolResult(call_id=i, output=text) for i in ids)
            self.out.append(TranscriptMessage(role="tool", text="", tool_results=results, source_line=line))
        elif role == "user" and self.pending is not None:
            self._result(self.pending, text, line)
        elif role == "user" or role == "system":
            self.out.append(TranscriptMessage(role="user" if role == "user" else "system", text=text, source_line=line))
        else:
            raise RecordProblem(f"{where} has unknown role {role!r}")

    def complete_from_steps(self) -> None:
        """Answer the last history action and add the steps history never showed."""
        for index in range(max(self.actions - 1, 0), len(self.steps)):
            step = self.steps[index]
            line = index + 1
            try:
                if not isinstance(step, dict):
                    raise RecordProblem(f"trajectory[{index}] is {type(step).__name__}, expected an object")
                observation = text_of(step.get("observation"), where=f"trajectory[{index}].observation")
                if index >= self.actions:
                    action = text_of(step.get("action"), where=f"trajectory[{index}].action")
                    thought = text_of(step.get("thought"), where=f"trajectory[{index}].thought")
                    if not action.strip():
                        self.out.append(TranscriptMessage(role="assistant", text=thought, source_line=line))
                        continue
                    self._assistant(thought, (self._text_call(action),), line, text_mode=True)
                unanswered = self._unanswered()
                if unanswered:
                    for call_id in unanswered:
                        self._result(call_id, observation, line)
            except RecordProblem as problem:
                self.reader.reject(line, f"trajectory step {index + 1}: {problem}")

    def _text_call(self, action: str) -> ToolCall:
        return ToolCall(id=f"step-{self.actions + 1}", name="bash", arguments={"command": action.rstrip("\n")})

    def _assistant(self, text: str, calls: tuple[ToolCall, ...], line: int, *, text_mode: bool) -> None:
        self.actions += 1
        self.out.append(TranscriptMessage(role="assistant", text=text, tool_calls=calls, source_line=line))
        # Only text-mode observations arrive as plain user entries.
        self.pending = calls[0].id if text_mode else None

    def _result(self, call_id: str, output: str, line: int) -> None:
        result = ToolResult(call_id=call_id, output=output)
        self.out.append(TranscriptMessage(role="tool", text="", tool_results=(result,), source_line=line))
        self.pending = None

    def _unanswered(self) -> list[str]:
        """Call ids of the latest assistant message that no later message answers."""
        for position in range(len(self.out) - 1, -1, -1):
            message = self.out[position]
            if message.role == "assistant" and message.tool_calls:
                answered = {r.call_id for later in self.out[position + 1 :] for r in later.tool_results}
                return [c.id for c in message.tool_calls if c.id not in answered]
        return []
