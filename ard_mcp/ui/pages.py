"""The reading routes: search at `/`, an entry at `/entry?id=...`, how to attach this registry to an MCP host at
`/attach`, and the shipped assets. Each parses the URL, calls its view builder in a worker thread (ranking and
SQLite block) and renders. A client that asks `/` for no page (curl, a script) gets a short JSON index of what
this server answers where: it got a bare 404 before, which told a person trying the server nothing (issue #55)."""

from __future__ import annotations

from functools import cache
from importlib.resources import files

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ard_mcp import __version__
from ard_mcp.surfaces.host_blocks import Launch, blocks
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


def mcp_endpoint(request: Request) -> Launch:
    """This server's MCP endpoint, as a host reaches it: at its public URL, else where this browser reached it."""
    state = state_of(request)
    sse = state.settings.transport == "sse"
    base = state.config.source_url or str(request.base_url)
    return Launch.remote(f"{base.rstrip('/')}/{'sse' if sse else 'mcp'}", "sse" if sse else "http")


def index(request: Request) -> Response:
    """What `/` answers a client that asks for no page: where each of this server's surfaces is."""
    endpoint = mcp_endpoint(request)
    said = {
        "service": "ard-mcp",
        "version": __version__,
        "mcp": {"url": endpoint.url, "transport": "sse" if endpoint.transport == "sse" else "streamable-http"},
        "rest": {"openapi": "/openapi.json", "search": 'POST /search with {"text": "what the agent should do"}', "list": "GET /agents"},
        "webPage": "GET / with Accept: text/html (a browser)",
        "attach": "GET /attach: the block that adds this registry to Claude Desktop, Claude Code, Cursor or VS Code",
    }
    return secured(request, JSONResponse(said, headers={"Cache-Control": "no-store"}))


def page_routes(site: Site) -> list[tuple[str, str, Handler]]:
    async def search(request: Request) -> Response:
        if not wants_html(request):
            return index(request)
        state = PageState.of(request.query_params)
        view = await run(search_view, state_of(request).open_registry(), state, site.viewer(request))
        return page(request, "search.html", view=view, **site.nav(request))

    async def entry(request: Request) -> Response:
        task = request.query_params.get("q", "").strip() or None
        reference = request.query_params.get("id", "")
        view = await run(entry_view, state_of(request).open_registry(), reference, task, site.viewer(request))
        operator = site.operator(request) is not None
        return page(request, "entry.html", view=view, task=task or "", operator=operator, **site.nav(request))

    async def attach(request: Request) -> Response:
        found = blocks("ard", mcp_endpoint(request))
        return page(request, "attach.html", blocks=found, endpoint=mcp_endpoint(request), **site.nav(request))

    return [("/", "GET", search), ("/entry", "GET", entry), ("/attach", "GET", attach)]
