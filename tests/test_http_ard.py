"""The ARD v0.9 REST surface (§7, Appendix A-B) through a real HTTP client, validated against the published
schemas (ard.openapi.yaml, ai-catalog.schema.json) and against our own /openapi.json."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import ard_publish  # type: ignore[import-untyped]
import pytest

from tests.conftest import INVOICES, PDF, SAMPLE, SKILL, TRANSLATE, WEATHER
from tests.http_support import Api, assert_ard, assert_ours, doc, seeded

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def api(tmp_path_factory: pytest.TempPathFactory, module_store_url: str | None) -> AsyncIterator[Api]:
    async with seeded(
        tmp_path_factory.mktemp("ard") / "data", SAMPLE, source_url="https://registry.example.com/", store_url=module_store_url
    ) as api:
        yield api


async def ard_error(api: Api, method: str, path: str, status: int, **kwargs: Any) -> str:
    """Send a request that must fail; check the ARD error object (both spellings) and return the message."""
    client, openapi = api
    response = await client.request(method, path, **kwargs)
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"]["code"] == body["errorCode"] and body["error"]["message"] == body["message"]
    assert_ard(body, "openapi:Error")
    assert_ours(openapi, path if not path.startswith("/agents/") else "/agents/{id}", method, response)
    return str(body["message"])


async def test_search_returns_spec_results(api: Api) -> None:
    client, openapi = api
    response = await client.post("/search", json={"query": {"text": "will it rain in Lisbon this weekend?"}})
    assert response.status_code == 200
    body = response.json()
    assert_ard(body, "openapi:SearchResponse")
    assert_ours(openapi, "/search", "POST", response)
    top = body["results"][0]
    assert top["identifier"] == WEATHER["identifier"] and {k: top[k] for k in WEATHER} == WEATHER
    assert isinstance(top["score"], int) and 0 <= top["score"] <= 100
    assert top["source"] == "https://registry.example.com/"
    assert "totalResults" not in body and "referrals" not in body


async def test_search_filters_pages_and_federation(api: Api) -> None:
    client, openapi = api
    only = await client.post(
        "/search", json={"query": {"text": "translate my document into Spanish", "filter": {"type": "application/a2a-agent-card+json"}}}
    )
    assert only.json()["results"] and all(r["type"] == "application/a2a-agent-card+json" for r in only.json()["results"])
    soc2 = await client.post(
        "/search", json={"query": {"text": "send an invoice", "filter": {"trustManifest.attestations.type": ["SOC2-Type2"]}}}
    )
    assert [r["identifier"] for r in soc2.json()["results"]] == [INVOICES["identifier"]]
    request = {"query": {"text": "make a document or a presentation"}, "pageSize": 1}
    first = (await client.post("/search", json=request)).json()
    assert len(first["results"]) == 1 and first["pageToken"]
    second = (await client.post("/search", json={**request, "pageToken": first["pageToken"]})).json()
    assert second["results"][0]["identifier"] != first["results"][0]["identifier"]
    large = await client.post("/search", json={**request, "pageSize": 500})  # v0.9 sets no maximum: clamped, not refused
    assert large.status_code == 200 and large.headers["X-Page-Size"].startswith("100 (asked 500")
    assert [r["identifier"] for r in large.json()["results"]][:2] == [first["results"][0]["identifier"], second["results"][0]["identifier"]]
    assert_ours(openapi, "/search", "POST", large)
    assert "X-Page-Size" not in (await client.post("/search", json=request)).headers
    for federation in ("auto", "referrals", "none"):
        response = await client.post("/search", json={"query": {"text": "weather forecast"}, "federation": federation})
        assert response.status_code == 200 and "referrals" not in response.json()  # no upstream registries configured
        assert_ard(response.json(), "openapi:SearchResponse")
        assert_ours(openapi, "/search", "POST", response)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({}, "request.query: is required"),
        ({"query": {}}, "query.text: is required"),
        ({"query": {"text": "   "}}, "text: must be a non-empty"),
        ({"query": {"text": "weather"}, "pageSize": 0}, "pageSize"),
        ({"query": {"text": "weather"}, "pageSize": "ten"}, "pageSize"),
        ({"query": {"text": "weather"}, "federation": "everywhere"}, "federation"),
        ({"query": {"text": "weather"}, "pageToken": "not-a-token"}, "pageToken"),
        ({"query": {"text": "weather", "filter": {"colour": ["blue"]}}}, "'colour'"),
        ({"query": {"text": "weather", "filter": ["type"]}}, "filter"),
        ({"query": {"text": "weather", "filter": {"tags": [{"a": 1}]}}}, "filter.tags"),
        ({"query": {"text": "weather"}, "unknown": 1}, "request.unknown: is not a field"),
        ({"query": {"text": 42}}, "query.text"),
        ({"query": "weather"}, "request.query"),
        ({"query": {"text": "x" * 33000}}, "at most 32000"),
        ({"query": {"text": "weather", "filter": {"tags": [f"t{i}" for i in range(10_000)]}}}, "filter.tags: at most 100 values"),
    ],
)
async def test_search_refuses_bad_requests(api: Api, body: dict[str, Any], expected: str) -> None:
    assert expected in await ard_error(api, "POST", "/search", 400, json=body)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"{bad json", "not valid JSON"),
        (b"", "got nothing"),
        (b"[1, 2]", "must be a JSON object"),
        (b'{"query": {"text": NaN}}', "request body: NaN is not JSON (numbers must be finite)"),
        (b'{"query": {"text": "a"}, "pageSize": 1e999}', "request body: number 1e999 is not JSON (numbers must be finite)"),
        (b'{"query": {"text": "\\ud800"}}', "request body: query.text: a string holds an unpaired surrogate (\\ud800)"),
        (b"\xff\xfe{}", "not valid JSON"),
        (b"[" * 100000 + b"]" * 100000, "request body: nested deeper than 64 levels"),
    ],
)
async def test_malformed_bodies_are_400_not_500(api: Api, content: bytes, expected: str) -> None:
    message = await ard_error(api, "POST", "/search", 400, content=content, headers={"content-type": "application/json"})
    assert expected in message


async def test_explore_refuses_more_facets_than_its_limit(api: Api) -> None:
    body = {"resultType": {"facets": [{"field": "tags"}] * 400}}
    assert "facets: at most 20 per request (got 400)" in await ard_error(api, "POST", "/explore", 400, json=body)


async def test_a_deeply_nested_entry_is_refused_and_search_keeps_working(api: Api) -> None:
    client, _ = api
    data: dict[str, Any] = {"leaf": True}
    for _ in range(251):
        data = {"x": data}
    deep = doc(WEATHER, identifier="urn:air:example.com:weather:deep", data=data)
    refused = await client.post("/agents", json=deep)
    assert refused.status_code == 400 and "request body: nested deeper than 64 levels" in refused.text  # was stored, then broke searches
    assert (await client.post("/search", json={"query": {"text": "weather"}})).status_code == 200


async def test_explore_whole_registry_and_narrowed(api: Api) -> None:
    client, openapi = api
    response = await client.post("/explore", json={"resultType": {"facets": [{"field": "type"}, {"field": "tags", "limit": 1}]}})
    assert response.status_code == 200
    body = response.json()
    assert_ard(body, "openapi:ExploreResponse")
    assert_ours(openapi, "/explore", "POST", response)
    types = {b["value"]: b["count"] for b in body["facets"]["type"]["buckets"]}
    assert types == {"application/mcp-server-card+json": 2, "application/a2a-agent-card+json": 2, "application/ai-skill": 1}
    assert body["facets"]["tags"]["buckets"] == [{"value": "documents", "count": 2}] and body["facets"]["tags"]["otherCount"] == 6
    narrowed = await client.post(
        "/explore",
        json={
            "query": {"text": "create slides or documents", "filter": {"type": ["application/ai-skill"]}},
            "resultType": {"facets": [{"field": "publisher", "minCount": 1}]},
        },
    )
    assert narrowed.json()["facets"]["publisher"]["buckets"] == [{"value": "github.com", "count": 1}]
    assert_ard(narrowed.json(), "openapi:ExploreResponse")
    filtered = await client.post(
        "/explore", json={"query": {"filter": {"tags": "documents"}}, "resultType": {"facets": [{"field": "type", "minCount": 2}]}}
    )
    assert filtered.json()["facets"]["type"]["buckets"] == []


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"resultType": {}},
        {"resultType": {"facets": []}},
        {"resultType": {"facets": [{"field": "colour"}]}},
        {"resultType": {"facets": [{"field": "type", "limit": 0}]}},
        {"resultType": {"facets": [{"field": "type", "minCount": "many"}]}},
        {"resultType": {"facets": [{"field": "type"}]}, "query": {"filter": {"nope": [1]}}},
        {"resultType": {"facets": [{"field": "type"}]}, "extra": True},
    ],
)
async def test_explore_refuses_bad_requests(api: Api, body: dict[str, Any]) -> None:
    await ard_error(api, "POST", "/explore", 400, json=body)


async def listing(api: Api, **params: Any) -> dict[str, Any]:
    client, openapi = api
    response = await client.get("/agents", params=params)
    assert response.status_code == 200, response.text
    assert_ard(response.json(), "openapi:ListResponse")
    assert_ours(openapi, "/agents", "GET", response)
    return dict(response.json())


def ids(body: dict[str, Any]) -> list[str]:
    return [item["identifier"] for item in body["items"]]


async def test_list_with_appendix_a_expressions(api: Api) -> None:
    everything = await listing(api)
    assert everything["total"] == len(SAMPLE) and len(everything["items"]) == len(SAMPLE) and "pageToken" not in everything
    mcp = await listing(api, filter="type = 'application/mcp-server-card+json'")
    assert set(ids(mcp)) == {WEATHER["identifier"], PDF["identifier"]}
    either = await listing(api, filter="type = 'application/mcp-server-card+json,application/ai-skill'")
    assert set(ids(either)) == {WEATHER["identifier"], PDF["identifier"], SKILL["identifier"]}
    quoted = await listing(api, filter="type = 'application/mcp-server-card+json', 'application/ai-skill' AND publisherId = github.com")
    assert ids(quoted) == [SKILL["identifier"]]
    assert ids(await listing(api, filter="displayName = 'LINGUA'")) == [TRANSLATE["identifier"]]
    assert ids(await listing(api, filter="displayName = forge,'INVOICE'", orderBy="name")) == [INVOICES["identifier"], PDF["identifier"]]
    assert len(ids(await listing(api, filter="createdAfter > '2000-01-01'"))) == len(SAMPLE)
    assert ids(await listing(api, filter="createdAfter > '2999-01-01T00:00:00Z'")) == []
    assert ids(await listing(api, filter="updatedAfter > '2026-04-01' and tags = weather")) == [WEATHER["identifier"]]
    assert ids(await listing(api, filter="updatedAfter = '2026-05-02'")) == []
    assert ids(await listing(api, filter="metadata.region = global")) == [WEATHER["identifier"]]


async def test_list_orders_and_pages(api: Api) -> None:
    names = [i["displayName"] for i in (await listing(api, orderBy="displayName"))["items"]]
    assert names == sorted(names, key=str.lower)
    newest = await listing(api, orderBy="updatedAt DESC", pageSize=1)
    assert ids(newest) == [WEATHER["identifier"]] and newest["total"] == len(SAMPLE)
    rest = await listing(api, orderBy="updatedAt DESC", pageSize=1, pageToken=newest["pageToken"])
    assert ids(rest) != ids(newest)
    assert [i["displayName"] for i in (await listing(api, orderBy="name DESC"))["items"]] == sorted(names, key=str.lower, reverse=True)


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"filter": "type ="}, "expected a value"),
        ({"filter": "type 'x'"}, "expected an operator"),
        ({"filter": "type = a OR type = b"}, "expected AND"),
        ({"filter": "colour = blue"}, "'colour'"),
        ({"filter": "createdAfter > 'yesterday'"}, "ISO 8601"),
        ({"filter": "type > a"}, "createdAfter and updatedAfter only"),
        ({"filter": "type = 'unterminated"}, "unexpected character"),
        ({"pageSize": "abc"}, "pageSize"),
        ({"pageSize": "0"}, "pageSize"),
        ({"pageSize": "101"}, "pageSize"),
        ({"orderBy": "colour"}, "orderBy"),
        ({"pageToken": "garbage"}, "pageToken"),
        ({"pageToken": "eyJvIjogMWU0MDAsICJrIjogIngifQ=="}, "pageToken"),  # a forged offset of 1e400 once gave a 500
        ({"pageToken": "eyJvIjogMTAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMCwgImsiOiAieCJ9"}, "pageToken"),  # 10**24: past SQLite's integer
        ({"capabilities": "translation"}, "POST /agents/search"),
    ],
)
async def test_list_refuses_bad_parameters(api: Api, params: dict[str, str], expected: str) -> None:
    assert expected in await ard_error(api, "GET", "/agents", 400, params=params)


@pytest.mark.parametrize("path", ["/.well-known/ai-catalog.json", "/.well-known/ard.json"])
async def test_well_known_manifest_lists_this_registry_and_its_entries(api: Api, path: str) -> None:
    client, openapi = api
    response = await client.get(path)
    assert response.status_code == 200
    manifest = response.json()
    assert_ard(manifest, "catalog:")
    assert_ours(openapi, path, "GET", response)
    own = manifest["entries"][0]
    assert own["type"] == "application/ai-registry+json" and own["url"] == "https://registry.example.com/"
    assert own["identifier"] == "urn:air:registry.example.com:registry:ard-mcp"
    assert {e["identifier"] for e in manifest["entries"][1:]} == {e["identifier"] for e in SAMPLE}
    # `ard-publish validate` once refused every manifest served here over the registry's own entry (no queries)
    assert [p for p in ard_publish.validate(manifest) if p.startswith(own["displayName"])] == []


async def test_get_agent_by_identifier(api: Api) -> None:
    client, openapi = api
    for reference in (WEATHER["identifier"], quote(WEATHER["identifier"], safe=""), "urn:ai:Example.com:weather:forecast"):
        response = await client.get(f"/agents/{reference}")
        assert response.status_code == 200
        body = response.json()
        assert_ard(body, "catalog:catalogEntry")
        assert_ours(openapi, "/agents/{id}", "GET", response)
        assert {k: body[k] for k in WEATHER} == WEATHER
        assert body["id"] == WEATHER["identifier"] and body["name"] == WEATHER["displayName"] and body["status"] == "active"
    assert "no agent" in await ard_error(api, "GET", "/agents/urn:air:example.com:nothing:here", 404)


async def test_route_clash_and_unknown_routes(api: Api) -> None:
    client, _ = api
    assert "items" in (await client.get("/agents")).json()  # ARD listing, not an agent called ""
    assert "no agent search" in await ard_error(api, "GET", "/agents/search", 404)
    response = await client.get("/nowhere")
    assert response.status_code == 404 and response.json()["errorCode"] == "NOT_FOUND"
    wrong = await client.patch("/search", json={})
    assert wrong.status_code == 405 and wrong.json()["errorCode"] == "METHOD_NOT_ALLOWED"
