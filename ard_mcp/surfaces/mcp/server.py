"""The MCP surface: discovery tools and the `ard://agents/{identifier}` resource, thin over the registry.

Tools are plain (sync) functions, which the SDK runs in worker threads, so a search never blocks the
event loop. Registry errors become `ToolError`s carrying their specific message. Over HTTP the server
shares the registry the HTTP app opened (one per process for MCP and REST) and its write tools check the
same bearer tokens as the REST write routes; over stdio the caller is the local user and nothing is checked.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, nullcontext
from typing import IO, TYPE_CHECKING, Annotated, Any, Literal, ParamSpec, TypeVar, cast

import anyio
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from ard_mcp import __version__
from ard_mcp.config import Config
from ard_mcp.errors import ArdError, NotFound
from ard_mcp.federation.hops import Path
from ard_mcp.federation.settings import FederationSettings
from ard_mcp.formats import registration, xu
from ard_mcp.formats.catalog import CatalogEntry
from ard_mcp.formats.messages import (
    AGENT_RESOURCE,
    DeregisterResult,
    Detail,
    ExploreResponse,
    FacetRequest,
    ListResponse,
    RegisterResult,
    SearchResponse,
)
from ard_mcp.formats.registration import Format
from ard_mcp.invocation.policy import LOCAL
from ard_mcp.search.criteria import Criteria
from ard_mcp.search.query import SearchQuery
from ard_mcp.search.visibility import EVERYONE, Viewer
from ard_mcp.surfaces.auth import ANONYMOUS, Principal, TokenStore
from ard_mcp.surfaces.mcp.crawl import add_crawl_tool
from ard_mcp.surfaces.mcp.invoke import IDENTIFIER, add_invoke_tools
from ard_mcp.surfaces.mcp.lazy_registry import Opening, open_registry, warm_up_soon
from ard_mcp.surfaces.mcp.lazy_registry import registry_of as _registry
from ard_mcp.surfaces.mcp.protocol import ArdMcpServer
from ard_mcp.surfaces.mcp.tool_results import compact_json, compact_result
from ard_mcp.surfaces.rest.errors import told
from ard_mcp.surfaces.services import Services
from ard_mcp.surfaces.xu_discovery import Federate, discover
from ard_mcp.web.refresh import refresh_forever
from ard_mcp.web.settings import CrawlSettings

if TYPE_CHECKING:  # imported when first opened: they bring numpy, SQLite and the ranking, which tools/list needs none of
    from ard_mcp.registry import Registry


P = ParamSpec("P")
R = TypeVar("R")

INSTRUCTIONS = (
    "ard-mcp is an agent discovery registry (ARD v0.9). Describe a task in plain words with search_agents to get "
    "ranked catalog entries (agents, MCP servers, skills) with the evidence for each match; use explore_facets to see "
    "which types, tags and publishers exist; discover_agents takes a Xu discovery-profile request (hard tag and protocol "
    "filters, constraints, evidence); register_agent publishes an ARD entry, an A2A agent card, Xu Agent Metadata or "
    "AIDIP agent metadata. get_agent_tools shows what an entry can be asked to do, and call_agent calls it through the "
    "registry where the operator allows it."
)

WRITE_TOOLS = frozenset({"register_agent", "deregister_agent", "crawl_catalogs"})  # what rate limits count as writes over HTTP

FilterArg = Annotated[
    dict[str, Any] | None,
    Field(
        description=(
            "ARD §7.1 filter: field path (type, tags, capabilities, publisher, metadata.<key>, ...) to a list of values; OR "
            'within a key, AND across keys. E.g. {"type": ["application/mcp-server-card+json"], "tags": ["finance"]}'
        )
    ),
]
READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)  # idempotentHint means something only when not read-only
Tags = list[str] | None


def _as_tool(fn: Callable[P, R]) -> Callable[P, R]:
    """Registry errors reach the caller as their own message, not as a generic failure. A result reaches it
    as compact JSON text beside the same object as structured content: the SDK's own text mirror is
    indented, and a host model pays for every run of spaces in tokens (+25-30% on a search page). The
    docstring, which `tools/list` sends as the description, loses its line breaks and indentation too."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            result = fn(*args, **kwargs)
        except ArdError as exc:
            raise ToolError(told(exc)) from exc
        return cast("R", compact_result(result)) if isinstance(result, BaseModel) else result

    wrapper.__doc__ = " ".join((fn.__doc__ or "").split())
    return wrapper


def build_server(
    config: Config,
    *,
    warm: bool = True,
    shared: Callable[[], Registry] | None = None,
    tokens: TokenStore | None = None,
    protect: AuthSettings | None = None,
    crawl: CrawlSettings | None = None,
    upstreams: FederationSettings | None = None,
    services: Services | None = None,
    closed: Callable[[], None] | None = None,
    claimed: IO[str] | None = None,
) -> MCPServer[Callable[[], Registry]]:
    """The MCP server over a registry in `config.data_dir`, claimed when the server starts.

    `shared` hands the tools a registry someone else opened and closes (the HTTP app, so MCP and REST use
    one registry); `tokens` makes the write tools demand a bearer token (HTTP transports only); `protect`
    makes every MCP request demand one, checked by the SDK with `tokens` as its verifier, and advertises
    the authorization server (RFC 9728 protected-resource metadata) so MCP clients can sign in. `crawl`
    sets the crawl tool and the background refresh; `upstreams` the registries a search may also ask (by
    default only the ai-registry entries of the catalog); `services` are the HTTP app's, shared with it;
    `closed` is called once the server's own registry is closed (`terminal` waits for it before exiting);
    `claimed`, the data directory's claim its caller holds already, handed over (`datadir.claim_for`; else the
    server claims it as it starts): a claim let go before the server's own left a gap in which a back-end another
    host started took the directory, and one of the two exited "in use"."""
    shared_services = services or Services(config.source, upstreams, crawl)

    @asynccontextmanager
    async def lifespan(_: MCPServer[Callable[[], Registry]]) -> AsyncIterator[Callable[[], Registry]]:
        if shared is not None:
            yield shared
            return
        opening = Opening(config, claimed)
        if warm:
            warm_up_soon(opening.warm_up)
        try:
            async with anyio.create_task_group() as background:
                shared_services.attach(background)
                if crawl is not None and crawl.background_refresh:
                    background.start_soon(refresh_forever, opening, crawl)
                yield opening
                background.cancel_scope.cancel()
        finally:
            if services is None:  # ours, not the HTTP app's
                await shared_services.aclose()
            opening.close()
            if closed is not None:
                closed()

    server: MCPServer[Callable[[], Registry]] = ArdMcpServer(
        "ard-mcp",
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        token_verifier=tokens if protect is not None else None,
        auth=protect,
        viewer_of=tokens.viewer if tokens is not None else None,
    )

    def writer(ctx: Context) -> Principal:
        """Over HTTP, the principal of the request's token (scoped to its publishers); over stdio, the local user."""
        return tokens.writer(ctx.headers) if tokens is not None else Principal(ANONYMOUS)

    def viewer(ctx: Context) -> Viewer:
        """Over HTTP, what the request's token may see (`metadata.visibleTo`); over stdio, everything."""
        return tokens.viewer(ctx.headers) if tokens is not None else EVERYONE

    def federator(registry: Registry, seen_by: Viewer) -> Federate | None:
        """A federated search for a Xu request, run on the event loop from the tool's worker thread; None
        when there is nobody to ask."""
        service = shared_services.federation()
        if not service.may_federate(registry):
            return None
        return lambda query, mode: anyio.from_thread.run(service.search, registry, query, mode, Path(), seen_by)

    @server.tool(title="Search agents", annotations=READ)
    @_as_tool
    def search_agents(
        text: Annotated[str, Field(description="The task in plain words, e.g. 'convert a scanned PDF to text'.")],
        ctx: Context,
        filter: FilterArg = None,
        pageSize: Annotated[int, Field(ge=1, le=100)] = 10,  # noqa: N803
        pageToken: Annotated[str | None, Field(description="From the previous page.")] = None,  # noqa: N803
        required_tags: Annotated[Tags, Field(description="Only entries with all of these tags.")] = None,
        excluded_tags: Annotated[Tags, Field(description="No entry with any of these tags.")] = None,
        preferred_tags: Annotated[Tags, Field(description="Entries with these tags rank higher.")] = None,
        detail: Annotated[
            Literal["compact"] | Detail,
            Field(
                description="compact: name, first sentence, score, best evidence (~100 tokens a result); minimal: name, type, "
                "url, score; summary: + description, tags, evidence; full: whole entries."
            ),
        ] = "compact",
        federation: Annotated[
            Literal["auto", "referrals", "none"],
            Field(
                description="auto: also ask the upstream registries this one knows, merged; referrals: list them for you to ask; "
                "none: this registry only."
            ),
        ] = "auto",
    ) -> SearchResponse:
        """Find agents, MCP servers and skills for a task (up to 32,000 characters: paste it whole), ranked with a 0-100
        score, a fit and the evidence; get_agent reads one in full. confidence low: nothing fits well, the closest few are
        listed (often none fits). At detail minimal or summary an inline entry's url is its ard://agents/{identifier} resource."""
        criteria = Criteria.of(required_tags=required_tags, excluded_tags=excluded_tags, preferred_tags=preferred_tags)
        trimmed = None if detail == "compact" else detail
        query = SearchQuery.of(text, filter, criteria, detail=trimmed, page_size=pageSize, page_token=pageToken)
        registry = _registry(ctx)
        # one read of the store's version for the federation check, the search and its page
        with shared_services.search_slot(), registry.one_version():
            if federation == "none" or not shared_services.federation().may_federate(registry):
                page = registry.search(query, viewer=viewer(ctx))
                return page.brief() if detail == "compact" else page.response()
        found = anyio.from_thread.run(shared_services.federation().search, registry, query, federation, Path(), viewer(ctx))
        answer: SearchResponse = found.response(trimmed, compact=detail == "compact")
        return answer

    @server.tool(title="Discover agents (Xu profile)", annotations=READ)
    @_as_tool
    def discover_agents(
        query: Annotated[str, Field(description="The task in plain words.")],
        ctx: Context,
        required_tags: Annotated[Tags, Field(description="Hard filter: all of them.")] = None,
        preferred_tags: Annotated[Tags, Field(description="Rank these higher.")] = None,
        excluded_tags: Annotated[Tags, Field(description="Hard filter: none of them.")] = None,
        protocols: Annotated[Tags, Field(description="Hard filter: one of them (https, mcp, a2a, ...).")] = None,
        constraints: Annotated[
            dict[str, Any] | None, Field(description="max_results_age_seconds, region, status; others come back in unsupported_filters.")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=xu.MAX_LIMIT)] = 10,
        include_evidence: Annotated[bool, Field(description="Score components, matched tags and examples.")] = False,
        detail: Literal["minimal", "summary", "full"] = "summary",
        client_context: Annotated[dict[str, Any] | None, Field(description="Hints such as locale; not ranked on.")] = None,
        federation: Annotated[
            Literal["auto", "referrals", "none"], Field(description="auto: also ask upstream registries; referrals: list them.")
        ] = "none",
    ) -> xu.DiscoveryResponse:
        """A Xu discovery-profile request (conformance D2): candidates with bindings, status, freshness and, on request,
        evidence; unsupported constraints are listed, never ignored."""
        given = {
            "query": query,
            "required_tags": required_tags,
            "preferred_tags": preferred_tags,
            "excluded_tags": excluded_tags,
            "protocols": protocols,
            "constraints": constraints,
            "limit": limit,
            "include_evidence": include_evidence,
            "detail": detail,
            "client_context": client_context,
            "federation": federation,
        }
        raw = {k: v for k, v in given.items() if v is not None}
        full_allowed = tokens is None or tokens.may_see_everything(ctx.headers)
        registry = _registry(ctx)
        federate = federator(registry, viewer(ctx)) if federation != "none" else None
        with shared_services.search_slot() if federate is None else nullcontext():  # no slot held while upstreams answer
            return discover(registry, xu.parse_request(raw), viewer(ctx), full_allowed=full_allowed, federate=federate)

    @server.tool(title="Explore facets", annotations=READ)
    @_as_tool
    def explore_facets(
        ctx: Context,
        text: Annotated[str | None, Field(description="Count only the entries relevant to this task.")] = None,
        filter: Annotated[dict[str, Any] | None, Field(description="As for search_agents.")] = None,
        facets: Annotated[list[FacetRequest] | None, Field(description="Fields to count; default type, tags, publisher.")] = None,
    ) -> ExploreResponse:
        """Count entries by field value (ARD §7.3): which types, tags, capabilities or publishers the registry holds, in
        all or among the entries matching a text and filter."""
        chosen = facets or [FacetRequest(field="type"), FacetRequest(field="tags"), FacetRequest(field="publisher")]
        with shared_services.search_slot():
            return _registry(ctx).explore(text, filter, chosen, viewer(ctx))

    @server.tool(title="Register agent", annotations=ToolAnnotations(idempotent_hint=True, destructive_hint=False, open_world_hint=False))
    @_as_tool
    def register_agent(
        entry: Annotated[
            dict[str, Any],
            Field(
                description=(
                    "An ARD v0.9 catalog entry (identifier urn:air:<publisher-domain>:<namespace>:<name>, displayName, type as a "
                    "media type, url or data, description, tags, ...), an A2A agent card, Xu Agent Metadata or AIDIP agent metadata. "
                    "What can be read one way only (urn:ai:, a time without a zone, ...) is normalised, with warnings."
                )
            ),
        ],
        ctx: Context,
        format: Annotated[Format, Field(description="auto tells the formats apart by their fields.")] = "auto",
    ) -> RegisterResult:
        """Publish or update a catalog entry (upsert by identifier); one older than the stored one (updatedAt) is refused
        as stale, an identical one reported unchanged."""
        may_write = writer(ctx).may_write
        document = registration.to_entry(entry, format)
        owned = anyio.from_thread.run(shared_services.trust_findings, document)  # as published, before the lenient reader
        return _registry(ctx).indexer.register(document, may_write, owned)

    @server.tool(title="Get agent", annotations=READ)
    @_as_tool
    def get_agent(
        identifier: Annotated[str, Field(description=IDENTIFIER)],
        ctx: Context,
    ) -> CatalogEntry:
        """The stored catalog entry for an identifier, exactly as registered."""
        return _registry(ctx).get(identifier, viewer(ctx))

    @server.tool(title="List agents", annotations=READ)
    @_as_tool
    def list_agents(
        ctx: Context,
        filter: Annotated[
            dict[str, Any] | str | None,
            Field(
                description=(
                    'A filter object as for search_agents, or an ARD Appendix A expression, e.g. "type = '
                    "'application/mcp-server-card+json' AND createdAfter > '2026-01-01'\" (comma = OR)."
                )
            ),
        ] = None,
        orderBy: Annotated[str | None, Field(description="e.g. 'displayName' or 'updatedAt DESC'; identifier breaks ties.")] = None,  # noqa: N803
        pageSize: Annotated[int, Field(ge=1, le=100)] = 20,  # noqa: N803
        pageToken: str | None = None,  # noqa: N803
    ) -> ListResponse:
        """Browse entries in a deterministic order (ARD §7.4), without relevance ranking."""
        return _registry(ctx).list(filter, orderBy, pageSize, pageToken, viewer(ctx))

    @server.tool(title="Deregister agent", annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=False, open_world_hint=False))
    @_as_tool
    def deregister_agent(
        identifier: Annotated[str, Field(description=IDENTIFIER)],
        ctx: Context,
    ) -> DeregisterResult:
        """Remove an entry and everything indexed for it."""
        return _registry(ctx).deregister(identifier, writer(ctx).may_write, viewer(ctx))

    add_crawl_tool(server, writer, _registry, crawl)
    add_invoke_tools(
        server,
        _registry,
        open_registry,
        shared_services.invoker,
        viewer,
        lambda ctx: tokens.caller(ctx.headers) if tokens is not None else LOCAL,
    )

    @server.resource(AGENT_RESOURCE, name="agent", title="Catalog entry", mime_type="application/json")
    def agent_resource(identifier: str, ctx: Context) -> str:
        """A registered catalog entry as JSON."""
        try:
            return compact_json(_registry(ctx).get(identifier, viewer(ctx)).wire())
        except NotFound as exc:
            raise ResourceNotFoundError(exc.message) from exc

    return server
