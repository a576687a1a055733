"""Every HTTP request, seen from outside all the others (the guard's refusals included): an id the log lines
written for it carry, a server span when tracing (its caller's `traceparent` its parent), and its duration by
route template, method and status.

The route is the template the router would pick (`/agents/{id:path}`, never the path a client sent): one series
per route, however many agents are asked for; a path no route answers is `unmatched`. The span's own
`traceparent` replaces the caller's in the request the app sees, so what runs elsewhere for it (an MCP tool
call, handled in the MCP session's task, which reads the request's headers) is a span of this request."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from contextvars import ContextVar

from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ard_mcp.monitoring import metrics, tracing

_REQUEST_ID: ContextVar[str | None] = ContextVar("ard_mcp_request_id", default=None)
UNMATCHED = "unmatched"


def request_id() -> str | None:
    """The id of the HTTP request being answered, None outside one."""
    return _REQUEST_ID.get()


def route_of(routes: Sequence[BaseRoute], scope: Scope) -> str:
    """The template of the route that answers `scope` (or would, but for its method: a 405's), else `unmatched`."""
    partial = None
    for route in routes:
        match, _ = route.matches(scope)
        if match == Match.FULL:
            return str(getattr(route, "path", UNMATCHED))
        if match == Match.PARTIAL and partial is None:
            partial = str(getattr(route, "path", UNMATCHED))
    return partial or UNMATCHED


class RequestMonitor:
    def __init__(self, app: ASGIApp, routes: Sequence[BaseRoute]) -> None:
        self.app = app
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        route, method = route_of(self.routes, scope), scope["method"]
        status = 500  # what a request that ends without a response gets from the server
        token = _REQUEST_ID.set(uuid.uuid4().hex)

        async def sent(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        started = time.perf_counter()
        try:
            if not tracing.enabled():
                await self.app(scope, receive, sent)
                return
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            attributes = {"http.request.method": method, "http.route": route, "url.path": scope["path"]}
            with tracing.span(f"{method} {route}", attributes, parent=headers, kind="server") as span:
                own = [(k, v) for k, v in scope["headers"] if k.lower() != b"traceparent"]
                own += [(k.encode(), v.encode()) for k, v in tracing.outgoing().items()]
                try:
                    await self.app({**scope, "headers": own}, receive, sent)
                finally:
                    tracing.ended(span, {"http.response.status_code": status}, failed=status >= 500)
        finally:
            metrics.request(route, method, status, time.perf_counter() - started)
            _REQUEST_ID.reset(token)
