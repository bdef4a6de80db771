"""The application factory: one store, the gate, the routes, the console, problem documents."""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from contextwright import __version__
from contextwright.budget.estimator import HeuristicEstimator
from contextwright.clock import Clock, SystemClock
from contextwright.errors import ContextwrightError
from contextwright.log import open_log
from contextwright.runtime.engine import SECRET_SETTING
from contextwright.service import console, problem_pages
from contextwright.service.config import ServiceConfig
from contextwright.service.gate import Gate
from contextwright.service.leases import open_leases
from contextwright.service.limits import RateLimiter
from contextwright.service.problems import MEDIA_TYPE, Problem, problem_for
from contextwright.service.routes import reads, requests, sessions, writes
from contextwright.service.sessions import Sessions
from contextwright.service.store import open_service_store

logger = logging.getLogger("contextwright.service")


def create_app(
    config: ServiceConfig | None = None, *, clock: Clock | None = None, monotonic: Callable[[], float] | None = None
) -> FastAPI:
    """A service on the store of ``config`` (opened now, closed at shutdown)."""
    config = config or ServiceConfig()
    clock = clock or SystemClock()
    log = open_log(config.store, clock=clock, pool_size=config.pool_size)
    store = open_service_store(config.store, clock=clock, pool_size=max(2, config.pool_size // 4))
    leases = open_leases(store)
    # The same secret an embedded engine on this store uses, so nonces match across both.
    secret = bytes.fromhex(log.setting(SECRET_SETTING, secrets.token_hex(32)))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        leases.close()
        store.close()
        log.close()

    app = FastAPI(
        title="Contextwright",
        version=__version__,
        summary="Sessions of a context engine for LLM agents: record, build the next request, inspect.",
        lifespan=lifespan,
        # The interactive docs pages load their scripts from a CDN; the schema itself is served here.
        docs_url=None,
        redoc_url=None,
    )
    app.state.config = config
    app.state.store = store
    app.state.sessions = Sessions(
        log=log,
        store=store,
        clock=clock,
        estimator=HeuristicEstimator(),
        secret=secret,
        leases=leases,
        cache_events=config.cache_events,
    )
    for module in (sessions, writes, requests, reads):
        app.include_router(module.router)
    app.include_router(problem_pages.router)
    if config.console:
        app.include_router(console.router)
    _handle_errors(app)
    ticks = monotonic or time.monotonic
    limiter = RateLimiter(config.rate_limit, monotonic=ticks)
    # Keyed by client address, which anyone can vary: fewer buckets than keys.
    failures = RateLimiter(config.auth_failure_limit, monotonic=ticks, max_keys=10_000)
    app.add_middleware(Gate, store=store, limiter=limiter, failures=failures, max_body_bytes=config.max_body_bytes)
    return app


def app_from_env() -> FastAPI:
    """The factory uvicorn's workers call (settings from ``CONTEXTWRIGHT_SERVICE_*``)."""
    return create_app(ServiceConfig.from_env())


def problem_response(problem: Problem, request: Request) -> JSONResponse:
    """A problem document as an HTTP answer."""
    return JSONResponse(
        problem.document(request.url.path), status_code=problem.type.status, media_type=MEDIA_TYPE, headers=problem.headers
    )


def _handle_errors(app: FastAPI) -> None:
    async def on_problem(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, Problem)
        return problem_response(exc, request)

    async def on_engine_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ContextwrightError)
        problem = problem_for(exc)
        if problem.type.status >= 500:
            logger.error("%s on %s: %s", type(exc).__name__, request.url.path, exc.message)
        return problem_response(problem, request)

    async def on_invalid(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        errors = [_error(e) for e in exc.errors()]
        if any(e["type"] == "json_invalid" for e in errors):
            problem = Problem("malformed-json", "the body is not valid JSON: " + "; ".join(e["msg"] for e in errors))
        else:
            summary = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in errors[:5])
            problem = Problem("invalid-request", summary, errors=errors)
        return problem_response(problem, request)

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        slug = {404: "not-found", 405: "method-not-allowed"}.get(exc.status_code, "invalid-request")
        detail = exc.detail if isinstance(exc.detail, str) else "the request was refused"
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            # Starlette names only the first matching route's methods; a path has one route per method.
            headers["Allow"] = ", ".join(_allowed(request))
        return problem_response(Problem(slug, detail, headers=headers), request)

    async def on_crash(request: Request, exc: Exception) -> JSONResponse:
        logger.exception("unhandled error on %s", request.url.path, exc_info=exc)
        return problem_response(Problem("internal", "an internal error occurred"), request)

    app.add_exception_handler(Problem, on_problem)
    app.add_exception_handler(ContextwrightError, on_engine_error)
    app.add_exception_handler(RequestValidationError, on_invalid)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(Exception, on_crash)


def _allowed(request: Request) -> list[str]:
    """Every method some route serves on this path (a full match means path and method both fit)."""
    allowed = []
    for method in ("DELETE", "GET", "PATCH", "POST", "PUT"):
        scope = {**request.scope, "method": method}
        if any(route.matches(scope)[0] == Match.FULL for route in request.app.router.routes):
            allowed.append(method)
    return allowed


def _error(error: Any) -> dict[str, Any]:
    # Only JSON-safe members: the offending input may be anything.
    return {"loc": [str(p) for p in error.get("loc", ())], "msg": str(error.get("msg", "")), "type": str(error.get("type", ""))}
