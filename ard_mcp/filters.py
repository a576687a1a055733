"""ARD §7.1 filters: which dot paths of an entry can be filtered and faceted, and their values.

Every filterable value of an entry is flattened to `(field, value)` pairs when it is stored, so a filter
is an index lookup in the store rather than a scan (Chroma's `where` costs ~100 ms at 100k records).
A key outside the supported set is refused by name rather than silently ignored.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from ard_mcp.catalog import normalize_identifier, publisher_of
from ard_mcp.errors import InvalidArgument

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

Filter = dict[str, list[str]]


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
    """Every `(field, value)` an entry can be filtered or faceted on."""
    pairs: set[tuple[str, str]] = {("publisher", publisher_of(entry["identifier"]))}
    for field in FIELDS:
        if field != "publisher":
            pairs.update((field, scalar_text(v)) for v in _leaves(entry, field.split(".")))
    for key, value in (entry.get("metadata") or {}).items():
        pairs.update((METADATA_PREFIX + key, scalar_text(v)) for v in _leaves(value, []))
    return pairs


def check_field(field: Any, what: str = "filter key") -> str:
    if not isinstance(field, str) or not (field in FIELDS or (field.startswith(METADATA_PREFIX) and len(field) > 9)):
        supported = ", ".join(FIELDS)
        raise InvalidArgument(f"{what} {field!r} is not supported by this registry; use one of {supported} or metadata.<key>")
    return field


def parse_filter(raw: Mapping[str, Any] | None) -> Filter:
    """Validate a §7.1 filter object: bare values become one-element lists; empty lists are refused."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InvalidArgument("filter: must be an object mapping field paths to lists of values")
    parsed: Filter = {}
    for key, value in raw.items():
        field = check_field(key)
        values = value if isinstance(value, list) else [value]
        if not values:
            raise InvalidArgument(f"filter.{field}: must list at least one value")
        if any(isinstance(v, (dict, list)) for v in values):
            raise InvalidArgument(f"filter.{field}: values must be strings, numbers or booleans")
        texts = [scalar_text(v) for v in values]
        if field == "identifier":
            texts = [normalize_identifier(t) for t in texts]
        elif field == "publisher":
            texts = [t.lower() for t in texts]
        parsed[field] = list(dict.fromkeys(texts))
    return parsed
