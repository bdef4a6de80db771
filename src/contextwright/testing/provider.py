"""A scripted model provider: canned answers, realistic usage, no network.

:class:`ScriptedProvider` plays the model's side of a conversation from a list of
:class:`~contextwright.events.catalog.AssistantMessage` values. Each request body it
receives is passed through the offline cache simulator, so the usage it reports
(cache reads and writes included) is what the provider's caching rules predict for
exactly that body. It can answer as a plain function (``create(**body)``) or behind
the official SDKs through an ``httpx2.MockTransport`` (:meth:`handler`, which streams
the answer as server-sent events when the body asks for a stream), and it can
be told to reject chosen calls as too long, like a provider whose window overflowed.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from collections.abc import Callable, Iterable
from typing import Any

from contextwright.budget.estimator import HeuristicEstimator
from contextwright.canonical import to_plain
from contextwright.clock import Clock, FixedClock
from contextwright.events.catalog import AssistantMessage
from contextwright.pricing.cache_sim import (
    AnthropicCacheSimulator,
    OpenAICacheSimulator,
    SimRequest,
)
from contextwright.testing.sse import stream_bytes


class ScriptedProvider:
    """Answers requests from a script, with usage from the offline cache simulator."""

    def __init__(
        self,
        answers: Iterable[AssistantMessage] = (),
        *,
        provider: str = "anthropic",
        clock: Clock | None = None,
        overflow_calls: Iterable[int] = (),
        output_tokens: int = 120,
        count_tokens: Callable[[str], int] | None = None,
    ) -> None:
        self.provider = provider
        self.clock = clock or FixedClock()
        self._queue: list[AssistantMessage] = list(answers)
        self._overflow = set(overflow_calls)
        self._calls = itertools.count()
        self.output_tokens = output_tokens
        estimator = HeuristicEstimator()
        count = count_tokens or (lambda text: estimator.estimate(text, model="gpt-4o"))
        simulator: Any = (
            AnthropicCacheSimulator(count_tokens=count) if provider == "anthropic" else OpenAICacheSimulator(count_tokens=count)
        )
        self.simulator = simulator
        self.bodies: list[dict[str, Any]] = []
        self.times: list[dt.datetime] = []
        """When each body in :attr:`bodies` was sent."""
        self.simulated: list[Any] = []

    def push(self, answer: AssistantMessage) -> None:
        """Queue the next answer (for scripts that decide as they go)."""
        self._queue.append(answer)

    def create(self, **body: Any) -> dict[str, Any]:
        """Answer one request body (the keyword arguments of ``messages.create`` / ``chat.completions.create``)."""
        call = next(self._calls)
        self.bodies.append(body)
        self.times.append(self.clock.now())
        if call in self._overflow:
            raise ProviderOverflowError(self.provider)
        if not self._queue:
            raise LookupError("the script has no answer left for this request")
        answer = self._queue.pop(0)
        simulated = self.simulator.request(SimRequest(at=self.clock.now(), body=body, output_tokens=self.output_tokens))
        self.simulated.append(simulated)
        if self.provider == "anthropic":
            return _anthropic_message(answer, simulated.usage, body["model"], call)
        return _openai_completion(answer, simulated.usage, body["model"], call)

    def handler(self, request: Any) -> Any:
        """An ``httpx2.MockTransport`` handler: the SDK's wire JSON in, the provider's JSON out (SSE when it streams)."""
        import httpx2

        body = json.loads(request.content)
        try:
            payload = self.create(**body)
        except ProviderOverflowError as exc:
            return httpx2.Response(400, json=exc.body, headers={"request-id": "req_scripted"})
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return httpx2.Response(
                200,
                content=stream_bytes(payload, include_usage=include_usage),
                headers={"request-id": "req_scripted", "content-type": "text/event-stream"},
            )
        return httpx2.Response(200, json=payload, headers={"request-id": "req_scripted"})


class ProviderOverflowError(Exception):
    """What the provider says when a prompt is longer than the window (raised by :meth:`ScriptedProvider.create`)."""

    def __init__(self, provider: str) -> None:
        if provider == "anthropic":
            self.body = {
                "type": "error",
                "error": {"type": "invalid_request_error", "message": "prompt is too long: 208310 tokens > 200000 maximum"},
            }
        else:
            self.body = {
                "error": {
                    "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": "context_length_exceeded",
                }
            }
        super().__init__(json.dumps(self.body))
        self.provider = provider


def _anthropic_message(answer: AssistantMessage, usage: Any, model: str, call: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if answer.text:
        content.append({"type": "text", "text": answer.text})
    for tool_call in answer.tool_calls:
        content.append({"type": "tool_use", "id": tool_call.id, "name": tool_call.name, "input": to_plain(tool_call.arguments)})
    # Scripted thinking goes where the answer says it stood, as the API would return it.
    for offset, block in enumerate(b for b in answer.reasoning if b.provider == "anthropic"):
        content.insert(block.position + offset, to_plain(block.block))
    return {
        "id": f"msg_scripted_{call:04d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if answer.tool_calls else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_input_tokens": usage.cache_read_tokens,
            "cache_creation_input_tokens": usage.cache_write_tokens,
            "cache_creation": {
                "ephemeral_5m_input_tokens": usage.cache_write_5m_tokens,
                "ephemeral_1h_input_tokens": usage.cache_write_1h_tokens,
            },
        },
    }


def _openai_completion(answer: AssistantMessage, usage: Any, model: str, call: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer.text or None}
    if answer.tool_calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(to_plain(c.arguments), sort_keys=True)},
            }
            for c in answer.tool_calls
        ]
    prompt = usage.total_input
    return {
        "id": f"chatcmpl-scripted-{call:04d}",
        "object": "chat.completion",
        "created": 1_767_225_600,
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if answer.tool_calls else "stop", "logprobs": None}
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": usage.output_tokens,
            "total_tokens": prompt + usage.output_tokens,
            "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens},
        },
    }


def at(when: str) -> dt.datetime:
    """Parse an ISO instant (a small helper for scripts and tests)."""
    return dt.datetime.fromisoformat(when.replace("Z", "+00:00"))
