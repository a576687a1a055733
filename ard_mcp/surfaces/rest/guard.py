"""What is refused before any route: a Host header this server does not answer for (DNS rebinding, 421),
a body over the size limit (413) or not sent in time (408) and, for REST writes, a body type a browser can
send cross-site without a CORS preflight (415). Answered in the error object of the operation the request
was for.

A request body is read here, under one deadline, and handed on whole: a client sending a byte every few
seconds no longer holds a worker, and the MCP endpoint gets the same limits as the REST routes. The Host
header is lower-cased first (host names are case-insensitive; `LOCALHOST:8000` was answered by REST and
refused by the MCP endpoint)."""

from __future__ import annotations

import anyio
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ard_mcp.errors import ArdError, MisdirectedRequest, PayloadTooLarge, RequestTimeout, UnsupportedMediaType
from ard_mcp.surfaces.rest.errors import error_response
from ard_mcp.surfaces.rest.operations import dialect_for
from ard_mcp.surfaces.rest.settings import HttpSettings

_SIMPLE_BODY_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data", "text/plain")
_BODY_METHODS = ("POST", "PUT")


class GuardMiddleware:
    def __init__(self, app: ASGIApp, settings: HttpSettings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        scope = {**scope, "headers": [(k, v.lower() if k == b"host" else v) for k, v in scope["headers"]]}
        request = Request(scope)
        dialect = dialect_for(request.method, request.url.path)
        refusal = self._refusal(request)
        if refusal is None and request.method in _BODY_METHODS:
            body = await self._read_body(receive)
            if body is None:
                return  # the client went away
            if isinstance(body, ArdError):
                refusal = body
            else:
                receive = _replay(body, receive)
        if refusal is not None:
            await error_response(dialect, refusal)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _refusal(self, request: Request) -> ArdError | None:
        if not self.settings.host_allowed(request.headers.get("host")):
            return MisdirectedRequest(f"this server does not answer for host {request.headers.get('host')!r}; see --allowed-hosts")
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self.settings.max_body_bytes:
            return PayloadTooLarge(f"request body of {length} bytes is over the limit of {self.settings.max_body_bytes} bytes")
        if request.method in ("POST", "PUT") and not request.url.path.startswith(("/mcp", "/messages")):
            media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
            if media_type in _SIMPLE_BODY_TYPES:
                return UnsupportedMediaType(f"request body must be application/json (got {media_type})")
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
