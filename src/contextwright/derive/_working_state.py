"""Working state: the agent's structured notes, written only through a typed control tool.

The model updates it by calling ``context_update_working_state`` (schema in
:data:`UPDATE_TOOL_SCHEMA`); the runtime may update it too. It is never parsed
from the model's prose. Bounds: 20 constraints, 30 tasks, 40 facts, 20 open
questions and a token cap. At a bound the write fails visibly (the error is the
tool result the model sees) and nothing is evicted; constraints in particular
can only be removed by the runtime, never by the model.

Carry rule between runs (each new user message starts a run): completed tasks
are dropped and the next action is reset; everything else carries over.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from contextwright.errors import ContextwrightError
from contextwright.events.envelope import Event

TOOL_NAME = "context_update_working_state"

TaskStatus = Literal["todo", "doing", "done", "blocked"]
TASK_STATUSES: tuple[str, ...] = ("todo", "doing", "done", "blocked")


@dataclass(frozen=True, kw_only=True, slots=True)
class Limits:
    """Bounds of the working state."""

    constraints: int = 20
    tasks: int = 30
    facts: int = 40
    open_questions: int = 20
    tokens: int = 1_000
    item_chars: int = 500


class WorkingStateError(ContextwrightError):
    """A working-state write was refused; the message goes back to the model as the tool result."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Task:
    """One task and its status."""

    id: str
    title: str
    status: TaskStatus = "todo"


@dataclass(frozen=True, kw_only=True, slots=True)
class Fact:
    """An established fact; ``tainted`` when untrusted content was on the surface as it was written."""

    text: str
    tainted: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class WorkingState:
    """Constraints, tasks, facts, open questions and the next action."""

    constraints: tuple[str, ...] = ()
    tasks: tuple[Task, ...] = ()
    facts: tuple[Fact, ...] = ()
    open_questions: tuple[str, ...] = ()
    next_action: str | None = None

    def is_empty(self) -> bool:
        """True when there is nothing to show."""
        return not (self.constraints or self.tasks or self.facts or self.open_questions or self.next_action)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values (the payload of ``context.working_state.updated``)."""
        return {
            "constraints": list(self.constraints),
            "tasks": [{"id": t.id, "title": t.title, "status": t.status} for t in self.tasks],
            "facts": [{"text": f.text, "tainted": f.tainted} for f in self.facts],
            "open_questions": list(self.open_questions),
            "next_action": self.next_action,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WorkingState:
        """Inverse of :meth:`to_dict`."""
        return cls(
            constraints=tuple(data.get("constraints", ())),
            tasks=tuple(Task(id=t["id"], title=t["title"], status=t["status"]) for t in data.get("tasks", ())),
            facts=tuple(Fact(text=f["text"], tainted=f["tainted"]) for f in data.get("facts", ())),
            open_questions=tuple(data.get("open_questions", ())),
            next_action=data.get("next_action"),
        )

    def carried(self) -> WorkingState:
        """The state a new run starts from: completed tasks dropped, next action reset."""
        return replace(self, tasks=tuple(t for t in self.tasks if t.status != "done"), next_action=None)

    def render(self) -> str:
        """The text the model reads (inside an envelope)."""
        lines = ["Working state:"]
        if self.constraints:
            lines.append("Constraints (always hold):")
            lines += [f"- {c}" for c in self.constraints]
        if self.tasks:
            lines.append("Tasks:")
            lines += [f"- [{t.status}] {t.id}: {t.title}" for t in self.tasks]
        if self.facts:
            lines.append("Established facts:")
            lines += [f"- {f.text}" for f in self.facts]
        if self.open_questions:
            lines.append("Open questions:")
            lines += [f"- {q}" for q in self.open_questions]
        if self.next_action:
            lines.append(f"Next action: {self.next_action}")
        return "\n".join(lines)


# Sent with every request: worded for the model and no longer than it needs. apply_update
# refuses unknown fields and bad values itself, so the schema carries types only.
UPDATE_TOOL_DESCRIPTION = (
    "Update your working state (constraints, tasks, facts, open questions, next action), shown to you "
    "every turn. Send only changes; constraints cannot be removed; tasks are matched by id."
)

_STRINGS: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
UPDATE_TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "add_constraints": _STRINGS,
        "upsert_tasks": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id"],
                "properties": {
                    "id": {"type": "string"},
                    "title": {"type": "string"},
                    "status": {"enum": list(TASK_STATUSES)},
                },
            },
        },
        "add_facts": _STRINGS,
        "remove_facts": _STRINGS,
        "add_open_questions": _STRINGS,
        "resolve_open_questions": _STRINGS,
        "next_action": {"type": ["string", "null"]},
    },
}


def apply_update(
    state: WorkingState,
    arguments: Mapping[str, Any],
    *,
    count_tokens: Callable[[str], int],
    limits: Limits = Limits(),
    tainted: bool = False,
) -> WorkingState:
    """Apply a control-tool call to ``state``; raise :class:`WorkingStateError` on any violation."""
    unknown = sorted(set(arguments) - set(UPDATE_TOOL_SCHEMA["properties"]))
    if unknown:
        raise WorkingStateError(f"unknown field(s) {', '.join(unknown)}; allowed: {', '.join(UPDATE_TOOL_SCHEMA['properties'])}")
    constraints = list(state.constraints)
    for text in _strings(arguments, "add_constraints", limits):
        if text not in constraints:
            constraints.append(text)
    tasks = {t.id: t for t in state.tasks}
    order = [t.id for t in state.tasks]
    for raw in _items(arguments, "upsert_tasks"):
        task_id = raw.get("id")
        if not isinstance(task_id, str) or not task_id:
            raise WorkingStateError("every task needs a non-empty string id")
        status = raw.get("status", tasks[task_id].status if task_id in tasks else "todo")
        if status not in TASK_STATUSES:
            raise WorkingStateError(f"task {task_id!r}: status must be one of {', '.join(TASK_STATUSES)}")
        title = raw.get("title", tasks[task_id].title if task_id in tasks else None)
        if not isinstance(title, str) or not title:
            raise WorkingStateError(f"task {task_id!r} needs a title")
        _check_length(title, limits)
        if task_id not in tasks:
            order.append(task_id)
        tasks[task_id] = Task(id=task_id, title=title, status=status)
    facts = [f for f in state.facts if f.text not in set(_strings(arguments, "remove_facts", limits))]
    for text in _strings(arguments, "add_facts", limits):
        if all(f.text != text for f in facts):
            facts.append(Fact(text=text, tainted=tainted))
    resolved = set(_strings(arguments, "resolve_open_questions", limits))
    questions = [q for q in state.open_questions if q not in resolved]
    for text in _strings(arguments, "add_open_questions", limits):
        if text not in questions:
            questions.append(text)
    next_action = state.next_action
    if "next_action" in arguments:
        next_action = arguments["next_action"]
        if next_action is not None and not isinstance(next_action, str):
            raise WorkingStateError("next_action must be a string or null")
        if next_action:
            _check_length(next_action, limits)
    new = WorkingState(
        constraints=tuple(constraints),
        tasks=tuple(tasks[i] for i in order),
        facts=tuple(facts),
        open_questions=tuple(questions),
        next_action=next_action or None,
    )
    for name, have, cap in (
        ("constraints", len(new.constraints), limits.constraints),
        ("tasks", len(new.tasks), limits.tasks),
        ("facts", len(new.facts), limits.facts),
        ("open questions", len(new.open_questions), limits.open_questions),
    ):
        if have > cap:
            hint = "constraints are never dropped" if name == "constraints" else f"remove or finish some {name} first"
            raise WorkingStateError(f"working state would hold {have} {name}, the limit is {cap}; nothing was changed ({hint})")
    tokens = count_tokens(new.render())
    if tokens > limits.tokens:
        raise WorkingStateError(f"working state would be {tokens:,} tokens, the limit is {limits.tokens:,}; nothing was changed")
    return new


def state_at(events: Iterable[Event], *, start: WorkingState | None = None) -> WorkingState:
    """The working state after ``events``, with the carry rule applied at each new run.

    ``start`` is the state before ``events`` (the state after the events before them), so a
    growing log can be followed one new event at a time.
    """
    state = start if start is not None else WorkingState()
    for event in events:
        if event.type == "context.working_state.updated":
            state = WorkingState.from_dict(event.payload.state)
        elif event.type == "message.user" and not event.payload.steering:
            state = state.carried()
    return state


def _strings(arguments: Mapping[str, Any], key: str, limits: Limits) -> list[str]:
    values = arguments.get(key, [])
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, str) and v.strip() for v in values):
        raise WorkingStateError(f"{key} must be a list of non-empty strings")
    for value in values:
        _check_length(value, limits)
    return [v.strip() for v in values]


def _items(arguments: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    values = arguments.get(key, [])
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, Mapping) for v in values):
        raise WorkingStateError(f"{key} must be a list of objects")
    return list(values)


def _check_length(text: str, limits: Limits) -> None:
    if len(text) > limits.item_chars:
        raise WorkingStateError(f"an entry of {len(text)} characters is longer than the {limits.item_chars} allowed")
