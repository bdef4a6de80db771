"""The bodies manage mode sends upstream: canonical JSON of the whole body, its shared history written once."""

from __future__ import annotations

import json
from typing import Any

import pytest

import contextwright.canonical as canonical
from contextwright.canonical import canonical_bytes
from contextwright.errors import CanonicalJsonError
from contextwright.gateway.body_bytes import BodyWriter
from contextwright.gateway.recorder import dumps
from contextwright.providers.shared_json import SharedArray, SharedObject, shared


def _message(n: int) -> Any:
    text = f'output {n}: caf\u00e9 0.00001 1e-05 \u2603 "quoted"\n\ttab'
    return shared(
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": text, "is_error": False}]}
    )


def _body(messages: list[Any], **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 32000,
        "system": [SharedObject(type="text", text="You are an agent.")],
        "tools": [shared({"name": "Bash", "input_schema": {"type": "object", "properties": {}}})],
        "messages": messages,
    }
    body.update(extra)
    return body


@pytest.fixture(params=["fast", "standard library"])
def encoder(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "standard library":
        monkeypatch.setattr(canonical, "_orjson", None)
    elif canonical._orjson is None:
        pytest.skip("the fast encoder is not installed")
    return str(request.param)


def test_the_bytes_are_the_canonical_json_of_the_whole_body(encoder: str) -> None:
    writer = BodyWriter()
    history = [_message(n) for n in range(6)]
    for upto in range(1, 7):
        # Each request shows the earlier messages again (the same objects) and a new one, some marked anew.
        messages = [*history[:upto], SharedObject(role="assistant", content=SharedArray([SharedObject(type="text", text="ok")]))]
        body = _body(messages, stream=True, metadata={"user_id": "u\u00e9"}, temperature=0.5, zeta=None, Alpha=[1, (2, 3)])
        assert writer.write(body) == canonical_bytes(body)


def test_a_body_of_plain_containers_is_written_whole(encoder: str) -> None:
    body = {"model": "gpt-5", "input": [{"role": "user", "content": "caf\u00e9 0.00001"}, {"type": "function_call_output"}]}
    assert BodyWriter().write(body) == canonical_bytes(body)


def test_an_object_kept_is_written_as_it_was_when_shown_again() -> None:
    writer = BodyWriter()
    message = _message(1)
    first = writer.write(_body([message]))
    assert writer.write(_body([message])) == first == canonical_bytes(_body([message]))


def test_the_oldest_objects_go_once_past_the_size() -> None:
    writer = BodyWriter(size=200)
    messages = [_message(n) for n in range(10)]
    for upto in range(1, 11):
        body = _body(messages[:upto])
        assert writer.write(body) == canonical_bytes(body)
    again = _body(messages)
    assert writer.write(again) == canonical_bytes(again)


def test_a_scratch_body_leaves_nothing_kept() -> None:
    writer = BodyWriter()
    body = _body([_message(n) for n in range(3)])
    assert writer.write(body, keep=False) == canonical_bytes(body)
    assert writer.write(body) == canonical_bytes(body)


def test_a_body_with_no_canonical_form_is_refused_as_the_reference_refuses_it(encoder: str) -> None:
    writer = BodyWriter()
    for body in (
        _body([_message(1)], temperature=float("nan")),
        _body([_message(1), {"role": "user", "content": float("inf")}]),
        _body([_message(1)], metadata={1: "int key"}),
        {**_body([_message(1)]), 2: "int key"},
        _body([_message(1)], **{"\ud800": "lone surrogate key"}),
        _body([_message(1)], note="\ud800 lone surrogate"),
    ):
        with pytest.raises(CanonicalJsonError):
            canonical_bytes(body)
        with pytest.raises(CanonicalJsonError):
            writer.write(body)


def test_the_gateway_writes_a_body_with_no_canonical_form_with_the_standard_library() -> None:
    body = _body([_message(1)], temperature=float("nan"))
    assert dumps(body) == json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
