"""What is refused before any route: a Host header this server does not answer for (DNS rebinding, 421),
a body over the size limit (413) or not sent in time (408), a web page of a foreign origin writing or
using the MCP endpoint or posting the web page's forms (403) and a body type a browser can send cross-site without a CORS preflight (415):
for REST writes anything but JSON, a missing Content-Type included. Answered in the error object of the
operation the request was for.

A request body is read here, under one deadline, and handed on whole: a client sending a byte every few
seconds no longer holds a worker, and the MCP endpoint gets the same limits as the REST routes. The Host
header is lower-cased first (host names are case-insensitive; `LOCALHOST:8000` was answered by REST and
refused by the MCP endpoint)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ard_mcp.errors import (
    ArdError,
    MisdirectedRequest,
    PayloadTooLarge,
    PermissionDenied,
    RateLimited,
    RequestTimeout,
    UnsupportedMediaType,
)
from ard_mcp.formats.bounded_json import UnreadableJson, read_json
from ard_mcp.formats.media_types import is_json
from ard_mcp.monitoring import metrics
from ard_mcp.surfaces import over_limit
from ard_mcp.surfaces.mcp.invoke import INVOKE_TOOLS
from ard_mcp.surfaces.mcp.server import WRITE_TOOLS
from ard_mcp.surfaces.rest.errors import error_response
from ard_mcp.surfaces.rest.operations import dialect_for, is_invocation, is_write
from ard_mcp.surfaces.rest.ratelimit import Limiter
from ard_mcp.surfaces.rest.settings import HttpSettings, is_loopback

_FORM = "application/x-www-form-urlencoded"
_SIMPLE_BODY_TYPES = (_FORM, "multipart/form-data", "text/plain")
_BODY_METHODS = ("POST", "PUT")
_MCP_PATHS = ("/mcp", "/sse", "/messages")


@dataclass(frozen=True)
class Forms:
    """The web page's form posts, which the guard holds to their own rules: their paths, and the one that calls
    an agent (a "Try it" form, rate-limited as an invocation). Given by the app that mounts the page."""

    paths: frozenset[str] = frozenset()
    invoke: str | None = None


class GuardMiddleware:
    def __init__(self, app: ASGIApp, settings: HttpSettings, forms: Forms = Forms()) -> None:
        self.app = app
        self.settings = settings
        self.forms = forms
        self.limiter = Limiter(settings.rate_limits)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        scope = {**scope, "headers": over_limit.without_marker([(k, v.lower() if k == b"host" else v) for k, v in scope["headers"]])}
        request = Request(scope)
        dialect = dialect_for(request.method, request.url.path)
        refusal = self._refusal(request)
        body = b""
        if refusal is None and request.method in _BODY_METHODS:
            read = await self._read_body(receive)
            if read is None:
                return  # the client went away
            if isinstance(read, ArdError):
                refusal = read
            else:
                body, receive = read, _replay(read, receive)
        if refusal is None:
            refusal = self._over_limit(request, body)
            if refusal is not None and _answers_its_own_limit(request, body, self.forms):
                scope, refusal = {**scope, "headers": over_limit.marked(scope["headers"], refusal)}, None
        if refusal is not None:
            await error_response(dialect, refusal)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _refusal(self, request: Request) -> ArdError | None:
        host = request.headers.get("host")
        if not self.settings.host_allowed(host):
            return MisdirectedRequest(f"this server does not answer for host {host!r}; see --allowed-hosts")
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self.settings.max_body_bytes:
            return PayloadTooLarge(f"request body of {length} bytes is over the limit of {self.settings.max_body_bytes} bytes")
        mcp, write = request.url.path.startswith(_MCP_PATHS), is_write(request.method, request.url.path)
        form = _is_form(request, self.forms)
        origin = request.headers.get("origin")
        if (mcp or write or form) and not self.settings.origin_allowed(origin, host):
            doing = "use the MCP endpoint" if mcp else "write to this registry" if write else "post this registry's forms"
            return PermissionDenied(
                f"web pages at origin {origin} may not {doing}; an operator allows an origin with --cors-origins (ARD_MCP_CORS_ORIGINS)"
            )
        media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if form and media_type != _FORM:
            return UnsupportedMediaType(f"the web page's forms send {_FORM} (got {media_type or 'no Content-Type'})")
        if request.method in _BODY_METHODS and not (mcp or form):
            if write and not is_json(media_type):
                return UnsupportedMediaType(
                    f"a write's body must be JSON sent with Content-Type: application/json (got {media_type or 'no Content-Type'})"
                )
            if media_type in _SIMPLE_BODY_TYPES:
                return UnsupportedMediaType(f"request body must be application/json (got {media_type})")
        return None

    def _over_limit(self, request: Request, body: bytes) -> RateLimited | None:
        """Count the request against its client's address and, with a valid token, its credential; a
        request with an invalid token also counts as a failed authentication (and none is checked once
        the address has used its allowance of those)."""
        address = request.client.host if request.client else ""
        if not self.limiter.applies_to(address, is_loopback(address)):
            return None
        keys, limit = [f"address {address}"], "auth_failures"
        try:
            if "authorization" in request.headers and self.settings.tokens.configured:
                self.limiter.check(limit, address)
                principal = self.settings.tokens.principal(request.headers)
                if principal is None:
                    self.limiter.take(limit, (address,))
                else:
                    keys.append(f"credential {principal.name}")
            limit = _kind(request, body, self.forms)
            self.limiter.take(limit, tuple(keys))
        except RateLimited as exc:
            metrics.rate_limited(limit)
            return exc
        return None

    async def _read_body(self, receive: Receive) -> bytes | ArdError | None:
        """The whole body, or the error refusing it; None when the client disconnected."""
        limit, chunks, seen = self.settings.max_body_bytes, [], 0
        try:
            with anyio.fail_after(self.settings.body_timeout):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return None
                    chunk = message.get("body", b"")
                    seen += len(chunk)
                    if seen > limit:
                        return PayloadTooLarge(f"request body is over the limit of {limit} bytes")
                    chunks.append(chunk)
                    if not message.get("more_body"):
                        return b"".join(chunks)
        except TimeoutError:
            return RequestTimeout(f"request body not received within {self.settings.body_timeout:g} s")


def _is_form(request: Request, forms: Forms) -> bool:
    """A post of one of the web page's forms."""
    return request.method == "POST" and request.url.path in forms.paths


def _kind(request: Request, body: bytes, forms: Forms) -> str:
    """Which rate limit a request counts against: invocations (calling an agent), writes, or reads; an MCP
    message (or batch) by the tools it calls. The web page's forms count as writes (signing in, a crawl), its
    "Try it" form as an invocation."""
    path = request.url.path
    if _is_form(request, forms):
        return "invocations" if path == forms.invoke else "writes"
    if not path.startswith(_MCP_PATHS):
        return "invocations" if is_invocation(request.method, path) else "writes" if is_write(request.method, path) else "reads"
    names = {m["params"].get("name") for m in _tool_calls(body) if isinstance(m.get("params"), dict)}
    return "invocations" if names & INVOKE_TOOLS else "writes" if names & WRITE_TOOLS else "reads"


def _answers_its_own_limit(request: Request, body: bytes, forms: Forms) -> bool:
    """Whether the operation, not the guard, answers this request's rate-limit refusal (`over_limit`): an MCP
    tool call (a tool error the host reads) and an invocation (audited, as every refused call is)."""
    if _kind(request, body, forms) == "invocations":
        return True
    return request.url.path.startswith(_MCP_PATHS) and bool(_tool_calls(body))


def _tool_calls(body: bytes) -> list[dict[str, Any]]:
    """The `tools/call` requests of an MCP message or batch."""
    try:
        message = read_json(body, max_bytes=len(body)) if body else None
    except UnreadableJson:
        return []  # the MCP SDK answers it as a parse error
    return [m for m in (message if isinstance(message, list) else [message]) if isinstance(m, dict) and m.get("method") == "tools/call"]


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that hands the app the body already read, then the client's own messages (disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
