"""What one entry may ask of the registry, and point its clients at, checked before anything parses it.

Each limit answers a failure an adversarial test produced: `data` nested 252 levels deep was stored and
then broke every search that matched it (serialising it overflowed), deeper nesting was a bare 500; an
entry with 100,000 tags made facet requests take 140 s; a 1 MB entry made each matching search return
2.3 MB; NUL and bidi-override characters were accepted in names (text that renders as something else in
a host's UI); `url` took `file:`, `javascript:` and link-local addresses (and still took cloud metadata
spelled `http://2852039166/` once the dotted spelling was refused). The limits sit far above what
real catalogs hold (the largest entry of the shared benchmark catalogs is 42 KB, 15 levels deep, with 35
capabilities).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ard_mcp.errors import InvalidArgument
from ard_mcp.formats import entry_facts
from ard_mcp.formats.bounded_json import UnreadableJson, check_value
from ard_mcp.net import urls

MAX_DEPTH = 32  # nesting of objects and arrays, the entry itself being level 1
DEFAULT_MAX_ENTRY_BYTES = 256 * 1024
MAX_ITEMS = 256  # tags, capabilities, representativeQueries, metadata keys
MAX_SHORT_TEXT = 256  # displayName, version, each tag and capability
MAX_LONG_TEXT = 10_000  # description, each representative query
#: A search's task text. Hosts pass whole task descriptions, sometimes with data pasted in; 4,000 refused
#: some. The model reads the opening and the parts of a long task, the lexical signal all of it.
MAX_QUERY_CHARS = 32_000
_SHORT = ("displayName", "version")
_SHORT_LISTS = ("tags", "capabilities")
_LONG = ("description",)
_LONG_LISTS = ("representativeQueries",)
# C0 controls but tab, newline and carriage return; DEL; bidi embeddings, overrides and isolates ("Trojan Source").
_HIDDEN = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u202a-\u202e\u2066-\u2069]")


@dataclass(frozen=True)
class EntryLimits:
    """The configurable limit (`--max-entry-bytes`); the others are constants, documented in docs/accepted-input.md ("Limits")."""

    max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES


DEFAULT_LIMITS = EntryLimits()


def check_json(value: Any, where: str) -> None:
    """Refuse what JSON cannot carry in a document that arrives decoded (an MCP tool's arguments: the SDK
    reads `NaN` and `1e999` as floats) or nesting deeper than `MAX_DEPTH`, as `bounded_json` refuses it in
    text, naming the field: `entry.data.x: NaN is not JSON (numbers must be finite)`, where such a value was
    once stored as null over MCP and refused over REST. Walks without recursion, so any depth is safe."""
    try:
        check_value(value, max_depth=MAX_DEPTH)
    except UnreadableJson as exc:
        raise InvalidArgument(exc.at(where)) from None


def _text(value: Any, where: str, limit: int) -> None:
    if not isinstance(value, str):
        return  # the model names the wrong type
    if len(value) > limit:
        raise InvalidArgument(f"{where}: longer than {limit} characters ({len(value)})")
    hidden = _HIDDEN.search(value)
    if hidden:
        raise InvalidArgument(f"{where}: contains the invisible control character U+{ord(hidden[0]):04X}, which is not allowed")


def _texts(value: Any, where: str, limit: int) -> None:
    if not isinstance(value, list):
        return
    if len(value) > MAX_ITEMS:
        raise InvalidArgument(f"{where}: more than {MAX_ITEMS} items ({len(value)})")
    for i, item in enumerate(value):
        _text(item, f"{where}[{i}]", limit)


def check_url(value: str, where: str, *, any_scheme: bool = False) -> None:
    """A URL an entry hands to every client that searches (its `url`, an endpoint it names): only http(s)
    unless `any_scheme`, and never where `ard_mcp.net.urls` refuses to go, in any spelling
    (`http://2852039166/` is 169.254.169.254, cloud metadata). `file:`, `javascript:`, `data:` and the like
    were accepted before."""
    try:
        urls.check_url(value, where, any_scheme)
    except urls.RefusedUrl as exc:
        raise InvalidArgument(str(exc)) from None


def check_endpoints(entry: Mapping[str, Any], where: str) -> None:
    """The endpoints an entry's `data` names (Xu bindings, an AIDIP endpoint, an A2A card's interfaces) are
    served as its bindings and called by clients, so they get the check `url` gets, whatever their scheme
    (ws:, grpc:). Called on an entry that parsed: the bindings are read from its validated fields."""
    for binding in entry_facts.bindings_of(entry):
        endpoint = binding.get("endpoint")
        if isinstance(endpoint, str) and "://" in endpoint:
            check_url(endpoint, f"{where}.data", any_scheme=True)


def _trust_urls(trust: Any, where: str) -> list[tuple[str, str]]:
    """The URLs a trust manifest names (attestation documents, the governance document), which are served to
    clients and fetched by the verifier (a JWKS attestation): `(field, url)`, URLs with an authority only."""
    if not isinstance(trust, Mapping):
        return []
    attestations = trust.get("attestations")
    listed = attestations if isinstance(attestations, list) else []
    found = [(f"{where}.attestations[{i}].uri", a.get("uri")) for i, a in enumerate(listed) if isinstance(a, Mapping)]
    schema = trust.get("trustSchema")
    if isinstance(schema, Mapping):
        found.append((f"{where}.trustSchema.governanceUri", schema.get("governanceUri")))
    return [(field, value) for field, value in found if isinstance(value, str) and "://" in value]


def check_entry(raw: Mapping[str, Any], where: str, limits: EntryLimits) -> None:
    """Refuse an entry over a limit or pointing where no client should go, naming the field and the rule.
    Checked on input only: entries stored before a limit existed stay readable."""
    check_json(raw, where)
    for name in _SHORT:
        _text(raw.get(name), f"{where}.{name}", MAX_SHORT_TEXT)
    for name in _LONG:
        _text(raw.get(name), f"{where}.{name}", MAX_LONG_TEXT)
    for name in _SHORT_LISTS:
        _texts(raw.get(name), f"{where}.{name}", MAX_SHORT_TEXT)
    for name in _LONG_LISTS:
        _texts(raw.get(name), f"{where}.{name}", MAX_LONG_TEXT)
    if isinstance(raw.get("url"), str):
        check_url(raw["url"], f"{where}.url")
    for field, value in _trust_urls(raw.get("trustManifest"), f"{where}.trustManifest"):
        check_url(value, field, any_scheme=True)
    metadata = raw.get("metadata")
    if isinstance(metadata, Mapping) and len(metadata) > MAX_ITEMS:
        raise InvalidArgument(f"{where}.metadata: more than {MAX_ITEMS} keys ({len(metadata)})")
    size = len(json.dumps(raw, ensure_ascii=False, default=str).encode())
    if size > limits.max_entry_bytes:
        raise InvalidArgument(f"{where}: {size} bytes of JSON, over the limit of {limits.max_entry_bytes} (see --max-entry-bytes)")
