"""What every route of the page shares: the signed-in operators, who the browser is (what it may see,
whether it is the operator), and rendering a registry error as a page."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response

from ard_mcp.errors import ArdError
from ard_mcp.search.visibility import Viewer
from ard_mcp.surfaces.auth import Principal
from ard_mcp.surfaces.rest.routes import state_of
from ard_mcp.ui.operator_view import LastCrawl
from ard_mcp.ui.render import page
from ard_mcp.ui.security import Sessions

Handler = Callable[[Request], Awaitable[Response]]


class Site:
    def __init__(self) -> None:
        self.sessions = Sessions()
        self.last_crawl: LastCrawl | None = None  # the newest crawl started from the operator's page

    def signed_in(self, request: Request) -> Principal | None:
        return self.sessions.principal(request)

    def viewer(self, request: Request) -> Viewer:
        """What this browser may see: its operator's session, else a bearer token (scripts), else anonymous."""
        tokens = state_of(request).settings.tokens
        return tokens.viewer_for(self.signed_in(request) or tokens.principal(request.headers))

    def operator(self, request: Request) -> Principal | None:
        """The operator behind the request (one who may write every publisher, as the crawl route asks), or
        None. On a registry without tokens, where anyone may write, anyone is the operator."""
        tokens = state_of(request).settings.tokens
        principal = self.signed_in(request) if tokens.configured else tokens.writer(None)
        return principal if principal is not None and principal.may_write("*") else None

    def nav(self, request: Request) -> dict[str, bool]:
        """What the page's header needs: whether to offer signing out."""
        return {"signed_in": self.signed_in(request) is not None}

    def guarded(self, handler: Handler) -> Handler:
        """`handler` with a registry error rendered as a page (its status, its message)."""

        async def endpoint(request: Request) -> Response:
            try:
                return await handler(request)
            except ArdError as exc:
                return page(request, "error.html", exc.http_status, message=exc.message, **self.nav(request))

        endpoint.__name__ = handler.__name__
        return endpoint
