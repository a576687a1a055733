"""Lenient on input, strict on output: what real catalogs send that the v0.9 schema refuses, read the one
way it can be read, with a warning per change (ARD v0.9 itself is looser in prose than in its schema, and
`ard-sdk`'s ingest profile reports these instead of rejecting them).

Each rule takes a copy of the raw entry, rewrites it into the schema's form and says what it did; the
strict `CatalogEntry` then validates the result, so what the registry stores and serves is schema-valid
and only what cannot be understood is rejected (with its field and rule named, as before).
"""

from __future__ import annotations

import json
import mimetypes
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ard_mcp.errors import InvalidArgument
from ard_mcp.formats.catalog import (
    MAX_QUERIES,
    MIN_QUERIES,
    Attestation,
    CatalogEntry,
    HostInfo,
    Provenance,
    TrustManifest,
    TrustSchema,
    parse_entry,
)
from ard_mcp.formats.identifiers import is_identifier, normalize_identifier, publisher_of
from ard_mcp.formats.invisible import strip_entry
from ard_mcp.formats.limits import DEFAULT_LIMITS, EntryLimits, check_endpoints, check_entry
from ard_mcp.formats.reserved_metadata import VISIBLE_TO_KEY, joined_names
from ard_mcp.formats.timestamps import parse_timestamp, utc_text

SPEC_VERSION = "1.0"
IDENTITY_TYPES = ("spiffe", "did", "https", "other")
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$")

Rule = Callable[[dict[str, Any]], Iterator[str]]


@dataclass(frozen=True)
class Notice:
    """A warning about a manifest itself, yielded among its entries so it reaches the ingest summary."""

    message: str


def _identifier(entry: dict[str, Any]) -> Iterator[str]:
    raw = entry.get("identifier")
    if not isinstance(raw, str) or not is_identifier(raw):
        return
    canonical = normalize_identifier(raw)
    either = f"stored as {canonical} (look-ups by either spelling find it)"
    if raw[: len("urn:air:")].lower() != "urn:air:":
        yield f"identifier: urn:ai: is the v0.5 prefix; {either}"
    elif canonical.split(":", 3)[3:] != raw.split(":", 3)[3:]:
        yield f"identifier: a segment has characters outside the schema's [a-zA-Z0-9._-]; {either}"
    if publisher_of(canonical) == "localhost":
        yield "identifier: localhost cannot be a publisher (URN naming guide §2); a local agent uses e.g. agent.localhost"


def _updated_at(entry: dict[str, Any]) -> Iterator[str]:
    raw = entry.get("updatedAt")
    if not isinstance(raw, str) or _RFC3339.match(raw):
        return
    try:
        parsed = parse_timestamp(raw, naive_is_utc=True)
    except ValueError:
        return  # cannot be read: the model refuses it with its rule
    entry["updatedAt"] = utc_text(parsed, "auto")
    try:
        parse_timestamp(raw)
    except ValueError:
        yield f"updatedAt: {raw!r} has no time zone; read as UTC ({entry['updatedAt']})"
        return
    yield f"updatedAt: {raw!r} is not an RFC 3339 date-time; stored as {entry['updatedAt']}"


def _flatten(value: Mapping[str, Any], prefix: str, out: dict[str, Any]) -> None:
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, Mapping):
            _flatten(item, f"{name}.", out)
        elif isinstance(item, list):
            out[name] = json.dumps(item, separators=(",", ":"), ensure_ascii=False)
        else:
            out[name] = item


def _metadata(entry: dict[str, Any]) -> Iterator[str]:
    raw = entry.get("metadata")
    if not isinstance(raw, Mapping):
        return
    names = joined_names(raw.get(VISIBLE_TO_KEY))
    if names is not None:
        raw = entry["metadata"] = {**raw, VISIBLE_TO_KEY: names}
        yield f"metadata.{VISIBLE_TO_KEY}: a list of names; stored as {names!r}"
    nested = [key for key, value in raw.items() if isinstance(value, Mapping | list)]
    if nested:
        flat: dict[str, Any] = {}
        _flatten(raw, "", flat)
        entry["metadata"] = flat
        yield f"metadata: values must be scalars; {', '.join(nested)} flattened to dotted keys (lists as JSON text)"


def _queries(entry: dict[str, Any]) -> Iterator[str]:
    raw = entry.get("representativeQueries")
    if not isinstance(raw, list) or MIN_QUERIES <= len(raw) <= MAX_QUERIES:
        return
    if len(raw) > MAX_QUERIES:
        yield f"representativeQueries: {len(raw)} given, the schema allows {MAX_QUERIES}; all are indexed, the first {MAX_QUERIES} served"
    elif raw:
        yield f"representativeQueries: 1 given, the schema asks for {MIN_QUERIES}-{MAX_QUERIES}; it is indexed but not served"


def _known_fields(obj: dict[str, Any], model: type[Any], where: str) -> Iterator[str]:
    """The trust objects are `additionalProperties: false`: a field they do not define is dropped."""
    for key in [k for k in obj if k not in model.model_fields]:
        del obj[key]
        yield f"{where}.{key}: not a field of this object (the schema allows no others); dropped"


def _trust(entry: dict[str, Any], field: str = "trustManifest") -> Iterator[str]:
    raw = entry.get(field)
    if not isinstance(raw, Mapping):
        return
    trust = entry[field] = dict(raw)
    yield from _known_fields(trust, TrustManifest, field)
    kind = trust.get("identityType")
    if isinstance(kind, str) and kind not in IDENTITY_TYPES:
        trust["identityType"] = kind.lower() if kind.lower() in IDENTITY_TYPES else "other"
        yield f"{field}.identityType: {kind!r} is not one of {', '.join(IDENTITY_TYPES)}; read as {trust['identityType']}"
    if isinstance(trust.get("trustSchema"), Mapping):
        trust["trustSchema"] = dict(trust["trustSchema"])
        yield from _known_fields(trust["trustSchema"], TrustSchema, f"{field}.trustSchema")
    for name, model in (("attestations", Attestation), ("provenance", Provenance)):
        items = trust.get(name)
        if isinstance(items, list):
            trust[name] = [dict(i) if isinstance(i, Mapping) else i for i in items]
            for i, item in enumerate(trust[name]):
                if isinstance(item, dict):
                    yield from _known_fields(item, model, f"{field}.{name}[{i}]")
    attestations = trust.get("attestations")
    for i, item in enumerate(attestations if isinstance(attestations, list) else []):  # `true` once crashed this: a 500
        if isinstance(item, dict) and "mediaType" not in item and isinstance(item.get("uri"), str):
            item["mediaType"] = mimetypes.guess_type(urlsplit(item["uri"]).path)[0] or "application/octet-stream"
            yield (
                f"{field}.attestations[{i}].mediaType: missing (v0.9 §5.2 leaves it out, the schema requires it); "
                f"read as {item['mediaType']}"
            )


ENTRY_RULES: tuple[Rule, ...] = (_identifier, _updated_at, _metadata, _queries, _trust)


def read_entry(raw: Any, where: str = "entry", limits: EntryLimits = DEFAULT_LIMITS) -> tuple[CatalogEntry, list[str]]:
    """The entry `raw` describes and a warning (`where.field: what was done`) per change made to it; an
    entry over a limit (see `limits`) is refused before anything else reads it. Invisible characters are
    removed from every text a model reads (`invisible.strip_entry`), with one warning for the entry."""
    if not isinstance(raw, Mapping):
        raise InvalidArgument(f"{where}: must be a JSON object")
    check_entry(raw, where, limits)
    entry = dict(raw)
    stripped = strip_entry(entry)
    warnings = [f"{where}: {stripped}"] if stripped else []
    warnings += [f"{where}.{note}" for rule in ENTRY_RULES for note in rule(entry)]
    parsed = parse_entry(entry, where)
    check_endpoints(entry, where)
    return parsed, warnings


def read_manifest(raw: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The manifest's own fields normalised, with a warning per change: a missing or unknown `specVersion`
    is read as 1.0 (the entries are what matters, and they are checked one by one) and the host's trust
    manifest as an entry's."""
    manifest = dict(raw)
    notes: list[str] = []
    version = manifest.get("specVersion")
    if version != SPEC_VERSION:
        manifest["specVersion"] = SPEC_VERSION
        notes.append(f"specVersion: {'missing' if version is None else repr(version)}; read as {SPEC_VERSION}")
    if isinstance(manifest.get("host"), Mapping):
        host = manifest["host"] = dict(manifest["host"])
        notes += [f"host.{note}" for note in _trust(host)]
        notes += list(_known_fields(host, HostInfo, "host"))
    return manifest, notes
