"""The Xu agent discovery profile: Agent Metadata registration (the draft's D0 vector), POST /discover at D2
(hard filters, unsupported filters, evidence, freshness, detail and redaction), status and expiry."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ard_mcp.formats.messages import fit_of
from tests.conftest import INVOICES, SAMPLE, TRANSLATE, WEATHER
from tests.http_support import (
    AIDIP_TRANSLATOR,
    AIDIP_URN,
    XU_HR,
    XU_HR_URN,
    XU_MINIMAL,
    XU_MINIMAL_URN,
    Api,
    assert_ard,
    assert_ours,
    doc,
    running,
    seeded,
)

pytestmark = [pytest.mark.slow, pytest.mark.anyio]
XU_SCORE_COMPONENTS = {"tag", "context", "example", "protocol", "freshness", "policy"}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def api(tmp_path_factory: pytest.TempPathFactory, module_store_url: str | None) -> AsyncIterator[Api]:
    async with seeded(
        tmp_path_factory.mktemp("xu") / "data", [*SAMPLE, XU_HR, XU_MINIMAL, AIDIP_TRANSLATOR], store_url=module_store_url
    ) as api:
        yield api


async def discover(api: Api, **request: Any) -> dict[str, Any]:
    client, openapi = api
    response = await client.post("/discover", json=request)
    assert response.status_code == 200, response.text
    assert_ours(openapi, "/discover", "POST", response)
    return dict(response.json())


def ids(found: dict[str, Any]) -> list[str]:
    return [c["identifier"] for c in found["candidates"]]


async def test_minimal_d0_metadata_is_accepted_and_resolvable(api: Api) -> None:
    client, _ = api
    for reference in (XU_MINIMAL["id"], XU_MINIMAL_URN):
        response = await client.get(f"/agents/{reference}")
        assert response.status_code == 200
        body = response.json()
        assert body["identifier"] == XU_MINIMAL_URN and body["id"] == XU_MINIMAL["id"] and body["data"] == XU_MINIMAL
        assert body["metadata"] == {"status": "active", "sourceId": XU_MINIMAL["id"]}
    again = await client.post("/agents", json=XU_MINIMAL)
    assert again.status_code == 200  # an idempotent upsert


async def test_xu_metadata_is_stored_as_a_valid_catalog_entry(api: Api) -> None:
    client, _ = api
    body = (await client.get(f"/agents/{XU_HR_URN}")).json()
    assert_ard(body, "catalog:catalogEntry")
    assert body["displayName"] == XU_HR["name"] and body["tags"] == XU_HR["tags"] and body["version"] == "1.0.0"
    assert body["updatedAt"] == XU_HR["updated_at"] and body["metadata"]["region"] == "apac"
    assert body["data"]["x-example.net-tier"] == "gold"  # unknown fields preserved


async def test_discover_d1_vector_and_response_shape(api: Api) -> None:
    found = await discover(api, query="answer a short factual question", protocols=["https"], limit=1)
    assert ids(found) == [XU_MINIMAL_URN]
    assert found["request_id"] and found["generated_at"].endswith("Z") and found["applied_filters"] == {"protocols": ["https"]}
    assert found["unsupported_filters"] == [] and found["warnings"] == []
    candidate = found["candidates"][0]
    assert candidate["id"] == XU_MINIMAL["id"] and candidate["status"] == "active" and 0 < candidate["score"] <= 1
    assert candidate["fit"] == fit_of(round(candidate["score"] * 100), True)  # the same bands as search_agents
    assert candidate["bindings"] == XU_MINIMAL["bindings"]
    assert candidate["freshness"]["indexed_at"] and "score_components" not in candidate  # evidence only on request


async def test_discover_says_when_it_is_not_confident(api: Api) -> None:
    """A query nothing fits well gets the closest candidates, and a warning says they are only that."""
    found = await discover(api, query="operate the control rods of a nuclear reactor")
    assert found["candidates"] and any(w.startswith("low confidence") for w in found["warnings"])


async def test_discover_d2_evidence_from_example_level_index(api: Api) -> None:
    found = await discover(
        api,
        query="Find an agent for onboarding validation and API setup.",
        preferred_tags=["onboarding", "api-automation"],
        include_evidence=True,
    )
    top = found["candidates"][0]
    assert top["identifier"] == XU_HR_URN
    assert set(top["score_components"]) >= XU_SCORE_COMPONENTS and all(0 <= v <= 1 for v in top["score_components"].values())
    assert top["score_components"]["tag"] == 1.0 and {"onboarding", "api-automation"} <= set(top["matched_tags"])
    example = (await discover(api, query="prepare the onboarding workflow for a new employee", include_evidence=True))["candidates"][0]
    assert example["identifier"] == XU_HR_URN and example["matched_examples"][0]["id"] == "ex-1"
    assert example["matched_examples"][0]["text"] == XU_HR["examples"][0]["text"]
    assert example["freshness"]["metadata_updated_at"] == XU_HR["updated_at"]


async def test_hard_filters_are_exact(api: Api) -> None:
    assert ids(await discover(api, query="translate a document", required_tags=["nlp", "CHINESE"])) == [AIDIP_URN]
    assert ids(await discover(api, query="translate a document", required_tags=["nlp", "weather"])) == []
    assert AIDIP_URN not in ids(await discover(api, query="translate a document", excluded_tags=["cloud"]))
    a2a = await discover(api, query="translate a document", protocols=["a2a"])
    assert ids(a2a) == [TRANSLATE["identifier"]] and a2a["applied_filters"] == {"protocols": ["a2a"]}
    https = ids(await discover(api, query="translate a document", protocols=["https"]))
    assert AIDIP_URN in https and TRANSLATE["identifier"] not in https


async def test_preferred_tags_raise_the_score(api: Api) -> None:
    plain = {c["identifier"]: c["score"] for c in (await discover(api, query="translate some text into english"))["candidates"]}
    boosted = {
        c["identifier"]: c["score"]
        for c in (await discover(api, query="translate some text into english", preferred_tags=["nlp"]))["candidates"]
    }
    assert boosted[AIDIP_URN] == pytest.approx(min(1.0, plain[AIDIP_URN] + 0.1), abs=0.011)
    assert boosted[TRANSLATE["identifier"]] == plain[TRANSLATE["identifier"]]


async def test_unsupported_hard_filter_is_reported(api: Api) -> None:
    found = await discover(
        api, query="find a translation agent", required_tags=["translation"], constraints={"unsupported_private_filter": "example"}
    )
    assert found["unsupported_filters"] == ["unsupported_private_filter"]
    assert any("unsupported_private_filter" in w for w in found["warnings"])
    odd = await discover(api, query="find a translation agent", cost_ceiling=3)
    assert odd["unsupported_filters"] == ["cost_ceiling"]


async def test_constraints_age_region_and_status(api: Api) -> None:
    everyone = set(ids(await discover(api, query="onboarding workflow for HR", limit=100)))
    assert XU_HR_URN in everyone
    fresh = await discover(api, query="onboarding workflow for HR", constraints={"max_results_age_seconds": 300})
    assert XU_HR_URN not in ids(fresh)  # its updated_at is months old
    assert fresh["applied_filters"]["constraints"] == {"max_results_age_seconds": 300}
    assert XU_HR_URN in ids(await discover(api, query="onboarding workflow for HR", constraints={"region": "apac"}))
    assert XU_HR_URN not in ids(await discover(api, query="onboarding workflow for HR", constraints={"region": "emea"}))
    weather = await discover(api, query="weather forecast for Paris", constraints={"region": "emea"})
    assert WEATHER["identifier"] in ids(weather)  # metadata.region is "global"
    assert ids(await discover(api, query="weather forecast for Paris", constraints={"status": ["deprecated"]})) == []


async def test_detail_levels_and_redaction(api: Api) -> None:
    request = {"query": "Prepare a new-employee onboarding workflow.", "required_tags": ["hr"]}
    minimal = await discover(api, **request, detail="minimal")
    candidate = minimal["candidates"][0]
    assert set(candidate) == {"id", "identifier", "bindings", "score", "fit", "status", "freshness", "trust", "redacted"}
    assert candidate["redacted"] is True and candidate["trust"]["status"] == "self-asserted"  # every detail level shows it
    assert candidate["bindings"] == [{"protocol": "https", "endpoint": XU_HR["bindings"][0]["endpoint"]}]
    assert any("detail=minimal" in w for w in minimal["warnings"])
    summary = (await discover(api, **request))["candidates"][0]
    assert summary["name"] == XU_HR["name"] and summary["tags"] == XU_HR["tags"] and summary["redacted"] is True
    assert "examples" not in summary and "auth" not in summary
    full = await discover(api, **request, detail="full")
    whole = full["candidates"][0]
    assert whole["examples"] == XU_HR["examples"] and whole["auth"] == XU_HR["auth"] and whole["x-example.net-tier"] == "gold"
    assert "redacted" not in whole and full["warnings"] == []


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({}, "request.query: is required"),
        ({"query": ""}, "request.query"),
        ({"query": "x", "limit": 0}, "request.limit"),
        ({"query": "x", "limit": 1000}, "request.limit"),
        ({"query": "x", "detail": "everything"}, "request.detail"),
        ({"query": "x", "required_tags": "hr"}, "request.required_tags"),
        ({"query": "x", "include_evidence": "perhaps"}, "request.include_evidence"),
        ({"query": "x", "constraints": {"max_results_age_seconds": -1}}, "max_results_age_seconds"),
        ({"query": "x", "constraints": []}, "request.constraints"),
        ({"query": ["x"]}, "request.query"),
    ],
)
async def test_discover_errors_use_the_xu_error_object(api: Api, body: dict[str, Any], expected: str) -> None:
    client, openapi = api
    response = await client.post("/discover", json=body)
    assert response.status_code == 400
    error = response.json()
    assert error["code"] == "invalid_request" and expected in error["message"] and error["correlation_id"]
    assert response.headers["x-correlation-id"] == error["correlation_id"]
    assert_ours(openapi, "/discover", "POST", response)


async def test_discover_malformed_json_is_an_xu_error(api: Api) -> None:
    client, _ = api
    response = await client.post("/discover", content=b'{"query": ', headers={"content-type": "application/json"})
    assert response.status_code == 400 and response.json()["code"] == "invalid_request"
    missing = await client.get("/discover")
    assert missing.status_code == 405 and missing.json()["code"] == "invalid_request"


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"bindings": None}, "metadata.bindings: is required"),
        ({"bindings": []}, "metadata.bindings"),
        ({"name": None}, "metadata.name: is required"),
        ({"examples": [{"id": "e"}]}, "metadata.examples[0].text: is required"),
        ({"updated_at": "last week"}, "metadata.updated_at"),
        ({"id": "local-agent", "bindings": [{"protocol": "https", "endpoint": "https://10.0.0.1/x"}]}, "no endpoint has a domain name"),
        ({"id": "urn:air:nodomain:x"}, "metadata.id: must be urn:air:"),
    ],
)
async def test_bad_xu_metadata_is_refused_with_the_field(api: Api, changes: dict[str, Any], expected: str) -> None:
    client, _ = api
    response = await client.post("/agents", json=doc(XU_MINIMAL, **changes))
    assert response.status_code == 400
    assert expected in response.json()["error"]["message"]


async def test_stale_xu_registration_is_refused(api: Api) -> None:
    client, _ = api
    stale = doc(XU_HR, description="An old copy.", updated_at="2026-01-01T00:00:00Z")
    response = await client.post("/agents", json=stale)
    assert response.status_code == 409 and response.json()["error"]["code"] == "StaleMetadata"


async def test_status_is_filterable_and_reported(tmp_path: Path) -> None:
    async with running(tmp_path / "data") as client:
        deprecated = doc(XU_MINIMAL, status="deprecated")
        assert (await client.post("/agents", json=deprecated)).status_code == 201
        found = (await client.post("/discover", json={"query": "answer a short factual question"})).json()
        assert [c["status"] for c in found["candidates"]] == ["deprecated"]
        only_active = (
            await client.post("/discover", json={"query": "answer a short factual question", "constraints": {"status": "active"}})
        ).json()
        assert only_active["candidates"] == []
        search = await client.post(
            "/search", json={"query": {"text": "answer a short factual question", "filter": {"metadata.status": ["deprecated"]}}}
        )
        assert [r["identifier"] for r in search.json()["results"]] == [XU_MINIMAL_URN]
        facets = await client.post("/explore", json={"resultType": {"facets": [{"field": "metadata.status"}]}})
        assert facets.json()["facets"]["metadata.status"]["buckets"] == [{"value": "deprecated", "count": 1}]


async def test_expired_records_are_no_longer_returned(tmp_path: Path) -> None:
    now = datetime.now(UTC)
    past = doc(XU_MINIMAL, expires_at=(now - timedelta(minutes=1)).isoformat())
    future = doc(XU_HR, expires_at=(now + timedelta(days=1)).isoformat())
    async with running(tmp_path / "data") as client:
        assert (await client.post("/agents", json=past)).status_code == 201
        assert (await client.post("/agents", json=future)).status_code == 201
        assert (await client.post("/agents", json=INVOICES)).status_code == 201
        assert (await client.get(f"/agents/{XU_MINIMAL_URN}")).status_code == 404
        found = (await client.post("/discover", json={"query": "answer a short factual question", "limit": 100})).json()
        assert XU_MINIMAL_URN not in ids(found)
        listed = (await client.get("/agents")).json()
        assert {i["identifier"] for i in listed["items"]} == {XU_HR_URN, INVOICES["identifier"]}
        assert (await client.get(f"/agents/{XU_HR_URN}")).json()["metadata"]["expiresAt"].endswith("Z")
