"""What of an entry is stored for ARD §7.1 filters and facets: the dot paths that can be filtered, and an
entry's values at each of them.

Every filterable value of an entry is flattened to `(field, value)` pairs when it is stored, so a filter
is an index lookup in the store rather than a scan (Chroma's `where` costs ~100 ms at 100k records).
Checking a caller's filter against these paths is `ard_mcp.search.filters`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from ard_mcp.formats.identifiers import publisher_of
from ard_mcp.formats.media_types import canonical_type
from ard_mcp.formats.untrusted import model_directed

FIELDS: tuple[str, ...] = (
    "identifier",
    "displayName",
    "type",
    "publisher",
    "tags",
    "capabilities",
    "version",
    "url",
    "trustManifest.identity",
    "trustManifest.identityType",
    "trustManifest.attestations.type",
    "trustManifest.attestations.mediaType",
    "trustManifest.provenance.relation",
    "trustManifest.provenance.sourceId",
)
METADATA_PREFIX = "metadata."
UNTRUSTED_FIELD = "~untrusted"
"""The registry's own finding that an entry's text is aimed at a model (`untrusted.model_directed`): one
value per finding, the warning its evidence shows, computed here whenever the entry is stored. Owned by the
registry: no publisher can set or clear it, because an entry's own values are stored only under `FIELDS`
(dot paths of ARD fields, none starting with `~`) and `metadata.<key>`; and no caller can filter or facet on
it (`filters.check_field` accepts those two kinds of key only). The ranking reads it (`ranking.Ranker`)."""

Filter = dict[str, list[str]]
"""A checked filter: field → the values it accepts in their stored spelling (OR within a key, AND across keys)."""


def scalar_text(value: Any) -> str:
    """One spelling per value, so `true`, `1`, `1.0` and `"x"` compare the way JSON readers expect."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (int, float)):
        return json.dumps(value)
    return str(value)


def _leaves(value: Any, path: list[str]) -> Iterator[Any]:
    if not path:
        if isinstance(value, list):
            for item in value:
                yield from _leaves(item, path)
        elif not isinstance(value, dict):
            yield value
        return
    if isinstance(value, list):
        for item in value:
            yield from _leaves(item, path)
    elif isinstance(value, dict) and path[0] in value:
        yield from _leaves(value[path[0]], path[1:])


def entry_values(entry: Mapping[str, Any]) -> set[tuple[str, str]]:
    """Every `(field, value)` an entry can be filtered or faceted on; the type in its canonical spelling,
    so both names of one media type are one value. Plus the registry's own `UNTRUSTED_FIELD` findings,
    which nobody can filter on."""
    pairs: set[tuple[str, str]] = {("publisher", publisher_of(entry["identifier"])), ("type", canonical_type(entry["type"]))}
    for field in FIELDS:
        if field not in ("publisher", "type"):
            pairs.update((field, scalar_text(v)) for v in _leaves(entry, field.split(".")))
    for key, value in (entry.get("metadata") or {}).items():
        pairs.update((METADATA_PREFIX + key, scalar_text(v)) for v in _leaves(value, []))
    pairs.update((UNTRUSTED_FIELD, finding.message()) for finding in model_directed(entry))
    return pairs
