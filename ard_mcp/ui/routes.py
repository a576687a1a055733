"""Every route of the web page, for the app to mount beside MCP and REST."""

from __future__ import annotations

from starlette.routing import BaseRoute, Route

from ard_mcp.ui.operator import operator_routes
from ard_mcp.ui.pages import asset, page_routes
from ard_mcp.ui.site import Site


def web_page_routes() -> list[BaseRoute]:
    site = Site()
    handled = [*page_routes(site), *operator_routes(site)]
    return [
        Route("/assets/{name}", asset, methods=["GET"]),
        *[Route(path, site.guarded(fn), methods=[method]) for path, method, fn in handled],
    ]
