"""An entry's page: what it offers (tools, skills, operations and their input schemas), why its trust
status is what it is, where the registry got it, why it matched a task, and how to add an MCP server to a
host. Read from the stored entry and the registry's findings; nothing here reaches the network."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ard_mcp.errors import InvalidArgument
from ard_mcp.formats.catalog import CatalogEntry
from ard_mcp.formats.entry_facts import CRAWL_ETAG_KEY, CRAWL_FETCHED_KEY, CRAWL_MODIFIED_KEY, CRAWL_SOURCE_KEY, CRAWL_VIA_KEY
from ard_mcp.formats.messages import SearchResult, TrustFinding
from ard_mcp.invocation.policy import Limits
from ard_mcp.invocation.targets import Offline, target_of
from ard_mcp.registry import Registry
from ard_mcp.search.query import SearchQuery
from ard_mcp.search.visibility import Viewer
from ard_mcp.ui.hosts import Hosts, hosts

_PROVENANCE = (
    (CRAWL_SOURCE_KEY, "Crawled from"),
    (CRAWL_VIA_KEY, "Found via"),
    (CRAWL_FETCHED_KEY, "Fetched at"),
    (CRAWL_ETAG_KEY, "ETag"),
    (CRAWL_MODIFIED_KEY, "Last-Modified"),
)
# Where each kind of entry lists what it can be asked to do, and the key of each item's input schema.
_CALLABLES = (("tools", "Tool", "inputSchema"), ("skills", "Skill", "inputSchema"), ("operations", "Operation", "inputs"))


@dataclass(frozen=True)
class Offer:
    kind: str
    name: str
    description: str
    schema: str | None  # the input schema, pretty-printed


@dataclass(frozen=True)
class EntryView:
    entry: CatalogEntry
    trust: TrustFinding | None
    callables: list[Offer]
    provenance: list[tuple[str, str]]
    match: SearchResult | None  # the entry's ranking for the page's task (?q=), with every evidence signal
    run: Hosts  # for an MCP server: its package, the command that starts it, and each host's configuration
    repository: str | None  # the source repository its description names (`data.repository.url`), when http(s)
    raw: str
    offline: str | None  # why the registry cannot call it (None: it can, and an operator may try it here)


def _callables(data: Mapping[str, Any]) -> list[Offer]:
    out = []
    for key, kind, schema_key in _CALLABLES:
        items = data.get(key)
        for item in items if isinstance(items, list) else []:
            if isinstance(item, Mapping) and isinstance(item.get("name") or item.get("id"), str):
                schema = item.get(schema_key) or item.get("input_schema")
                out.append(
                    Offer(
                        kind,
                        str(item.get("name") or item.get("id")),
                        str(item.get("description") or ""),
                        json.dumps(schema, indent=2, ensure_ascii=False) if isinstance(schema, Mapping) else None,
                    )
                )
    return out


def _repository(data: Mapping[str, Any]) -> str | None:
    repository = data.get("repository")
    url = repository.get("url") if isinstance(repository, Mapping) else None
    return url if isinstance(url, str) and url.lower().startswith(("https://", "http://")) else None


def entry_view(registry: Registry, reference: str, task: str | None, viewer: Viewer) -> EntryView:
    """The page of the entry `reference` names (`NotFound` when there is none this viewer may see)."""
    if not reference.strip():
        raise InvalidArgument("id: name the entry to show (its urn:air: identifier)")
    entry = registry.get(reference, viewer)
    match = None
    if task:
        query = SearchQuery.of(task, {"identifier": [entry.identifier]}, page_size=1)
        match = next(iter(registry.search(query, viewer=viewer).results()), None)
    metadata = entry.metadata or {}
    target = target_of(entry.stored(), Limits())  # what the invocation service would call (`Invoker`)
    return EntryView(
        entry=entry,
        trust=registry.trust_of(entry.identifier),
        callables=_callables(entry.data or {}),
        provenance=[(label, str(metadata[key])) for key, label in _PROVENANCE if metadata.get(key) is not None],
        match=match,
        run=hosts(entry, target),
        repository=_repository(entry.data or {}),
        raw=json.dumps(entry.model_dump(mode="json", by_alias=True, exclude_none=True), indent=2, ensure_ascii=False),
        offline=target.reason if isinstance(target, Offline) else None,
    )
