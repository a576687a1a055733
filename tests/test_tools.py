"""Every MCP tool through a real in-memory MCP client, with good and bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from ard_mcp.config import Config
from ard_mcp.formats.messages import HIGH_SCORE, MEDIUM_SCORE, fit_of
from ard_mcp.surfaces.mcp.server import build_server
from tests.conftest import INVOICES, PDF, SAMPLE, WEATHER, entry

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


@pytest.fixture
def server(data_dir: Path, store_url: str | None) -> Any:
    return build_server(Config(data_dir, source_url="https://registry.example.com/", store_url=store_url), warm=False)


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
    assert result.structured_content is not None
    return result.structured_content


async def error(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} accepted {arguments}"
    return result.content[0].text  # type: ignore[union-attr]


async def seed(client: Client) -> None:
    for item in SAMPLE:
        assert (await call(client, "register_agent", entry=item))["status"] == "created"


async def test_tools_are_listed_with_schemas_and_annotations(server: Any) -> None:
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert {"search_agents", "explore_facets", "register_agent", "get_agent", "list_agents", "deregister_agent"} <= tools.keys()
    search = tools["search_agents"]
    assert search.annotations is not None and search.annotations.read_only_hint is True
    assert search.input_schema["required"] == ["text"]
    assert search.input_schema["properties"]["pageSize"]["maximum"] == 100
    assert "results" in (search.output_schema or {})["properties"]
    assert tools["deregister_agent"].annotations.destructive_hint is True  # type: ignore[union-attr]


async def test_tool_descriptions_carry_no_indentation(server: Any) -> None:
    """Every host reads tools/list on every connection: runs of source indentation are tokens for nothing."""
    async with Client(server) as client:
        tools = (await client.list_tools()).tools
    for tool in tools:
        assert tool.description and "\n" not in tool.description and "  " not in tool.description, tool.name


async def test_search_returns_brief_results_as_compact_text(server: Any) -> None:
    """The default page is what a host model reads first: one brief line per result, the same object as
    structured content and as unindented JSON text, the full entry one get_agent call away."""
    async with Client(server) as client:
        await seed(client)
        result = await client.call_tool("search_agents", {"text": "will it rain in Lisbon this weekend?"})
        found = result.structured_content
        assert found is not None
        text = result.content[0].text  # type: ignore[union-attr]
        assert json.loads(text) == found and "\n" not in text and "  " not in text
        top = found["results"][0]
        assert set(top) == {"identifier", "displayName", "description", "score", "fit", "match", "trust"}
        assert top["trust"] == "self-asserted"  # WEATHER has no trust manifest
        assert top["identifier"] == WEATHER["identifier"] and top["displayName"] == WEATHER["displayName"]
        assert top["match"].startswith("tool: get forecast") and len(top["match"]) <= 80
        assert len(top["description"]) <= 100 and WEATHER["description"].startswith(top["description"].rstrip("…"))
        assert found["confidence"] == "high" and found["totalResults"] >= 1
        assert [r["fit"] for r in found["results"]] == [fit_of(r["score"], True) for r in found["results"]]  # each its own
        assert await call(client, "get_agent", identifier=top["identifier"]) == WEATHER


async def test_search_at_full_detail_returns_spec_entries_with_evidence(server: Any) -> None:
    async with Client(server) as client:
        await seed(client)
        found = await call(client, "search_agents", text="will it rain in Lisbon this weekend?", detail="full")
    top = found["results"][0]
    assert top["identifier"] == WEATHER["identifier"]
    assert {k: top[k] for k in WEATHER} == WEATHER  # the stored entry comes back unchanged
    assert 0 <= top["score"] <= 100 and isinstance(top["score"], int)
    assert top["source"] == "https://registry.example.com/"
    evidence = top["evidence"]
    best = evidence["matchedExamples"][0]
    assert best["kind"] == "tool" and best["label"] == "get_forecast"
    assert best["similarity"] == pytest.approx(evidence["scoreComponents"]["example"], abs=1e-4)
    assert set(evidence["scoreComponents"]) == {"example", "secondExample", "context", "allExamples", "lexical", "tag"}
    assert evidence["freshness"]["metadataUpdatedAt"] == WEATHER["updatedAt"]
    assert evidence["confidence"] == "high" and found["confidence"] == "high"
    assert evidence["fit"] == fit_of(top["score"], True)
    assert found["totalResults"] >= 1


async def test_query_nothing_fits_gets_the_closest_marked_low_confidence(server: Any) -> None:
    """An empty list is the worst answer for a host when something might fit; a query that fits nothing well
    gets its closest few, marked so a host does not take them for matches."""
    async with Client(server) as client:
        await seed(client)
        found = await call(client, "search_agents", text="operate the control rods of a nuclear reactor")
        full = await call(client, "search_agents", text="operate the control rods of a nuclear reactor", detail="full")
        facets = await call(client, "explore_facets", text="operate the control rods of a nuclear reactor")
    assert found["confidence"] == "low" and 1 <= len(found["results"]) <= 5
    scores = [r["score"] for r in found["results"]]
    assert scores == sorted(scores, reverse=True)
    assert all(r["evidence"]["confidence"] == "low" for r in full["results"])
    assert all(r["fit"] != "high" for r in found["results"])  # no row more certain than the page it is on
    assert all(not facet["buckets"] for facet in facets["facets"].values())  # facets count only what the ranking vouches for


async def test_long_task_text_is_accepted_and_ranked_by_its_need(server: Any) -> None:
    """Hosts paste whole tasks, data included: 32,000 characters are read, the need in the opening still ranks."""
    padding = " ".join(f"row {i}: 12.5 kg, shipped, invoice pending" for i in range(800))
    task = f"Will it rain in Lisbon this weekend? I need the forecast before I plan the delivery below.\n{padding}"[:32_000]
    async with Client(server) as client:
        await seed(client)
        found = await call(client, "search_agents", text=task)
        assert found["results"][0]["identifier"] == WEATHER["identifier"]
        assert "32000" in await error(client, "search_agents", text=task + "x" * 10)


async def test_search_filters_and_paging(server: Any) -> None:
    async with Client(server) as client:
        await seed(client)
        only_a2a = await call(
            client,
            "search_agents",
            text="translate my document into Spanish",
            filter={"type": "application/a2a-agent-card+json"},
            detail="minimal",
        )
        assert only_a2a["results"] and all(r["type"] == "application/a2a-agent-card+json" for r in only_a2a["results"])
        soc2 = await call(client, "search_agents", text="send an invoice", filter={"trustManifest.attestations.type": ["SOC2-Type2"]})
        assert [r["identifier"] for r in soc2["results"]] == [INVOICES["identifier"]]
        first = await call(client, "search_agents", text="make a document or a presentation", pageSize=1)
        assert len(first["results"]) == 1 and first["totalResults"] >= 2
        second = await call(client, "search_agents", text="make a document or a presentation", pageSize=1, pageToken=first["pageToken"])
        assert second["results"][0]["identifier"] != first["results"][0]["identifier"]
        message = await error(client, "search_agents", text="something else", pageToken=first["pageToken"])
        assert "pageToken" in message


@pytest.mark.parametrize("size", [0, 1000])
async def test_page_size_out_of_range_is_refused(server: Any, size: int) -> None:
    async with Client(server) as client:
        assert "pageSize" in await error(client, "search_agents", text="weather", pageSize=size)
        assert "pageSize" in await error(client, "list_agents", pageSize=size)


async def test_unknown_filter_key_is_named(server: Any) -> None:
    async with Client(server) as client:
        message = await error(client, "search_agents", text="weather", filter={"colour": ["blue"]})
    assert "'colour'" in message and "not supported" in message


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"identifier": "weather-server"}, "entry.identifier: must be urn:air:<publisher-domain>:...:<name>"),
        ({"identifier": "urn:air:nodomain:x"}, "entry.identifier: must be urn:air:"),
        ({"url": "https://example.com/w.json"}, "exactly one of url and data"),
        ({"data": None}, "exactly one of url and data"),
        ({"displayName": None}, "entry.displayName: is required"),
        ({"updatedAt": "yesterday"}, "entry.updatedAt: must be an ISO 8601 date-time"),
        ({"representativeQueries": "only one"}, "entry.representativeQueries"),
        ({"tags": "weather"}, "entry.tags"),
    ],
)
async def test_bad_entries_are_refused_with_field_and_rule(server: Any, changes: dict[str, Any], expected: str) -> None:
    async with Client(server) as client:
        message = await error(client, "register_agent", entry=entry(WEATHER, **changes))
        assert expected in message
        listed = await call(client, "list_agents")
    assert listed["items"] == []  # nothing half-written


async def test_register_accepts_what_it_can_read_and_says_what_it_normalised(server: Any) -> None:
    queries = ["rain this weekend", "forecast for Lisbon", "is it sunny", "need a coat?", "wind at the coast", "hail warning tomorrow"]
    lenient = entry(WEATHER, identifier="urn:air:Example.com:weather~v2", updatedAt="2026-05-01T12:00:00", representativeQueries=queries)
    async with Client(server) as client:
        registered = await call(client, "register_agent", entry=lenient)
        assert registered["status"] == "created"
        assert [w.split(":")[0] for w in registered["warnings"]] == ["entry.identifier", "entry.updatedAt", "entry.representativeQueries"]
        stored = registered["entry"]
        assert stored["identifier"] == "urn:air:example.com:weather-v2" and stored["updatedAt"] == "2026-05-01T12:00:00Z"
        assert stored["representativeQueries"] == queries[:5]
        assert (await call(client, "get_agent", identifier="urn:air:example.com:weather~v2"))["identifier"] == stored["identifier"]
        found = await call(client, "search_agents", text=queries[-1], detail="full")  # the query beyond the schema's five is indexed too
        assert found["results"][0]["evidence"]["matchedExamples"][0]["text"] == queries[-1]
        assert (await call(client, "register_agent", entry=lenient))["status"] == "unchanged"  # read the same way each time
        assert "warnings" not in await call(client, "register_agent", entry=WEATHER)


async def test_register_is_an_idempotent_upsert_and_refuses_stale(server: Any) -> None:
    async with Client(server) as client:
        assert (await call(client, "register_agent", entry=WEATHER))["status"] == "created"
        assert (await call(client, "register_agent", entry=WEATHER))["status"] == "unchanged"
        newer = entry(WEATHER, description="Forecasts and severe-weather alerts.", updatedAt="2026-06-01T00:00:00Z")
        assert (await call(client, "register_agent", entry=newer))["status"] == "updated"
        whole = await error(client, "register_agent", entry={"specVersion": "1.0", "entries": [WEATHER]})
        assert "whole catalog" in whole and "crawl_catalogs" in whole and "`ard-mcp ingest FILE`" in whole
        stale = entry(WEATHER, description="An old copy.", updatedAt="2026-04-01T00:00:00Z")
        message = await error(client, "register_agent", entry=stale)
        assert "older than the stored" in message
        stored = await call(client, "get_agent", identifier=WEATHER["identifier"])
    assert stored["description"] == "Forecasts and severe-weather alerts."


async def test_get_list_deregister_and_resource(server: Any) -> None:
    async with Client(server) as client:
        await seed(client)
        listed = await call(client, "list_agents", orderBy="displayName")
        names = [i["displayName"] for i in listed["items"]]
        assert names == sorted(names, key=str.lower) and listed["total"] == len(SAMPLE)
        page = await call(client, "list_agents", orderBy="displayName DESC", pageSize=2)
        assert [i["displayName"] for i in page["items"]] == sorted(names, key=str.lower, reverse=True)[:2]
        rest = await call(client, "list_agents", orderBy="displayName DESC", pageSize=2, pageToken=page["pageToken"])
        assert not {i["identifier"] for i in rest["items"]} & {i["identifier"] for i in page["items"]}
        assert "orderBy" in await error(client, "list_agents", orderBy="colour")

        resource = await client.read_resource(f"ard://agents/{PDF['identifier']}")
        text = resource.contents[0].text  # type: ignore[union-attr]
        assert json.loads(text) == PDF
        got = await client.call_tool("get_agent", {"identifier": PDF["identifier"]})
        assert text == got.content[0].text  # type: ignore[union-attr]  # compact, as get_agent: it was indented (+73%)

        gone = await call(client, "deregister_agent", identifier=PDF["identifier"])
        assert gone == {"status": "deleted", "identifier": PDF["identifier"]}
        assert "no agent" in await error(client, "get_agent", identifier=PDF["identifier"])
        assert "no agent" in await error(client, "deregister_agent", identifier=PDF["identifier"])
        found = await call(client, "search_agents", text="turn markdown into a pdf")
        assert PDF["identifier"] not in [r["identifier"] for r in found["results"]]


async def test_urn_air_identifiers_name_the_same_entry(server: Any) -> None:
    async with Client(server) as client:
        created = await call(client, "register_agent", entry=entry(WEATHER, identifier="urn:air:example.com:weather:forecast"))
        assert created["entry"]["identifier"] == WEATHER["identifier"]
        got = await call(client, "get_agent", identifier="urn:air:example.com:weather:forecast")
    assert got["identifier"] == WEATHER["identifier"]


async def test_explore_counts_the_whole_matched_set(server: Any) -> None:
    async with Client(server) as client:
        await seed(client)
        everything = await call(client, "explore_facets", facets=[{"field": "type"}, {"field": "tags", "limit": 1}])
        types = {b["value"]: b["count"] for b in everything["facets"]["type"]["buckets"]}
        assert types == {"application/mcp-server-card+json": 2, "application/a2a-agent-card+json": 2, "application/ai-skill": 1}
        tags = everything["facets"]["tags"]
        assert tags["buckets"] == [{"value": "documents", "count": 2}]
        assert tags["otherCount"] == 6  # weather, forecast, finance, invoicing, language, presentations
        narrowed = await call(client, "explore_facets", text="create slides or documents", facets=[{"field": "publisher"}])
        publishers = {b["value"] for b in narrowed["facets"]["publisher"]["buckets"]}
        assert "github.com" in publishers and "example.com" not in publishers
        assert "'colour'" in await error(client, "explore_facets", facets=[{"field": "colour"}])


def test_a_results_fit_is_the_band_of_its_own_score_never_above_its_page() -> None:
    assert [fit_of(s, True) for s in (100, HIGH_SCORE, HIGH_SCORE - 1, MEDIUM_SCORE, MEDIUM_SCORE - 1, 0)] == [
        "high",
        "high",
        "medium",
        "medium",
        "low",
        "low",
    ]
    assert fit_of(97, False) == "medium" and fit_of(19, True) == "low"  # a 19 is never shown as a confident fit
