"""Manage mode: the engine's read tool, answered inside the gateway, and the answer the client sees.

A gateway run in manage mode, for a client with tools, pins the engine's
``context_read_artifact`` after them, so the pointers that replace bounded or archived
outputs name a tool the model can call. The client never defined that tool and never sees a call to it:

* an answer whose only tool calls are read-backs is recorded (the engine answers each
  call from the log), the next request is built and sent, and its answer continues the
  one the client is reading, up to :data:`MAX_READ_BACKS` times per client request;
* an answer that mixes read-backs with the client's own calls goes to the client with
  the client's calls only: the engine's answers to the read-backs wait in the log and
  go upstream beside the client's results on its next request (a provider takes an
  answer's tool results all together, so the gateway cannot continue without them).

:class:`Joiner` does the joining on the bytes that pass: server-sent events of every
part are passed on as they come, except the read-back calls (dropped), each later
part's opening (its message or response start) and the end of each part (held until
it is known to be the last). Blocks, output items and tool calls are numbered on from
the parts before, and the last part's end carries the usage of all parts: the
provider's real usage for everything the gateway sent for this answer. Events passed
unchanged keep their bytes. A non-streamed answer is joined as JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from contextwright.gateway.wires import WireName
from contextwright.items.region_a import READ_TOOL_NAME

MAX_READ_BACKS = 8
"""Read-back rounds the gateway answers for one client request; the next answer goes to the client as it is."""


def calls_of(wire: WireName, answer: Mapping[str, Any]) -> list[str]:
    """The names of the tool calls in a whole answer, in order."""
    if wire == "anthropic":
        return [str(b.get("name")) for b in answer.get("content") or () if isinstance(b, Mapping) and b.get("type") == "tool_use"]
    if wire == "openai_responses":
        kinds = ("function_call", "custom_tool_call")
        return [str(i.get("name")) for i in answer.get("output") or () if isinstance(i, Mapping) and i.get("type") in kinds]
    message = _chat_message(answer)
    return [str((c.get("function") or {}).get("name")) for c in message.get("tool_calls") or () if isinstance(c, Mapping)]


def reads_only(wire: WireName, answer: Mapping[str, Any]) -> bool:
    """True when the answer calls tools and every call is a read-back (the gateway answers it and continues)."""
    names = calls_of(wire, answer)
    return bool(names) and all(name == READ_TOOL_NAME for name in names)


def without_reads(wire: WireName, answer: Mapping[str, Any]) -> dict[str, Any]:
    """The answer with its read-back calls taken out (what the client sees of it)."""
    if wire == "anthropic":
        return {**answer, "content": [b for b in answer.get("content") or () if not _read_block(b)]}
    if wire == "openai_responses":
        return {**answer, "output": [i for i in answer.get("output") or () if not _read_item(i)]}
    choices = [dict(c) for c in answer.get("choices") or ()]
    if choices:
        message = dict(choices[0].get("message") or {})
        calls = [c for c in message.get("tool_calls") or () if not _read_call(c)]
        if calls:
            message["tool_calls"] = calls
        else:
            message.pop("tool_calls", None)
        choices[0]["message"] = message
    return {**answer, "choices": choices}


def joined(wire: WireName, parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The non-streamed answers of one client request as one: the first's id, the last's ending, all parts' content and usage."""
    visible = [without_reads(wire, part) for part in parts]
    whole = dict(visible[-1])
    if "id" in visible[0]:
        whole["id"] = visible[0]["id"]
    usage = total_usage(parts)
    if usage is not None:
        whole["usage"] = usage
    if wire == "anthropic":
        whole["content"] = [block for part in visible for block in part["content"]]
    elif wire == "openai_responses":
        whole["output"] = [item for part in visible for item in part["output"]]
    elif whole.get("choices"):
        messages = [_chat_message(part) for part in visible]
        message = dict(messages[-1])
        texts = [m["content"] for m in messages if isinstance(m.get("content"), str) and m["content"]]
        message["content"] = "".join(texts) if texts else messages[-1].get("content")
        calls = [call for m in messages for call in m.get("tool_calls") or ()]
        if calls:
            message["tool_calls"] = calls
        whole["choices"] = [{**whole["choices"][0], "message": message}]
    return whole


def total_usage(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The usage of all parts added up, field by field (nested counts too); None when no part has usage."""
    found = [part["usage"] for part in parts if isinstance(part.get("usage"), Mapping)]
    if not found:
        return None
    total: dict[str, Any] = {}
    for usage in found:
        total = _added(total, usage)
    return total


def _added(total: Mapping[str, Any], usage: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(total)
    for key, value in usage.items():
        before = out.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, Mapping)):
            out[key] = value if value is not None or key not in out else before
        elif isinstance(value, int) and isinstance(before, int) and not isinstance(before, bool):
            out[key] = before + value
        elif isinstance(value, Mapping):
            out[key] = _added(before if isinstance(before, Mapping) else {}, value)
        else:
            out[key] = value
    return out


class Joiner:
    """The bytes of one client answer, from the streamed parts of it that pass (see the module's notes).

    :meth:`feed` takes each upstream chunk and gives what goes to the client now; between two
    parts, :meth:`next_part`; after the last, :meth:`finish` gives the held end."""

    def __init__(self, wire: WireName, *, streamed: bool) -> None:
        self.wire = wire
        self.streamed = streamed
        self.part = 0
        self._buffer = b""
        self._raw: list[bytes] = []
        self._held: list[tuple[bytes, str | None, Any]] = []
        self._indexes: dict[int, int | None] = {}
        self._next_index = 0
        self._sequence = 0
        self._first_id: str | None = None

    # -- parts ------------------------------------------------------------------------

    def feed(self, chunk: bytes) -> bytes:
        """What of ``chunk`` goes to the client now (a non-streamed part is kept whole, and nothing goes)."""
        if not self.streamed:
            self._raw.append(chunk)
            return b""
        self._buffer += chunk
        out: list[bytes] = []
        while True:
            cut, size = _frame_end(self._buffer)
            if cut < 0:
                break
            frame, self._buffer = self._buffer[: cut + size], self._buffer[cut + size :]
            passed = self._frame(frame)
            if passed:
                out.append(passed)
        return b"".join(out)

    def next_part(self) -> None:
        """The part read so far was answered by the gateway: the next upstream answer continues it."""
        self.part += 1
        self._buffer, self._raw, self._held, self._indexes = b"", [], [], {}

    def finish(self, parts: Sequence[Mapping[str, Any]]) -> bytes:
        """The end of the answer: the last part's held end, carrying the usage of all ``parts`` when there were several."""
        if not self.streamed:
            document = joined(self.wire, parts) if len(parts) > 1 else without_reads(self.wire, parts[-1])
            if len(parts) == 1 and not any(name == READ_TOOL_NAME for name in calls_of(self.wire, parts[-1])):
                return b"".join(self._raw)  # a single part with no read-back: its bytes as they came
            return json.dumps(document, ensure_ascii=False).encode()
        usage = total_usage(parts) if len(parts) > 1 else None
        visible = [without_reads(self.wire, part) for part in parts]
        out = []
        for raw, name, data in self._held:
            out.append(self._ending(raw, name, data, usage, visible))
        self._held = []
        return b"".join(out) + self._buffer

    def failed(self, status: int, body: bytes) -> bytes:
        """A continuation the provider refused, as the stream's error event (its status and body inside)."""
        try:
            document: Any = json.loads(body)
        except ValueError:
            document = {"error": {"message": body.decode("utf-8", "replace"), "status": status}}
        if self.wire == "anthropic":
            return _encode("error", document)
        if self.wire == "openai_responses":
            error = document.get("error") if isinstance(document, Mapping) else None
            return self._numbered("error", {"type": "error", **(error if isinstance(error, Mapping) else {}), "status": status})
        return _encode(None, document)

    # -- frames -----------------------------------------------------------------------

    def _frame(self, frame: bytes) -> bytes:
        name, data = _parse(frame)
        if data is None:
            return frame  # a comment or a keep-alive
        if self.wire == "anthropic":
            return self._anthropic(frame, name, data)
        if self.wire == "openai_responses":
            return self._responses(frame, name, data)
        return self._chat(frame, name, data)

    def _anthropic(self, frame: bytes, name: str | None, data: Any) -> bytes:
        kind = data.get("type", name) if isinstance(data, dict) else name
        if kind in ("message_start", "ping"):
            return frame if self.part == 0 else b""
        if kind in ("message_delta", "message_stop"):
            self._held.append((frame, name, data))
            return b""
        if kind in ("content_block_start", "content_block_delta", "content_block_stop") and isinstance(data, dict):
            upstream = int(data.get("index", 0))
            if kind == "content_block_start":
                self._indexes[upstream] = None if _read_block(data.get("content_block")) else self._take_index()
            index = self._indexes.get(upstream, upstream)
            if index is None:
                return b""
            return frame if index == upstream else _encode(name, {**data, "index": index})
        return frame

    def _responses(self, frame: bytes, name: str | None, data: Any) -> bytes:
        if not isinstance(data, dict):
            return frame
        kind = data.get("type", name)
        if kind in ("response.created", "response.in_progress"):
            if self.part == 0:
                response = data.get("response")
                if isinstance(response, Mapping) and isinstance(response.get("id"), str):
                    self._first_id = response["id"]
                return self._renumbered(frame, name, data)
            return b""
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            self._held.append((frame, name, data))
            return b""
        if "output_index" in data:
            upstream = int(data["output_index"])
            if kind == "response.output_item.added":
                self._indexes[upstream] = None if _read_item(data.get("item")) else self._take_index()
            index = self._indexes.get(upstream, upstream)
            if index is None:
                return b""
            if index != upstream:
                return self._numbered(name, {**data, "output_index": index})
        return self._renumbered(frame, name, data)

    def _chat(self, frame: bytes, name: str | None, data: Any) -> bytes:
        if not isinstance(data, dict):
            self._held.append((frame, name, data))  # [DONE]
            return b""
        if self.part == 0 and self._first_id is None and isinstance(data.get("id"), str):
            self._first_id = data["id"]
        choices = data.get("choices") or []
        if not choices or any(c.get("finish_reason") for c in choices if isinstance(c, Mapping)):
            self._held.append((frame, name, data))  # the finish, or the usage after it
            return b""
        changed = False
        out_choices = []
        for choice in choices:
            delta = dict(choice.get("delta") or {})
            if self.part > 0 and "role" in delta:
                del delta["role"]
                changed = True
                if delta.get("content") == "":
                    del delta["content"]
            calls = []
            for call in delta.get("tool_calls") or ():
                upstream = int(call.get("index", 0))
                if upstream not in self._indexes:
                    self._indexes[upstream] = None if _read_call(call) else self._take_index()
                index = self._indexes[upstream]
                if index is None:
                    changed = True
                    continue
                if index != upstream:
                    changed = True
                calls.append({**call, "index": index})
            if "tool_calls" in delta:
                if calls:
                    delta["tool_calls"] = calls
                else:
                    del delta["tool_calls"]
            out_choices.append({**choice, "delta": delta})
        if all(not c["delta"] for c in out_choices):
            return b""
        if self.part > 0 and self._first_id is not None and data.get("id") != self._first_id:
            changed = True
        if not changed:
            return frame
        return _encode(name, {**data, "id": self._first_id or data.get("id"), "choices": out_choices})

    def _ending(
        self, raw: bytes, name: str | None, data: Any, usage: dict[str, Any] | None, visible: list[dict[str, Any]]
    ) -> bytes:
        """A held end-of-part event as the client gets it at the end of the answer."""
        if not isinstance(data, dict):
            return raw
        if self.wire == "anthropic":
            if data.get("type") == "message_delta" and usage is not None:
                return _encode(name, {**data, "usage": usage})
            return raw
        if self.wire == "openai_responses":
            response = dict(data.get("response") or {})
            response["output"] = [item for part in visible for item in part.get("output") or ()]
            if self._first_id is not None:
                response["id"] = self._first_id
            if usage is not None:
                response["usage"] = usage
            if len(visible) == 1 and response == data.get("response"):
                return self._renumbered(raw, name, data)
            return self._numbered(name, {**data, "response": response})
        changed = dict(data)
        if usage is not None and data.get("usage"):
            changed["usage"] = usage
        if self.part > 0 and self._first_id is not None:
            changed["id"] = self._first_id
        return raw if changed == data else _encode(name, changed)

    def _take_index(self) -> int:
        index = self._next_index
        self._next_index += 1
        return index

    def _renumbered(self, frame: bytes, name: str | None, data: dict[str, Any]) -> bytes:
        """A Responses event with the next sequence number the client expects (its own bytes when it has it)."""
        if "sequence_number" not in data:
            return frame
        if data["sequence_number"] == self._sequence:
            self._sequence += 1
            return frame
        return self._numbered(name, data)

    def _numbered(self, name: str | None, data: dict[str, Any]) -> bytes:
        number = self._sequence
        self._sequence += 1
        return _encode(name, {**data, "sequence_number": number})


def _read_block(block: Any) -> bool:
    return isinstance(block, Mapping) and block.get("type") == "tool_use" and block.get("name") == READ_TOOL_NAME


def _read_item(item: Any) -> bool:
    return isinstance(item, Mapping) and item.get("type") == "function_call" and item.get("name") == READ_TOOL_NAME


def _read_call(call: Any) -> bool:
    return isinstance(call, Mapping) and (call.get("function") or {}).get("name") == READ_TOOL_NAME


def _chat_message(answer: Mapping[str, Any]) -> dict[str, Any]:
    choices = answer.get("choices") or ()
    first = choices[0] if choices and isinstance(choices[0], Mapping) else {}
    message = first.get("message")
    return dict(message) if isinstance(message, Mapping) else {}


def _frame_end(buffer: bytes) -> tuple[int, int]:
    """Where the first whole SSE frame of ``buffer`` ends, and the length of its blank line; (-1, 0) without one."""
    ends = [(buffer.find(sep), len(sep)) for sep in (b"\n\n", b"\r\n\r\n", b"\r\r")]
    found = [(at, size) for at, size in ends if at >= 0]
    return min(found) if found else (-1, 0)


def _parse(frame: bytes) -> tuple[str | None, Any]:
    """The event name and the JSON data of one frame (the text for data that is not JSON; None for no data)."""
    name: str | None = None
    data: list[str] = []
    for line in frame.decode("utf-8", "replace").splitlines():
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    if not data:
        return name, None
    text = "\n".join(data)
    try:
        return name, json.loads(text)
    except ValueError:
        return name, text


def _encode(name: str | None, data: Any) -> bytes:
    head = f"event: {name}\n" if name else ""
    body = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return f"{head}data: {body}\n\n".encode()
