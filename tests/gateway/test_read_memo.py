"""The memo of message lists read: a request's history read again only from where it differs from the last one."""

from __future__ import annotations

import copy
from typing import Any

from test_observe import ANSWER_1, FIRST, SECOND, claude_body

from contextwright.gateway import wires
from contextwright.gateway.wires import ReadMemo, parse_request


def _fresh(body: dict[str, Any]) -> tuple[Any, Any]:
    """The turns and fingerprints of ``body`` read with an empty memo."""
    memo = ReadMemo(4)
    return memo.read(body["messages"])


def test_a_growing_history_reads_as_if_read_whole(monkeypatch: Any) -> None:
    monkeypatch.setattr(wires, "MEMO", ReadMemo(4))
    history = copy.deepcopy(SECOND)
    history += [{"role": "assistant", "content": [{"type": "text", "text": "Done."}]}, {"role": "user", "content": "Next."}]
    for upto in range(1, len(history) + 1):
        body = claude_body(copy.deepcopy(history[:upto]))
        conversation = parse_request("anthropic", body)
        turns, fingerprints = _fresh(body)
        assert conversation.turns == turns and conversation.fingerprints == fingerprints
        assert fingerprints == tuple(turn.fingerprint for turn in turns)


def test_an_edited_or_dropped_message_is_read_again(monkeypatch: Any) -> None:
    monkeypatch.setattr(wires, "MEMO", ReadMemo(4))
    before = parse_request("anthropic", claude_body(copy.deepcopy(SECOND)))
    edited = copy.deepcopy(SECOND)
    edited[2]["content"][0]["content"] = "only README.md"
    after = parse_request("anthropic", claude_body(edited))
    assert after.turns[-1].results[0].output == "only README.md"
    assert after.fingerprints[:2] == before.fingerprints[:2] and after.fingerprints[2] != before.fingerprints[2]
    # A shorter list (a client that dropped its last turns) reads to its own turns only.
    shorter = parse_request("anthropic", claude_body(copy.deepcopy(FIRST)))
    assert shorter.fingerprints == before.fingerprints[:1]
    # Another conversation (another first message) is read apart, and both stay known.
    other = parse_request("anthropic", claude_body([{"role": "user", "content": "Another task."}]))
    assert len(other.turns) == 1 and other.fingerprints != shorter.fingerprints


def test_the_memo_keeps_its_size(monkeypatch: Any) -> None:
    memo = ReadMemo(2)
    for n in range(5):
        memo.read([{"role": "user", "content": f"task {n}"}, {"role": "assistant", "content": ANSWER_1["content"]}])
    assert len(memo._lists) == 2
