"""The look-alike table shipped as package data is what its generator writes today."""

from __future__ import annotations

import importlib.util
import json
import unicodedata
from importlib import resources
from pathlib import Path

import pytest

GENERATOR = Path(__file__).resolve().parents[2] / "scripts" / "gen_lookalikes.py"


def test_the_table_is_up_to_date_with_its_generator():
    pytest.importorskip("confusable_homoglyphs", reason="the generator reads Unicode's confusables from this dev package")
    spec = importlib.util.spec_from_file_location("gen_lookalikes", GENERATOR)
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    shipped = json.loads(resources.files("contextwright.assembly").joinpath("lookalikes.json").read_text(encoding="utf-8"))
    if shipped["unicode_version"] != unicodedata.unidata_version:
        pytest.skip(
            f"the table was generated for Unicode {shipped['unicode_version']}, this Python has {unicodedata.unidata_version}"
        )
    assert generator.build_table() == shipped, "run: python scripts/gen_lookalikes.py"
