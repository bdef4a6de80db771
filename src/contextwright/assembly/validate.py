"""Checks a request must pass before it leaves the builder."""

from __future__ import annotations

from contextwright.assembly.memo import RenderMemo
from contextwright.assembly.request import NeutralRequest, ToolCallPart, ToolResultPart
from contextwright.errors import BuildError, OrphanedToolPair
from contextwright.plan.plan import ContextPlan


def validate(request: NeutralRequest, plan: ContextPlan, memo: RenderMemo | None = None) -> None:
    """Raise unless the request is well formed for ``plan``.

    * every tool call is answered, in the very next user message(s), before the
      model speaks again, and every result answers a call of the message before;
    * the conversation starts and ends with the user;
    * the prefix is the plan's (same hash, same tools).

    With ``memo``, the messages a request that passed shared with this one are not looked at
    again: the pairing checks restart at the last answer among them (where no call is open).
    """
    if request.prefix_sha256 != plan.prefix_sha256 or request.epoch != plan.epoch:
        raise BuildError(
            f"session {request.session_id!r}: request prefix {request.prefix_sha256} does not match "
            f"epoch {plan.epoch}'s {plan.prefix_sha256}",
            session_id=request.session_id,
        )
    if tuple(t.name for t in request.tools) != plan.prefix.tool_names():
        raise BuildError(
            f"session {request.session_id!r}: request tools differ from the pinned tools", session_id=request.session_id
        )
    messages = request.messages
    if not messages:
        raise BuildError(f"session {request.session_id!r}: there is nothing to send yet", session_id=request.session_id)
    if messages[0].role != "user" or messages[-1].role != "user":
        raise BuildError(
            f"session {request.session_id!r}: a request must start and end with a user message",
            session_id=request.session_id,
        )
    open_calls: dict[str, str] = {}
    start = 0
    if memo is not None:
        kept = memo.valid_prefix(messages)
        start = next((i for i in range(kept - 1, -1, -1) if messages[i].role == "assistant"), 0)
    for index in range(start, len(messages)):
        message = messages[index]
        if message.role == "assistant":
            if open_calls:
                raise OrphanedToolPair(
                    f"session {request.session_id!r}: tool call(s) {', '.join(sorted(open_calls))} have no result",
                    session_id=request.session_id,
                    call_ids=tuple(sorted(open_calls)),
                )
            open_calls = {p.id: p.name for p in message.parts if isinstance(p, ToolCallPart)}
            continue
        for part in message.parts:
            if isinstance(part, ToolResultPart):
                if part.call_id not in open_calls:
                    raise OrphanedToolPair(
                        f"session {request.session_id!r}: message {index} has a result for {part.call_id!r} "
                        "without a matching call just before it",
                        session_id=request.session_id,
                        call_ids=(part.call_id,),
                    )
                del open_calls[part.call_id]
    if open_calls:
        raise OrphanedToolPair(
            f"session {request.session_id!r}: tool call(s) {', '.join(sorted(open_calls))} have no result",
            session_id=request.session_id,
            call_ids=tuple(sorted(open_calls)),
        )
    if memo is not None:
        memo.validated(messages)
