"""Trust checks where entries arrive: REST registration, MCP registration and the crawl record each entry's
trust status (real JWS signatures, keys served by a loopback publisher), which callers filter and facet on
as `trust.status`, which no publisher can write, and which `refuse-invalid` turns into a refusal."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm
from mcp import Client

from ard_mcp.config import Config
from ard_mcp.formats.entry_facts import trust_values
from ard_mcp.registry import Registry
from ard_mcp.search.query import SearchQuery
from ard_mcp.surfaces.mcp.server import build_server
from ard_mcp.surfaces.rest.settings import HttpSettings
from ard_mcp.surfaces.services import Services
from ard_mcp.trust.service import TrustChecks
from ard_mcp.trust.signatures import sign_manifest
from ard_mcp.web.crawler import open_crawler
from ard_mcp.web.settings import CrawlSettings
from tests.dns_responder import DnsResponder
from tests.http_support import running
from tests.web_publisher import Publisher

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

KEY = ec.generate_private_key(ec.SECP256R1())
OTHER_KEY = ec.generate_private_key(ec.SECP256R1())


def jwks() -> dict[str, Any]:
    return {"keys": [{**ECAlgorithm.to_jwk(KEY.public_key(), as_dict=True), "kid": "k1"}]}


def agent(name: str, trust: dict[str, Any] | None = None, signed_with: Any = None, **extra: Any) -> dict[str, Any]:
    found: dict[str, Any] = {
        "identifier": f"urn:air:acme.test:agents:{name}",
        "displayName": f"{name.title()} Agent",
        "type": "application/a2a-agent-card+json",
        "url": f"https://acme.test/agents/{name}.json",
        "description": f"The {name} agent books and manages business travel.",
        **extra,
    }
    if trust is not None:
        found["trustManifest"] = {**trust, "signature": sign_manifest(trust, signed_with, "k1", "ES256")} if signed_with else trust
    return found


SPIFFE = {"identity": "spiffe://acme.test/agents", "identityType": "spiffe"}


@pytest.fixture
def site() -> Iterator[Publisher]:
    with Publisher() as publisher:
        publisher.put("/.well-known/jwks.json", jwks())
        yield publisher


@pytest.fixture
def acme(site: Publisher) -> Iterator[CrawlSettings]:
    """Crawl settings under which acme.test is the site: its catalog comes from the publisher's own host, so its
    entries are publisher-served (`trust.origin`); the name resolves through a real DNS server on loopback."""
    with DnsResponder() as dns:
        dns.add("acme.test.", "A", "127.0.0.1")
        yield CrawlSettings(allow_private_networks=True, dns_server=f"{dns.address}:{dns.port}")


def checks(site: Publisher) -> TrustChecks:
    return TrustChecks(allow_private_networks=True, origin_for=lambda authority: site.origin)


def statuses(listed: dict[str, Any]) -> dict[str, int]:
    return {b["value"]: b["count"] for b in listed["facets"]["trust.status"]["buckets"]}


async def test_rest_registration_records_trust_status_callers_filter_and_facet_on(data_dir: Path, site: Publisher) -> None:
    documents = [
        agent("verified", SPIFFE, KEY),
        agent("forged", SPIFFE, OTHER_KEY),
        agent("mismatched", {"identity": "spiffe://evil.test/x", "identityType": "spiffe"}),
        agent("plain"),
        agent("claims", SPIFFE),
        # a publisher cannot write the registry's finding: neither a top-level field nor metadata reaches it
        agent("liar", metadata={"trust.status": "verified"}),
    ]
    services = Services("http://registry.test", trust=checks(site))
    async with running(data_dir, services=services) as client:
        for document in documents:
            response = await client.post("/agents", json=document)
            assert response.status_code == 201, response.text
        facets = (await client.post("/explore", json={"resultType": {"facets": [{"field": "trust.status"}]}})).json()
        verified = (await client.get("/agents", params={"filter": "trust.status = 'verified'"})).json()
    assert statuses(facets) == {"verified": 1, "invalid": 2, "self-asserted": 2, "unverified": 1}
    assert [e["identifier"] for e in verified["items"]] == ["urn:air:acme.test:agents:verified"]
    assert site.count("/.well-known/jwks.json") == 1  # one key-set fetch for the publisher, cached for the others


async def test_refuse_invalid_refuses_a_forged_registration(data_dir: Path, site: Publisher) -> None:
    services = Services("http://registry.test", trust_policy="refuse-invalid", trust=checks(site))
    async with running(data_dir, HttpSettings(trust_policy="refuse-invalid"), services=services) as client:
        forged = await client.post("/agents", json=agent("forged", SPIFFE, OTHER_KEY))
        good = await client.post("/agents", json=agent("verified", SPIFFE, KEY))
    assert forged.status_code == 403 and "trust manifest is invalid" in forged.text and "signature" in forged.text
    assert good.status_code == 201


async def test_mcp_registration_checks_trust_too(data_dir: Path, site: Publisher) -> None:
    server = build_server(Config(data_dir), warm=False, services=Services("http://registry.test", trust=checks(site)))
    async with Client(server) as client:
        assert not (await client.call_tool("register_agent", {"entry": agent("verified", SPIFFE, KEY)})).is_error
        listed = await client.call_tool("list_agents", {"filter": "trust.status = 'verified'"})
    assert listed.structured_content is not None
    assert [e["identifier"] for e in listed.structured_content["items"]] == ["urn:air:acme.test:agents:verified"]


def test_a_crawl_checks_trust_and_a_new_finding_replaces_the_old_without_re_embedding(
    registry: Registry, site: Publisher, acme: CrawlSettings
) -> None:
    catalog = {"specVersion": "1.0", "entries": [agent("verified", SPIFFE, KEY), agent("plain")]}
    site.put("/catalog.json", catalog)

    async def crawl(*, refresh: bool = False) -> None:
        async with open_crawler(registry, acme, trust=checks(site)) as crawler:
            await (crawler.refresh(force=True) if refresh else crawler.crawl([f"http://acme.test:{site.port}/catalog.json"]))

    anyio.run(crawl)
    assert registry.list("trust.status = 'verified'").items[0].identifier == "urn:air:acme.test:agents:verified"
    # the publisher rotates to a key the signature does not match: the unchanged entry's finding changes in place
    site.put("/.well-known/jwks.json", {"keys": [{**ECAlgorithm.to_jwk(OTHER_KEY.public_key(), as_dict=True), "kid": "k1"}]})
    site.put("/catalog.json", {**catalog, "entries": [*catalog["entries"], agent("new")]})  # a change, so the document is re-read
    anyio.run(lambda: crawl(refresh=True))
    assert [e.identifier for e in registry.list("trust.status = 'invalid'").items] == ["urn:air:acme.test:agents:verified"]


async def test_every_surface_shows_the_trust_status(data_dir: Path, site: Publisher) -> None:
    services = Services("http://registry.test", trust=checks(site))
    async with running(data_dir, services=services) as client:
        assert (await client.post("/agents", json=agent("verified", SPIFFE, KEY))).status_code == 201
        assert (await client.post("/agents", json=agent("plain"))).status_code == 201
        ard = (await client.post("/search", json={"query": {"text": "book business travel"}})).json()
        xu = (await client.post("/discover", json={"query": "book business travel"})).json()
    trust = {r["identifier"].rsplit(":", 1)[1]: r["evidence"]["trust"] for r in ard["results"]}
    assert trust["verified"]["status"] == "verified" and trust["verified"]["checkedAt"]
    assert (
        trust["plain"] == {"status": "self-asserted", "reason": trust["plain"]["reason"]}
        and "no trust manifest" in trust["plain"]["reason"]
    )
    assert {c["identifier"].rsplit(":", 1)[1]: c["trust"]["status"] for c in xu["candidates"]} == {
        "verified": "verified",
        "plain": "self-asserted",
    }
    server = build_server(Config(data_dir.parent / "mcp"), warm=False, services=Services("http://registry.test", trust=checks(site)))
    async with Client(server) as mcp:
        await mcp.call_tool("register_agent", {"entry": agent("verified", SPIFFE, KEY)})
        page = await mcp.call_tool("search_agents", {"text": "book business travel"})
    assert page.structured_content is not None and page.structured_content["results"][0]["trust"] == "verified"


def test_demote_ranks_self_asserted_entries_below_checked_ones(tmp_path: Path) -> None:
    """Among comparable matches the checked publisher comes first; a self-asserted entry that fits the task well
    still ranks above a checked one that fits it poorly (`Tuning.trust_demotion`)."""
    better = agent("plain", description="Books business travel: flights, hotels and trains for a team trip to Tokyo.")
    close = agent("checked", description="Books business travel: flights and hotels for team trips.")
    poor = agent("poor", description="Books business travel for a team.")
    order = {}
    for policy, demoted in (("show", ()), ("demote", ("invalid", "self-asserted"))):
        registry = Registry(Config(tmp_path / policy, demote_trust=demoted))
        try:
            registry.indexer.register(better)
            for checked in (close, poor):
                registry.indexer.register(checked, owned=trust_values("verified", "signature checked"))
            page = registry.search(SearchQuery.of("book flights and hotels for a team trip to Tokyo"))
            order[policy] = [r.identifier.rsplit(":", 1)[1] for r in page.results()]
        finally:
            registry.close()
    assert order["show"][:3] == ["plain", "checked", "poor"]
    assert order["demote"][:3] == ["checked", "plain", "poor"]


def test_refuse_invalid_leaves_a_forged_entry_out_of_a_crawl(registry: Registry, site: Publisher, acme: CrawlSettings) -> None:
    site.put("/catalog.json", {"specVersion": "1.0", "entries": [agent("forged", SPIFFE, OTHER_KEY), agent("plain")]})
    settings = dataclasses.replace(acme, trust_policy="refuse-invalid")

    async def crawl() -> list[str]:
        async with open_crawler(registry, settings, trust=checks(site)) as crawler:
            return (await crawler.crawl([f"http://acme.test:{site.port}/catalog.json"])).rejected

    rejected = anyio.run(crawl)
    assert len(rejected) == 1 and "agents:forged: its trust manifest is invalid" in rejected[0]
    assert [e.identifier for e in registry.list().items] == ["urn:air:acme.test:agents:plain"]
