"""What is refused before any route: a Host header this server does not answer for (DNS rebinding, 421),
a body over the size limit (413) and, for REST writes, a body type a browser can send cross-site without
a CORS preflight (415). Answered in the error object of the operation the request was for."""

from __future__ import annotations

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ard_mcp.errors import ArdError, MisdirectedRequest, PayloadTooLarge, UnsupportedMediaType
from ard_mcp.surfaces.rest.errors import error_response
from ard_mcp.surfaces.rest.operations import dialect_for
from ard_mcp.surfaces.rest.settings import HttpSettings

_SIMPLE_BODY_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data", "text/plain")


class GuardMiddleware:
    def __init__(self, app: ASGIApp, settings: HttpSettings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        dialect = dialect_for(request.method, request.url.path)
        refusal = self._refusal(request)
        if refusal is not None:
            await error_response(dialect, refusal)(scope, receive, send)
            return
        if request.url.path.startswith(("/mcp", "/sse", "/messages")):
            await self.app(scope, receive, send)  # the SDK enforces the same limit and answers in JSON-RPC
            return
        await self.app(scope, self._limited(receive), send)

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

    def _limited(self, receive: Receive) -> Receive:
        limit = self.settings.max_body_bytes
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise PayloadTooLarge(f"request body is over the limit of {limit} bytes")
            return message

        return limited
