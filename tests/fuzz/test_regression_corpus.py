"""The hardening review's cases, checked in under corpus/ and replayed on every run.

``importer-*``: files that crashed an importer or the ``replay`` command; each must load or
fail with a typed error, and ``replay`` must answer with one line, never a traceback.
``payload-*``: event batches appended one by one; the last is refused with the named error
(and rule), on the in-memory log and on SQLite, with nothing written.
``escape-*``: texts that must be escaped as envelope tags.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fuzz_targets import envelope_escape, importer
from typer.testing import CliRunner

from contextwright import errors
from contextwright.assembly.envelope import contains_tag
from contextwright.events import NewEvent
from contextwright.log import InMemoryEventLog
from contextwright.log.sqlite import SQLiteEventLog

CORPUS = Path(__file__).parent / "corpus"


def _cases(prefix: str) -> list[Path]:
    return sorted(CORPUS.glob(f"{prefix}-*"))


@pytest.mark.parametrize("path", _cases("importer"), ids=lambda p: p.stem)
def test_importer_case(path):
    importer(path.read_bytes(), path.suffix)
    from contextwright.cli import app

    result = CliRunner().invoke(app, ["replay", str(path)])
    assert result.exit_code in (0, 1), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output


def _nested(depth: int) -> object:
    value: object = "leaf"
    for level in range(depth):
        value = {"k": value} if level % 2 == (depth - 1) % 2 else [value]
    return value


def _event(spec: dict) -> NewEvent:
    payload = spec.get("payload")
    if "nested_arguments" in spec:
        payload = {"tool_calls": [{"id": "c1", "name": "run", "arguments": _nested(spec["nested_arguments"])}]}
    return NewEvent(type=spec["type"], payload=payload, idempotency_key=spec.get("key"))


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
@pytest.mark.parametrize("path", _cases("payload"), ids=lambda p: p.stem)
def test_payload_case(path, backend, tmp_path):
    case = json.loads(path.read_text(encoding="utf-8"))
    log = InMemoryEventLog() if backend == "memory" else SQLiteEventLog(tmp_path / "corpus.db")
    with log:
        *accepted, last = case["events"]
        for seq, spec in enumerate(accepted):
            log.append("s", [_event(spec)], expected_seq=seq)
        if case["refused"] is None:
            log.append("s", [_event(last)], expected_seq=len(accepted))
            return
        before = log.read("s")
        with pytest.raises(getattr(errors, case["refused"])) as info:
            log.append("s", [_event(last)], expected_seq=len(accepted))
        if "rule" in case:
            assert info.value.rule == case["rule"]
        assert log.read("s") == before and log.last_seq("s") == len(accepted)
        assert log.verify().ok


@pytest.mark.parametrize("path", _cases("escape"), ids=lambda p: p.stem)
def test_escape_case(path):
    text = json.loads(path.read_text(encoding="utf-8"))["text"]
    assert contains_tag(text)
    envelope_escape(text)
