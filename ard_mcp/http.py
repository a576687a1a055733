"""One Starlette app, one process: MCP (streamable HTTP at `/mcp`, or SSE at `/sse`) beside the REST
surfaces of ARD v0.5 (§7), the Xu discovery profile and AIDIP, all over ONE registry.

Every route is a thin adapter: parse and validate the body with the pydantic model that defines it, call
the registry (in a worker thread: ranking and SQLite are blocking), answer with the model that defines the
response. `OPERATIONS` is the single table of routes; the Starlette routes and `/openapi.json` are both
generated from it. Errors are answered in the object of the draft a route belongs to (see `Dialect`), never
as a bare 500: an unexpected exception is logged and answered as the spec's internal error.
"""

from __future__ import annotations

import json
import logging
import math
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from enum import Enum
from functools import partial
from typing import Any, TypeVar
from urllib.parse import urlsplit

import anyio
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ard_mcp import __version__, aidip, formats, xu
from ard_mcp.catalog import CatalogEntry, HostInfo, check_identifier, normalize_identifier, parse_as
from ard_mcp.config import Config, HttpSettings
from ard_mcp.errors import (
    ArdError,
    InvalidArgument,
    MethodNotAllowed,
    MisdirectedRequest,
    NotFound,
    PayloadTooLarge,
    UnsupportedMediaType,
)
from ard_mcp.registry import Registry
from ard_mcp.server import build_server, warm_up_soon
from ard_mcp.wire import (
    AiCatalog,
    ArdSearchResponse,
    DeregisterResult,
    ErrorBody,
    ExploreRequest,
    ExploreResponse,
    Health,
    ListResponse,
    SearchRequest,
)

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)
MANIFEST_INLINE_LIMIT = 1000  # beyond this the manifest lists only the registry entry (its search API finds the rest)
REGISTRY_TYPE = "application/ai-registry+json"
_SIMPLE_BODY_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data", "text/plain")
_LIST_PARAMS = ("filter", "orderBy", "pageSize", "pageToken")


class Dialect(Enum):
    """Which draft's error object a route answers with."""

    ARD = "ard"  # {"error": {"code", "message"}, "errorCode", "message"} (Appendix B + ard.openapi.yaml)
    XU = "xu"  # {"code", "message", "correlation_id"} (Xu §12)
    AIDIP = "aidip"  # {"error": {"code", "message", "details"?}} (AIDIP invocation errors)


def dialect_for(method: str, path: str) -> Dialect:
    """The dialect of a request, also for requests no route answered (404, 405, 413, 421)."""
    if path.rstrip("/") == "/discover":
        return Dialect.XU
    if path.rstrip("/") == "/agents/search" or (path.rstrip("/") == "/agents" and method == "POST"):
        return Dialect.AIDIP
    if path.startswith("/agents/") and method in ("PUT", "DELETE"):
        return Dialect.AIDIP
    return Dialect.ARD


def error_response(dialect: Dialect, exc: ArdError, correlation_id: str | None = None) -> JSONResponse:
    correlation_id = correlation_id or uuid.uuid4().hex
    body: BaseModel
    if dialect is Dialect.XU:
        body = xu.error_body(exc, correlation_id)
    elif dialect is Dialect.AIDIP:
        body = aidip.error_body(exc)
    else:
        body = ErrorBody.of(exc.code, exc.message)
    headers = {"X-Correlation-Id": correlation_id}
    if exc.http_status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="ard-mcp"'
    return JSONResponse(body.model_dump(mode="json", by_alias=True), status_code=exc.http_status, headers=headers)


def model_response(model: BaseModel, status: int = 200) -> JSONResponse:
    return JSONResponse(model.model_dump(mode="json", by_alias=True), status_code=status)


# -- request parsing ------------------------------------------------------------------------------------
def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text} is out of range")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


async def json_body(request: Request) -> Any:
    """The body as JSON: malformed JSON, NaN, overflowing numbers, unpaired surrogates and absurd nesting
    are 400s here rather than failures deep inside the registry."""
    body = await request.body()
    if not body.strip():
        raise InvalidArgument("request body: expected a JSON object, got nothing")
    try:
        value = json.loads(body, parse_float=_finite, parse_constant=_no_constant)
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except json.JSONDecodeError as exc:
        raise InvalidArgument(f"request body: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except UnicodeError:
        raise InvalidArgument("request body: must be UTF-8 without unpaired surrogates") from None
    except RecursionError:
        raise InvalidArgument("request body: nested too deeply") from None
    except ValueError as exc:
        raise InvalidArgument(f"request body: {exc}") from None
    return value


def _page_size(text: str | None, default: int) -> int:
    if text is None or text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise InvalidArgument(f"pageSize: must be an integer between 1 and 100 (got {text!r})") from None


# -- application state ----------------------------------------------------------------------------------
@dataclass
class AppState:
    """What routes share: the settings and the one registry (set while the app runs)."""

    config: Config
    settings: HttpSettings
    registry: Registry | None = None
    openapi: dict[str, Any] = field(default_factory=dict)

    def open_registry(self) -> Registry:
        if self.registry is None:
            raise ArdError("the registry is not open (the server is starting or stopping)")
        return self.registry

    def base_url(self, request: Request) -> str:
        return (self.config.source_url or str(request.base_url)).rstrip("/") + "/"


def _state(request: Request) -> AppState:
    state: AppState = request.app.state.ard
    return state


async def run(fn: Callable[..., Any], *args: Any) -> Any:
    """Registry calls block (model inference, SQLite); they run in a worker thread."""
    return await anyio.to_thread.run_sync(partial(fn, *args))


# -- handlers --------------------------------------------------------------------------------------------
async def search(request: Request, state: AppState) -> Response:
    req = parse_as(SearchRequest, await json_body(request), "request")
    if req.query.text is None:
        raise InvalidArgument("request.query.text: is required for /search (use /explore for aggregations without text)")
    found = await run(state.open_registry().search, req.query.text, req.query.filter, req.pageSize, req.pageToken)
    return model_response(ArdSearchResponse(results=found.results, pageToken=found.pageToken))


async def explore(request: Request, state: AppState) -> Response:
    req = parse_as(ExploreRequest, await json_body(request), "request")
    query = req.query
    result = await run(state.open_registry().explore, query.text if query else None, query.filter if query else None, req.resultType.facets)
    return model_response(result)


async def list_agents(request: Request, state: AppState) -> Response:
    params = request.query_params
    unknown = sorted(set(params) - set(_LIST_PARAMS))
    if unknown:
        raise InvalidArgument(f"query parameter {unknown[0]!r} is not supported; use {', '.join(_LIST_PARAMS)} (AIDIP attribute search is POST /agents/search)")
    size = _page_size(params.get("pageSize"), 20)
    found = await run(state.open_registry().browse, params.get("filter"), params.get("orderBy"), size, params.get("pageToken") or None)
    return model_response(found)


async def get_agent(request: Request, state: AppState) -> Response:
    entry = await run(state.open_registry().resolve, request.path_params["id"])
    return model_response(aidip.document(entry))


def _register_status(status: str) -> int:
    return 201 if status == "created" else 200


async def register_agent(request: Request, state: AppState) -> Response:
    raw = await json_body(request)
    entry = formats.to_entry(raw, request.query_params.get("format", "auto"))
    result = await run(state.open_registry().register, entry)
    return model_response(aidip.document(result.entry), _register_status(result.status))


def _same_agent(path_id: str, entry: dict[str, Any], existing: CatalogEntry | None) -> bool:
    identifier = normalize_identifier(str(entry.get("identifier", "")))
    if existing is not None:
        return identifier == existing.identifier
    source = (entry.get("metadata") or {}).get("sourceId")
    return identifier == normalize_identifier(path_id) or source == path_id


async def put_agent(request: Request, state: AppState) -> Response:
    path_id = request.path_params["id"]
    raw = await json_body(request)
    registry = state.open_registry()
    entry = formats.to_entry(raw, request.query_params.get("format", "auto"), default_id=path_id)
    try:
        existing: CatalogEntry | None = await run(registry.resolve, path_id)
    except NotFound:
        existing = None
    if not _same_agent(path_id, entry, existing):
        raise InvalidArgument(f"the body describes {entry.get('identifier')!r}, not the agent {path_id!r} named in the path")
    result = await run(registry.register, entry)
    return model_response(aidip.document(result.entry), _register_status(result.status))


async def delete_agent(request: Request, state: AppState) -> Response:
    registry = state.open_registry()
    entry = await run(registry.resolve, request.path_params["id"])
    result: DeregisterResult = await run(registry.deregister, entry.identifier)
    return model_response(result)


async def aidip_search(request: Request, state: AppState) -> Response:
    req = aidip.parse_search(await json_body(request))
    found = await run(aidip.search, state.open_registry(), req)
    return model_response(found)


async def discover(request: Request, state: AppState) -> Response:
    req = xu.parse_request(await json_body(request))
    full_allowed = state.settings.tokens.may_see_everything(request.headers)
    found = await run(partial(xu.discover, state.open_registry(), req, full_allowed=full_allowed))
    return model_response(found)


def _registry_identifier(base_url: str) -> str:
    host = urlsplit(base_url).hostname or "localhost"
    try:
        return check_identifier(f"urn:ai:{host}:registry:ard-mcp")
    except ValueError:
        return "urn:ai:localhost:registry:ard-mcp"


def _manifest(registry: Registry, base_url: str) -> AiCatalog:
    own = CatalogEntry(
        identifier=_registry_identifier(base_url),
        displayName="ard-mcp agent registry",
        type=REGISTRY_TYPE,
        url=base_url,
        description="Search (POST /search), explore (POST /explore) and list (GET /agents) the agents, MCP servers and skills "
        "registered here; Xu discovery at POST /discover, AIDIP at /agents; MCP at /mcp.",
        tags=["registry", "search"],
        capabilities=["search", "explore", "list", "discover"],
        version=__version__,
    )
    entries: list[CatalogEntry] = [own]
    total = registry.store.count()
    if total <= MANIFEST_INLINE_LIMIT:
        token: str | None = None
        while True:
            page = registry.list(None, None, 100, token)
            entries += page.items
            token = page.pageToken
            if token is None:
                break
    return AiCatalog(host=HostInfo(displayName="ard-mcp agent registry"), entries=entries)


async def well_known(request: Request, state: AppState) -> Response:
    return model_response(await run(_manifest, state.open_registry(), state.base_url(request)))


async def healthz(request: Request, state: AppState) -> Response:
    registry = state.open_registry()
    return model_response(Health(version=__version__, agents=await run(registry.store.count)))


async def openapi_json(request: Request) -> Response:
    return JSONResponse(_state(request).openapi)


# -- the route table ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Param:
    name: str
    description: str
    schema: dict[str, Any]


@dataclass(frozen=True)
class Operation:
    """One REST operation: the route, its models and errors, from which both routing and OpenAPI come."""

    method: str
    path: str  # OpenAPI spelling, e.g. /agents/{id}
    operation_id: str
    summary: str
    handler: Callable[[Request, AppState], Awaitable[Response]]
    dialect: Dialect
    response: type[BaseModel]
    success: tuple[int, ...] = (200,)
    request: type[BaseModel] | None = None
    errors: tuple[int, ...] = (400,)
    params: tuple[Param, ...] = ()
    write: bool = False
    tag: str = "ARD"

    @property
    def route_path(self) -> str:
        return self.path.replace("{id}", "{id:path}")


_ID = Param("id", "The agent's urn:ai: identifier, or the Xu / AIDIP id it was registered with (URL-encoded).", {"type": "string"})
_FORMAT = Param("format", "The body's format: auto (default), ard, xu or aidip.", {"type": "string", "enum": list(formats.FORMATS), "default": "auto"})

OPERATIONS: tuple[Operation, ...] = (
    Operation("POST", "/search", "searchAgents", "ARD search: catalog entries ranked by relevance to a text", search, Dialect.ARD,
              ArdSearchResponse, request=SearchRequest),
    Operation("POST", "/explore", "exploreRegistry", "ARD explore: facet counts over the matched set", explore, Dialect.ARD,
              ExploreResponse, request=ExploreRequest),
    Operation("GET", "/agents", "listAgents", "ARD list: deterministic browsing with an Appendix A filter expression", list_agents,
              Dialect.ARD, ListResponse, params=(
                  Param("filter", "Appendix A expression, e.g. type = 'application/mcp-server+json' AND createdAfter > '2026-01-01'", {"type": "string"}),
                  Param("orderBy", "displayName, identifier, type, publisher, createdAt or updatedAt, each optionally DESC", {"type": "string"}),
                  Param("pageSize", "Entries per page (1-100, default 20)", {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}),
                  Param("pageToken", "The pageToken of the previous page", {"type": "string"}),
              )),
    Operation("POST", "/agents", "registerAgent", "AIDIP registration: an ARD entry, Xu Agent Metadata or AIDIP metadata (201 created, 200 updated)",
              register_agent, Dialect.AIDIP, aidip.AgentDocument, success=(201, 200), errors=(400, 401, 409), params=(_FORMAT,),
              write=True, tag="AIDIP"),
    Operation("POST", "/agents/search", "aidipSearch", "AIDIP search: filters (all must match) and an optional semantic query", aidip_search,
              Dialect.AIDIP, aidip.AidipSearchResponse, request=aidip.AidipSearchRequest, tag="AIDIP"),
    Operation("GET", "/agents/{id}", "getAgent", "One agent: the ARD catalog entry, which is also AIDIP agent metadata", get_agent,
              Dialect.ARD, aidip.AgentDocument, errors=(400, 404), params=(_ID,), tag="AIDIP"),
    Operation("PUT", "/agents/{id}", "updateAgent", "AIDIP update (or create) of the agent named in the path", put_agent, Dialect.AIDIP,
              aidip.AgentDocument, success=(200, 201), errors=(400, 401, 404, 409), params=(_ID, _FORMAT), write=True, tag="AIDIP"),
    Operation("DELETE", "/agents/{id}", "deleteAgent", "AIDIP deregistration", delete_agent, Dialect.AIDIP, DeregisterResult,
              errors=(400, 401, 404), params=(_ID,), write=True, tag="AIDIP"),
    Operation("POST", "/discover", "discover", "Xu discovery profile (D2): candidates with bindings, freshness and evidence", discover,
              Dialect.XU, xu.DiscoveryResponse, request=xu.DiscoveryRequest, tag="Xu"),
    Operation("GET", "/.well-known/ai-catalog.json", "aiCatalog", "This registry's ai-catalog.json manifest", well_known, Dialect.ARD,
              AiCatalog, errors=()),
    Operation("GET", "/healthz", "health", "Liveness and the number of registered entries", healthz, Dialect.ARD, Health, errors=(), tag="Service"),
)


def _endpoint(op: Operation) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        state = _state(request)
        correlation_id = uuid.uuid4().hex
        try:
            if op.write:
                state.settings.tokens.writer(request.headers)
            return await op.handler(request, state)
        except ArdError as exc:
            if exc.http_status >= 500:
                log.error("%s %s failed: %s", op.method, op.path, exc.message)
            return error_response(op.dialect, exc, correlation_id)
        except Exception:
            log.exception("%s %s failed unexpectedly (correlation id %s)", op.method, op.path, correlation_id)
            return error_response(op.dialect, ArdError(f"internal error; correlation id {correlation_id}"), correlation_id)

    endpoint.__name__ = op.operation_id
    return endpoint


# -- middleware --------------------------------------------------------------------------------------------
class GuardMiddleware:
    """Before any route: the Host header (DNS rebinding), the body size limit (413) and, for REST writes,
    a body type a browser cannot send cross-site without a CORS preflight (415). Answers in the spec's
    error object of the route the request was for."""

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


async def _http_exception(request: Request, exc: Exception) -> Response:
    """Starlette's own 404 and 405 (no route, wrong method) in the spec's error object."""
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    dialect = dialect_for(request.method, request.url.path)
    if status == 405:
        return error_response(dialect, MethodNotAllowed(f"{request.method} is not allowed on {request.url.path}"))
    if status == 404:
        return error_response(dialect, NotFound(f"no route {request.method} {request.url.path}; see /openapi.json"))
    detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
    failure = ArdError(str(detail))
    failure.http_status = status
    return error_response(dialect, failure)


async def _unexpected(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return error_response(dialect_for(request.method, request.url.path), ArdError("internal error"))


# -- the app -------------------------------------------------------------------------------------------------
def transport_security(settings: HttpSettings) -> TransportSecuritySettings:
    """The MCP SDK's Host / Origin checks, configured like the rest of the app."""
    hosts = settings.host_patterns()
    if "*" in hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=list(hosts), allowed_origins=settings.origin_patterns())


def build_app(config: Config, settings: HttpSettings, *, registry: Registry | None = None, warm: bool = True) -> Starlette:
    """The app. `registry`, when given, is an already opened registry the app takes over (and closes at
    shutdown); otherwise the app opens one at start-up. MCP tools and REST routes share it."""
    from ard_mcp.openapi import build_openapi  # noqa: PLC0415 - openapi imports this module's table

    state = AppState(config, settings)
    server = build_server(config, warm=False, shared=state.open_registry, tokens=settings.tokens)
    security = transport_security(settings)
    mcp_app: Starlette
    if settings.transport == "sse":
        mcp_app = server.sse_app(transport_security=security, max_request_body_size=settings.max_body_bytes, host=settings.host)
    else:
        mcp_app = server.streamable_http_app(
            streamable_http_path="/mcp", transport_security=security, max_request_body_size=settings.max_body_bytes, host=settings.host
        )
    routes: list[BaseRoute] = [Route(op.route_path, _endpoint(op), methods=[op.method]) for op in OPERATIONS]
    routes.append(Route("/openapi.json", openapi_json, methods=["GET"]))
    routes += mcp_app.routes

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        opened: Registry = registry if registry is not None else await anyio.to_thread.run_sync(Registry, config)
        state.registry = opened
        if warm:
            warm_up_soon(opened.warm_up)
        try:
            if settings.transport == "sse":
                yield
            else:
                async with server.session_manager.run():
                    yield
        finally:
            state.registry = None
            await anyio.to_thread.run_sync(opened.close)

    middleware = [Middleware(GuardMiddleware, settings=settings)]
    if settings.cors_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(settings.cors_origins),
                allow_methods=["GET", "POST", "PUT", "DELETE", "OPTIONS"],
                allow_headers=["Authorization", "Content-Type", "Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-Id"],
                expose_headers=["Mcp-Session-Id", "X-Correlation-Id"],
            )
        )
    app = Starlette(
        routes=routes,
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={HTTPException: _http_exception, Exception: _unexpected},
    )
    app.router.redirect_slashes = False  # every route is served at exactly its path: no redirects
    app.state.ard = state
    state.openapi = build_openapi(settings.transport)
    return app


def serve(config: Config, settings: HttpSettings, registry: Registry, log_level: str = "info") -> None:
    """Run the app with uvicorn; its logs go through ours (stderr), never to stdout."""
    import uvicorn  # noqa: PLC0415 - only the HTTP transports need it

    app = build_app(config, settings, registry=registry)
    uvicorn.run(app, host=settings.host, port=settings.port, log_config=None, log_level=log_level.lower(), lifespan="on")
