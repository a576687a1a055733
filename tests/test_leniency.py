"""Lenient on input, strict on output: what real catalogs send that the v0.9 schema refuses is accepted with
a warning naming the field and what was done, and what is stored and served validates against the schema."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ard_mcp.errors import InvalidArgument
from ard_mcp.formats.catalog import CatalogEntry
from ard_mcp.formats.leniency import Notice, read_entry
from ard_mcp.formats.manifests import manifest_entries
from tests.conftest import WEATHER, entry
from tests.http_support import assert_ard

ATTESTATION = {"type": "SOC2-Type2", "uri": "https://trust.example.com/soc2.pdf"}
TRUST = {"identity": "did:web:example.com", "identityType": "did", "attestations": [ATTESTATION]}
QUERIES = [f"question number {n} about the weather" for n in range(1, 7)]


def _read(**changes: Any) -> tuple[CatalogEntry, list[str]]:
    found, warnings = read_entry(entry(WEATHER, **changes), "entries[0]")
    assert_ard(found.wire(), "catalog:catalogEntry")
    return found, warnings


def test_a_clean_entry_has_no_warnings() -> None:
    found, warnings = _read(trustManifest={**TRUST, "attestations": [{**ATTESTATION, "mediaType": "application/pdf"}]})
    assert warnings == [] and found.stored() == found.wire()


@pytest.mark.parametrize(
    ("uri", "media_type"), [(ATTESTATION["uri"], "application/pdf"), ("https://trust.example.com/audit", "application/octet-stream")]
)
def test_an_attestation_without_media_type_gets_one(uri: str, media_type: str) -> None:
    found, warnings = _read(trustManifest={**TRUST, "attestations": [{**ATTESTATION, "uri": uri}]})
    assert found.wire()["trustManifest"]["attestations"][0]["mediaType"] == media_type
    why = "missing (v0.9 §5.2 leaves it out, the schema requires it)"
    assert warnings == [f"entries[0].trustManifest.attestations[0].mediaType: {why}; read as {media_type}"]


def test_one_or_six_queries_are_all_indexed_and_the_schema_bounds_served() -> None:
    six, warnings = _read(representativeQueries=QUERIES)
    assert six.representativeQueries == QUERIES and six.stored()["representativeQueries"] == QUERIES
    assert six.wire()["representativeQueries"] == QUERIES[:5]
    assert warnings == ["entries[0].representativeQueries: 6 given, the schema allows 5; all are indexed, the first 5 served"]
    one, warnings = _read(representativeQueries=QUERIES[:1])
    assert one.stored()["representativeQueries"] == QUERIES[:1] and "representativeQueries" not in one.wire()
    assert warnings == ["entries[0].representativeQueries: 1 given, the schema asks for 2-5; it is indexed but not served"]


def test_nested_metadata_is_flattened_to_dotted_keys() -> None:
    found, warnings = _read(metadata={"free": True, "limits": {"daily": 1000, "burst": {"per_second": 5}}, "regions": ["eu", "us"]})
    assert found.metadata == {"free": True, "limits.daily": 1000, "limits.burst.per_second": 5, "regions": '["eu","us"]'}
    assert warnings == ["entries[0].metadata: values must be scalars; limits, regions flattened to dotted keys (lists as JSON text)"]


@pytest.mark.parametrize(("given", "read_as"), [("DID", "did"), ("x509", "other"), ("SPIFFE", "spiffe")])
def test_an_unknown_identity_type_is_read_as_other(given: str, read_as: str) -> None:
    found, warnings = _read(trustManifest={"identity": "spiffe://example.com/w", "identityType": given})
    assert found.trustManifest is not None and found.trustManifest.identityType == read_as
    assert warnings == [f"entries[0].trustManifest.identityType: {given!r} is not one of spiffe, did, https, other; read as {read_as}"]


def test_unknown_fields_of_the_closed_trust_objects_are_dropped() -> None:
    attestation = {**ATTESTATION, "mediaType": "application/pdf", "x": 1}
    found, warnings = _read(trustManifest={**TRUST, "issuer": "acme", "attestations": [attestation]})
    assert "issuer" not in found.wire()["trustManifest"] and "x" not in found.wire()["trustManifest"]["attestations"][0]
    assert warnings == [
        "entries[0].trustManifest.issuer: not a field of this object (the schema allows no others); dropped",
        "entries[0].trustManifest.attestations[0].x: not a field of this object (the schema allows no others); dropped",
    ]


@pytest.mark.parametrize(
    ("given", "stored", "why"),
    [
        ("2026-05-01T12:00:00", "2026-05-01T12:00:00Z", "has no time zone; read as UTC"),
        ("2026-05-01", "2026-05-01T00:00:00Z", "has no time zone; read as UTC"),
        ("2026-05-01 12:00:00+02:00", "2026-05-01T10:00:00Z", "is not an RFC 3339 date-time; stored as"),
    ],
)
def test_updated_at_is_read_the_one_way_it_can_be(given: str, stored: str, why: str) -> None:
    found, warnings = _read(updatedAt=given)
    assert found.updatedAt == stored
    assert len(warnings) == 1 and warnings[0].startswith(f"entries[0].updatedAt: {given!r} {why}")


@pytest.mark.parametrize(
    ("given", "stored", "why"),
    [
        ("urn:air:Example.com:weather~v2", "urn:air:example.com:weather-v2", "a segment has characters outside"),
        ("urn:air:example.com:weather%7Ev2", "urn:air:example.com:weather-v2", "a segment has characters outside"),
        ("urn:ai:example.com:weather:forecast", "urn:air:example.com:weather:forecast", "urn:ai: is the v0.5 prefix"),
    ],
)
def test_identifiers_are_stored_in_the_schema_spelling(given: str, stored: str, why: str) -> None:
    found, warnings = _read(identifier=given)
    assert found.identifier == stored
    assert warnings == [f"entries[0].identifier: {why}{warnings[0].split(why)[1]}"] and stored in warnings[0]


def test_localhost_as_publisher_is_accepted_with_a_warning() -> None:
    _, warnings = _read(identifier="urn:air:localhost:weather")
    assert warnings == [
        "entries[0].identifier: localhost cannot be a publisher (URN naming guide §2); a local agent uses e.g. agent.localhost"
    ]


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"updatedAt": "yesterday"}, "entries[0].updatedAt: must be an ISO 8601 date-time"),
        ({"identifier": "urn:air:example.com:my weather"}, "entries[0].identifier: must be urn:air:"),
        ({"url": "https://example.com/w.json"}, "exactly one of url and data"),
        ({"metadata": ["free"]}, "entries[0].metadata"),
        ({"trustManifest": {"identityType": "did"}}, "entries[0].trustManifest.identity: is required"),
    ],
)
def test_what_cannot_be_understood_is_still_refused(changes: dict[str, Any], expected: str) -> None:
    with pytest.raises(InvalidArgument, match=re.escape(expected)):
        read_entry(entry(WEATHER, **changes), "entries[0]")


def test_a_manifest_without_spec_version_is_read_as_1_0() -> None:
    items = list(manifest_entries({"entries": [WEATHER], "host": {"displayName": "Example", "contact": "x"}}))
    assert items == [
        ("", Notice("specVersion: missing; read as 1.0")),
        ("", Notice("host.contact: not a field of this object (the schema allows no others); dropped")),
        ("entries[0]", WEATHER),
    ]
    assert list(manifest_entries({"specVersion": "0.9", "entries": []})) == [("", Notice("specVersion: '0.9'; read as 1.0"))]
