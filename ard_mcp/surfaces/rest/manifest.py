"""`/.well-known/ai-catalog.json` (ARD §4.1): this registry's own manifest, listing itself as a registry
entry and, while the registry is small enough, every entry it holds."""

from __future__ import annotations

from ard_mcp import __version__
from ard_mcp.formats.catalog import CatalogEntry, HostInfo
from ard_mcp.formats.media_types import AI_REGISTRY
from ard_mcp.formats.messages import AiCatalog
from ard_mcp.registry import Registry
from ard_mcp.search.visibility import Viewer

MANIFEST_INLINE_LIMIT = 1000  # beyond this the manifest lists only the registry entry (its search API finds the rest)


def manifest(registry: Registry, viewer: Viewer) -> AiCatalog:
    """The registry's identity and URL are its configuration's (see `Config.identifier`); the entries are
    those `viewer` may see."""
    own = CatalogEntry(
        identifier=registry.config.identifier,
        displayName="ard-mcp agent registry",
        type=AI_REGISTRY,
        url=registry.config.source,
        description="Search (POST /search), explore (POST /explore) and list (GET /agents) the agents, MCP servers and skills "
        "registered here; Xu discovery at POST /discover, AIDIP at /agents; MCP at /mcp.",
        # what ard-publish requires of every entry (2-5 queries and a description), and what a peer that crawls
        # this manifest indexes to decide when to ask this registry (federation over ai-registry entries)
        representativeQueries=[
            "find an AI agent or MCP server that can do this task",
            "search a registry of agents, MCP servers and skills by what they do",
            "which tools can an assistant call to get this done",
        ],
        tags=["registry", "search"],
        capabilities=["search", "explore", "list", "discover"],
        version=__version__,
    )
    entries: list[CatalogEntry] = [own]
    total = registry.store.count()
    if total <= MANIFEST_INLINE_LIMIT:
        token: str | None = None
        while True:
            page = registry.list(page_size=100, page_token=token, viewer=viewer)
            entries += page.items
            token = page.pageToken
            if token is None:
                break
    return AiCatalog(host=HostInfo(displayName="ard-mcp agent registry"), entries=entries)
