"""End to end: a real `ard-mcp serve` process; the SDK's MCP client and a plain HTTP client on one port see
one registry, and the bearer token guards writes on both."""

from __future__ import annotations

from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import INVOICES, WEATHER
from tests.http_support import XU_HR, XU_HR_URN
from tests.processes import serving

pytestmark = [pytest.mark.slow, pytest.mark.anyio]
TOKEN = "e2e-token-0123456789abcdef"
SCOPED = "acme-token-0123456789abcdef"  # may write acme-finance.com's entries only
BEARER = {"Authorization": f"Bearer {TOKEN}"}


async def test_mcp_and_rest_on_one_port_share_the_registry(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"e2e {TOKEN} *\nacme {SCOPED} acme-finance.com\n")
    tokens.chmod(0o600)
    with serving(tmp_path / "data", "--transport", "streamable-http", "--token-file", str(tokens)) as base:
        async with httpx.AsyncClient(base_url=base, timeout=60) as rest:
            assert (await rest.post("/agents", json=XU_HR)).status_code == 401
            assert (await rest.post("/agents", json=XU_HR, headers=BEARER)).status_code == 201

            async with (
                httpx2.AsyncClient(headers=BEARER, timeout=60) as authorised,
                Client(streamable_http_client(f"{base}/mcp", http_client=authorised)) as mcp,
            ):
                found = await mcp.call_tool("search_agents", {"text": "prepare the onboarding workflow for a new employee"})
                assert not found.is_error and found.structured_content
                assert found.structured_content["results"][0]["identifier"] == XU_HR_URN  # registered over REST
                created = await mcp.call_tool("register_agent", {"entry": WEATHER})
                assert not created.is_error, created.content

            search = await rest.post("/search", json={"query": {"text": "will it rain in Lisbon tomorrow?"}})
            assert search.json()["results"][0]["identifier"] == WEATHER["identifier"]  # registered over MCP
            discovered = await rest.post("/discover", json={"query": "rain forecast", "protocols": ["mcp"]})
            assert [c["identifier"] for c in discovered.json()["candidates"]] == [WEATHER["identifier"]]

            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {SCOPED}"}, timeout=60) as scoped_http,
                Client(streamable_http_client(f"{base}/mcp", http_client=scoped_http)) as scoped,
            ):
                refused = await scoped.call_tool("deregister_agent", {"identifier": WEATHER["identifier"]})
                assert refused.is_error and "may not write entries of the publisher example.com" in refused.content[0].text  # type: ignore[union-attr]
                refused = await scoped.call_tool("register_agent", {"entry": {**WEATHER, "description": "hijacked"}})
                assert refused.is_error
                assert not (await scoped.call_tool("register_agent", {"entry": INVOICES})).is_error  # its own publisher
                assert not (await scoped.call_tool("deregister_agent", {"identifier": INVOICES["identifier"]})).is_error
            assert (await rest.get(f"/agents/{WEATHER['identifier']}")).json()["description"] == WEATHER["description"]

            async with Client(f"{base}/mcp") as anonymous:
                refused = await anonymous.call_tool("register_agent", {"entry": INVOICES})
                assert refused.is_error and "Bearer" in refused.content[0].text  # type: ignore[union-attr]
                refused = await anonymous.call_tool("deregister_agent", {"identifier": WEATHER["identifier"]})
                assert refused.is_error
                listed = await anonymous.call_tool("list_agents", {})
                assert listed.structured_content and listed.structured_content["total"] == 2
            assert (await rest.get("/healthz")).json()["agents"] == 2


async def test_sse_transport_serves_the_rest_routes_too(tmp_path: Path) -> None:
    with serving(tmp_path / "data", "--transport", "sse") as base:
        async with httpx.AsyncClient(base_url=base, timeout=60) as rest:
            assert (await rest.post("/agents", json=INVOICES)).status_code == 201  # loopback without tokens: open
            async with Client(sse_client(f"{base}/sse")) as mcp:
                found = await mcp.call_tool("search_agents", {"text": "send an invoice to a customer"})
                assert found.structured_content and found.structured_content["results"][0]["identifier"] == INVOICES["identifier"]
                await mcp.call_tool("register_agent", {"entry": WEATHER})
            listed = (await rest.get("/agents", params={"orderBy": "displayName"})).json()
            assert [i["identifier"] for i in listed["items"]] == [INVOICES["identifier"], WEATHER["identifier"]]
