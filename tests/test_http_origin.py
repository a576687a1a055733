"""Cross-site writes (issue #30.4): a web page the user visits must not write to, or crawl from, the registry on
their machine. A browser sends a POST without a CORS preflight when its body is a form, plain text or has no
Content-Type at all, so a REST write needs a JSON Content-Type; and a write, or any MCP request, from a page of a
foreign origin is refused whatever its body. Requests without Origin (curl, SDKs) and reads from any page are
answered as before."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ard_mcp.surfaces.rest.settings import HttpSettings
from ard_mcp.web.settings import CrawlSettings
from tests.conftest import INVOICES, PDF, TRANSLATE, WEATHER
from tests.http_support import BASE_URL, running
from tests.test_crawl import manifest
from tests.web_publisher import Publisher

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

EVIL = "https://evil.example"
APP = "https://app.example"  # the configured CORS origin
OWN = BASE_URL  # the registry's own origin: the Host the client uses
REBOUND = "http://127.0.0.1.evil.example:8000"  # a DNS-rebinding page: a loopback-looking name that is not one
LOCAL = CrawlSettings(allow_private_networks=True)
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
MCP_HEADERS = {"accept": "application/json, text/event-stream"}


@pytest.fixture
def site() -> Iterator[Publisher]:
    with Publisher() as publisher:
        publisher.put("/.well-known/ai-catalog.json", manifest(WEATHER, PDF))
        yield publisher


async def test_writes_without_a_json_content_type_get_415(data_dir: Path, site: Publisher) -> None:
    entry, crawl = json.dumps(WEATHER), json.dumps({"targets": [site.origin + "/"]})
    async with running(data_dir, HttpSettings(crawl=LOCAL)) as client:
        registered = await client.post("/agents", content=entry)  # no Content-Type: what fetch() sends for a Blob
        crawled = await client.post("/crawl", content=crawl)
        updated = await client.put(f"/agents/{WEATHER['identifier']}", content=entry)
        listed = (await client.get("/agents")).json()["items"]
        search = await client.post("/search", content=json.dumps({"query": {"text": "weather"}}))
        charset = await client.post("/agents", content=entry, headers={"content-type": "application/json; charset=utf-8"})
        suffixed = await client.post("/agents", content=json.dumps(PDF), headers={"content-type": "application/ai-catalog+json"})

    assert registered.status_code == 415 and registered.json()["error"]["code"] == "UnsupportedMediaType"
    assert "Content-Type: application/json (got no Content-Type)" in registered.json()["error"]["message"]
    assert crawled.status_code == 415 and crawled.json()["errorCode"] == "UNSUPPORTED_MEDIA_TYPE"
    assert updated.status_code == 415
    assert listed == [] and site.requests == []  # nothing stored, nothing fetched
    assert search.status_code == 200  # a read is no write: answered as before
    assert charset.status_code == 201 and suffixed.status_code == 201


async def test_a_page_of_a_foreign_origin_may_not_write(data_dir: Path, site: Publisher) -> None:
    async with running(data_dir, HttpSettings(crawl=LOCAL)) as client:
        for origin in (EVIL, "null", REBOUND):
            registered = await client.post("/agents", json=WEATHER, headers={"origin": origin})
            assert registered.status_code == 403 and registered.json()["error"]["code"] == "Forbidden", registered.text
            assert origin in registered.json()["error"]["message"] and "--cors-origins" in registered.json()["error"]["message"]
            crawled = await client.post("/crawl", json={"targets": [site.origin + "/"]}, headers={"origin": origin})
            assert crawled.status_code == 403 and crawled.json()["errorCode"] == "PERMISSION_DENIED", crawled.text
        assert (await client.get("/agents")).json()["items"] == [] and site.requests == []

        assert (await client.post("/agents", json=WEATHER)).status_code == 201  # no Origin: curl, an SDK
        path = f"/agents/{WEATHER['identifier']}"
        changed = await client.put(path, json={**WEATHER, "description": "hijacked"}, headers={"origin": EVIL})
        deleted = await client.delete(path, headers={"origin": "null"})
        assert changed.status_code == 403 and deleted.status_code == 403
        assert (await client.get(path)).json()["description"] == WEATHER["description"]


async def test_own_and_configured_origins_may_write(tmp_path: Path, site: Publisher) -> None:
    async with running(tmp_path / "data", HttpSettings(cors_origins=(APP,), crawl=LOCAL)) as client:
        crawled = await client.post("/crawl", json={"targets": [site.origin + "/"]}, headers={"origin": APP})
        own = await client.post("/agents", json=INVOICES, headers={"origin": OWN})
        local = await client.post("/agents", json=TRANSLATE, headers={"origin": "http://localhost:3000"})  # a page this machine serves
    assert crawled.status_code == 200 and crawled.json()["added"] == 2, crawled.text
    assert own.status_code == 201 and local.status_code == 201

    public = HttpSettings(allowed_hosts=("registry.example.com",))  # behind a TLS proxy that passes the Host on
    async with running(tmp_path / "public", public) as client:
        headers = {"host": "registry.example.com", "origin": "https://registry.example.com"}
        assert (await client.post("/agents", json=WEATHER, headers=headers)).status_code == 201
        headers["origin"] = "https://registry.example.com.evil.example"
        assert (await client.post("/agents", json=PDF, headers=headers)).status_code == 403


async def test_reads_are_answered_whatever_the_origin(data_dir: Path) -> None:
    async with running(data_dir, HttpSettings(cors_origins=(APP,))) as client:
        assert (await client.post("/agents", json=WEATHER)).status_code == 201
        for origin in (EVIL, "null", APP):
            found = await client.post("/search", json={"query": {"text": "weather forecast"}}, headers={"origin": origin})
            assert found.status_code == 200 and found.json()["results"], found.text
            # CORS decides which pages may read the answer: only the configured origin
            assert found.headers.get("access-control-allow-origin") == (APP if origin == APP else None)
        assert (await client.get(f"/agents/{WEATHER['identifier']}", headers={"origin": EVIL})).status_code == 200


async def test_the_mcp_endpoint_follows_the_same_origin_rule(tmp_path: Path) -> None:
    async with running(tmp_path / "data", HttpSettings(cors_origins=(APP,))) as client:
        for origin, status in ((EVIL, 403), ("null", 403), (REBOUND, 403), (OWN, 200), (APP, 200), ("http://localhost:6274", 200)):
            answer = await client.post("/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "origin": origin})
            assert answer.status_code == status, f"{origin}: {answer.text}"
        assert "may not use the MCP endpoint" in (await client.post("/mcp", json=INITIALIZE, headers={"origin": EVIL})).json()["message"]
    async with running(tmp_path / "open", HttpSettings(host="0.0.0.0")) as client:  # never bound: any Host is answered
        # the MCP SDK checked no Origin at all once any Host was answered
        assert (await client.post("/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "origin": EVIL})).status_code == 403
        assert (await client.post("/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "origin": OWN})).status_code == 200
