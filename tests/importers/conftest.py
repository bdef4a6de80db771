"""Writers for the small synthetic transcripts the importer tests build."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def write_jsonl(tmp_path: Path) -> Callable[[str, Iterable[Any]], Path]:
    """Write records one JSON per line; a ``str`` record is written verbatim (for bad lines)."""

    def write(name: str, records: Iterable[Any]) -> Path:
        path = tmp_path / name
        lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    return write


@pytest.fixture
def write_json(tmp_path: Path) -> Callable[[str, Any], Path]:
    """Write one JSON document, indented (so parse errors have interesting line numbers)."""

    def write(name: str, document: Any) -> Path:
        path = tmp_path / name
        path.write_text(json.dumps(document, indent=1), encoding="utf-8")
        return path

    return write


@pytest.fixture
def write_text(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write a text file as given."""

    def write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return write
