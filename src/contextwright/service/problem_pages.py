"""Open pages: ``GET /problems/<slug>`` (what each problem type means: the types are URIs
that resolve) and ``GET /healthz``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from contextwright.service.problems import PROBLEM_TYPES, Problem

router = APIRouter(tags=["problems"])


@router.get("/healthz", include_in_schema=False)
def health(request: Request) -> dict[str, str]:
    """Whether this worker can read its store (for load balancers and process managers)."""
    request.app.state.store.keys("healthz")
    return {"status": "ok"}


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
