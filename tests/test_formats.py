"""Identifiers and the three registration formats mapped to ARD entries (no model, no Chroma)."""

from __future__ import annotations

from typing import Any

import pytest

from ard_mcp.errors import InvalidArgument
from ard_mcp.formats.catalog import parse_entry
from ard_mcp.formats.entry_facts import AIDIP_TYPE, XU_TYPE, bindings_of, protocols_of, source_id_of
from ard_mcp.formats.identifiers import assigned_id, check_identifier, derive_identifier, normalize_identifier, publisher_of
from ard_mcp.formats.media_types import canonical_type
from ard_mcp.formats.registration import detect, to_entry

XU: dict[str, Any] = {
    "id": "https://Agents.Example.net/id/hr-core",
    "name": "HR Core",
    "description": "HR workflows.",
    "tags": ["hr"],
    "bindings": [{"protocol": "https", "endpoint": "https://agents.example.net/invoke"}],
    "expires_at": "2030-01-01T09:00:00+09:00",
    "constraints": {"region": "apac"},
    "x-extension": {"kept": True},
}
AIDIP: dict[str, Any] = {
    "id": "agent-1",
    "name": "Translator",
    "endpoint": "https://api.example.com/t",
    "capabilities": ["translation"],
    "publisher": "ExampleAI",
}


def test_every_spelling_of_an_identifier_has_one_canonical_form() -> None:
    """v0.9 `urn:air:` is canonical; v0.5 `urn:ai:` and any case of the NID map onto it; the publisher is a
    DNS name, so its case does not make another entry (the rest of the URN keeps its case)."""
    canonical = "urn:air:victim.example.org:Tools:Agent_1"
    spellings = (
        "urn:air:victim.example.org:Tools:Agent_1",
        "urn:ai:Victim.Example.Org:Tools:Agent_1",
        "URN:AIR:VICTIM.example.ORG:Tools:Agent_1",
    )
    for spelling in spellings:
        assert normalize_identifier(spelling) == canonical == check_identifier(spelling)
    assert normalize_identifier("urn:air:example.com:Tools:agent") != normalize_identifier("urn:air:example.com:tools:agent")
    assert normalize_identifier("agent-1") == "agent-1" and normalize_identifier("urn:other:x") == "urn:other:x"
    assert publisher_of("urn:air:Example.COM:a") == "example.com"
    for bad in ("urn:air:example.com", "urn:air:not_a_domain:a", "urn:ai:192.168.0.1:a", "https://example.com/a", "urn:airx:example.com:a"):
        with pytest.raises(ValueError, match="must be urn:air:"):
            check_identifier(bad)


@pytest.mark.parametrize(
    ("source_id", "endpoints", "identifier"),
    [
        ("urn:air:example.com:a", [], "urn:air:example.com:a"),
        ("urn:ai:Example.com:a", [], "urn:air:example.com:a"),
        ("https://Agents.Example.net/id/hr-core?v=2", [], "urn:air:agents.example.net:id:hr-core:v:2"),
        ("weather.example.org", [], "urn:air:weather.example.org:agent"),
        ("agent 12/345", ["http://10.0.0.1/x", "https://api.example.com/a"], "urn:air:api.example.com:agent-12:345"),
    ],
)
def test_ids_of_other_formats_become_stable_urns(source_id: str, endpoints: list[str], identifier: str) -> None:
    assert derive_identifier(source_id, endpoints) == identifier


def test_an_id_with_no_domain_to_anchor_it_is_refused_and_assigned_ids_are_stable() -> None:
    with pytest.raises(InvalidArgument, match="no endpoint has a domain name"):
        derive_identifier("agent-1", ["http://127.0.0.1:8080/a"])
    assert assigned_id("a", ["https://x.example"]) == assigned_id("a", ["https://x.example"]) != assigned_id("b", ["https://x.example"])


def test_formats_are_told_apart_by_the_fields_only_one_requires() -> None:
    assert detect({"identifier": "x", "bindings": []}) == "ard"
    assert detect(XU) == "xu" and detect({"name": "x"}) == "xu"
    assert detect(AIDIP) == "aidip" and detect({"name": "x", "operations": []}) == "aidip"
    with pytest.raises(InvalidArgument, match="not a format this registry reads"):
        detect({"title": "x"})
    with pytest.raises(InvalidArgument, match="format: must be one of"):
        to_entry(XU, "yaml")


def test_xu_metadata_is_stored_as_an_ard_entry_that_keeps_the_document() -> None:
    entry = parse_entry(to_entry(XU))
    assert entry.identifier == "urn:air:agents.example.net:id:hr-core" and entry.type == XU_TYPE
    assert entry.data == XU  # unknown fields included
    assert entry.metadata == {"status": "active", "expiresAt": "2030-01-01T00:00:00Z", "sourceId": XU["id"], "region": "apac"}
    wire = entry.wire()
    assert source_id_of(wire) == XU["id"] and bindings_of(wire) == XU["bindings"] and protocols_of(wire) == {"https"}


def _inline_mcp(media_type: str, **server: Any) -> dict[str, Any]:
    data = {"name": "io.example/convert", "description": "Converts documents.", **server}
    raw = {"identifier": "urn:air:example.com:server:convert", "displayName": "Convert", "type": media_type, "data": data}
    return parse_entry(raw).wire()


@pytest.mark.parametrize("media_type", ["application/mcp-server+json", "application/mcp-server-card+json"])
def test_an_inline_mcp_server_is_bound_to_its_remote_endpoints_not_its_urn(media_type: str) -> None:
    """Xu §4.6: a binding says how the agent "can be contacted or invoked"; its URN said neither."""
    remotes = [
        {"type": "streamable-http", "url": "https://mcp.example.com/mcp"},
        {"type": "sse", "url": "https://mcp.example.com/sse"},
        {"type": "sse", "url": "https://{tenant}.example.com/sse"},  # a template: listed, not callable
    ]
    bound = bindings_of(_inline_mcp(media_type, remotes=remotes))
    assert bound == [
        {"protocol": "mcp", "endpoint": "https://mcp.example.com/mcp", "media_types": ["application/mcp-server-card+json"]},
        {"protocol": "mcp", "endpoint": "https://mcp.example.com/sse", "media_types": ["application/mcp-server-card+json"]},
    ]
    # one that only runs from its package has nothing to call: no binding, and still the mcp protocol
    local = _inline_mcp(media_type, packages=[{"registryType": "npm", "identifier": "@example/convert"}])
    assert bindings_of(local) == [] and protocols_of(local) == {"mcp"}


def test_aidip_metadata_is_stored_as_an_ard_entry_and_an_id_can_come_from_the_path() -> None:
    entry = parse_entry(to_entry(AIDIP))
    assert entry.identifier == "urn:air:api.example.com:agent-1" and entry.type == AIDIP_TYPE
    assert entry.capabilities == ["translation"] and entry.metadata == {"status": "active", "publisher": "ExampleAI", "sourceId": "agent-1"}
    without_id = {k: v for k, v in AIDIP.items() if k != "id"}
    assert to_entry(without_id, "aidip", default_id="from-path")["data"]["id"] == "from-path"
    with pytest.raises(InvalidArgument, match=r"agent\.endpoint: must be an absolute URL"):
        to_entry({**AIDIP, "endpoint": "api.example.com"})


def test_an_ard_entry_passes_through_and_takes_the_path_id_when_it_has_none() -> None:
    ard = {"displayName": "A", "type": "application/ai-skill", "url": "https://example.com/a"}
    assert to_entry({**ard, "identifier": "urn:air:example.com:a"}) == {**ard, "identifier": "urn:air:example.com:a"}
    assert to_entry(ard, "ard", default_id="urn:air:example.com:b")["identifier"] == "urn:air:example.com:b"
    assert protocols_of(parse_entry({**ard, "identifier": "urn:air:example.com:a"}).wire()) == {"skill", "https"}


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        ("application/mcp-server+json", "application/mcp-server-card+json"),  # v0.5's name (ADR 0008)
        ("Application/MCP-Server-Card+JSON", "application/mcp-server-card+json"),
        ("application/mcp-server+json; version=1.0", "application/mcp-server-card+json"),
        ("application/a2a-agent-card+json;charset=utf-8", "application/a2a-agent-card+json"),
        ('text/markdown; profile="urn:air:agent-skills"', 'text/markdown; profile="urn:air:agent-skills"'),
        ("text/markdown;profile=urn:air:agent-skills; variant=GFM", 'text/markdown; profile="urn:air:agent-skills"'),
        ("text/markdown", "text/markdown"),  # any Markdown is not a skill: the profile is kept
        ("application/x-custom", "application/x-custom"),
    ],
)
def test_equivalent_media_types_have_one_canonical_spelling(spelling: str, canonical: str) -> None:
    assert canonical_type(spelling) == canonical


@pytest.mark.parametrize(
    ("registered", "served"),
    [
        ("application/mcp-server+json", "application/mcp-server-card+json"),
        ("Application/MCP-Server+JSON; version=1.0", "application/mcp-server-card+json; version=1.0"),  # its parameters kept
        ("application/mcp-server-card+json; version=2", "application/mcp-server-card+json; version=2"),
        ("application/x-custom", "application/x-custom"),
    ],
)
def test_the_renamed_mcp_type_is_served_by_its_v09_name_and_stored_as_registered(registered: str, served: str) -> None:
    parsed = parse_entry({"identifier": "urn:air:example.com:m", "displayName": "M", "type": registered, "url": "https://example.com/m"})
    assert parsed.wire()["type"] == served and parsed.stored()["type"] == registered
    assert protocols_of(parsed.stored()) == protocols_of(parsed.wire()) == ({"mcp", "https"} if "mcp" in served else {"https"})
