"""Registration accepts four metadata formats; this decides which one a document is and maps it to ARD.

Detection is by the fields only one format requires: ARD entries have `identifier`, Xu Agent Metadata has
`bindings`, an A2A agent card `supportedInterfaces` (v1.0) or a `url` beside card fields (v0.3), AIDIP
agent metadata `endpoint`, `operations`, `capabilities` or `publisher` (checked after cards, whose
`capabilities` is an object); anything else with an `id` or `name` is read as Xu metadata, so the error
names the missing field. A caller can also name the format.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from ard_mcp.errors import InvalidArgument
from ard_mcp.formats import a2a, aidip, package_variables, xu
from ard_mcp.formats.limits import check_json

Format = Literal["auto", "ard", "xu", "aidip", "a2a"]
FORMATS: tuple[str, ...] = ("auto", "ard", "xu", "aidip", "a2a")
_AIDIP_FIELDS = ("endpoint", "operations", "supported_languages", "authentication", "inputs", "capabilities", "publisher")


def detect(document: Mapping[str, Any]) -> str:
    if "identifier" in document:
        return "ard"
    if "bindings" in document:
        return "xu"
    if a2a.is_agent_card(document):
        return "a2a"
    if any(key in document for key in _AIDIP_FIELDS):
        return "aidip"
    if any(key in document for key in ("id", "name", "examples")):
        return "xu"  # the closest fit; its validation then names what is missing (bindings)
    raise InvalidArgument(
        "entry: not a format this registry reads; send an ARD catalog entry (identifier, displayName, type, url or data), "
        "Xu Agent Metadata (id, name, description, bindings), an A2A agent card (name, url or supportedInterfaces, skills) "
        "or AIDIP agent metadata (name, endpoint, operations)"
    )


def to_entry(document: Any, format: str = "auto", default_id: str | None = None) -> dict[str, Any]:
    """The raw ARD entry to register. `default_id` fills a missing id (`PUT /agents/{id}`)."""
    if not isinstance(document, Mapping):
        raise InvalidArgument("entry: must be a JSON object")
    if format not in FORMATS:
        raise InvalidArgument(f"format: must be one of {', '.join(FORMATS)} (got {format!r})")
    check_json(document, "entry")  # before any format's model reads it: deep nesting overflows a parser, a model stores NaN as null
    if isinstance(document.get("entries"), list) and "identifier" not in document:
        raise InvalidArgument(
            "entry: this is a whole catalog (a manifest with entries[]), and this registers one entry. Load a catalog with "
            '`ard-mcp ingest FILE` (while no server holds the data directory), or serve it at a URL and POST /crawl {"targets": '
            "[URL]} (the crawl_catalogs tool over MCP); or send its entries one by one"
        )
    kind = detect(document) if format == "auto" else format
    refused = package_variables.check_server_description(document.get("data"), "entry.data")
    if refused is not None:
        raise InvalidArgument(refused)
    if kind == "xu":
        return xu.to_entry(document if "id" in document or default_id is None else {**document, "id": default_id})
    if kind == "aidip":
        return aidip.to_entry(document, default_id)
    if kind == "a2a":
        return a2a.to_entry(document, default_id)
    if "identifier" not in document and default_id is not None:
        return {**document, "identifier": default_id}
    return dict(document)
