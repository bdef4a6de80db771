"""The web console at ``/console``: static files served by the app itself (no CDN).

The page reads only the service's own API, with the API key the user enters
(kept in the tab's ``sessionStorage``, sent as a bearer header).
"""

from __future__ import annotations

from html import escape
from importlib import resources

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response

from contextwright.service.problems import Problem

router = APIRouter(tags=["console"], include_in_schema=False)

_ASSETS = {
    "console.js": "text/javascript; charset=utf-8",
    "console.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
# The page and its assets come from this origin only; no inline script.
_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"


def _read(name: str) -> str:
    return resources.files("contextwright.service").joinpath("static", name).read_text(encoding="utf-8")


@router.get("/console")
def console_page() -> HTMLResponse:
    """The console page."""
    from contextwright.providers.wires import WIRES

    options = "\n".join(f'<option value="{escape(name)}">{escape(name)}</option>' for name in WIRES)
    page = _read("index.html").replace("<!--wires-->", options)
    return HTMLResponse(page, headers={"Content-Security-Policy": _CSP, "Cache-Control": "no-cache"})


@router.get("/console/assets/{name}")
def console_asset(name: str) -> Response:
    """A script or stylesheet of the console."""
    if name not in _ASSETS:
        raise Problem("not-found", f"no console asset {name!r}")
    return Response(_read(name), media_type=_ASSETS[name], headers={"Cache-Control": "no-cache"})
