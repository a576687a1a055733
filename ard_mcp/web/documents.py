"""What a fetched JSON document holds, as the entries to ingest and the catalogs it points to.

A crawl target can be any of the documents the ecosystem publishes, so the document is recognised by its
fields, the way `ard_mcp.formats.registration` recognises a registration: an ARD manifest (`entries`), one
ARD entry (`identifier`), an A2A agent card (v0.3 or v1.0), or an MCP server description (a registry's
`server.json` or a server card). Every format maps to ARD entries with the original kept as `data`.

In a manifest, nested catalogs given inline (`data`) are walked as `ingest` walks them; those given by
`url` are returned to be fetched as sources of their own (with the crawl's depth and count limits).
A relative `url` is made absolute against the document's URL. Registries (`application/ai-registry+json`)
are entries like any other, never crawled as catalogs: they are what federation queries. An entry whose
`url` is not http(s) (`file:`, `javascript:`, `data:`) is dropped with a warning: a registry must not hand
a client a link it would not follow itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

from ard_mcp.errors import ArdError, InvalidArgument
from ard_mcp.formats import a2a, mcp_server
from ard_mcp.formats.bounded_json import UnreadableJson, read_json
from ard_mcp.formats.manifests import manifest_entries
from ard_mcp.formats.media_types import AI_CATALOG, AI_REGISTRY, canonical_type

WEB_SCHEMES = ("http", "https")


@dataclass
class Document:
    """A document's entries (location, raw entry or a rejection/notice), the catalogs it links by URL,
    the registries it names, and warnings about what was dropped."""

    kind: str
    entries: list[tuple[str, Any]] = field(default_factory=list)
    nested: list[str] = field(default_factory=list)
    registries: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def parse_json(body: bytes, url: str, max_bytes: int) -> Any:
    """A fetched document as a JSON object, through the one bounded reader (`bounded_json`): a document it
    refuses is one failed document with the reason, never a failed crawl. A manifest's entries are read one
    by one, so an entry that breaks a bound (nesting, a 10,000-digit number, an unpaired surrogate) is
    rejected alone and the rest are ingested."""
    try:
        value = read_json(body, max_bytes=max_bytes, each_of="entries")
    except UnreadableJson as exc:
        raise InvalidArgument(f"{url}: {exc}") from None
    if not isinstance(value, Mapping):
        raise InvalidArgument(f"{url}: a JSON object was expected, not {type(value).__name__}")
    return value


def read_document(raw: Mapping[str, Any], url: str) -> Document:
    """The entries of one fetched document; raises `InvalidArgument` when it is no format this registry reads."""
    host = urlsplit(url).hostname or ""
    if "entries" in raw:
        return _manifest(raw, url)
    if "identifier" in raw:
        return _screened(Document("entry", [(url, dict(raw))]), url)
    if a2a.is_agent_card(raw):
        return _screened(Document("a2a-card", [(url, a2a.to_entry(raw))]), url)
    if mcp_server.is_server_json(raw) or mcp_server.is_server_card(raw):
        return _screened(Document("mcp-server", [(url, mcp_server.to_entry(raw, origin_host=host))]), url)
    raise InvalidArgument(
        f"{url}: not a document this registry reads (an ai-catalog.json manifest, an ARD entry, an A2A agent card, "
        "or an MCP server.json / server card)"
    )


def _manifest(raw: Mapping[str, Any], url: str) -> Document:
    document = Document("catalog")
    for where, entry in manifest_entries(raw, url):
        document.entries.append((where, entry))
    return _screened(document, url)


def _screened(document: Document, base: str) -> Document:
    """Drop entries with links of other schemes; note nested catalogs by URL and registries."""
    kept: list[tuple[str, Any]] = []
    for where, found in document.entries:
        if not isinstance(found, Mapping) or isinstance(found, ArdError):
            kept.append((where, found))
            continue
        entry = dict(found)
        link = entry.get("url")
        if isinstance(link, str) and link:
            scheme = urlsplit(link).scheme.lower()
            if scheme and scheme not in WEB_SCHEMES:
                document.warnings.append(f"{where}: url scheme {scheme}: is refused (http and https only); the entry was left out")
                continue
            kind = canonical_type(entry["type"]) if isinstance(entry.get("type"), str) else ""
            absolute = urljoin(base, link)  # a relative link is relative to the document it is in
            entry["url"] = absolute
            if kind == AI_CATALOG and not isinstance(entry.get("data"), Mapping):
                document.nested.append(absolute)
            elif kind == AI_REGISTRY:
                document.registries.append(absolute)
        kept.append((where, entry))
    document.entries = kept
    return document
