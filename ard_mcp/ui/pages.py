"""The reading routes: search at `/`, an entry at `/entry?id=...`, and the shipped assets. Each parses the
URL, calls its view builder in a worker thread (ranking and SQLite block) and renders."""

from __future__ import annotations

from functools import cache
from importlib.resources import files

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from ard_mcp.surfaces.rest.routes import run, state_of
from ard_mcp.ui.entry_view import entry_view
from ard_mcp.ui.render import page, wants_html
from ard_mcp.ui.search_view import PageState, search_view
from ard_mcp.ui.security import secured
from ard_mcp.ui.site import Handler, Site

_ASSETS = {"app.css": "text/css; charset=utf-8", "app.js": "text/javascript; charset=utf-8", "icon.svg": "image/svg+xml"}


@cache
def _asset(name: str) -> bytes:
    return files("ard_mcp.ui").joinpath("static", name).read_bytes()


async def asset(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in _ASSETS:
        raise HTTPException(404)
    response = Response(_asset(name), media_type=_ASSETS[name], headers={"Cache-Control": "public, max-age=3600"})
    return secured(request, response)


def page_routes(site: Site) -> list[tuple[str, str, Handler]]:
    async def search(request: Request) -> Response:
        if not wants_html(request):
            raise HTTPException(404)  # what `/` answered JSON clients before the page existed
        state = PageState.of(request.query_params)
        view = await run(search_view, state_of(request).open_registry(), state, site.viewer(request))
        return page(request, "search.html", view=view, **site.nav(request))

    async def entry(request: Request) -> Response:
        task = request.query_params.get("q", "").strip() or None
        reference = request.query_params.get("id", "")
        view = await run(entry_view, state_of(request).open_registry(), reference, task, site.viewer(request))
        operator = site.operator(request) is not None
        return page(request, "entry.html", view=view, task=task or "", operator=operator, **site.nav(request))

    return [("/", "GET", search), ("/entry", "GET", entry)]
