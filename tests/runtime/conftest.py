"""Fixtures shared by the runtime tests."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path) -> str:
    """One store per backend: a SQLite file, and a fresh schema on the test PostgreSQL server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/store.db"
    dsn = request.getfixturevalue("postgres_dsn")
    schema = request.getfixturevalue("postgres_schema")
    return f"{dsn}?schema={schema}"


def old_rebuild_inputs(*, views: bool, pinned: bool):
    """``_rebuild_inputs`` as versions before items were bounded on arrival recorded it.

    ``views`` and ``pinned``: whether that version recorded how views were sized and that pinned
    items yielded last (both only with the ``oversized_items`` yield)."""

    def inputs(result, tail) -> dict:
        recorded = {"upto_seq": result.upto_seq, "tail": tail.to_dict(), "yields": list(result.yields)}
        if "oversized_items" in result.yields:
            if views:
                recorded["views"] = "uncorrected"
            if pinned:
                recorded["pinned"] = "last"
        return recorded

    return inputs
