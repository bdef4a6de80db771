"""``GET /problems/<slug>``: what each problem type means (the types are URIs that resolve)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from contextwright.service.problems import PROBLEM_TYPES, Problem

router = APIRouter(tags=["problems"])


@router.get("/problems", include_in_schema=False)
def every_problem() -> dict[str, Any]:
    """Every problem type."""
    return {"problems": [_describe(slug) for slug in sorted(PROBLEM_TYPES)]}


@router.get("/problems/{slug}", include_in_schema=False)
def one_problem(slug: str) -> dict[str, Any]:
    """One problem type."""
    if slug not in PROBLEM_TYPES:
        raise Problem("not-found", f"no problem type {slug!r}")
    return _describe(slug)


def _describe(slug: str) -> dict[str, Any]:
    kind = PROBLEM_TYPES[slug]
    return {"type": kind.uri, "status": kind.status, "title": kind.title, "advice": kind.advice}
