"""Per-client visibility (AIDIP entitlements): an entry whose metadata.visibleTo names credentials is seen
by them and by credentials that may write its publisher's entries; to everyone else it does not exist, in
search results, totals, facets, listings, look-ups, Xu and AIDIP searches and the served manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from ard_mcp.surfaces.auth import Principal, TokenStore
from ard_mcp.surfaces.rest.settings import HttpSettings
from tests.conftest import SAMPLE, WEATHER, entry
from tests.http_support import running

pytestmark = [pytest.mark.slow, pytest.mark.anyio]
ADMIN, OPS = "admin-token-0123456789abcd", "ops-token-0123456789abcdef"
PARTNER, OTHER = "partner-token-0123456789ab", "other-token-0123456789abcd"
TOKENS = TokenStore(
    {
        ADMIN: Principal("admin", ("*",)),
        OPS: Principal("ops", ("example.com",)),
        PARTNER: Principal("partner", ()),
        OTHER: Principal("other", ("other.example",)),
    }
)
PRIVATE = entry(
    WEATHER,
    identifier="urn:air:example.com:weather:private-radar",
    displayName="Private Radar Weather",
    description="Hyperlocal rain radar and weather forecasts for partners.",
    metadata={"visibleTo": "Partner, someone-else"},
)


def bearer(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


async def sees(client: httpx.AsyncClient, token: str | None) -> dict[str, Any]:
    """What one caller learns about the private entry through every read."""
    h = bearer(token)
    private = PRIVATE["identifier"]
    search = (await client.post("/search", json={"query": {"text": "rain radar weather forecast"}}, headers=h)).json()
    listing = (await client.get("/agents", params={"pageSize": "100"}, headers=h)).json()
    facets = (await client.post("/explore", json={"resultType": {"facets": [{"field": "publisher"}]}}, headers=h)).json()
    discover = (await client.post("/discover", json={"query": "rain radar weather forecast"}, headers=h)).json()
    aidip = (await client.post("/agents/search", json={"query": "rain radar weather forecast"}, headers=h)).json()
    manifest = (await client.get("/.well-known/ai-catalog.json", headers=h)).json()
    return {
        "search": private in {r["identifier"] for r in search["results"]},
        "list": private in {i["identifier"] for i in listing["items"]},
        "total": listing["total"],
        "facet": {b["value"]: b["count"] for b in facets["facets"]["publisher"]["buckets"]}.get("example.com"),
        "get": (await client.get(f"/agents/{private}", headers=h)).status_code,
        "discover": private in {c["identifier"] for c in discover["candidates"]},
        "aidip": private in {a["identifier"] for a in aidip},
        "manifest": private in {e["identifier"] for e in manifest["entries"]},
    }


async def test_a_restricted_entry_exists_only_for_its_audience_and_owners(tmp_path: Path) -> None:
    async with running(tmp_path / "data", HttpSettings(tokens=TOKENS)) as client:
        for item in [*SAMPLE, PRIVATE]:
            assert (await client.post("/agents", json=item, headers=bearer(ADMIN))).status_code == 201, item["identifier"]
        hidden = {"search": False, "list": False, "total": len(SAMPLE), "facet": 1, "get": 404}
        hidden |= {"discover": False, "aidip": False, "manifest": False}
        shown = {"search": True, "list": True, "total": len(SAMPLE) + 1, "facet": 2, "get": 200}
        shown |= {"discover": True, "aidip": True, "manifest": True}
        assert await sees(client, None) == hidden
        assert await sees(client, OTHER) == hidden
        assert await sees(client, PARTNER) == shown  # named in visibleTo (names compare case-insensitively)
        assert await sees(client, OPS) == shown  # may write example.com: an owner
        refused = await client.delete(f"/agents/{PRIVATE['identifier']}", headers=bearer(OTHER))
        assert refused.status_code == 404  # not even told it exists


async def test_without_credentials_every_entry_is_visible(tmp_path: Path) -> None:
    async with running(tmp_path / "data") as client:  # nobody could prove who they are: no one is kept out
        assert (await client.post("/agents", json=PRIVATE)).status_code == 201
        assert (await client.get(f"/agents/{PRIVATE['identifier']}")).status_code == 200
