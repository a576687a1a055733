"""The MCP surface: discovery tools and the `ard://agents/{identifier}` resource, thin over the registry.

Tools are plain (sync) functions, which the SDK runs in worker threads, so a search never blocks the
event loop. Registry errors become `ToolError`s carrying their specific message.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any, ParamSpec, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from ard_mcp import __version__
from ard_mcp.catalog import CatalogEntry
from ard_mcp.config import Config
from ard_mcp.errors import ArdError, NotFound
from ard_mcp.registry import Registry
from ard_mcp.wire import DeregisterResult, ExploreResponse, FacetRequest, ListResponse, RegisterResult, SearchResponse

log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

INSTRUCTIONS = (
    "ard-mcp is an agent discovery registry (ARD v0.5). Describe a task in plain words with search_agents to get "
    "ranked catalog entries (agents, MCP servers, skills) with the evidence for each match; use explore_facets to see "
    "which types, tags and publishers exist; register_agent publishes an entry."
)

FilterArg = Annotated[
    dict[str, Any] | None,
    Field(
        description=(
            "ARD §7.1 filter: keys are field paths (type, tags, capabilities, publisher, identifier, displayName, version, "
            "trustManifest.attestations.type, metadata.<key>, ...), values are lists (OR within a key, AND across keys). "
            'Example: {"type": ["application/mcp-server+json"], "tags": ["finance"]}'
        )
    ),
]
READ = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)


def _tool_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Registry errors reach the caller as their own message, not as a generic failure."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except ArdError as exc:
            raise ToolError(exc.message) from exc

    return wrapper


def _registry(ctx: Context) -> Registry:
    registry: Registry = ctx.request_context.lifespan_context
    return registry


def build_server(config: Config, *, warm: bool = True) -> MCPServer[Registry]:
    """The MCP server over a registry in `config.data_dir`, opened when the server starts."""

    @asynccontextmanager
    async def lifespan(_: MCPServer[Registry]) -> AsyncIterator[Registry]:
        registry = Registry(config)
        if warm:
            threading.Thread(target=registry.warm_up, name="ard-mcp-warm-up", daemon=True).start()
        try:
            yield registry
        finally:
            registry.close()

    server: MCPServer[Registry] = MCPServer("ard-mcp", version=__version__, instructions=INSTRUCTIONS, lifespan=lifespan)

    @server.tool(title="Search agents", annotations=READ)
    @_tool_errors
    def search_agents(
        text: Annotated[str, Field(description="The task or need in natural language, e.g. 'convert a scanned PDF to text'.")],
        ctx: Context,
        filter: FilterArg = None,
        pageSize: Annotated[int, Field(ge=1, le=100, description="Results per page (1-100).")] = 10,  # noqa: N803
        pageToken: Annotated[str | None, Field(description="The pageToken of the previous page.")] = None,  # noqa: N803
    ) -> SearchResponse:
        """Find agents, MCP servers and skills for a task. Returns ARD catalog entries ranked by relevance, each with a
        0-100 score and the evidence (matched examples, tags, words and score components). Entries below the relevance
        cutoff are not returned, so an empty list means nothing registered fits."""
        return _registry(ctx).search(text, filter, pageSize, pageToken)

    @server.tool(title="Explore facets", annotations=READ)
    @_tool_errors
    def explore_facets(
        ctx: Context,
        text: Annotated[str | None, Field(description="Optional task text; facets then count only relevant entries.")] = None,
        filter: FilterArg = None,
        facets: Annotated[
            list[FacetRequest] | None,
            Field(description="Fields to aggregate; default type, tags and publisher."),
        ] = None,
    ) -> ExploreResponse:
        """Count entries by field value (ARD §7.3 explore): which types, tags, capabilities or publishers the registry
        holds, over the whole registry or over the entries matching a text and filter."""
        chosen = facets or [FacetRequest(field="type"), FacetRequest(field="tags"), FacetRequest(field="publisher")]
        return _registry(ctx).explore(text, filter, chosen)

    @server.tool(title="Register agent", annotations=ToolAnnotations(idempotent_hint=True, destructive_hint=False, open_world_hint=False))
    @_tool_errors
    def register_agent(
        entry: Annotated[
            dict[str, Any],
            Field(
                description=(
                    "An ARD v0.5 catalog entry: identifier (urn:ai:<publisher-domain>:<namespace>:<name>), displayName, type "
                    "(media type), exactly one of url or data, and optionally description, tags, capabilities, "
                    "representativeQueries (2-5), version, updatedAt (ISO 8601), metadata, trustManifest."
                )
            ),
        ],
        ctx: Context,
    ) -> RegisterResult:
        """Publish or update a catalog entry (upsert by identifier). An entry whose updatedAt is older than the stored one is
        refused as stale; an identical entry is reported unchanged."""
        return _registry(ctx).register(entry)

    @server.tool(title="Get agent", annotations=READ)
    @_tool_errors
    def get_agent(identifier: Annotated[str, Field(description="The entry's urn:ai: identifier.")], ctx: Context) -> CatalogEntry:
        """The stored catalog entry for an identifier, exactly as registered."""
        return _registry(ctx).get(identifier)

    @server.tool(title="List agents", annotations=READ)
    @_tool_errors
    def list_agents(
        ctx: Context,
        filter: FilterArg = None,
        orderBy: Annotated[str | None, Field(description="e.g. 'displayName' or 'updatedAt DESC'; identifier breaks ties.")] = None,  # noqa: N803
        pageSize: Annotated[int, Field(ge=1, le=100)] = 20,  # noqa: N803
        pageToken: str | None = None,  # noqa: N803
    ) -> ListResponse:
        """Browse entries in a deterministic order (ARD §7.4), without relevance ranking."""
        return _registry(ctx).list(filter, orderBy, pageSize, pageToken)

    @server.tool(title="Deregister agent", annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=False, open_world_hint=False))
    @_tool_errors
    def deregister_agent(identifier: Annotated[str, Field(description="The entry's urn:ai: identifier.")], ctx: Context) -> DeregisterResult:
        """Remove an entry and everything indexed for it."""
        return _registry(ctx).deregister(identifier)

    @server.resource("ard://agents/{identifier}", name="agent", title="Catalog entry", mime_type="application/json")
    def agent_resource(identifier: str, ctx: Context) -> str:
        """A registered catalog entry as JSON."""
        try:
            return json.dumps(_registry(ctx).get(identifier).wire(), indent=2)
        except NotFound as exc:
            raise ResourceNotFoundError(exc.message) from exc

    return server
