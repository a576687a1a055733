"""Which crawl source holds each identifier, and which publishers a crawled document speaks for.

One identifier is one entry, and the first source to bring it holds it: a crawl never replaces an entry
that another document or a registration holds, or two catalogs naming one identifier would take turns
overwriting each other. The exception is origin binding (`trust.origin`): a publisher-served entry takes
the place of a third-party claim, whichever was crawled first (an impostor crawled first once held
`urn:air:alpha.test:...` against alpha's own signed entry), while a claim never displaces anything. And an
entry the bundled snapshot added holds nothing: it is what a catalog said when the snapshot was built, so
what a live source says now replaces it (`ard-mcp crawl --mcp-registry` refreshing the snapshot's servers).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ard_mcp.formats import entry_facts
from ard_mcp.formats.identifiers import normalize_identifier
from ard_mcp.index.store.base import Store
from ard_mcp.trust.origin import host_of
from ard_mcp.web.sources import Source

THIRD_PARTY = (entry_facts.TRUST_STATUS, "third-party")


class Holdings:
    def __init__(self, store: Store, say: Callable[[str], None]) -> None:
        self.store = store
        self.say = say

    def remembered(self, url: str) -> Source | None:
        state = self.store.crawl_source(url)
        return None if state is None else Source.from_dict(state)

    def held_elsewhere(self, raw: dict[str, Any], url: str, *, replaces_claims: bool) -> str | None:
        """Why a crawled entry may not take its identifier's place: another source holds it. A publisher-served
        entry (`replaces_claims`) takes the place of a third-party claim."""
        identifier = raw.get("identifier")
        if not isinstance(identifier, str):
            return None
        stored = self.store.get(normalize_identifier(identifier))
        if stored is None:
            return None
        metadata = stored.entry.get("metadata") or {}
        holder = metadata.get(entry_facts.CRAWL_SOURCE_KEY)
        if holder == url or (holder is None and metadata.get(entry_facts.SNAPSHOT_KEY)):
            return None
        if replaces_claims and THIRD_PARTY in self.store.owned_values(stored.id, [entry_facts.TRUST_STATUS]):
            self.say(f"{identifier}: the publisher's own entry replaces the third-party claim from {holder}")
            return None
        where = f"the document {holder}" if holder else "a registration (API or file ingest)"
        return f"{identifier} is held by {where}; a crawl does not replace an entry another source holds"

    def holds(self, identifier: str, url: str) -> bool:
        stored = self.store.get(identifier)
        return stored is not None and (stored.entry.get("metadata") or {}).get(entry_facts.CRAWL_SOURCE_KEY) == url

    def authorities(self, source: Source, host: str) -> set[str] | None:
        """The hosts whose publishers a document speaks for (`trust.origin`): its own, and the one that
        delegated to it (the domain whose well-known URI, robots.txt, home page or DNS named it, or, for a
        nested catalog, whatever its parent speaks for). None for an MCP registry the operator named, which
        checks namespace ownership itself."""
        if source.kind == "mcp-registry":
            return None
        found = {host}
        seen: set[str] = set()
        while source.via == "nested" and source.found_from and source.found_from not in seen:
            seen.add(source.found_from)
            parent = self.remembered(source.found_from)
            if parent is None:
                return found
            source = parent
            found.add(host_of(source.url) or source.url)
        delegated = host_of(source.found_from)
        return found | {delegated} if delegated else found
