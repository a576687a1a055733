"""MCP server descriptions as the crawler finds them (a server.json, a record of the official MCP registry's
`/v0/servers` pages in its current and older shapes, a server card) become `application/mcp-server-card+json`
entries that the ingest path's `read_entry` accepts, whose tools are indexed as examples."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest

from ard_mcp.errors import InvalidArgument
from ard_mcp.formats import a2a
from ard_mcp.formats.catalog import CatalogEntry
from ard_mcp.formats.leniency import read_entry
from ard_mcp.formats.limits import MAX_LONG_TEXT, MAX_SHORT_TEXT
from ard_mcp.formats.mcp_server import OFFICIAL, is_server_card, is_server_json, registry_records, to_entry
from ard_mcp.formats.media_types import MCP_SERVER_CARD
from ard_mcp.index.example_texts import extract_examples
from tests.conftest import INVOICES, NO_SHARED_DATA, REPO, SHARED_DATA, SPECS, WEATHER
from tests.http_support import assert_ard
from tests.url_spellings import SPELLINGS

SERVER_SCHEMA = SPECS / "mcp-registry" / "server.schema.json"

# A server.json of the 2025-12-11 schema, with a remote and a package.
SERVER_JSON: dict[str, Any] = {
    "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
    "name": "io.github.alice/weather",
    "title": "Weather",
    "description": "Forecasts and current conditions for any city",
    "version": "1.4.2",
    "websiteUrl": "https://alice.github.io/weather",
    "repository": {"url": "https://github.com/alice/weather", "source": "github"},
    "packages": [{"registryType": "npm", "identifier": "@alice/weather-mcp", "version": "1.4.2", "transport": {"type": "stdio"}}],
    "remotes": [{"type": "streamable-http", "url": "https://weather.alice.dev/mcp"}],
}

# The registry's older record shape, as in the shared seed catalog (mcp-registry-seed/catalog.json).
OLD_RECORD: dict[str, Any] = {
    "id": "4e9cf4cf-71f6-4aca-bae8-2d10a29ca2e0",
    "name": "io.github.21st-dev/magic-mcp",
    "description": "It's like v0 but in your Cursor/WindSurf/Cline.",
    "repository": {"url": "https://github.com/21st-dev/magic-mcp", "source": "github", "id": "935450522"},
    "version_detail": {"version": "0.0.1-seed", "release_date": "2025-05-16T18:56:49Z", "is_latest": True},
    "packages": [{"registry_name": "npm", "name": "@21st-dev/magic", "version": "0.0.46"}],
    "remotes": [{"transport_type": "sse", "url": "http://localhost:5008/sse"}],
}

# A SEP-1649 server card served at /.well-known/mcp.json: the top-level `version` is the card format's.
SERVER_CARD: dict[str, Any] = {
    "$schema": "https://static.modelcontextprotocol.io/schemas/mcp-server-card/v1.json",
    "version": "1.0",
    "protocolVersion": "2025-06-18",
    "serverInfo": {"name": "invoice-tools", "title": "Invoice Tools", "version": "3.0.1"},
    "description": "Create, send and track invoices",
    "transport": {"type": "streamable-http", "endpoint": "/mcp"},
    "capabilities": {"tools": {"listChanged": True}},
    "tools": [
        {
            "name": "create_invoice",
            "description": "Draft an invoice for a customer with line items and a due date",
            "inputSchema": {"type": "object", "properties": {"customer": {"type": "string"}}},
        },
        {"name": "send_reminder", "description": "Email a payment reminder for an overdue invoice", "inputSchema": {"type": "object"}},
    ],
}


def _official(**fields: Any) -> dict[str, Any]:
    return {OFFICIAL: {"status": "active", "publishedAt": "2025-09-10T08:00:00Z", "isLatest": True, **fields}}


def _read(entry: dict[str, Any]) -> CatalogEntry:
    """What the ingest path does with the entry; it must accept it as it is, without a warning."""
    parsed, warnings = read_entry(entry)
    assert warnings == []
    assert_ard(parsed.wire(), "catalog:catalogEntry")
    return parsed


# -- server.json -------------------------------------------------------------------------------------------


def test_the_fixtures_are_real_server_json() -> None:
    schema = json.loads(SERVER_SCHEMA.read_text(encoding="utf-8"))
    own = json.loads((REPO / "server.json").read_text(encoding="utf-8"))
    for document in (SERVER_JSON, own):
        jsonschema.Draft7Validator(schema).validate(document)


def test_server_json_maps_to_an_entry() -> None:
    entry = to_entry(SERVER_JSON, registry_meta=_official(updatedAt="2025-10-01T12:30:00.123456789Z", status="deprecated"))
    parsed = _read(entry)
    assert parsed.identifier == "urn:air:alice.github.io:server:weather"
    assert parsed.type == MCP_SERVER_CARD
    assert parsed.displayName == "Weather"
    assert parsed.description == SERVER_JSON["description"]
    assert parsed.version == "1.4.2"
    assert parsed.updatedAt == "2025-10-01T12:30:00.123456Z"
    assert parsed.url is None and parsed.data == SERVER_JSON  # the document kept whole; its endpoint is in metadata
    assert parsed.metadata == {
        "sourceId": "io.github.alice/weather",
        "registryStatus": "deprecated",
        "packageRegistry": "npm",
        "remoteUrl": "https://weather.alice.dev/mcp",
        "remoteTransport": "streamable-http",
    }


def test_the_projects_own_server_json() -> None:
    own = json.loads((REPO / "server.json").read_text(encoding="utf-8"))
    assert is_server_json(own) and not is_server_card(own)
    parsed = _read(to_entry(own))
    assert parsed.identifier == "urn:air:ard-mcp.github.io:server:ard-mcp"
    assert parsed.displayName == own["title"]
    assert (parsed.metadata or {})["packageRegistry"] == "pypi"


@pytest.mark.parametrize(
    ("name", "identifier"),
    [
        ("com.example/tools", "urn:air:example.com:server:tools"),
        ("io.github.Azure/azure-mcp", "urn:air:azure.github.io:server:azure-mcp"),  # DNS names compare in lower case
        ("com.example.mcp/my_server.v2", "urn:air:mcp.example.com:server:my_server.v2"),
    ],
)
def test_the_namespace_names_the_publisher(name: str, identifier: str) -> None:
    assert _read(to_entry({**SERVER_JSON, "name": name})).identifier == identifier


def test_a_missing_title_and_description_fall_back_to_the_name() -> None:
    document = {k: v for k, v in SERVER_JSON.items() if k != "title"} | {"description": "  "}
    parsed = _read(to_entry(document))
    assert parsed.displayName == parsed.description == "io.github.alice/weather"


def test_long_texts_are_clipped_to_the_catalogs_limits() -> None:
    parsed = _read(to_entry({**SERVER_JSON, "title": "T" * 400, "description": "d" * (MAX_LONG_TEXT + 50)}))
    assert len(parsed.displayName) == MAX_SHORT_TEXT
    assert len(parsed.description or "") == MAX_LONG_TEXT


def test_keywords_become_tags() -> None:
    document = {
        **SERVER_JSON,
        "_meta": {"io.modelcontextprotocol.registry/publisher-provided": {"keywords": ["weather", "forecast", "weather", 7, ""]}},
    }
    assert _read(to_entry(document)).tags == ["weather", "forecast"]


@pytest.mark.parametrize(
    "remotes",
    [
        [{"type": "sse", "url": "https://{tenant}.example.com/sse"}],  # a template, not a URL
        [{"type": "sse", "url": "ftp://files.example.com/"}],
        [{"type": "sse", "url": "http://169.254.169.254/latest"}],  # cloud metadata
        *([{"type": "sse", "url": url}] for url, _ in SPELLINGS),  # ... in every spelling
        [{"type": "sse", "url": "http://127.0.0.1:8000/sse"}],  # how to run it, not where it runs
        [{"type": "sse", "url": "http://0x7f000001:8000/sse"}],
        [{"type": "sse", "url": "http://[::ffff:127.0.0.1]:8000/sse"}],
    ],
)
def test_only_a_reachable_http_remote_is_recorded(remotes: list[dict[str, str]]) -> None:
    metadata = _read(to_entry({**SERVER_JSON, "remotes": remotes})).metadata or {}
    assert "remoteUrl" not in metadata and "remoteTransport" not in metadata


def test_an_unreadable_timestamp_loses_the_stamp_not_the_server() -> None:
    assert _read(to_entry(SERVER_JSON, registry_meta=_official(updatedAt="last tuesday", publishedAt=None))).updatedAt is None
    assert _read(to_entry(SERVER_JSON, registry_meta=_official(updatedAt="2025-10-01T12:30:00"))).updatedAt == "2025-10-01T12:30:00Z"


def test_the_older_registry_shape() -> None:
    assert is_server_json(OLD_RECORD)
    parsed = _read(to_entry(OLD_RECORD))
    assert parsed.identifier == "urn:air:21st-dev.github.io:server:magic-mcp"
    assert parsed.version == "0.0.1-seed"
    assert parsed.updatedAt == "2025-05-16T18:56:49Z"  # version_detail.release_date
    assert parsed.metadata == {"sourceId": "io.github.21st-dev/magic-mcp", "packageRegistry": "npm"}  # localhost is no remote


def test_the_seed_catalogs_records() -> None:
    """Every named record of the shared seed catalog, when it is there (a fresh clone does not have it)."""
    path = SHARED_DATA / "mcp-registry-seed" / "catalog.json"
    if not path.exists():
        pytest.skip(NO_SHARED_DATA)
    records = [e["data"] for e in json.loads(path.read_text(encoding="utf-8"))["entries"]]
    kept, _ = registry_records({"servers": records})
    assert kept and all(server["name"] for server, _ in kept)  # the unnamed ones are the non-latest ones
    identifiers = {_read(to_entry(server, registry_meta=meta)).identifier for server, meta in kept}
    assert len(identifiers) == len(kept)


# -- registry pages ----------------------------------------------------------------------------------------


def test_a_page_of_the_current_api() -> None:
    old_version = {**SERVER_JSON, "version": "1.4.1"}
    page = {
        "servers": [
            {"server": SERVER_JSON, "_meta": _official(updatedAt="2025-10-01T12:30:00Z")},
            {"server": old_version, "_meta": _official(isLatest=False)},
            {"server": {**SERVER_JSON, "name": "com.example/tools"}},  # no registry metadata: kept
            "not a record",
        ],
        "metadata": {"nextCursor": "io.github.alice/weather:1.4.2", "count": 4},
    }
    records, cursor = registry_records(page)
    assert cursor == "io.github.alice/weather:1.4.2"
    assert [(server["name"], server["version"]) for server, _ in records] == [
        ("io.github.alice/weather", "1.4.2"),
        ("com.example/tools", "1.4.2"),
    ]
    assert records[0][1] == page["servers"][0]["_meta"] and records[1][1] is None
    entry = to_entry(records[0][0], registry_meta=records[0][1])
    assert _read(entry).updatedAt == "2025-10-01T12:30:00Z" and entry["metadata"]["registryStatus"] == "active"


def test_a_page_of_the_older_api() -> None:
    """Items are the server.json with `_meta` inside (snake_case), and the cursor is `next_cursor`."""
    latest = {**SERVER_JSON, "_meta": {OFFICIAL: {"id": "b1", "is_latest": True, "updated_at": "2025-08-01T00:00:00Z"}}}
    older = {**SERVER_JSON, "version": "1.0.0", "_meta": {OFFICIAL: {"id": "a0", "is_latest": False}}}
    stale_seed = {**OLD_RECORD, "version_detail": {**OLD_RECORD["version_detail"], "is_latest": False}}
    records, cursor = registry_records({"servers": [latest, older, stale_seed], "metadata": {"next_cursor": "b1", "count": 3}})
    assert cursor == "b1"
    assert len(records) == 1 and records[0][0] == latest and records[0][1] == latest["_meta"]
    parsed = _read(to_entry(records[0][0], registry_meta=records[0][1]))
    assert parsed.updatedAt == "2025-08-01T00:00:00Z" and parsed.data == latest


@pytest.mark.parametrize("metadata", [{}, {"nextCursor": ""}, {"nextCursor": None, "count": 0}])
def test_the_last_page_has_no_cursor(metadata: dict[str, Any]) -> None:
    assert registry_records({"servers": [], "metadata": metadata}) == ([], None)
    assert registry_records({"servers": []}) == ([], None)


@pytest.mark.parametrize(
    ("page", "message"),
    [([], "page: must be a JSON object"), ({"metadata": {}}, "page.servers: must be a list"), ({"servers": {}}, "page.servers")],
)
def test_a_page_that_is_not_one(page: Any, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        registry_records(page)


# -- server cards ------------------------------------------------------------------------------------------


def test_a_server_card_with_tools() -> None:
    assert is_server_card(SERVER_CARD) and not is_server_json(SERVER_CARD)
    before = copy.deepcopy(SERVER_CARD)
    parsed = _read(to_entry(SERVER_CARD, origin_host="billing.example.net"))
    assert before == SERVER_CARD  # not changed
    assert parsed.identifier == "urn:air:billing.example.net:server:invoice-tools"
    assert parsed.displayName == "Invoice Tools"
    assert parsed.version == "3.0.1"  # serverInfo's, not the card format's 1.0
    assert parsed.capabilities == ["create_invoice", "send_reminder"]
    assert parsed.data == SERVER_CARD
    assert parsed.metadata == {
        "sourceId": "invoice-tools",
        "remoteUrl": "https://billing.example.net/mcp",  # the relative endpoint, on the card's host
        "remoteTransport": "streamable-http",
    }


def test_a_cards_tools_are_indexed_as_examples() -> None:
    examples = extract_examples(_read(to_entry(SERVER_CARD, origin_host="billing.example.net")))
    tools = {e.label: e.text for e in examples if e.kind == "tool"}
    assert tools == {
        "create_invoice": "create invoice: Draft an invoice for a customer with line items and a due date",
        "send_reminder": "send reminder: Email a payment reminder for an overdue invoice",
    }
    assert not [e for e in examples if e.kind == "capability"]  # each capability is a described tool


def test_a_card_with_tool_names_only() -> None:
    card = {"name": "nuxt.care", "description": "Health checks of Nuxt modules", "url": "https://nuxt.care/api/mcp", "transport": "http"}
    card["tools"] = ["module_search", "module_health"]
    assert is_server_card(card) and not a2a.is_agent_card(card)
    parsed = _read(to_entry(card, origin_host="nuxt.care:443"))
    assert parsed.identifier == "urn:air:nuxt.care:server:nuxt.care"
    assert parsed.capabilities == ["module_search", "module_health"]
    assert (parsed.metadata or {})["remoteUrl"] == "https://nuxt.care/api/mcp"
    assert {e.text for e in extract_examples(parsed) if e.kind == "capability"} == {"module search", "module health"}


def test_a_card_speaks_only_for_its_own_host() -> None:
    """A namespace is the publisher when the card comes from that domain (or below it); from anywhere else
    the card is anchored to the host that served it, so no host can publish under another's name."""
    card = {**SERVER_CARD, "serverInfo": {"name": "com.example/invoices", "version": "3.0.1"}}
    assert _read(to_entry(card, origin_host="mcp.example.com")).identifier == "urn:air:example.com:server:invoices"
    assert _read(to_entry(card, origin_host="https://example.com/.well-known/mcp.json")).identifier == "urn:air:example.com:server:invoices"
    assert _read(to_entry(card, origin_host="evil.example.org")).identifier == "urn:air:evil.example.org:server:invoices"


def test_a_card_name_is_sanitised_into_segments() -> None:
    card = {**SERVER_CARD, "serverInfo": {"name": "Invoice Tools (beta)!"}}
    assert _read(to_entry(card, origin_host="billing.example.net")).identifier == "urn:air:billing.example.net:server:Invoice-Tools-beta"


# -- what is not one ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "document",
    [
        WEATHER,  # an ARD entry
        {"specVersion": "1.0", "entries": [INVOICES]},  # an ARD manifest
        {"name": "com.example/agent", "url": "https://agents.example.com/a2a", "version": "1", "description": "d", "skills": []},
        {"supportedInterfaces": [{"url": "https://agents.example.com/a2a"}], "name": "io.github.a/b", "version": "1", "description": "d"},
        {"name": "com.example/agent", "version": "1", "description": "d", "endpoint": "https://api.example.com/agent"},  # AIDIP
        {"id": "x", "name": "io.github.a/b", "version": "1", "description": "d", "bindings": []},  # Xu
        {"name": "weather", "version": "1", "description": "no namespace, no packages"},
        [SERVER_JSON],
    ],
)
def test_other_formats_are_not_claimed(document: Any) -> None:
    assert not is_server_json(document)
    assert not is_server_card(document)


@pytest.mark.parametrize(
    ("document", "kwargs", "message"),
    [
        ([SERVER_JSON], {}, r"server: must be a JSON object"),
        (WEATHER, {}, r"server: this is an ARD catalog entry"),
        ({"specVersion": "1.0", "entries": []}, {}, r"server: this is an ARD catalog manifest"),
        ({"supportedInterfaces": [{"url": "https://a.example.com/"}], "name": "a"}, {}, r"server: this is an A2A agent card"),
        ({**OLD_RECORD, "name": ""}, {}, r"server\.name: required, a non-empty string"),
        ({k: v for k, v in SERVER_JSON.items() if k != "name"}, {}, r"server\.name: required"),
        ({**SERVER_CARD, "serverInfo": {"version": "1"}}, {"origin_host": "a.example.com"}, r"server\.serverInfo\.name: required"),
        (SERVER_CARD, {}, r"server\.serverInfo\.name: 'invoice-tools' has no reverse-DNS namespace .* no origin host"),
        (SERVER_CARD, {"origin_host": "10.0.0.7"}, r"no origin host was given"),  # an IP address names no publisher
        ({**SERVER_JSON, "name": "weather/tools"}, {}, r"server\.name: the namespace of 'weather/tools' is not a reverse-DNS name"),
        ({**SERVER_JSON, "name": "com.example/---"}, {}, r"server\.name: 'com\.example/---' has no letters or digits"),
    ],
)
def test_a_document_that_is_not_a_usable_server(document: Any, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        to_entry(document, **kwargs)
