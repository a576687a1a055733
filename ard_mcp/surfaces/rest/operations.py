"""`OPERATIONS`: the single table of the REST operations, from which the Starlette routes, each request's
error dialect and `/openapi.json` are all derived, so none of them can drift from the others."""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, compile_path

from ard_mcp.errors import ArdError, InvalidArgument
from ard_mcp.formats import aidip, registration, xu
from ard_mcp.formats.messages import (
    AiCatalog,
    ArdSearchResponse,
    DeregisterResult,
    ExploreRequest,
    ExploreResponse,
    Health,
    ListResponse,
    Ready,
    SearchRequest,
)
from ard_mcp.invocation.audit import InvocationLog
from ard_mcp.invocation.calls import AgentInput, AgentOutput
from ard_mcp.monitoring.requests import request_id
from ard_mcp.surfaces.rest import idempotency
from ard_mcp.surfaces.rest.errors import Dialect, error_response
from ard_mcp.surfaces.rest.routes import (
    AppState,
    aidip_search,
    crawl,
    delete_agent,
    discover,
    explore,
    get_agent,
    healthz,
    invocations,
    invoke_agent,
    list_agents,
    put_agent,
    readyz,
    register_agent,
    search,
    state_of,
    well_known,
)
from ard_mcp.web.report import CrawlReport, CrawlRequest

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Param:
    name: str
    description: str
    schema: dict[str, Any]


@dataclass(frozen=True)
class Operation:
    """One REST operation: its route, models, errors and error dialect, from which routing, the dialect of
    each request and OpenAPI all come."""

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
    write: bool = False  # needs a credential when the server has tokens (and is rate-limited and origin-checked as a write)
    invocation: bool = False  # calls an agent: counted against the invocations rate limit
    needs_token_for: str = "writes"  # what a request without a valid token is told it needed one for
    keyed: bool = False  # takes an Idempotency-Key (`idempotency`): a POST that writes to the store
    tag: str = "ARD"

    @property
    def route_path(self) -> str:
        return self.path.replace("{id}", "{id:path}")

    def route(self) -> Route:
        return Route(self.route_path, _endpoint(self), methods=[self.method])


def _endpoint(op: Operation) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        state = state_of(request)
        correlation_id = request_id() or uuid.uuid4().hex  # the request's id in the logs (`monitoring.requests`)

        def refused(exc: ArdError) -> Response:
            if exc.http_status >= 500:
                log.error("%s %s failed: %s", op.method, op.path, exc.message)
            return error_response(op.dialect, exc, correlation_id)

        async def handled() -> Response:
            try:
                if op.write:  # before the body is read: an unauthenticated write costs nothing
                    request.state.writer = state.settings.tokens.writer(request.headers, op.needs_token_for)
                if op.write and op.method == "POST" and not op.keyed and idempotency.HEADER in request.headers:
                    raise InvalidArgument(f"{idempotency.HEADER} is not taken by {op.method} {op.path}: its calls are not kept to replay")
                return await op.handler(request, state)
            except ArdError as exc:
                return refused(exc)
            except Exception:
                log.exception("%s %s failed unexpectedly (correlation id %s)", op.method, op.path, correlation_id)
                return error_response(op.dialect, ArdError(f"internal error; correlation id {correlation_id}"), correlation_id)

        if op.keyed and idempotency.HEADER in request.headers:
            return await idempotency.keyed(request, state, op.needs_token_for, handled, refused)
        return await handled()

    endpoint.__name__ = op.operation_id
    return endpoint


_ID = Param("id", "The agent's urn:air: identifier, or the Xu / AIDIP id it was registered with (URL-encoded).", {"type": "string"})
_OPERATION = Param(
    "operation",
    "The tool, skill or operation to call (see get_agent_tools); optional when the agent has one.",
    {"type": "string"},
)
_LIMIT = Param("limit", "How many records, newest first (1-1000; default 100).", {"type": "integer", "minimum": 1, "maximum": 1000})
_FORMAT = Param(
    "format",
    "The body's format: auto (default), ard, xu, aidip or a2a (an A2A agent card).",
    {"type": "string", "enum": list(registration.FORMATS), "default": "auto"},
)

OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "POST",
        "/search",
        "searchAgents",
        "ARD search: catalog entries ranked by relevance to a text",
        search,
        Dialect.ARD,
        ArdSearchResponse,
        request=SearchRequest,
    ),
    Operation(
        "POST",
        "/explore",
        "exploreRegistry",
        "ARD explore: facet counts over the matched set",
        explore,
        Dialect.ARD,
        ExploreResponse,
        request=ExploreRequest,
    ),
    Operation(
        "GET",
        "/agents",
        "listAgents",
        "ARD list: deterministic browsing with an Appendix A filter expression",
        list_agents,
        Dialect.ARD,
        ListResponse,
        params=(
            Param(
                "filter",
                "Appendix A expression, e.g. type = 'application/mcp-server-card+json' AND createdAfter > '2026-01-01'",
                {"type": "string"},
            ),
            Param("orderBy", "displayName, identifier, type, publisher, createdAt or updatedAt, each optionally DESC", {"type": "string"}),
            Param("pageSize", "Entries per page (1-100, default 20)", {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}),
            Param("pageToken", "The pageToken of the previous page", {"type": "string"}),
        ),
    ),
    Operation(
        "POST",
        "/agents",
        "registerAgent",
        "AIDIP registration: an ARD entry, an A2A agent card, Xu Agent Metadata or AIDIP metadata (201 created, 200 updated)",
        register_agent,
        Dialect.AIDIP,
        aidip.RegisteredDocument,
        success=(201, 200),
        errors=(400, 401, 409, 422),
        params=(_FORMAT,),
        write=True,
        keyed=True,
        tag="AIDIP",
    ),
    Operation(
        "POST",
        "/crawl",
        "crawlCatalogs",
        "ARD §6.2 web ingestion: crawl domains and documents, import MCP registries, or refresh what was crawled",
        crawl,
        Dialect.ARD,
        CrawlReport,
        request=CrawlRequest,
        errors=(400, 401, 403, 409, 422),
        write=True,
        keyed=True,
        tag="Crawler",
    ),
    Operation(
        "POST",
        "/agents/search",
        "aidipSearch",
        "AIDIP search: filters (all must match) and an optional semantic query",
        aidip_search,
        Dialect.AIDIP,
        aidip.AidipSearchResponse,
        request=aidip.AidipSearchRequest,
        tag="AIDIP",
    ),
    Operation(
        "GET",
        "/invocations",
        "invocationLog",
        "The invocation audit log, newest first: who called which agent and tool, the outcome, the duration (operators only)",
        invocations,
        Dialect.ARD,
        InvocationLog,
        errors=(400, 401, 403),
        params=(_LIMIT,),
        write=True,
        needs_token_for="reading the invocation log (an operator's token)",
        tag="Service",
    ),
    Operation(  # before the routes of /agents/{id}, whose id would take "/invoke" in
        "POST",
        "/agents/{id}/invoke",
        "invokeAgent",
        "AIDIP §5 invocation through the registry: the agent's input JSON in, the agent's JSON out",
        invoke_agent,
        Dialect.AIDIP,
        AgentOutput,
        request=AgentInput,
        errors=(400, 401, 403, 404, 502, 504),
        params=(_ID, _OPERATION),
        write=True,
        invocation=True,
        needs_token_for="calling agents",
        tag="AIDIP",
    ),
    Operation(
        "GET",
        "/agents/{id}",
        "getAgent",
        "One agent: the ARD catalog entry, which is also AIDIP agent metadata",
        get_agent,
        Dialect.ARD,
        aidip.AgentDocument,
        errors=(400, 404),
        params=(_ID,),
        tag="AIDIP",
    ),
    Operation(
        "PUT",
        "/agents/{id}",
        "updateAgent",
        "AIDIP update (or create) of the agent named in the path",
        put_agent,
        Dialect.AIDIP,
        aidip.RegisteredDocument,
        success=(200, 201),
        errors=(400, 401, 404, 409),
        params=(_ID, _FORMAT),
        write=True,
        tag="AIDIP",
    ),
    Operation(
        "DELETE",
        "/agents/{id}",
        "deleteAgent",
        "AIDIP deregistration",
        delete_agent,
        Dialect.AIDIP,
        DeregisterResult,
        errors=(400, 401, 404),
        params=(_ID,),
        write=True,
        tag="AIDIP",
    ),
    Operation(
        "POST",
        "/discover",
        "discover",
        "Xu discovery profile (D2): candidates with bindings, freshness and evidence",
        discover,
        Dialect.XU,
        xu.DiscoveryResponse,
        request=xu.DiscoveryRequest,
        tag="Xu",
    ),
    Operation(
        "GET",
        "/.well-known/ai-catalog.json",
        "aiCatalog",
        "This registry's ai-catalog.json manifest",
        well_known,
        Dialect.ARD,
        AiCatalog,
        errors=(),
    ),
    Operation(
        "GET",
        "/.well-known/ard.json",
        "ardManifest",
        "The same manifest where ARD v0.9 also looks",
        well_known,
        Dialect.ARD,
        AiCatalog,
        errors=(),
    ),
    Operation(
        "GET", "/healthz", "health", "Liveness and the number of registered entries", healthz, Dialect.ARD, Health, errors=(), tag="Service"
    ),
    Operation(  # for an orchestrator's or load balancer's probe: 503 while the store or the vector index does not answer
        "GET",
        "/readyz",
        "ready",
        "Readiness: 200 while the store and the vector index answer, 503 saying which did not",
        readyz,
        Dialect.ARD,
        Ready,
        errors=(503,),
        tag="Service",
    ),
    Operation(  # where peers' health probes look (the ARD peer kit asks GET /health)
        "GET", "/health", "healthAlias", "The same as /healthz", healthz, Dialect.ARD, Health, errors=(), tag="Service"
    ),
)


_PATTERNS: tuple[tuple[re.Pattern[str], Operation], ...] = tuple((compile_path(op.route_path)[0], op) for op in OPERATIONS)


def _operation(method: str, path: str) -> Operation | None:
    """The operation a request is for, if any."""
    path = path.rstrip("/") or "/"
    return next((op for pattern, op in _PATTERNS if op.method == method and pattern.match(path)), None)


def is_invocation(method: str, path: str) -> bool:
    """Whether the request calls an agent through the registry (rate-limited as an invocation)."""
    op = _operation(method, path)
    return op is not None and op.invocation


def is_write(method: str, path: str) -> bool:
    """Whether the request is for a write operation (rate-limited as a write)."""
    op = _operation(method, path)
    return op is not None and op.write


def dialect_for(method: str, path: str) -> Dialect:
    """The error dialect of a request, also of one no route answers (404, 405, 413, 421): that of the
    operation at its path and method; else the one dialect of the operations at its path; else ARD's.
    A trailing slash is no route here, but it is plain which operation the caller meant."""
    path = path.rstrip("/") or "/"
    at_path = [op for pattern, op in _PATTERNS if pattern.match(path)]
    for op in at_path:
        if op.method == method:
            return op.dialect
    dialects = {op.dialect for op in at_path}
    return dialects.pop() if len(dialects) == 1 else Dialect.ARD
