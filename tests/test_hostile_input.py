"""Hostile input answered with a clear error naming what is wrong, never a server error (issue #15): forged
page tokens, the limits on what one entry or one request may ask of the registry, and URLs that point at
cloud metadata in a spelling other than the dotted one (issue #30)."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from ard_mcp.config import Config
from ard_mcp.errors import InvalidArgument
from ard_mcp.formats import registration
from ard_mcp.formats.leniency import read_entry
from ard_mcp.formats.limits import EntryLimits
from ard_mcp.search.criteria import Criteria
from ard_mcp.search.filters import parse_filter
from ard_mcp.search.paging import decode_token, encode_token
from ard_mcp.surfaces.mcp.server import build_server
from tests.conftest import WEATHER, entry
from tests.http_support import running
from tests.url_spellings import IDS, SPELLINGS, points_to


def _forged(data: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode()


@pytest.mark.parametrize(
    "token",
    [
        "eyJvIjogMWU0MDAsICJrIjogIngifQ==",  # {"o": 1e400, "k": "x"}: int(inf) raised OverflowError
        _forged({"o": 10**24, "k": "x"}),
        _forged({"o": -1, "k": "x"}),
        _forged({"o": True, "k": "x"}),
        _forged({"o": "5", "k": "x"}),
        _forged([1, 2]),
        "%%%",
    ],
)
def test_forged_page_tokens_are_refused(token: str) -> None:
    with pytest.raises(InvalidArgument, match="pageToken: not a token this registry issued"):
        decode_token(token, {"q": "x"})


def test_a_token_of_another_query_is_refused_and_ours_is_read() -> None:
    token = encode_token(40, {"q": "x"})
    assert decode_token(token, {"q": "x"}) == 40
    with pytest.raises(InvalidArgument, match="belongs to a different query"):
        decode_token(token, {"q": "y"})


def _nested(depth: int) -> dict[str, Any]:
    data: dict[str, Any] = {"leaf": True}
    for _ in range(depth - 1):
        data = {"x": data}
    return data


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"data": _nested(252)}, "entry: nested deeper than 32 levels of objects and arrays"),
        ({"data": _nested(5000)}, "entry: nested deeper than 32 levels"),
        ({"tags": [f"t{i}" for i in range(100_000)]}, "entry.tags: more than 256 items (100000)"),
        ({"capabilities": ["x" * 300]}, "entry.capabilities[0]: longer than 256 characters (300)"),
        ({"description": "d" * 10_001}, "entry.description: longer than 10000 characters"),
        ({"metadata": {f"k{i}": i for i in range(300)}}, "entry.metadata: more than 256 keys (300)"),
        ({"data": {"blob": "x" * 300_000}}, "bytes of JSON, over the limit of 262144 (see --max-entry-bytes)"),
        ({"displayName": "Weather\x00Admin"}, "entry.displayName: contains the invisible control character U+0000"),
        ({"displayName": "Weather \u202eevil"}, "entry.displayName: contains the invisible control character U+202E"),
        ({"tags": ["ok", "a\u2066b"]}, "entry.tags[1]: contains the invisible control character U+2066"),
        ({"data": None, "url": "file:///etc/passwd"}, "entry.url: must be an http or https URL (got file)"),
        ({"data": None, "url": "javascript:alert(1)"}, "entry.url: must be an http or https URL (got javascript)"),
        ({"data": None, "url": "data:text/html,<script>x</script>"}, "entry.url: must be an http or https URL (got data)"),
        ({"data": None, "url": "gopher://example.com/"}, "entry.url: must be an http or https URL (got gopher)"),
    ],
)
def test_entries_over_a_limit_are_refused_naming_it(changes: dict[str, Any], expected: str) -> None:
    with pytest.raises(InvalidArgument, match=re.escape(expected)):
        read_entry(entry(WEATHER, **changes))


@pytest.mark.parametrize(("url", "address"), SPELLINGS, ids=IDS)
def test_an_entry_url_pointing_at_cloud_metadata_is_refused_in_every_spelling(url: str, address: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        read_entry(entry(WEATHER, data=None, url=url))
    assert caught.value.message.startswith(f"entry.url: {points_to(url, address)}")
    assert caught.value.message.endswith("which the registry refuses")


@pytest.mark.slow
@pytest.mark.anyio
async def test_every_surface_refuses_every_spelling_and_stores_nothing(data_dir: Path) -> None:
    """`POST /agents` and the `register_agent` tool (a crawl and ingest: `test_crawl`; federation: `test_federation`).
    `http://[::169.254.169.254]/`, `http://metadata/` and `http://0/` passed every surface before issue #44."""
    documents = [entry(WEATHER, identifier=f"urn:air:example.com:x:m{i}", data=None, url=url) for i, (url, _) in enumerate(SPELLINGS)]
    async with running(data_dir) as client:
        for document, (url, address) in zip(documents, SPELLINGS, strict=True):
            posted = await client.post("/agents", json=document)
            assert posted.status_code == 400 and points_to(url, address) in posted.json()["error"]["message"], posted.text
        assert (await client.get("/agents")).json()["total"] == 0
    async with Client(build_server(Config(data_dir), warm=False)) as mcp:
        for document, (url, address) in zip(documents, SPELLINGS, strict=True):
            result = await mcp.call_tool("register_agent", {"entry": document})
            assert result.is_error and points_to(url, address) in result.content[0].text  # type: ignore[union-attr]
        assert not (await mcp.call_tool("list_agents", {})).structured_content["items"]  # type: ignore[index]


@pytest.mark.parametrize(("url", "address"), SPELLINGS, ids=IDS)
def test_endpoints_of_every_format_pointing_at_cloud_metadata_are_refused(url: str, address: str) -> None:
    """Xu bindings, an AIDIP endpoint and an A2A card's interfaces are served as the entry's bindings and
    called by clients: registration refuses them as it refuses `url`, naming the field that holds them."""
    socket = "ws" + url[url.index(":") :]  # an A2A interface may be a WebSocket: its host is judged the same
    documents = [
        (url, {"id": "https://example.net/agents/x", "name": "X", "description": "d", "bindings": [{"protocol": "a2a", "endpoint": url}]}),
        (url, {"name": "X", "endpoint": url, "operations": [{"name": "run"}]}),
        (url, {"name": "X", "description": "d", "url": url, "version": "1", "skills": [{"id": "s", "name": "S"}]}),
        (socket, {"name": "X", "description": "d", "supportedInterfaces": [{"url": socket, "protocolBinding": "JSONRPC"}]}),
    ]
    for endpoint, document in documents:
        with pytest.raises(InvalidArgument, match=re.escape(f"entry.data: {points_to(endpoint, address)}")):
            read_entry(registration.to_entry(document, default_id="urn:air:example.net:agents:x"))


@pytest.mark.parametrize(("url", "address"), SPELLINGS, ids=IDS)
def test_trust_manifest_urls_pointing_at_cloud_metadata_are_refused(url: str, address: str) -> None:
    """An attestation's document and the governance document are served to clients, and a JWKS attestation is
    fetched by the verifier: the same check as `url`, naming the field."""
    attestation = {"type": "JWKS", "uri": url, "mediaType": "application/jwk-set+json"}
    for trust, field in (
        ({"identity": "https://example.com", "attestations": [attestation]}, "entry.trustManifest.attestations[0].uri"),
        (
            {"identity": "https://example.com", "trustSchema": {"identifier": "x", "version": "1", "governanceUri": url}},
            "entry.trustManifest.trustSchema.governanceUri",
        ),
    ):
        with pytest.raises(InvalidArgument, match=re.escape(f"{field}: {points_to(url, address)}")):
            read_entry(entry(WEATHER, trustManifest=trust))


def test_limits_leave_real_entries_alone_and_the_entry_size_is_configurable() -> None:
    assert read_entry(entry(WEATHER, description="Weather\tforecasts\nfor the week."))[0].displayName == WEATHER["displayName"]
    assert read_entry(entry(WEATHER, data=None, url="http://localhost:8080/mcp"))[0].url == "http://localhost:8080/mcp"  # local dev
    big = entry(WEATHER, data={"blob": "x" * 300_000})
    assert read_entry(big, limits=EntryLimits(max_entry_bytes=1_000_000))[0].identifier == WEATHER["identifier"]


def test_registration_refuses_deep_documents_of_every_format_before_parsing_them() -> None:
    for document in (entry(WEATHER, data=_nested(3000)), {"name": "x", "bindings": [], "deep": _nested(3000)}):
        with pytest.raises(InvalidArgument, match="nested deeper than 32"):
            registration.to_entry(document)


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (lambda: parse_filter({"tags": [f"t{i}" for i in range(101)]}), "filter.tags: at most 100 values (got 101)"),
        (lambda: parse_filter({f"metadata.k{i}": "x" for i in range(33)}), "filter: at most 32 keys (got 33)"),
        (lambda: Criteria.of(required_tags=[f"t{i}" for i in range(10_000)]), "required_tags: at most 100 values (got 10000)"),
    ],
)
def test_requests_over_a_limit_are_refused_naming_it(call: Any, expected: str) -> None:
    with pytest.raises(InvalidArgument, match=re.escape(expected)):
        call()
