"""Every HTTP request, seen from outside all the others (the guard's refusals included): an id the log lines
written for it carry, a server span when tracing (its caller's `traceparent` its parent), its duration by
route template, method and status, and one access line when it ends.

The route is the template the router would pick (`/agents/{id:path}`, never the path a client sent): one series
per route, however many agents are asked for; a path no route answers is `unmatched`. The span's own
`traceparent` replaces the caller's in the request the app sees, so what runs elsewhere for it (an MCP tool
call, handled in the MCP session's task, which reads the request's headers) is a span of this request.

The access line is written here rather than by uvicorn, whose own line (dropped: `OwnAccessLines`) logged the
query string verbatim, `?access_token=...` included, and had no duration. Ours names the query's parameters
with their values left out, and carries method, route, status, duration, client and request id as fields
(`json_logs`), so a collector needs no pattern to read them."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Sequence
from contextvars import ContextVar
from urllib.parse import unquote

from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ard_mcp.monitoring import metrics, tracing

_REQUEST_ID: ContextVar[str | None] = ContextVar("ard_mcp_request_id", default=None)
_SCOPE: ContextVar[Scope | None] = ContextVar("ard_mcp_request_scope", default=None)
UNMATCHED = "unmatched"
ACCESS_LOGGER = "uvicorn.access"  # uvicorn's name, kept: what operators filter their access lines by
FIELDS = "ard_fields"  # a record's attribute holding fields of its own for the JSON lines (`json_logs`)
HIDDEN = "***"
MAX_QUERY_NAMES = 20  # a query of thousands of parameters is logged as its first names and a count
MAX_NAME_CHARS = 64
access_log = logging.getLogger(ACCESS_LOGGER)


def request_id() -> str | None:
    """The id of the HTTP request being answered, None outside one."""
    return _REQUEST_ID.get()


def request_scope() -> Scope | None:
    """The ASGI scope of the HTTP request being answered (its headers, its app), None outside one: what an
    error response reads to decide whether its caller may be told the details (`surfaces.rest.errors`)."""
    return _SCOPE.get()


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


def redacted_query(query: str) -> str:
    """A query string with every value replaced by `***`: the names say what a request asked for, while a
    value may be a credential (`access_token`, `api_key`) or whatever a caller searched for."""
    if not query:
        return ""
    pairs = [pair for pair in query.split("&") if pair]
    names = [unquote(pair.partition("=")[0].replace("+", " "))[:MAX_NAME_CHARS] for pair in pairs[:MAX_QUERY_NAMES]]
    shown = "&".join(f"{name}={HIDDEN}" for name in names)
    return shown + (f"&...({len(pairs) - MAX_QUERY_NAMES} more)" if len(pairs) > MAX_QUERY_NAMES else "")


def logged_path(scope: Scope) -> str:
    """The request's path as an access line shows it: the path, and its query's names without their values."""
    query = redacted_query(scope.get("query_string", b"").decode("latin-1"))
    return str(scope.get("path", "")) + (f"?{query}" if query else "")


class OwnAccessLines(logging.Filter):
    """Keeps the access lines `RequestMonitor` writes and drops uvicorn's own (same logger), which quote the
    query string verbatim and come before the response is finished."""

    def filter(self, record: logging.LogRecord) -> bool:
        return hasattr(record, FIELDS)


OWN_ACCESS_LINES = OwnAccessLines()


def _access_line(scope: Scope, route: str, status: int, seconds: float) -> None:
    if not access_log.isEnabledFor(logging.INFO):
        return
    client = scope.get("client")
    where = f"{client[0]}:{client[1]}" if client else "-"
    method, path, millis = scope["method"], logged_path(scope), round(seconds * 1000, 2)
    fields = {"method": method, "route": route, "path": path, "status": status, "duration_ms": millis, "client": where}
    version = scope.get("http_version", "1.1")
    access_log.info('%s - "%s %s HTTP/%s" %d %.1f ms', where, method, path, version, status, millis, extra={FIELDS: fields})


class RequestMonitor:
    def __init__(self, app: ASGIApp, routes: Sequence[BaseRoute]) -> None:
        self.app = app
        self.routes = routes
        access_log.addFilter(OWN_ACCESS_LINES)  # once: a logger keeps one copy of a filter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        route, method = route_of(self.routes, scope), scope["method"]
        status = 500  # what a request that ends without a response gets from the server
        token, scoped = _REQUEST_ID.set(uuid.uuid4().hex), _SCOPE.set(scope)

        async def sent(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        started = time.perf_counter()
        try:
            if not tracing.enabled():
                try:
                    await self.app(scope, receive, sent)
                finally:
                    _access_line(scope, route, status, time.perf_counter() - started)
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
                    _access_line(scope, route, status, time.perf_counter() - started)  # in the span: the line names it
        finally:
            metrics.request(route, method, status, time.perf_counter() - started)
            _REQUEST_ID.reset(token)
            _SCOPE.reset(scoped)
