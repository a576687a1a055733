"""ARD §7.1 filter objects as callers send them: checked against the filterable fields, values put in the
spelling the store keeps (`ard_mcp.index.filter_values`). A key outside the supported set is refused by
name rather than silently ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ard_mcp.errors import InvalidArgument
from ard_mcp.formats.entry_facts import TRUST_STATUS
from ard_mcp.formats.identifiers import normalize_identifier
from ard_mcp.formats.media_types import canonical_type
from ard_mcp.index.filter_values import FIELDS, METADATA_PREFIX, Filter, scalar_text

MAX_FILTER_KEYS = 32
MAX_FILTER_VALUES = 100  # per key: each value is an index lookup, and 10,000 of them once took seconds


def check_field(field: Any, what: str = "filter key") -> str:
    """A field callers may filter and facet on: an entry's own (`FIELDS`, `metadata.<key>`) or the registry's
    finding `trust.status` (`ard_mcp.formats.entry_facts`: no entry field can write it)."""
    if not isinstance(field, str) or not (
        field in FIELDS or field == TRUST_STATUS or (field.startswith(METADATA_PREFIX) and len(field) > len(METADATA_PREFIX))
    ):
        supported = ", ".join((*FIELDS, TRUST_STATUS))
        raise InvalidArgument(f"{what} {field!r} is not supported by this registry; use one of {supported} or metadata.<key>")
    return field


def parse_filter(raw: Mapping[str, Any] | None) -> Filter:
    """Validate a §7.1 filter object: bare values become one-element lists; empty lists are refused."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InvalidArgument("filter: must be an object mapping field paths to lists of values")
    if len(raw) > MAX_FILTER_KEYS:
        raise InvalidArgument(f"filter: at most {MAX_FILTER_KEYS} keys (got {len(raw)})")
    parsed: Filter = {}
    for key, value in raw.items():
        field = check_field(key)
        values = value if isinstance(value, list) else [value]
        if not values:
            raise InvalidArgument(f"filter.{field}: must list at least one value")
        if len(values) > MAX_FILTER_VALUES:
            raise InvalidArgument(f"filter.{field}: at most {MAX_FILTER_VALUES} values (got {len(values)})")
        if any(isinstance(v, (dict, list)) for v in values):
            raise InvalidArgument(f"filter.{field}: values must be strings, numbers or booleans")
        texts = [scalar_text(v) for v in values]
        if field == "identifier":
            texts = [normalize_identifier(t) for t in texts]
        elif field == "publisher":
            texts = [t.lower() for t in texts]
        elif field == "type":
            texts = [canonical_type(t) for t in texts]
        parsed[field] = list(dict.fromkeys(texts))
    return parsed
