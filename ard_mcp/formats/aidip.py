"""AIDIP (draft-cui-ai-agent-discovery-invocation): agent metadata, the registry routes' bodies, errors.

Agent metadata is stored as an ARD catalog entry whose `data` is the document (with the id the registry
assigned when it brought none), `capabilities`, `tags`, `description` and `version` copied to the ARD
fields, and `status`, `publisher` and a non-URN id in scalar `metadata` keys. `expires_at` becomes the
entry's `metadata.expiresAt`, so the record lapses when it says, as a Xu record does; a value that is not
a representable time is refused (it was once kept as an unknown field, and the record never expired).
Operations (name, description, example inputs) are indexed as examples (see `ard_mcp.index.example_texts`).
`GET /agents/{id}` answers with one document that is both a valid ARD catalog entry and AIDIP agent
metadata (`AgentDocument`). Answering `POST /agents/search` is `ard_mcp.surfaces.rest.aidip_search`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ConfigDict, Field, RootModel, field_validator

from ard_mcp.errors import AgentError, ArdError, StaleEntry
from ard_mcp.formats.catalog import CatalogEntry, WireModel, parse_as
from ard_mcp.formats.entry_facts import (
    AIDIP_TYPE,
    PUBLISHER_KEY,
    SOURCE_ID_KEY,
    STATUS_KEY,
    bindings_of,
    languages_of,
    origin,
    source_id_of,
    status_of,
)
from ard_mcp.formats.identifiers import assigned_id, derive_identifier, publisher_of
from ard_mcp.formats.limits import MAX_QUERY_CHARS
from ard_mcp.formats.messages import FIT, Fit
from ard_mcp.formats.reserved_metadata import expiry_metadata
from ard_mcp.formats.timestamps import checked_timestamp

MAX_TOP = 100


def _absolute(value: str) -> str:
    if "://" not in value:
        raise ValueError("must be an absolute URL such as https://api.example.com/agents/translate")
    return value


class AidipOperation(WireModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    name: str = Field(min_length=1)
    description: str | None = None
    inputs: dict[str, Any] | None = Field(default=None, description="JSON Schema of the input.")
    outputs: dict[str, Any] | None = Field(default=None, description="JSON Schema of the output.")
    examples: list[dict[str, Any]] | None = Field(default=None, description='Example pairs: [{"input": {...}, "output": {...}}].')


class AidipAuthentication(WireModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    type: str | None = None
    instructions: str | None = None
    scopes: list[str] | None = None


class AidipAgent(WireModel):
    """AIDIP agent metadata. Additional fields are kept as sent."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    id: str | None = Field(default=None, min_length=1, description="Assigned by the registry when absent.")
    name: str = Field(min_length=1)
    description: str | None = None
    version: str | None = None
    publisher: str | None = None
    capabilities: list[str] | None = None
    tags: list[str] | None = None
    endpoint: str = Field(min_length=1, description="The agent's invocation URL.")
    supported_languages: list[str] | None = None
    authentication: AidipAuthentication | None = None
    status: str | None = None
    operations: list[AidipOperation] | None = None
    inputs: dict[str, Any] | None = None
    outputs: dict[str, Any] | None = None
    expires_at: str | None = Field(default=None, description="When the record lapses: an ISO 8601 date-time with a zone.")

    _endpoint = field_validator("endpoint")(_absolute)
    _expires = field_validator("expires_at")(checked_timestamp)


def to_entry(document: Mapping[str, Any], default_id: str | None = None) -> dict[str, Any]:
    """An ARD catalog entry (raw, for `Registry.register`) from AIDIP agent metadata."""
    meta = parse_as(AidipAgent, document, "agent")
    agent_id = meta.id or default_id or assigned_id(meta.name, [meta.endpoint])
    identifier = derive_identifier(agent_id, [meta.endpoint], "agent.id")
    metadata: dict[str, Any] = {STATUS_KEY: (meta.status or "active").lower()}
    if meta.publisher:
        metadata[PUBLISHER_KEY] = meta.publisher
    metadata.update(expiry_metadata(meta.expires_at))
    if identifier != agent_id:
        metadata[SOURCE_ID_KEY] = agent_id
    entry: dict[str, Any] = {
        "identifier": identifier,
        "displayName": meta.name,
        "type": AIDIP_TYPE,
        "data": {**document, "id": agent_id},
        "metadata": metadata,
    }
    for ard, value in (
        ("description", meta.description),
        ("version", meta.version),
        ("tags", meta.tags),
        ("capabilities", meta.capabilities),
    ):
        if value:
            entry[ard] = value
    return entry


def agent_view(entry: Mapping[str, Any]) -> dict[str, Any]:
    """Any stored entry as AIDIP agent metadata (the stored document for AIDIP entries)."""
    if origin(entry) == "aidip" and isinstance(entry.get("data"), Mapping):
        return {**entry["data"], "status": status_of(entry)}
    metadata = entry.get("metadata") or {}
    endpoints = [b["endpoint"] for b in bindings_of(entry) if isinstance(b.get("endpoint"), str) and "://" in b["endpoint"]]
    auth = (entry.get("data") or {}).get("auth") if origin(entry) == "xu" else None
    view: dict[str, Any] = {
        "id": source_id_of(entry),
        "name": entry["displayName"],
        "description": entry.get("description"),
        "version": entry.get("version"),
        "publisher": metadata.get(PUBLISHER_KEY) or publisher_of(entry["identifier"]),
        "capabilities": entry.get("capabilities"),
        "tags": entry.get("tags"),
        "endpoint": endpoints[0] if endpoints else None,
        "supported_languages": sorted(languages_of(entry)) or None,
        "authentication": auth if isinstance(auth, Mapping) else None,
        "status": status_of(entry),
    }
    return {k: v for k, v in view.items() if v is not None}


class AgentDocument(CatalogEntry):
    """`GET /agents/{id}`: the ARD catalog entry as registered, plus the AIDIP view of the same agent
    (`id`, `name`, `endpoint`, `status`, ...). ARD fields win where both name one (they mean the same)."""

    id: str = Field(description="The agent's id as its publisher gave it (or as this registry assigned it).")
    name: str
    status: str = Field(description="Operational status: active, inactive, suspended, deprecated, testing.")
    endpoint: str | None = None
    publisher_name: str | None = Field(default=None, alias="publisher", description="AIDIP publisher: a name, or the identifier's domain.")
    supported_languages: list[str] | None = None
    authentication: dict[str, Any] | None = None
    operations: list[dict[str, Any]] | None = None


class RegisteredDocument(AgentDocument):
    """What registration answers: the stored agent and what was normalised to accept it."""

    warnings: list[str] | None = Field(default=None, description="What was normalised to accept the entry (field: what was done).")


def document(entry: CatalogEntry, warnings: list[str] | None = None) -> AgentDocument:
    wire = entry.wire()
    view = {**agent_view(wire), **wire}
    return AgentDocument.model_validate(view) if warnings is None else RegisteredDocument.model_validate({**view, "warnings": warnings})


class AidipFilters(WireModel):
    """Every listed capability, tag and language must be present (AND); unknown filters are errors."""

    capabilities: list[str] | str | None = None
    tags: list[str] | str | None = None
    supported_languages: list[str] | str | None = None
    supported_language: list[str] | str | None = Field(default=None, description="Spelling used in the draft's §ASR example.")


class AidipSearchRequest(WireModel):
    filters: AidipFilters | None = None
    query: str | None = Field(default=None, max_length=MAX_QUERY_CHARS, description="Natural-language need; ranks semantically when given.")
    top: int = Field(default=10, ge=1, le=MAX_TOP)


class AidipSummary(WireModel):
    id: str
    identifier: str = Field(description="The ARD urn:air: identifier of the same agent.")
    name: str
    description: str | None = None
    endpoint: str | None = None
    capabilities: list[str] | None = None
    tags: list[str] | None = None
    status: str
    score: float | None = Field(default=None, ge=0, le=1, description="Relevance 0-1 when a query ranked the results.")
    fit: Fit | None = Field(default=None, description=FIT)


class AidipSearchResponse(RootModel[list[AidipSummary]]):
    """A JSON array of agent summaries."""


class AidipErrorDetail(WireModel):
    code: str
    message: str
    details: list[str] | None = None


class AidipError(WireModel):
    error: AidipErrorDetail


AIDIP_CODES = {
    400: "InvalidInput",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    408: "RequestTimeout",
    409: "Conflict",
    413: "PayloadTooLarge",
    415: "UnsupportedMediaType",
    421: "MisdirectedRequest",
    422: "UnprocessableContent",
    429: "RateLimited",
    502: "AgentUnreachable",
    503: "Unavailable",
    504: "AgentTimeout",
}


def error_body(exc: ArdError) -> AidipError:
    code = (
        "StaleMetadata"
        if isinstance(exc, StaleEntry)
        else "AgentError"
        if isinstance(exc, AgentError)
        else AIDIP_CODES.get(exc.http_status, "InternalError")
    )
    details = exc.message.split("; ") if exc.http_status == 400 and "; " in exc.message else None
    return AidipError(error=AidipErrorDetail(code=code, message=exc.message, details=details))


def parse_search(raw: Any) -> AidipSearchRequest:
    return parse_as(AidipSearchRequest, raw, "request", 'a JSON object such as {"filters": {"capabilities": ["translation"]}, "top": 10}')
