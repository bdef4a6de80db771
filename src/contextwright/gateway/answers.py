"""A provider's answer rebuilt from the bytes that went to the client, streamed or not.

The forwarder hands every chunk of the upstream body to an :class:`AnswerReader` as it
passes it on; the reader keeps what it needs and, once the body has ended, gives the
whole answer as the provider's non-streamed JSON (an Anthropic message, a Responses
response, a chat completion), which :func:`~contextwright.providers.responses.parse_response`
reads. A stream cut before its end gives no answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from contextwright.gateway.wires import WireName


class SseParser:
    """Server-sent events from byte chunks cut anywhere: ``(event name, data)`` pairs, data as text."""

    def __init__(self) -> None:
        self._buffer = b""
        self._event: str | None = None
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> Iterator[tuple[str | None, str]]:
        """The events completed by ``chunk``."""
        self._buffer += chunk
        while True:
            cut = self._buffer.find(b"\n")
            if cut < 0:
                return
            line = self._buffer[:cut].rstrip(b"\r").decode("utf-8", "replace")
            self._buffer = self._buffer[cut + 1 :]
            if not line:
                if self._data:
                    yield self._event, "\n".join(self._data)
                self._event, self._data = None, []
            elif line.startswith(":"):
                continue
            else:
                name, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if name == "event":
                    self._event = value
                elif name == "data":
                    self._data.append(value)


class AnswerReader:
    """Keeps what the answer needs from a body passing through; :meth:`answer` after the last chunk."""

    def __init__(self, wire: WireName, *, streamed: bool) -> None:
        self.wire = wire
        self.streamed = streamed
        self._sse = SseParser()
        self._raw: list[bytes] = []
        self._complete = False
        self._message: dict[str, Any] | None = None
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json_parts: dict[int, list[str]] = {}
        self._response: dict[str, Any] | None = None
        self._items: dict[int, dict[str, Any]] = {}
        self._chat: dict[str, Any] = {}
        self._chat_calls: dict[int, dict[str, Any]] = {}

    def feed(self, chunk: bytes) -> None:
        """Read one chunk of the body."""
        if not self.streamed:
            self._raw.append(chunk)
            return
        for name, data in self._sse.feed(chunk):
            if data == "[DONE]":
                self._complete = True
                continue
            try:
                event = json.loads(data)
            except ValueError:
                continue
            if isinstance(event, dict):
                self._event(name or str(event.get("type", "")), event)

    def answer(self) -> dict[str, Any] | None:
        """The whole answer as the provider's non-streamed JSON; None when the body held no complete answer."""
        if not self.streamed:
            try:
                value = json.loads(b"".join(self._raw))
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
        if not self._complete:
            return None
        if self.wire == "anthropic":
            return self._anthropic_answer()
        if self.wire == "openai_responses":
            return self._responses_answer()
        return self._chat_answer()

    # -- per wire ---------------------------------------------------------------------

    def _event(self, name: str, event: dict[str, Any]) -> None:
        if self.wire == "anthropic":
            self._anthropic(name, event)
        elif self.wire == "openai_responses":
            self._responses(name, event)
        else:
            self._chat_chunk(event)

    def _anthropic(self, name: str, event: dict[str, Any]) -> None:
        if name == "message_start":
            self._message = dict(event.get("message") or {})
        elif name == "content_block_start":
            self._blocks[int(event["index"])] = dict(event.get("content_block") or {})
        elif name == "content_block_delta":
            index, delta = int(event["index"]), event.get("delta") or {}
            block = self._blocks.setdefault(index, {})
            kind = delta.get("type")
            if kind == "text_delta":
                block["text"] = block.get("text", "") + delta.get("text", "")
            elif kind == "input_json_delta":
                self._json_parts.setdefault(index, []).append(delta.get("partial_json", ""))
            elif kind == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + delta.get("thinking", "")
            elif kind == "signature_delta":
                block["signature"] = block.get("signature", "") + delta.get("signature", "")
            elif kind == "citations_delta":
                block.setdefault("citations", []).append(delta.get("citation"))
        elif name == "message_delta" and self._message is not None:
            self._message.update(event.get("delta") or {})
            usage = dict(self._message.get("usage") or {})
            usage.update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})
            self._message["usage"] = usage
        elif name == "message_stop":
            self._complete = True

    def _anthropic_answer(self) -> dict[str, Any] | None:
        if self._message is None:
            return None
        content = []
        for index in sorted(self._blocks):
            block = dict(self._blocks[index])
            if index in self._json_parts:
                text = "".join(self._json_parts[index])
                try:
                    block["input"] = json.loads(text) if text else {}
                except ValueError:
                    block["input"] = {"_raw": text}
            content.append(block)
        return {**self._message, "content": content}

    def _responses(self, name: str, event: dict[str, Any]) -> None:
        kind = event.get("type", name)
        if kind in ("response.completed", "response.incomplete"):
            self._response = dict(event.get("response") or {})
            self._complete = True
        elif kind == "response.output_item.done" and isinstance(event.get("item"), dict):
            self._items[int(event.get("output_index", len(self._items)))] = event["item"]

    def _responses_answer(self) -> dict[str, Any] | None:
        if self._response is None:
            return None
        response = dict(self._response)
        if not response.get("output") and self._items:
            response["output"] = [self._items[i] for i in sorted(self._items)]
        response.setdefault("object", "response")
        return response

    def _chat_chunk(self, event: dict[str, Any]) -> None:
        for key in ("id", "created", "model", "object"):
            if key in event:
                self._chat.setdefault(key, event[key])
        if event.get("usage"):
            self._chat["usage"] = event["usage"]
        for choice in event.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if delta.get("content"):
                self._chat["content"] = self._chat.get("content", "") + delta["content"]
            for call in delta.get("tool_calls") or ():
                index = int(call.get("index", 0))
                slot = self._chat_calls.setdefault(
                    index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
                )
                if call.get("id"):
                    slot["id"] = call["id"]
                custom = call.get("custom")
                if call.get("type") == "custom" or isinstance(custom, dict) or slot["type"] == "custom":
                    # A free-form tool's call, read in the shape a whole answer gives it: its input comes in pieces.
                    if slot["type"] != "custom":
                        slot = self._chat_calls[index] = {"id": slot["id"], "type": "custom", "custom": {"name": "", "input": ""}}
                    custom = custom if isinstance(custom, dict) else {}
                    if custom.get("name"):
                        slot["custom"]["name"] = custom["name"]
                    slot["custom"]["input"] += custom.get("input") or ""
                    continue
                function = call.get("function") or {}
                if function.get("name"):
                    slot["function"]["name"] = function["name"]
                slot["function"]["arguments"] += function.get("arguments") or ""
            if choice.get("finish_reason"):
                self._chat["finish_reason"] = choice["finish_reason"]

    def _chat_answer(self) -> dict[str, Any] | None:
        if "finish_reason" not in self._chat:
            return None
        message: dict[str, Any] = {"role": "assistant", "content": self._chat.get("content")}
        if self._chat_calls:
            message["tool_calls"] = [self._chat_calls[i] for i in sorted(self._chat_calls)]
        answer = {
            "id": self._chat.get("id", ""),
            "object": "chat.completion",
            "model": self._chat.get("model", ""),
            "choices": [{"index": 0, "message": message, "finish_reason": self._chat["finish_reason"]}],
        }
        if "usage" in self._chat:
            answer["usage"] = self._chat["usage"]
        return answer
