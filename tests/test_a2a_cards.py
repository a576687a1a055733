"""A2A agent cards, as `a2a-sdk` makes them (v1.0 with `supportedInterfaces`, v0.3 with `url`), registered
bare: stored as `application/a2a-agent-card+json` entries whose skills are examples and capabilities."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from a2a.compat.v0_3 import types as v03
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentProvider, AgentSkill
from google.protobuf.json_format import MessageToDict

from ard_mcp.errors import InvalidArgument
from ard_mcp.formats import registration
from ard_mcp.formats.entry_facts import bindings_of
from ard_mcp.formats.leniency import read_entry
from ard_mcp.formats.media_types import A2A_AGENT_CARD
from tests.http_support import Api, assert_ard, assert_ours, seeded


def _v10_card() -> dict[str, Any]:
    card = AgentCard(
        name="Trip Planner",
        description="Plans journeys: itineraries, trains, flights and places to stay.",
        version="2.1.0",
        supported_interfaces=[
            AgentInterface(url="https://trips.example.org/a2a/jsonrpc", protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url="https://trips.example.org/a2a/rest", protocol_binding="HTTP+JSON", protocol_version="1.0"),
        ],
        provider=AgentProvider(organization="Example Trips", url="https://example.org"),
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain", "application/json"],
        skills=[
            AgentSkill(
                id="itinerary",
                name="Build itinerary",
                description="A day-by-day plan with transport between stops",
                tags=["travel", "itinerary"],
                examples=["four days in Kyoto in April with a day trip to Nara", "a rail route through the Alps in summer"],
            ),
            AgentSkill(id="lodging", name="Find lodging", description="Hotels and flats near a place", tags=["travel", "hotel"]),
        ],
    )
    return MessageToDict(card)


def _v03_card() -> dict[str, Any]:
    card = v03.AgentCard(
        name="Currency Agent",
        description="Exchange rates and conversions between currencies.",
        url="https://fx.example.com/a2a/",
        version="1.0.0",
        capabilities=v03.AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text"],
        default_output_modes=["text"],
        skills=[
            v03.AgentSkill(
                id="convert_currency",
                name="Currency Exchange Rates Tool",
                description="Converts an amount between two currencies at today's rate",
                tags=["currency conversion", "exchange rates"],
                examples=["how many yen is 250 swiss francs", "latest rate from dollars to pounds"],
            )
        ],
    )
    return card.model_dump(mode="json", by_alias=True, exclude_none=True)


@pytest.mark.parametrize(
    ("card", "identifier", "endpoints"),
    [
        (
            _v10_card,
            "urn:air:trips.example.org:Trip-Planner",
            ["https://trips.example.org/a2a/jsonrpc", "https://trips.example.org/a2a/rest"],
        ),
        (_v03_card, "urn:air:fx.example.com:Currency-Agent", ["https://fx.example.com/a2a/"]),
    ],
)
def test_a_card_becomes_an_a2a_entry(card: Any, identifier: str, endpoints: list[str]) -> None:
    raw = card()
    assert registration.detect(raw) == "a2a"
    entry, warnings = read_entry(registration.to_entry(raw))
    assert warnings == []
    assert_ard(entry.wire(), "catalog:catalogEntry")
    assert entry.identifier == identifier and entry.type == A2A_AGENT_CARD and entry.data == raw
    assert entry.capabilities == [s.get("name") for s in raw["skills"]]
    assert entry.tags == list(dict.fromkeys(t for s in raw["skills"] for t in s["tags"]))
    assert entry.representativeQueries == raw["skills"][0]["examples"]
    assert [b["endpoint"] for b in bindings_of(entry.wire())] == endpoints


def test_a_card_without_an_endpoint_is_refused() -> None:
    card = _v10_card()
    card["supportedInterfaces"] = []
    with pytest.raises(InvalidArgument, match="card: an agent card needs url"):
        registration.to_entry(card)


def test_aidip_metadata_is_not_mistaken_for_a_card() -> None:
    aidip = {"name": "Translator", "endpoint": "https://api.example.com/t", "url": "https://example.com", "capabilities": ["translation"]}
    assert registration.detect(aidip) == "aidip"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def api(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Api]:
    async with seeded(tmp_path_factory.mktemp("a2a") / "data", []) as api:
        yield api


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("card", [_v10_card, _v03_card])
async def test_post_agents_takes_a_bare_card_and_search_finds_its_skills(api: Api, card: Any) -> None:
    client, openapi = api
    raw = card()
    created = await client.post("/agents", json=raw)
    assert created.status_code == 201, created.text
    assert_ours(openapi, "/agents", "POST", created)
    body = created.json()
    assert body["type"] == A2A_AGENT_CARD and body["endpoint"] == raw.get("url", (raw.get("supportedInterfaces") or [{}])[0].get("url"))
    skill = raw["skills"][0]
    found = (await client.post("/search", json={"query": {"text": skill["examples"][1]}})).json()["results"]
    assert found[0]["identifier"] == body["identifier"]
    assert found[0]["evidence"]["matchedExamples"][0]["text"] == skill["examples"][1]
    listed = (await client.get("/agents", params={"filter": 'type = "application/a2a-agent-card+json"'})).json()
    assert body["identifier"] in {e["identifier"] for e in listed["items"]}
