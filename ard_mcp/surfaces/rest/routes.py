"""The REST handlers, one per operation of the table in `operations`.

Every handler is a thin adapter: parse and validate the body with the pydantic model that defines it, call
the registry (in a worker thread: ranking and SQLite are blocking), answer with the model that defines
the response.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import anyio
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ard_mcp import __version__
from ard_mcp.config import Config
from ard_mcp.errors import ArdError, InvalidArgument, NotFound, NotReady, PermissionDenied
from ard_mcp.federation.hops import WARNING_HEADER, Path
from ard_mcp.formats import aidip, registration, xu
from ard_mcp.formats.catalog import CatalogEntry, parse_as
from ard_mcp.formats.identifiers import normalize_identifier
from ard_mcp.formats.messages import (
    ArdSearchResponse,
    DeregisterResult,
    ExploreRequest,
    Health,
    Ready,
    SearchRequest,
)
from ard_mcp.invocation.audit import MAX_READ, AuditLog, InvocationLog
from ard_mcp.registry import Registry
from ard_mcp.search.paging import MAX_PAGE_SIZE
from ard_mcp.search.query import SearchQuery
from ard_mcp.search.results import SearchPage
from ard_mcp.search.visibility import Viewer
from ard_mcp.surfaces import over_limit, xu_discovery
from ard_mcp.surfaces.auth import Principal
from ard_mcp.surfaces.rest.aidip_search import search as attribute_search
from ard_mcp.surfaces.rest.manifest import manifest
from ard_mcp.surfaces.rest.readiness import Readiness
from ard_mcp.surfaces.rest.requests import json_body, page_size
from ard_mcp.surfaces.rest.settings import HttpSettings
from ard_mcp.surfaces.services import Services
from ard_mcp.web.report import CrawlRequest
from ard_mcp.web.settings import CrawlSettings

_LIST_PARAMS = ("filter", "orderBy", "pageSize", "pageToken")

AGENT_FAILED = "the agent reported that the call failed (its own answer, third-party text, is in details as JSON)"
MAX_DETAIL = 4_000  # characters of the agent's answer passed on


def model_response(model: BaseModel, status: int = 200) -> JSONResponse:
    return JSONResponse(model.model_dump(mode="json", by_alias=True), status_code=status)


def search_body(page: SearchPage) -> bytes:
    """A local search page as `POST /search` answers it: `ArdSearchResponse` serialised, each entry's part once per
    version of it (`SearchPage.ard_body`: 0.87 -> 0.5 ms a page of ten full results). Built in the worker
    thread with the page, whose evidence reads the store."""
    return page.ard_body()


@dataclass
class AppState:
    """What routes share: the settings and the one registry (set while the app runs)."""

    config: Config
    settings: HttpSettings
    registry: Registry | None = None
    openapi: dict[str, Any] = field(default_factory=dict)
    services: Services | None = None  # set while the app runs
    readiness: Readiness = field(default_factory=Readiness)

    def open_services(self) -> Services:
        if self.services is None:
            raise ArdError("the registry is not open (the server is starting or stopping)")
        return self.services

    def open_registry(self) -> Registry:
        if self.registry is None:
            raise ArdError("the registry is not open (the server is starting or stopping)")
        return self.registry


def viewer_of(request: Request) -> Viewer:
    """What the request's token may see (`metadata.visibleTo`)."""
    return state_of(request).settings.tokens.viewer(request.headers)


def writer_of(request: Request) -> Principal:
    """Who a write operation's request is from (the operation table checks the token before the handler runs)."""
    principal: Principal = request.state.writer
    return principal


def state_of(request: Request) -> AppState:
    """The app's shared state (`build_app` puts it there)."""
    state: AppState = request.app.state.ard
    return state


async def run(fn: Callable[..., Any], *args: Any) -> Any:
    """Registry calls block (model inference, SQLite); they run in a worker thread."""
    return await anyio.to_thread.run_sync(partial(fn, *args))


async def run_search(state: AppState, fn: Callable[..., Any], *args: Any) -> Any:
    """`run` for the CPU work of a search, in one of the process's search slots (`Services.search_slots`)."""
    return await anyio.to_thread.run_sync(partial(fn, *args), limiter=state.open_services().search_slots())


# -- handlers --------------------------------------------------------------------------------------------
async def search(request: Request, state: AppState) -> Response:
    req = parse_as(SearchRequest, await json_body(request), "request")
    if req.query.text is None:
        raise InvalidArgument("request.query.text: is required for /search (use /explore for aggregations without text)")
    size = min(req.pageSize, MAX_PAGE_SIZE)  # the v0.9 OpenAPI sets no maximum: clamp, and say so, rather than refuse
    query = SearchQuery.of(req.query.text, req.query.filter, page_size=size, page_token=req.pageToken)
    registry = state.open_registry()
    viewer = viewer_of(request)
    federation = state.open_services().federation()

    def local() -> bytes | None:
        """The local answer's body, or None when federation has upstreams to ask: one trip to a worker thread, one
        read of the store's version for both (`Registry.one_version`)."""
        with registry.one_version():
            if req.federation != "none" and federation.may_federate(registry):
                return None
            return search_body(registry.search(query, viewer=viewer))

    body = await run_search(state, local)
    response: Response
    if body is None:
        page = await federation.search(registry, query, req.federation, Path.of(request.headers), viewer)
        response = model_response(ArdSearchResponse(results=page.results, referrals=page.referrals or None, pageToken=page.page_token))
        for warning in page.warnings:  # the ARD body has no place for them
            response.headers.append(WARNING_HEADER, warning.replace("\n", " ")[:500])
    else:
        response = Response(body, media_type="application/json")
    if size != req.pageSize:
        response.headers["X-Page-Size"] = f"{size} (asked {req.pageSize}; this registry's maximum)"
    return response


async def explore(request: Request, state: AppState) -> Response:
    req = parse_as(ExploreRequest, await json_body(request), "request")
    query = req.query
    text, flt = (query.text, query.filter) if query else (None, None)
    result = await run_search(state, state.open_registry().explore, text, flt, req.resultType.facets, viewer_of(request))
    return model_response(result)


async def list_agents(request: Request, state: AppState) -> Response:
    params = request.query_params
    unknown = sorted(set(params) - set(_LIST_PARAMS))
    if unknown:
        supported = ", ".join(_LIST_PARAMS)
        raise InvalidArgument(
            f"query parameter {unknown[0]!r} is not supported; use {supported} (AIDIP attribute search is POST /agents/search)"
        )
    size = page_size(params.get("pageSize"), 20)
    registry = state.open_registry()
    found = await run(registry.list, params.get("filter"), params.get("orderBy"), size, params.get("pageToken") or None, viewer_of(request))
    return model_response(found)


async def crawl(request: Request, state: AppState) -> Response:
    """ARD §6.2 web ingestion on demand. A crawl writes entries of any publisher, so it needs a credential
    for every publisher (`*`), not one scoped to some domains."""
    from ard_mcp.web.service import run_crawl

    req = parse_as(CrawlRequest, await json_body(request), "request")
    if not writer_of(request).may_write("*"):
        raise PermissionDenied("a crawl writes entries of any publisher: it needs a token that may write every publisher (*)")
    report = await run_crawl(state.open_registry(), state.settings.crawl or CrawlSettings(), req)
    return model_response(report)


async def get_agent(request: Request, state: AppState) -> Response:
    entry = await run(state.open_registry().get, request.path_params["id"], viewer_of(request))
    return model_response(aidip.document(entry))


def _register_status(status: str) -> int:
    return 201 if status == "created" else 200


async def register_agent(request: Request, state: AppState) -> Response:
    raw = await json_body(request)
    entry = registration.to_entry(raw, request.query_params.get("format", "auto"))
    owned = await state.open_services().trust_findings(entry)
    result = await run(state.open_registry().indexer.register, entry, writer_of(request).may_write, owned)
    return model_response(aidip.document(result.entry, result.warnings), _register_status(result.status))


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
    entry = registration.to_entry(raw, request.query_params.get("format", "auto"), default_id=path_id)
    try:
        existing: CatalogEntry | None = await run(registry.get, path_id, viewer_of(request))
    except NotFound:
        existing = None
    if not _same_agent(path_id, entry, existing):
        raise InvalidArgument(f"the body describes {entry.get('identifier')!r}, not the agent {path_id!r} named in the path")
    owned = await state.open_services().trust_findings(entry)
    result = await run(registry.indexer.register, entry, writer_of(request).may_write, owned)
    return model_response(aidip.document(result.entry, result.warnings), _register_status(result.status))


async def delete_agent(request: Request, state: AppState) -> Response:
    registry = state.open_registry()
    result: DeregisterResult = await run(registry.deregister, request.path_params["id"], writer_of(request).may_write, viewer_of(request))
    return model_response(result)


async def invoke_agent(request: Request, state: AppState) -> Response:
    """The agent's answer as it gave it; what the registry knows about the call in `ARD-Invocation-*` headers. An
    answer the agent itself calls a failure (an MCP tool error, a failed A2A task) is no success (AIDIP §5: "avoid
    using 2xx if the operation did not semantically succeed"): 502 with the AIDIP error object, the agent's
    answer in `details`."""
    refused = over_limit.refusal(request.headers)
    arguments = await json_body(request) if refused is None else {}
    if not isinstance(arguments, dict):
        raise InvalidArgument("request body: the agent's input must be a JSON object")
    invoker = state.open_services().invoker(state.open_registry())
    caller = state.settings.tokens.caller(request.headers)
    operation = request.query_params.get("operation")
    answer = await invoker.call(request.path_params["id"], operation, arguments, viewer_of(request), caller, refused=refused)
    headers = {
        "ARD-Invocation-Endpoint": answer.endpoint,
        "ARD-Invocation-Protocol": answer.protocol,
        "ARD-Invocation-Duration-Ms": f"{answer.durationMs:g}",
        "ARD-Third-Party-Content": "true",
    }
    if answer.trust is not None:
        headers["ARD-Invocation-Trust"] = answer.trust.status
    if answer.isError:
        headers["ARD-Invocation-Error"] = "true"
    if answer.warnings:
        headers["ARD-Invocation-Warnings"] = json.dumps(answer.warnings, ensure_ascii=True)
    if answer.isError:
        answered = [json.dumps(answer.result, ensure_ascii=False)[:MAX_DETAIL]]
        failed = aidip.AidipError(error=aidip.AidipErrorDetail(code="AgentError", message=AGENT_FAILED, details=answered))
        return JSONResponse(failed.model_dump(mode="json", exclude_none=True), status_code=502, headers=headers)
    return JSONResponse(answer.result, headers=headers)


async def invocations(request: Request, state: AppState) -> Response:
    """The invocation audit log: who called which agents, for operators (a token that may write every publisher)."""
    if not writer_of(request).may_write("*"):
        raise PermissionDenied("the invocation log is for operators: it needs a token that may write every publisher (*)")
    text = request.query_params.get("limit")
    if text is not None and not (text.isdigit() and 1 <= int(text) <= MAX_READ):
        raise InvalidArgument(f"limit: must be an integer between 1 and {MAX_READ} (got {text!r})")
    log = AuditLog(state.open_registry().config.data_dir)
    return model_response(InvocationLog(records=await run(log.newest, int(text or 100))))


async def aidip_search(request: Request, state: AppState) -> Response:
    req = aidip.parse_search(await json_body(request))
    found = await run_search(state, attribute_search, state.open_registry(), req, viewer_of(request))
    return model_response(found)


async def discover(request: Request, state: AppState) -> Response:
    req = xu.parse_request(await json_body(request))
    full_allowed = state.settings.tokens.may_see_everything(request.headers)
    registry, viewer, path = state.open_registry(), viewer_of(request), Path.of(request.headers)
    federation = state.open_services().federation()
    federate: xu_discovery.Federate | None = None
    if req.federation != "none" and await run(federation.may_federate, registry):
        federate = lambda query, mode: anyio.from_thread.run(federation.search, registry, query, mode, path, viewer)  # noqa: E731
    discovered = partial(xu_discovery.discover, registry, req, viewer, full_allowed=full_allowed, federate=federate)
    found = await (run(discovered) if federate else run_search(state, discovered))  # no slot held while upstreams answer
    return model_response(found)


async def well_known(request: Request, state: AppState) -> Response:
    return model_response(await run(manifest, state.open_registry(), viewer_of(request)))


async def healthz(request: Request, state: AppState) -> Response:
    """Liveness: answered while the process runs; the count is left out when the store does not answer (`readiness`)."""
    registry = state.open_registry()
    return model_response(Health(version=__version__, agents=await state.readiness.agents(registry)))


async def readyz(request: Request, state: AppState) -> Response:
    """Readiness: 200 while the store and the vector index answer, else 503 saying which did not (`readiness`)."""
    if state.registry is None:
        raise NotReady("not ready: the registry is not open (the server is starting or stopping)")
    return model_response(Ready(version=__version__, checks=await state.readiness.check(state.registry)))
