"""The strategy comparison that demo and replay both print: the same table as the cache benchmark."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from contextwright.cli._common import print_rows


def comparison_json(rows: Iterable[Any]) -> list[dict[str, Any]]:
    """Strategy results (one transcript, or summed by ``aggregate``) as JSON-friendly dicts."""
    return [
        {
            "strategy": row.name,
            "cache_read_share": round(row.cache_read_share, 4),
            "input_cost_usd": str(row.input_cost.quantize(Decimal("0.0001"))),
            "relative_input_cost": None if row.relative_input_cost is None else round(row.relative_input_cost, 3),
            "peak_request_tokens": row.peak_request_tokens,
            "overflows": row.overflows,
            "task_visible": None if row.task_visible is None else round(row.task_visible, 4),
            "evidence_recall": None if row.evidence.share is None else round(row.evidence.share, 4),
            "relative_cost_with_read_backs": None
            if row.relative_cost_with_read_backs is None
            else round(row.relative_cost_with_read_backs, 3),
            "read_backs": row.evidence.read_backs,
            "evidence_pairs": row.evidence.pairs,
            "evidence_misses": dict(row.evidence.misses),
            "read_back_tokens": row.evidence.read_back_tokens,
            "counting": row.counting,
        }
        for row in rows
    ]


def print_comparison(rows: list[dict[str, Any]], *, window: int, what: str) -> None:
    """Print :func:`comparison_json` rows with the report's headings and cell forms (never cut)."""
    from contextwright.report.html import COMPARISON_COLUMNS, comparison_cell  # only a comparison loads the report

    columns = [c for c in COMPARISON_COLUMNS if any(c in row for row in rows)]
    counting = {str(row["counting"]) for row in rows if row.get("counting")}
    counted = f", tokens counted with {', '.join(sorted(counting))} for every strategy" if counting else ""
    headers = [COMPARISON_COLUMNS[c] for c in columns]
    print_rows(
        headers,
        [[comparison_cell(c, row.get(c)) for c in columns] for row in rows],
        title=f"{what} under common strategies ({window:,}-token window, offline cache simulation{counted})",
        numeric=headers[1:],
    )
