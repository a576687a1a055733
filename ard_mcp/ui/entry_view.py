"""An entry's page: what it offers (tools, skills, operations and their input schemas), why its trust
status is what it is, where the registry got it, why it matched a task, and how to add an MCP server to a
host. Read from the stored entry and the registry's findings; nothing here reaches the network."""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ard_mcp.errors import InvalidArgument
from ard_mcp.formats.catalog import CatalogEntry
from ard_mcp.formats.entry_facts import (
    CRAWL_ETAG_KEY,
    CRAWL_FETCHED_KEY,
    CRAWL_MODIFIED_KEY,
    CRAWL_SOURCE_KEY,
    CRAWL_VIA_KEY,
    SNAPSHOT_KEY,
)
from ard_mcp.formats.messages import SearchResult, TrustFinding
from ard_mcp.index.snapshot import SOURCE_KEY
from ard_mcp.index.snapshot import read as read_snapshot
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
log = logging.getLogger(__name__)
CATALOGS_KEY = "catalogs"  # metadata.catalogs: every catalog that lists it, where several do ("a, b")
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


@dataclass(frozen=True)
class _Bundled:
    id: str
    titles: dict[str, str]  # each catalog's name in words ("Docker's MCP catalog")
    identifiers: frozenset[str]


@functools.cache
def _bundled() -> _Bundled:
    """What the snapshot file shipped with this install holds: read once (0.4 s), the first time a page shows an
    entry that says it came from a snapshot; nothing where the file cannot be read."""
    try:
        found = read_snapshot()
    except (OSError, ValueError, KeyError) as exc:
        log.warning("the bundled snapshot could not be read: %s", exc)
        return _Bundled("", {}, frozenset())
    titles = {str(s["name"]): str(s["title"]) for s in found.sources if s.get("name") and s.get("title")}
    return _Bundled(found.id, titles, frozenset(str(e.get("identifier")) for e in found.entries))


def provenance(identifier: str, metadata: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Where the registry got the entry, in words: the bundled snapshot and its catalogs (a snapshot entry was
    once shown as "Registered directly (not crawled)", issue #55), the crawl's document and validators. Any
    registrant can write `metadata.snapshot`, so only an entry the bundled snapshot holds is said to be its."""
    rows = []
    if metadata.get(SNAPSHOT_KEY) is not None:
        bundled = _bundled()
        if metadata[SNAPSHOT_KEY] == bundled.id and identifier in bundled.identifiers:
            listed = [c.strip() for c in str(metadata.get(CATALOGS_KEY) or metadata.get(SOURCE_KEY) or "").split(",") if c.strip()]
            catalogs = f" ({', '.join(bundled.titles.get(c, c) for c in listed)})" if listed else ""
            rows.append(("Source", f"from the bundled snapshot of public MCP servers{catalogs}"))
            rows.append(("Snapshot", str(metadata[SNAPSHOT_KEY])))
        else:
            rows.append(("Snapshot, as the entry states it", str(metadata[SNAPSHOT_KEY])))
    return rows + [(label, str(metadata[key])) for key, label in _PROVENANCE if metadata.get(key) is not None]


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
        provenance=provenance(entry.identifier, metadata),
        match=match,
        run=hosts(entry, target),
        repository=_repository(entry.data or {}),
        raw=json.dumps(entry.model_dump(mode="json", by_alias=True, exclude_none=True), indent=2, ensure_ascii=False),
        offline=target.reason if isinstance(target, Offline) else None,
    )
