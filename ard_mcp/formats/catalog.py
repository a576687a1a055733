"""ARD v0.9 catalog objects (spec §4-5, `ai-catalog.schema.json`): the one definition every surface uses.

These are as strict as the schema, so what the registry serves validates; the one exception is the
number of representative queries, which is bounded when an entry is served (every query is indexed), and
the media type, served in its v0.9 spelling (`media_types.served_type`) but stored as registered.
Input the schema refuses but can be read one way (v0.5 `urn:ai:` identifiers, a timestamp without a zone,
nested metadata, ...) is normalised before it gets here, by `leniency`. Entries keep fields this version does
not know (`extra="allow"`) so a publisher's extensions come back unchanged; the nested trust objects follow
the schema's `additionalProperties: false`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    ValidationError,
    field_serializer,
    field_validator,
    model_serializer,
    model_validator,
)

from ard_mcp.errors import InvalidArgument
from ard_mcp.formats.identifiers import check_identifier, publisher_of
from ard_mcp.formats.media_types import served_type
from ard_mcp.formats.reserved_metadata import check_reserved
from ard_mcp.formats.timestamps import parse_timestamp

M = TypeVar("M", bound=BaseModel)
MIN_QUERIES, MAX_QUERIES = 2, 5  # the schema's bounds on representativeQueries
_LOSSLESS = "lossless"
_URI = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:\S+$")


def _check_uri(value: str) -> str:
    if not _URI.match(value):
        raise ValueError("must be an absolute URI such as https://example.com/agent.json")
    return value


class WireModel(BaseModel):
    """Base of every wire object: absent optional fields are omitted, never sent as `null`."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @model_serializer(mode="wrap")
    def _omit_none(self, handler: Any) -> Any:
        data = handler(self)
        return {k: v for k, v in data.items() if v is not None} if isinstance(data, dict) else data


class Attestation(WireModel):
    type: str = Field(description="Attestation type, e.g. SOC2-Type2.")
    uri: str = Field(description="Where the attestation document is.")
    mediaType: str = Field(description="Format of the document, e.g. application/pdf.")
    digest: str | None = None

    _uri = field_validator("uri")(_check_uri)


class Provenance(WireModel):
    relation: Literal["derivedFrom", "publishedFrom", "copiedFrom"]
    sourceId: str
    sourceDigest: str | None = None


class TrustSchema(WireModel):
    identifier: str
    version: str
    governanceUri: str | None = None
    verificationMethods: list[str] | None = None


class TrustManifest(WireModel):
    identity: str = Field(description="Cryptographic workload identity (SPIFFE ID, DID or HTTPS URI).")
    identityType: Literal["spiffe", "did", "https", "other"] | None = None
    trustSchema: TrustSchema | None = None
    attestations: list[Attestation] | None = None
    provenance: list[Provenance] | None = None
    signature: str | None = None


class HostInfo(WireModel):
    displayName: str
    identifier: str | None = None
    documentationUrl: str | None = None
    logoUrl: str | None = None
    trustManifest: TrustManifest | None = None


MetadataValue = str | int | float | bool | None


class CatalogEntry(WireModel):
    """One catalog entry (ARD §4.2). Fields this model does not name are kept as they came."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    identifier: str = Field(description="urn:air:<publisher-domain>:<namespace...>:<name> (v0.5 urn:ai: accepted).")
    displayName: str = Field(min_length=1)
    type: str = Field(min_length=1, description="Media type, e.g. application/mcp-server-card+json.")
    url: str | None = Field(default=None, description="Where the artifact is; exactly one of url and data.")
    data: dict[str, Any] | None = Field(default=None, description="The artifact inline; exactly one of url and data.")
    description: str | None = None
    tags: list[str] | None = None
    capabilities: list[str] | None = None
    representativeQueries: list[str] | None = Field(
        default=None, description="2-5 natural-language queries; more are indexed, the first 5 served (see `leniency`)."
    )
    version: str | None = None
    updatedAt: str | None = Field(default=None, description="ISO 8601 date-time of the last change.")
    metadata: dict[str, MetadataValue] | None = None
    trustManifest: TrustManifest | None = None

    @field_validator("identifier")
    @classmethod
    def _identifier(cls, value: str) -> str:
        return check_identifier(value)

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return None if value is None else _check_uri(value)

    @field_validator("updatedAt")
    @classmethod
    def _updated_at(cls, value: str | None) -> str | None:
        if value is not None:
            parse_timestamp(value)
        return value

    @field_validator("metadata")
    @classmethod
    def _metadata(cls, value: dict[str, MetadataValue] | None) -> dict[str, MetadataValue] | None:
        if value is not None:
            check_reserved(value)
        return value

    @field_serializer("representativeQueries")
    def _schema_queries(self, value: list[str] | None, info: SerializationInfo) -> list[str] | None:
        """Served entries hold the schema's 2-5 queries; the store keeps all of them (`stored()`), since
        every one is indexed. A lone query is indexed but not served: the schema has no place for it."""
        if value is None or (info.context or {}).get(_LOSSLESS):
            return value
        return value[:MAX_QUERIES] if len(value) >= MIN_QUERIES else None

    @field_serializer("type")
    def _served_type(self, value: str, info: SerializationInfo) -> str:
        """A v0.9 client matches `application/mcp-server-card+json` exactly, so an entry registered with v0.5's
        `application/mcp-server+json` is served in the new spelling (5 of 531 MCP entries were found that way
        before). The store keeps what the publisher sent (`stored()`, `ard-mcp export`)."""
        return value if (info.context or {}).get(_LOSSLESS) else served_type(value)

    @model_validator(mode="after")
    def _url_or_data(self) -> CatalogEntry:
        if (self.url is None) == (self.data is None):
            raise ValueError("exactly one of url and data must be present (ARD §3.4 value-or-reference)")
        return self

    @property
    def publisher(self) -> str:
        return publisher_of(self.identifier)

    @property
    def updated(self) -> datetime | None:
        return parse_timestamp(self.updatedAt) if self.updatedAt else None

    @property
    def wire_type(self) -> str:
        """The type as `wire()` serves it (its v0.9 name), for a surface that shows the entry without serialising it."""
        return served_type(self.type)

    def wire(self) -> dict[str, Any]:
        """The entry as served: as registered apart from what `leniency` normalised and the v0.9 name of its type,
        valid against the schema."""
        return self.model_dump(mode="json", by_alias=True)

    def stored(self) -> dict[str, Any]:
        """The entry as kept: like `wire()` but with every representative query, which all get indexed."""
        return self.model_dump(mode="json", by_alias=True, context={_LOSSLESS: True})


class CatalogManifest(WireModel):
    """An `ai-catalog.json` file. Entries stay raw here so one bad entry is rejected alone, not the file."""

    specVersion: str | None = Field(default=None, description="1.0; a missing or other value is read as 1.0 with a warning.")
    host: HostInfo | None = None
    entries: list[dict[str, Any]]


def _location(prefix: str, loc: tuple[int | str, ...]) -> str:
    path = prefix
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part and not part.startswith(("function-", "union[", "literal[")):
            path += f".{part}" if path else str(part)
    return path or "entry"


def _rule(error: Any) -> str:
    msg: str = error["msg"]
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            msg = msg[len(prefix) :]
    if error["type"] == "missing":
        return "is required"
    if error["type"] == "extra_forbidden":
        return "is not a field of this object"
    return msg[:1].lower() + msg[1:]


def describe_validation_error(error: ValidationError, prefix: str = "") -> str:
    """Turn pydantic's report into `path.to.field: rule` lines a publisher can act on."""
    lines = []
    for item in error.errors(include_url=False):
        lines.append(f"{_location(prefix, item['loc'])}: {_rule(item)}")
    return "; ".join(dict.fromkeys(lines))


def parse_as(model: type[M], raw: Any, where: str, expected: str = "a JSON object") -> M:
    """Validate `raw` as `model` or raise `InvalidArgument` naming every broken field under `where`."""
    if not isinstance(raw, Mapping):
        raise InvalidArgument(f"{where}: must be {expected}")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise InvalidArgument(describe_validation_error(exc, where)) from None


def parse_entry(raw: Any, where: str = "entry") -> CatalogEntry:
    return parse_as(CatalogEntry, raw, where)
