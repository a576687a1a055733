"""AIDIP's registry routes: POST /agents (201 / 200 / 400), GET / PUT / DELETE /agents/{id}, POST
/agents/search (filters ANDed, a query ranks), operations indexed as examples, AIDIP error objects."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from ard_mcp.formats.messages import fit_of
from tests.conftest import PDF, SAMPLE, SKILL, WEATHER
from tests.http_support import AIDIP_TRANSLATOR, AIDIP_URN, XU_HR, Api, assert_ard, assert_ours, doc, seeded

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def api(tmp_path_factory: pytest.TempPathFactory, module_store_url: str | None) -> AsyncIterator[Api]:
    async with seeded(tmp_path_factory.mktemp("aidip") / "data", [*SAMPLE, XU_HR], store_url=module_store_url) as api:
        yield api


async def aidip_error(api: Api, method: str, path: str, status: int, code: str, **kwargs: Any) -> dict[str, Any]:
    client, openapi = api
    response = await client.request(method, path, **kwargs)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code and error["message"]
    assert_ours(openapi, "/agents/{id}" if path.startswith("/agents/") and path != "/agents/search" else path, method, response)
    return dict(error)


async def test_register_get_update_delete(api: Api) -> None:
    client, openapi = api
    created = await client.post("/agents", json=AIDIP_TRANSLATOR)
    assert created.status_code == 201
    assert_ours(openapi, "/agents", "POST", created)
    body = created.json()
    assert body["id"] == "agent-12345" and body["identifier"] == AIDIP_URN and body["operations"] == AIDIP_TRANSLATOR["operations"]
    assert body["capabilities"] == ["translation"] and body["metadata"]["publisher"] == "ExampleAI Inc."
    assert (await client.post("/agents", json=AIDIP_TRANSLATOR)).status_code == 200  # unchanged

    got = await client.get("/agents/agent-12345")
    assert got.status_code == 200 and got.json() == body
    assert_ours(openapi, "/agents/{id}", "GET", got)

    changed = doc(AIDIP_TRANSLATOR, description="Translates between Chinese and English.")
    updated = await client.put("/agents/agent-12345", json=changed)
    assert updated.status_code == 200 and updated.json()["description"] == "Translates between Chinese and English."
    assert_ours(openapi, "/agents/{id}", "PUT", updated)
    without_id = doc(AIDIP_TRANSLATOR, id=None, version="1.3.0")
    assert (await client.put("/agents/agent-12345", json=without_id)).json()["version"] == "1.3.0"

    deleted = await client.delete("/agents/agent-12345")
    assert deleted.status_code == 200 and deleted.json() == {"status": "deleted", "identifier": AIDIP_URN}
    assert_ours(openapi, "/agents/{id}", "DELETE", deleted)
    assert (await client.get("/agents/agent-12345")).status_code == 404
    await aidip_error(api, "DELETE", "/agents/agent-12345", 404, "NotFound")


async def test_one_document_is_both_an_ard_entry_and_aidip_metadata(api: Api) -> None:
    client, _ = api
    await client.post("/agents", json=doc(AIDIP_TRANSLATOR, id="agent-both"))
    body = (await client.get("/agents/agent-both")).json()
    assert_ard(body, "catalog:catalogEntry")
    for field in (
        "id",
        "name",
        "description",
        "version",
        "publisher",
        "capabilities",
        "tags",
        "endpoint",
        "supported_languages",
        "authentication",
        "status",
        "operations",
    ):
        assert field in body, field
    native = (await client.get(f"/agents/{SKILL['identifier']}")).json()
    assert native["endpoint"] == SKILL["url"] and native["publisher"] == "github.com" and native["name"] == SKILL["displayName"]
    await client.delete("/agents/agent-both")


async def test_put_creates_and_refuses_a_different_agent(api: Api) -> None:
    client, _ = api
    fresh = await client.put("/agents/agent-new", json=doc(AIDIP_TRANSLATOR, id=None, name="New Translator"))
    assert fresh.status_code == 201 and fresh.json()["id"] == "agent-new"
    mismatch = await aidip_error(api, "PUT", "/agents/agent-new", 400, "InvalidInput", json=doc(AIDIP_TRANSLATOR, id="agent-other"))
    assert "not the agent 'agent-new'" in mismatch["message"]
    ard = await aidip_error(api, "PUT", f"/agents/{WEATHER['identifier']}", 400, "InvalidInput", json=PDF)
    assert "not the agent" in ard["message"]
    await client.delete("/agents/agent-new")


async def test_the_smallest_aidip_metadata_is_enough(api: Api) -> None:
    client, openapi = api
    smallest = {"id": "agent-small", "name": "Small Agent", "endpoint": "https://small.example.org/invoke"}
    created = await client.post("/agents", json=smallest)
    assert created.status_code == 201 and created.json()["status"] == "active"
    got = await client.get("/agents/agent-small")
    assert got.status_code == 200 and got.json()["endpoint"] == smallest["endpoint"]
    assert_ours(openapi, "/agents/{id}", "GET", got)
    put = await client.put("/agents/agent-small", json={"name": "Small Agent", "endpoint": smallest["endpoint"], "version": "2"})
    assert put.status_code == 200 and put.json()["version"] == "2"
    await client.delete("/agents/agent-small")


async def test_an_agent_without_id_gets_a_stable_one(api: Api) -> None:
    client, _ = api
    anonymous = doc(AIDIP_TRANSLATOR, id=None, name="Nameless Translator")
    first = await client.post("/agents", json=anonymous)
    second = await client.post("/agents", json=anonymous)
    assert first.status_code == 201 and second.status_code == 200
    assert first.json()["id"] == second.json()["id"] and len(first.json()["id"]) == 36
    await client.delete(f"/agents/{first.json()['id']}")


async def search(api: Api, **body: Any) -> list[dict[str, Any]]:
    client, openapi = api
    response = await client.post("/agents/search", json=body)
    assert response.status_code == 200, response.text
    assert_ours(openapi, "/agents/search", "POST", response)
    assert isinstance(response.json(), list)
    return list(response.json())


async def test_search_keeps_to_confident_results(api: Api) -> None:
    """AIDIP answers a bare list with no room to say "low confidence": a query nothing fits well gets none."""
    client, _ = api
    await client.post("/agents", json=AIDIP_TRANSLATOR)
    assert await search(api, query="operate the control rods of a nuclear reactor", top=5) == []


async def test_search_filters_and_query(api: Api) -> None:
    client, _ = api
    await client.post("/agents", json=AIDIP_TRANSLATOR)
    by_capability = await search(
        api, filters={"capabilities": ["translation"], "supported_languages": ["en", "zh"], "tags": ["nlp"]}, top=10
    )
    assert [s["id"] for s in by_capability] == ["agent-12345"]
    assert by_capability[0]["endpoint"] == AIDIP_TRANSLATOR["endpoint"] and "score" not in by_capability[0]
    assert await search(api, filters={"tags": ["nlp", "weather"]}) == []
    assert await search(api, filters={"supported_languages": ["fr"]}) == []
    assert [s["id"] for s in await search(api, filters={"capabilities": "TRANSLATION", "supported_language": "en"})] == ["agent-12345"]
    documents = await search(api, filters={"tags": ["documents"]})
    assert {s["identifier"] for s in documents} == {PDF["identifier"], SKILL["identifier"]}
    assert len(await search(api, filters={"tags": ["documents"]}, top=1)) == 1
    ranked = await search(api, query="translate chinese text into english", top=3)
    assert ranked[0]["id"] == "agent-12345" and 0 < ranked[0]["score"] <= 1
    assert ranked[0]["fit"] == fit_of(round(ranked[0]["score"] * 100), True)
    semantic = await search(
        api, query="I need an agent that can translate a chinese sentence", filters={"capabilities": ["translation"]}, top=5
    )
    assert [s["id"] for s in semantic] == ["agent-12345"]


async def test_operations_and_example_inputs_are_indexed(api: Api) -> None:
    client, _ = api
    await client.post("/agents", json=AIDIP_TRANSLATOR)
    found = await client.post("/search", json={"query": {"text": "text: 你好世界; source language: zh; target language: en"}})
    top = found.json()["results"][0]
    assert top["identifier"] == AIDIP_URN
    labels = {m["label"]: m for m in top["evidence"]["matchedExamples"]}
    assert labels["translateText example"]["similarity"] > 0.99 and "translateText" in labels


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"filters": {"colour": ["blue"]}}, "request.filters.colour: is not a field"),
        ({"top": 0}, "request.top"),
        ({"top": "ten"}, "request.top"),
        ({"filters": ["translation"]}, "request.filters"),
        ({"query": 7}, "request.query"),
        ({"query": "x" * 32_001}, "request.query"),
    ],
)
async def test_search_refuses_bad_requests(api: Api, body: dict[str, Any], expected: str) -> None:
    error = await aidip_error(api, "POST", "/agents/search", 400, "InvalidInput", json=body)
    assert expected in error["message"]


@pytest.mark.parametrize(
    ("body", "params", "expected"),
    [
        (
            doc(AIDIP_TRANSLATOR, endpoint=None, operations=None, supported_languages=None, authentication=None),
            {},
            "agent.endpoint: is required",
        ),
        (doc(AIDIP_TRANSLATOR, name=None), {}, "agent.name: is required"),
        (doc(AIDIP_TRANSLATOR, endpoint="api.example.com/translate"), {}, "agent.endpoint: must be an absolute URL"),
        (doc(AIDIP_TRANSLATOR, capabilities="translation", tags=7), {}, "agent.capabilities"),
        (AIDIP_TRANSLATOR, {"format": "xu"}, "metadata.bindings: is required"),
        (AIDIP_TRANSLATOR, {"format": "yaml"}, "format: must be one of"),
        ({"colour": "blue"}, {}, "not a format this registry reads"),
        (doc(WEATHER, identifier="weather"), {}, "entry.identifier"),
    ],
)
async def test_registration_errors_name_the_field(api: Api, body: dict[str, Any], params: dict[str, str], expected: str) -> None:
    error = await aidip_error(api, "POST", "/agents", 400, "InvalidInput", json=body, params=params)
    assert expected in error["message"]


@pytest.mark.parametrize(("method", "path"), [("POST", "/agents"), ("PUT", "/agents/urn:air:example.com:catalog:all")])
async def test_a_whole_catalog_sent_as_one_agent_says_how_to_load_a_catalog(api: Api, method: str, path: str) -> None:
    catalog = {"specVersion": "1.0", "host": {"displayName": "Example"}, "entries": [WEATHER, PDF]}
    error = await aidip_error(api, method, path, 400, "InvalidInput", json=catalog)
    assert "whole catalog" in error["message"] and "`ard-mcp ingest FILE`" in error["message"]
    assert "POST /crawl" in error["message"] and "crawl_catalogs" in error["message"]
    client, _ = api
    assert (await client.get("/agents/urn:air:example.com:catalog:all")).status_code == 404  # nothing was registered


async def test_two_broken_fields_are_listed_as_details(api: Api) -> None:
    error = await aidip_error(api, "POST", "/agents", 400, "InvalidInput", json=doc(AIDIP_TRANSLATOR, name=None, tags="nlp"))
    assert error["details"] == ["agent.name: is required", "agent.tags: input should be a valid list"]


async def test_registration_reports_what_it_normalised(api: Api) -> None:
    client, openapi = api
    lenient = doc(
        WEATHER,
        identifier="urn:air:example.com:weather:lenient",
        metadata={"limits": {"daily": 1000}},
        trustManifest={
            "identity": "did:web:example.com",
            "identityType": "x509",
            "attestations": [{"type": "SOC2", "uri": "https://example.com/a.pdf"}],
        },
    )
    for method, path, status in (("POST", "/agents", 201), ("PUT", "/agents/urn:air:example.com:weather:lenient", 200)):
        response = await client.request(method, path, json=lenient)
        assert response.status_code == status, response.text
        assert_ours(openapi, "/agents" if method == "POST" else "/agents/{id}", method, response)
        body = response.json()
        fields = ["entry.metadata", "entry.trustManifest.identityType", "entry.trustManifest.attestations[0].mediaType"]
        assert [w.split(":")[0] for w in body["warnings"]] == fields
        assert_ard({k: v for k, v in body.items() if k in WEATHER or k in lenient}, "catalog:catalogEntry")
    fetched = (await client.get("/agents/urn:air:example.com:weather:lenient")).json()
    assert "warnings" not in fetched and fetched["metadata"] == {"limits.daily": 1000}


async def test_ids_that_map_to_one_identifier_do_not_replace_each_other(api: Api) -> None:
    client, _ = api
    first = {"id": "Translator v2", "name": "Translator two", "endpoint": "https://api.example.com/agents/t2"}
    created = await client.post("/agents", json=first)
    assert created.status_code == 201, created.text
    error = await aidip_error(api, "POST", "/agents", 409, "Conflict", json={**first, "id": "Translator-v2", "name": "Another"})
    assert "'Translator-v2'" in error["message"] and "'Translator v2'" in error["message"]
    kept = (await client.get("/agents/Translator v2")).json()
    assert kept["name"] == "Translator two" and kept["identifier"] == created.json()["identifier"]
