"""Federation (ARD §8) between real `ard-mcp serve` processes on loopback: none / referrals / auto, an upstream
that is down, one that is slow, a three-registry cycle, de-duplication by identifier, and the same on MCP;
no upstream URL, configured or named by an entry, reaches cloud metadata in any spelling."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from ard_mcp.config import Config
from ard_mcp.federation.breaker import Breakers
from ard_mcp.federation.client import UpstreamClient, UpstreamError
from ard_mcp.federation.hops import HOPS_HEADER, VIA_HEADER, WARNING_HEADER
from ard_mcp.federation.hops import Path as RequestPath
from ard_mcp.federation.settings import FederationSettings, Upstream, load_upstreams
from ard_mcp.net.guard import SystemResolver
from ard_mcp.surfaces.mcp.server import build_server
from tests.conftest import INVOICES, PDF, WEATHER, entry
from tests.peer_kit import PeerKit
from tests.processes import free_port
from tests.reliability_support import ard_mcp, kill9
from tests.url_spellings import IDS, SPELLINGS
from tests.web_publisher import Publisher

pytestmark = pytest.mark.slow

BOOKING = {
    "identifier": "urn:air:travel.example.com:agent:flights",
    "displayName": "Flight Booker",
    "type": "application/a2a-agent-card+json",
    "url": "https://travel.example.com/agents/flights.json",
    "description": "Searches and books airline flights between cities.",
    "representativeQueries": ["book a flight from Paris to Tokyo", "find the cheapest flight next Monday"],
}


@contextmanager
def registry_process(where: Path, port: int, *args: str) -> Iterator[str]:
    """`ard-mcp serve` over HTTP on `port` (chosen beforehand, so registries can name each other as upstreams)."""
    log = (where / f"serve-{port}.log").open("a")
    process = ard_mcp(
        "serve", "--transport", "streamable-http", "--port", str(port), "--data-dir", str(where / f"data-{port}"), *args, log=log
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            assert process.poll() is None, (where / f"serve-{port}.log").read_text()
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            kill9(process)
        log.close()


def register(base: str, *entries: dict[str, Any]) -> None:
    for item in entries:
        response = httpx.post(f"{base}/agents", json=item, timeout=60)
        assert response.status_code in (200, 201), response.text


def search(base: str, text: str, federation: str = "auto", **headers: str) -> httpx.Response:
    body = {"query": {"text": text}, "federation": federation, "pageSize": 10}
    return httpx.post(f"{base}/search", json=body, headers=headers, timeout=60)


def identifiers(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [r["identifier"] for r in response.json()["results"]]


@pytest.fixture(scope="module")
def trio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str]]:
    """A asks B and C; B holds the flight agent, C the invoices agent; A holds the weather server. C also
    names A as its upstream, and B names C: A → B → C → A is a cycle."""
    where = tmp_path_factory.mktemp("federation")
    a, b, c = free_port(), free_port(), free_port()
    url = {p: f"http://127.0.0.1:{p}" for p in (a, b, c)}
    with ExitStack() as stack:
        base_a = stack.enter_context(registry_process(where, a, "--upstream", url[b], "--upstream", url[c]))
        base_b = stack.enter_context(registry_process(where, b, "--upstream", url[c]))
        base_c = stack.enter_context(registry_process(where, c, "--upstream", url[a]))
        register(base_a, WEATHER, entry(PDF, updatedAt="2026-01-01T00:00:00Z"))
        register(base_b, BOOKING, entry(PDF, description="Newer copy: document conversion toolkit.", updatedAt="2026-06-01T00:00:00Z"))
        register(base_c, INVOICES)
        yield base_a, base_b, base_c


def test_none_answers_locally(trio: tuple[str, str, str]) -> None:
    a, _, _ = trio
    found = identifiers(search(a, "book a flight to Tokyo", "none"))
    assert BOOKING["identifier"] not in found


def test_referrals_list_the_upstreams(trio: tuple[str, str, str]) -> None:
    a, b, c = trio
    response = search(a, "book a flight to Tokyo", "referrals")
    assert BOOKING["identifier"] not in identifiers(response)
    referrals = response.json()["referrals"]
    assert [r["url"] for r in referrals] == [f"{b}/search", f"{c}/search"]
    assert all(r["type"] == "application/ai-registry+json" for r in referrals)
    # an IP address is no publisher: an upstream known only by one is named under this registry's own domain
    port = b.rsplit(":", 1)[1]
    assert referrals[0]["identifier"] == f"urn:air:ard-mcp.localhost:registry:127.0.0.1:{port}"


def test_auto_merges_upstream_results_with_their_source(trio: tuple[str, str, str]) -> None:
    a, b, _ = trio
    response = search(a, "book a flight to Tokyo")
    results = {r["identifier"]: r for r in response.json()["results"]}
    assert results[BOOKING["identifier"]]["source"].rstrip("/") == b
    assert next(iter(results)) == BOOKING["identifier"]
    assert WARNING_HEADER.lower() not in response.headers


def test_auto_keeps_the_local_copy_of_an_entry_and_names_every_source(trio: tuple[str, str, str]) -> None:
    """B's copy of the PDF entry is newer (its `updatedAt` is later), but a later date is only a claim: A shows its own.
    C returns the entry too (it asked A, which answered it locally: A is on the path), so C is one of its sources."""
    a, b, c = trio
    results = search(a, "convert markdown to pdf").json()["results"]
    copies = [r for r in results if r["identifier"] == PDF["identifier"]]
    assert len(copies) == 1 and copies[0]["description"] == PDF["description"] and copies[0]["source"].rstrip("/") == a
    assert sorted(s.rstrip("/") for s in copies[0]["evidence"]["sources"]) == sorted([a, b, c])


def test_a_cycle_stops(trio: tuple[str, str, str]) -> None:
    a, b, _ = trio
    start = time.monotonic()
    response = search(b, "bill my client for consulting hours")  # B → C → A → (B, C: already on the path)
    assert time.monotonic() - start < 20
    assert INVOICES["identifier"] in identifiers(response)
    own = search(a, "weather", **{HOPS_HEADER: "1", VIA_HEADER: f"{b}, {a}"})
    assert own.headers.get(WARNING_HEADER.lower(), "").startswith("this registry")


def test_an_upstream_that_is_down_leaves_partial_results_and_a_warning(tmp_path: Path) -> None:
    dead = free_port()
    port = free_port()
    with registry_process(tmp_path, port, "--upstream", f"http://127.0.0.1:{dead}") as base:
        register(base, WEATHER)
        response = search(base, "weather forecast for a city")
    assert identifiers(response)[0] == WEATHER["identifier"]
    assert f"127.0.0.1:{dead}" in response.headers[WARNING_HEADER.lower()]


def test_a_slow_upstream_is_left_out_within_the_deadline(tmp_path: Path) -> None:
    with Publisher() as slow:
        slow.put("/search", {"results": []}, delay=30)
        port = free_port()
        with registry_process(tmp_path, port, "--upstream", slow.origin) as base:
            register(base, WEATHER)
            start = time.monotonic()
            response = search(base, "weather forecast for a city")
            elapsed = time.monotonic() - start
    assert identifiers(response)[0] == WEATHER["identifier"]
    assert elapsed < 10
    assert "timed out" in response.headers[WARNING_HEADER.lower()] or "no answer" in response.headers[WARNING_HEADER.lower()]


@pytest.mark.anyio
async def test_mcp_search_agents_federates(trio: tuple[str, str, str], data_dir: Path) -> None:
    _, b, _ = trio
    server = build_server(Config(data_dir), warm=False, upstreams=FederationSettings(upstreams=(Upstream(b),)))
    async with Client(server) as client:
        auto = await client.call_tool("search_agents", {"text": "book a flight to Tokyo"})
        referrals = await client.call_tool("search_agents", {"text": "book a flight to Tokyo", "federation": "referrals"})
        none = await client.call_tool("search_agents", {"text": "book a flight to Tokyo", "federation": "none"})
    assert auto.structured_content is not None and auto.structured_content["results"][0]["identifier"] == BOOKING["identifier"]
    assert referrals.structured_content is not None and referrals.structured_content["referrals"][0]["url"] == f"{b}/search"
    assert none.structured_content is not None and none.structured_content["results"] == []


@pytest.mark.anyio
@pytest.mark.parametrize(("url", "address"), SPELLINGS, ids=IDS)
@pytest.mark.parametrize("configured", [True, False])
async def test_no_upstream_is_asked_at_cloud_metadata(url: str, address: str, configured: bool, loopback_only: list[str]) -> None:
    """Configured upstreams may be on a private network, named ones too where that is allowed: neither may
    point at cloud metadata, and the refusal names where the URL really points."""
    client = UpstreamClient(FederationSettings(allow_private_networks=True), SystemResolver())
    try:
        with pytest.raises(UpstreamError, match=re.escape(f"points to {address}")):
            await client.search(Upstream(url, configured=configured), {"query": {"text": "x"}}, RequestPath.of({}), "https://a.example", 10)
    finally:
        await client.aclose()
    assert loopback_only == []


def test_an_upstream_flag_pointing_at_cloud_metadata_is_refused_at_start() -> None:
    with pytest.raises(ValueError, match=re.escape("--upstream 'http://2852039166/': http://2852039166/ points to 169.254.169.254")):
        load_upstreams(["http://127.0.0.1:8000", "http://2852039166/"], None)
    with pytest.raises(ValueError, match=re.escape("--upstream 'ftp://a.example': must be an http or https URL (got ftp)")):
        load_upstreams(["ftp://a.example"], None)


def test_loop_headers_and_breaker() -> None:
    path = RequestPath.of({HOPS_HEADER.lower(): "2", VIA_HEADER.lower(): "https://a.example, https://b.example"})
    assert path.stops_at("https://b.example", 5) is not None
    assert path.stops_at("https://c.example", 2) is not None
    assert path.stops_at("https://c.example", 3) is None
    assert path.forwarded_by("https://c.example") == {
        HOPS_HEADER: "3",
        VIA_HEADER: "https://a.example, https://b.example, https://c.example",
    }
    assert RequestPath.of({HOPS_HEADER.lower(): "lots"}).stops_at("x", 3) is not None
    breakers = Breakers(failures=2, cooldown=0.2)
    breakers.failed("u")
    assert breakers.allows("u")
    breakers.failed("u")
    assert not breakers.allows("u")
    time.sleep(0.25)
    assert breakers.allows("u")
    breakers.succeeded("u")
    assert breakers.allows("u")


def test_xu_discover_federates_with_provenance(trio: tuple[str, str, str]) -> None:
    a, b, _ = trio
    body = {"query": "book a flight to Tokyo", "federation": "auto", "limit": 5}
    found = httpx.post(f"{a}/discover", json=body, timeout=60)
    assert found.status_code == 200, found.text
    remote = next(c for c in found.json()["candidates"] if c["identifier"] == BOOKING["identifier"])
    assert remote["origin_service"].rstrip("/") == b and remote["origin_authority"] == "travel.example.com" and remote["received_at"]
    local = httpx.post(f"{a}/discover", json={**body, "federation": "none"}, timeout=60).json()
    assert BOOKING["identifier"] not in [c["identifier"] for c in local["candidates"]]
    referred = httpx.post(f"{a}/discover", json={**body, "federation": "referrals"}, timeout=60).json()
    assert referred["referrals"][0]["url"] == f"{b}/search"


def test_xu_discover_keeps_the_provenance_of_a_local_candidate_upstreams_also_return(trio: tuple[str, str, str]) -> None:
    a, b, c = trio
    body = {"query": "convert markdown to pdf", "federation": "auto", "limit": 5}
    found = httpx.post(f"{a}/discover", json=body, timeout=60).json()
    both = next(c for c in found["candidates"] if c["identifier"] == PDF["identifier"])
    assert both["description"] == PDF["description"] and both["origin_service"].rstrip("/") == a
    assert both["origin_authority"] == "docs.example.org" and both["received_at"]
    assert sorted(s.rstrip("/") for s in both["origin_sources"]) == sorted([a, b, c])


def test_a_peer_that_drops_the_federation_headers_costs_one_federated_search(tmp_path: Path) -> None:
    """A → kit → A: the kit sends A's search back as a fresh request, without ARD-Federation-Via. A recognises its
    own search by its text while it is under way and answers it locally; the kit's answer, with its two extra
    top-level fields, is read, and its copies of A's own entries change nothing."""
    with PeerKit() as kit:
        port = free_port()
        with registry_process(tmp_path, port, "--upstream", kit.origin) as a:
            kit.upstream = a
            register(a, WEATHER)
            start = time.monotonic()
            response = search(a, "weather forecast for a city")
            elapsed = time.monotonic() - start
            health = httpx.get(f"{a}/health", timeout=10)
    assert kit.searches == 1  # A asked the kit once; the kit's one search at A was answered there, locally
    assert elapsed < 10
    weather = response.json()["results"][0]
    assert weather["identifier"] == WEATHER["identifier"] and weather["source"].rstrip("/") == a
    assert sorted(s.rstrip("/") for s in weather["evidence"]["sources"]) == sorted([a, kit.origin])
    warning = response.headers.get(WARNING_HEADER.lower(), "")
    assert "ignored top-level fields an ARD search response does not have: query, totalResults" in warning
    assert health.status_code == 200 and health.json()["status"] == "ok"
