"""`ard-mcp crawl` end to end on loopback: a real publisher (HTTP), a real DNS responder, the real registry.

Each ARD §6.1 discovery path finds its catalog; nested catalogs are followed; A2A cards and MCP server
descriptions map to entries; a refresh with nothing changed costs 304s and no embedding; changed, vanished
and taken-down documents update and remove only their own entries; unsafe targets are refused by default.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from ard_mcp.formats.messages import FacetRequest
from ard_mcp.registry import Registry
from ard_mcp.web.crawler import WELL_KNOWN, open_crawler
from ard_mcp.web.mcp_registry import import_registry
from ard_mcp.web.refresh import refresh_forever
from ard_mcp.web.report import CrawlReport
from ard_mcp.web.settings import CrawlLimits, CrawlSettings
from ard_mcp.web.sources import Schedule
from tests.conftest import INVOICES, PDF, TRANSLATE, WEATHER, entry, results
from tests.dns_responder import DnsResponder
from tests.url_spellings import METADATA, SPELLINGS, points_to
from tests.web_publisher import Publisher

pytestmark = pytest.mark.slow

LOCAL = CrawlSettings(allow_private_networks=True)


def manifest(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"specVersion": "1.0", "host": {"displayName": "Example", "identifier": "did:web:example.com"}, "entries": list(entries)}


def nested_link(identifier: str, url: str) -> dict[str, Any]:
    return {"identifier": identifier, "displayName": "More agents", "type": "application/ai-catalog+json", "url": url}


def crawl(registry: Registry, *targets: str, settings: CrawlSettings = LOCAL, refresh: bool = False) -> CrawlReport:
    async def run() -> CrawlReport:
        async with open_crawler(registry, settings) as crawler:
            if refresh:
                await crawler.refresh(force=True)
            await crawler.crawl(targets)
            return crawler.report

    return anyio.run(run)


def metadata(registry: Registry, identifier: str) -> dict[str, Any]:
    return dict(registry.get(identifier).metadata or {})


def statuses(report: CrawlReport) -> dict[str, str]:
    return {s.url.rsplit("/", 1)[-1] or s.url: s.status for s in report.sources if s.status != "not-found"}


@pytest.fixture
def site() -> Iterator[Publisher]:
    with Publisher() as publisher:
        yield publisher


@pytest.fixture
def embedded(registry: Registry, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many texts the real model embedded, call by call."""
    calls: list[int] = []
    embed = registry.embedder.embed

    def counting(texts: list[str]) -> Any:
        calls.append(len(texts))
        return embed(texts)

    monkeypatch.setattr(registry.embedder, "embed", counting)
    return calls


# -- discovery paths ------------------------------------------------------------------------------------


def test_well_known_catalog_with_nested_catalogs_and_provenance(registry: Registry, site: Publisher) -> None:
    site.put("/.well-known/ai-catalog.json", manifest(WEATHER, nested_link("urn:air:example.com:catalog:more", "/more.json")))
    site.put("/more.json", manifest(PDF))
    report = crawl(registry, site.origin + "/")

    assert statuses(report) == {"ai-catalog.json": "ingested", "more.json": "ingested"}
    assert report.added == 3 and not report.rejected and not report.errors
    weather = metadata(registry, WEATHER["identifier"])
    assert weather["crawlSource"] == site.url("/.well-known/ai-catalog.json")
    assert weather["crawlVia"] == "well-known" and weather["crawlEtag"] and weather["crawlFetchedAt"]
    assert metadata(registry, PDF["identifier"])["crawlVia"] == "nested"
    # provenance is filterable and facetable like any scalar metadata
    listed = registry.list("metadata.crawlVia = 'nested'")
    assert [e.identifier for e in listed.items] == [PDF["identifier"]]


def test_robots_agentmap_and_html_link(registry: Registry, site: Publisher) -> None:
    site.put("/robots.txt", f"User-agent: *\nAllow: /\nAgentmap: {site.url('/agents/map.json')}\n", content_type="text/plain")
    site.put("/agents/map.json", manifest(WEATHER))
    site.put(
        "/", '<html><head><link rel="alternate ai-catalog" href="/c/linked.json"></head><body>hi</body></html>', content_type="text/html"
    )
    site.put("/c/linked.json", manifest(PDF))
    report = crawl(registry, site.origin)

    assert statuses(report) == {"map.json": "ingested", "linked.json": "ingested"}
    assert metadata(registry, WEATHER["identifier"])["crawlVia"] == "robots"
    assert metadata(registry, PDF["identifier"])["crawlVia"] == "link"


def test_the_url_of_an_html_page_is_read_for_its_catalog_links(registry: Registry, site: Publisher) -> None:
    """`ard-mcp crawl https://site/about.html` once failed with "content type text/html is not one of ..."."""
    site.put("/about.html", '<html><head><link rel="ai-catalog" href="/c/linked.json"></head></html>', content_type="text/html")
    site.put("/c/linked.json", manifest(PDF))
    site.put("/plain.html", "<html><body>no catalog here</body></html>", content_type="text/html")
    report = crawl(registry, site.url("/about.html"), site.url("/plain.html"))

    assert statuses(report) == {"about.html": "ingested", "linked.json": "ingested", "plain.html": "failed"}
    assert metadata(registry, PDF["identifier"])["crawlVia"] == "nested"
    failed = next(s for s in report.sources if s.url.endswith("/plain.html"))
    assert failed.error is not None and 'without <link rel="ai-catalog">' in failed.error


def test_dns_svcb_txt_and_registry_records(registry: Registry, site: Publisher) -> None:
    site.put("/dns/svcb.json", manifest(WEATHER))
    site.put("/dns/txt.json", manifest(PDF))
    with DnsResponder() as dns:
        for name in ("example.test.", "search.example.test."):
            dns.add(name, "A", "127.0.0.1")
        dns.add("example.test.", "SVCB", f'1 . port={site.port} key65400="/dns/svcb.json"')
        dns.add("example.test.", "TXT", '"v=spf1 -all"', '"well-known=/dns/txt.json"')
        dns.add("_index._agents.example.test.", "SVCB", f"1 search.example.test. port={site.port}")
        settings = CrawlSettings(allow_private_networks=True, dns_server=f"127.0.0.1:{dns.port}")
        report = crawl(registry, f"http://example.test:{site.port}/", settings=settings)

    assert statuses(report) == {"svcb.json": "ingested", "txt.json": "ingested", "dns:_index._agents.example.test": "ingested"}
    assert metadata(registry, WEATHER["identifier"])["crawlVia"] == "dns-svcb"
    assert metadata(registry, PDF["identifier"])["crawlVia"] == "dns-txt"
    upstream = registry.get("urn:air:example.test:registry:search-example-test")
    assert upstream.type == "application/ai-registry+json" and upstream.url == f"http://search.example.test:{site.port}/"
    assert report.registries == [f"http://search.example.test:{site.port}/"]


def test_registries_in_a_catalog_are_entries_not_crawled(registry: Registry, site: Publisher) -> None:
    upstream = {
        "identifier": "urn:air:example.com:registry:global",
        "displayName": "Global registry",
        "type": "application/ai-registry+json",
        "url": site.url("/api/v1/"),
    }
    site.put("/catalog.json", manifest(WEATHER, upstream))
    report = crawl(registry, site.url("/catalog.json"))
    assert report.registries == [site.url("/api/v1/")]
    assert registry.get(upstream["identifier"]).type == "application/ai-registry+json"
    assert site.count("/api/v1/") == 0


def test_a2a_card_and_mcp_server_card(registry: Registry, site: Publisher) -> None:
    card = {  # an interface on a named host: a card's identifier is anchored to it, and an IP address is no publisher
        "name": "Lingua",
        "description": "Translates text between 40 languages.",
        "url": "https://agents.example.com/a2a",
        "version": "1.0.0",
        "capabilities": {},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "translate", "name": "translate", "description": TRANSLATE["description"], "tags": ["language"]}],
    }
    server_card = {
        "serverInfo": {"name": "com.example/weather", "title": "Weather", "version": "2.1.0"},
        "description": "Forecasts for any city.",
        "tools": [{"name": "get_forecast", "description": "Seven-day forecast for a city.", "inputSchema": {"type": "object"}}],
        "transport": {"type": "streamable-http", "endpoint": "/mcp"},
    }
    site.put("/.well-known/agent-card.json", card)
    site.put("/mcp/server-card.json", server_card)
    report = crawl(registry, site.origin + "/", site.url("/mcp/server-card.json"))

    assert statuses(report) == {"agent-card.json": "ingested", "server-card.json": "ingested"}, report
    kinds = {e.type for e in registry.list().items}
    assert kinds == {"application/a2a-agent-card+json", "application/mcp-server-card+json"}
    assert results(registry, "seven day weather forecast for a city")[0].identifier == "urn:air:example.com:server:weather"


# -- freshness -----------------------------------------------------------------------------------------------


def test_refresh_with_nothing_changed_sends_validators_and_embeds_nothing(registry: Registry, site: Publisher, embedded: list[int]) -> None:
    site.put("/.well-known/ai-catalog.json", manifest(WEATHER, nested_link("urn:air:example.com:catalog:more", "/more.json")))
    site.put("/more.json", manifest(PDF))
    crawl(registry, site.origin)
    assert sum(embedded) > 0
    embedded.clear()
    before = len(site.requests)

    report = crawl(registry, refresh=True)

    assert statuses(report) == {"ai-catalog.json": "not-modified", "more.json": "not-modified"}
    assert embedded == [] and report.added == report.updated == 0 and not report.removed
    again = [r for r in site.requests[before:] if r.path in ("/.well-known/ai-catalog.json", "/more.json")]
    assert len(again) == 2 and all("if-none-match" in r.headers for r in again)
    assert registry.get(WEATHER["identifier"]) and registry.get(PDF["identifier"])


def test_refresh_updates_changed_removes_vanished_and_keeps_other_sources(registry: Registry, site: Publisher, embedded: list[int]) -> None:
    registered = entry(INVOICES, identifier="urn:air:example.com:billing:api-registered")
    registry.indexer.register(registered)
    site.put("/catalog.json", manifest(WEATHER, PDF))
    crawl(registry, site.url("/catalog.json"))
    embedded.clear()

    changed = entry(WEATHER, description="Current conditions, multi-day forecasts and severe-weather alerts for any city.")
    site.put("/catalog.json", manifest(changed))  # PDF vanished
    report = crawl(registry, refresh=True)

    assert report.updated == 1 and report.removed == [PDF["identifier"]]
    assert registry.get(WEATHER["identifier"]).description == changed["description"]
    assert registry.get(registered["identifier"])  # registered through the API: never the crawl's to remove
    assert sum(embedded) == 1  # only the changed description
    with pytest.raises(Exception, match="no agent"):
        registry.get(PDF["identifier"])


def test_a_taken_down_catalog_takes_its_entries_and_nested_catalogs_with_it(registry: Registry, site: Publisher) -> None:
    site.put("/catalog.json", manifest(WEATHER, nested_link("urn:air:example.com:catalog:more", "/more.json")))
    site.put("/more.json", manifest(PDF))
    crawl(registry, site.url("/catalog.json"))
    site.remove("/catalog.json")

    report = crawl(registry, refresh=True)

    assert set(report.removed) == {WEATHER["identifier"], PDF["identifier"], "urn:air:example.com:catalog:more"}
    assert registry.store.crawl_sources() == {}


def test_a_crawl_does_not_replace_an_entry_another_source_holds(registry: Registry, site: Publisher) -> None:
    registry.indexer.register(WEATHER)
    site.put("/a.json", manifest(entry(WEATHER, description="Hijacked.")))
    report = crawl(registry, site.url("/a.json"))
    assert report.rejected and "held by a registration" in report.rejected[0]
    assert registry.get(WEATHER["identifier"]).description == WEATHER["description"]


# -- bad input and safety ----------------------------------------------------------------------------------------


def test_malformed_documents_fail_alone(registry: Registry, site: Publisher) -> None:
    site.put("/.well-known/ai-catalog.json", manifest(WEATHER, nested_link("urn:air:example.com:catalog:bad", "/bad.json")))
    site.put("/bad.json", "{ not json", content_type="application/json")
    site.put("/other.json", {"hello": "world"})
    report = crawl(registry, site.origin, site.url("/other.json"))

    outcome = {s.url.rsplit("/", 1)[-1]: s for s in report.sources}
    assert outcome["ai-catalog.json"].status == "ingested"
    assert outcome["bad.json"].status == "failed" and "not valid JSON" in (outcome["bad.json"].error or "")
    assert outcome["other.json"].status == "failed" and "not a document this registry reads" in (outcome["other.json"].error or "")
    assert registry.get(WEATHER["identifier"])


def test_unsafe_links_in_a_catalog_are_refused(registry: Registry, site: Publisher) -> None:
    evil = [
        entry(PDF, identifier=f"urn:air:example.com:x:{scheme}", url=f"{scheme}:payload", data=None)
        for scheme in ("javascript", "file", "data")
    ]
    site.put("/catalog.json", manifest(WEATHER, *evil))
    report = crawl(registry, site.url("/catalog.json"))
    assert report.added == 1 and len([w for w in report.warnings if "scheme" in w]) == 3


def test_entries_pointing_at_cloud_metadata_in_any_spelling_are_rejected_by_name(registry: Registry, site: Publisher) -> None:
    evil = [entry(PDF, identifier=f"urn:air:example.com:x:metadata{i}", url=url, data=None) for i, (url, _) in enumerate(SPELLINGS)]
    site.put("/catalog.json", manifest(WEATHER, *evil))
    report = crawl(registry, site.url("/catalog.json"))

    assert report.added == 1 and registry.store.count() == 1
    for i, (url, address) in enumerate(SPELLINGS, start=1):  # the scheme lower-cased: relative links are resolved with urljoin
        expected = f"{site.url('/catalog.json')}.entries[{i}].url: {points_to(url, address)}".lower()
        assert any(r.lower().startswith(expected) for r in report.rejected), url
    assert len(report.rejected) == len(SPELLINGS)


def test_private_targets_are_refused_by_default(registry: Registry, site: Publisher) -> None:
    site.put("/.well-known/ai-catalog.json", manifest(WEATHER))
    report = crawl(registry, site.origin, site.url("/.well-known/ai-catalog.json"), settings=CrawlSettings())
    assert report.failed
    assert "loopback" in report.errors[0] and "--allow-private-networks" in report.errors[0]
    assert any(s.status == "failed" and "loopback" in (s.error or "") for s in report.sources)
    assert site.requests == [] and registry.store.count() == 0


@pytest.mark.parametrize("settings", [CrawlSettings(), LOCAL], ids=["default", "private-networks-allowed"])
def test_targets_in_any_spelling_of_cloud_metadata_are_refused_naming_the_address(
    registry: Registry, settings: CrawlSettings, loopback_only: list[str]
) -> None:
    """Origins and document URLs alike; a refusal once said "robots.txt disallows fetching it" when the
    robots.txt fetch of a refused host failed in another way (an octal host httpx cannot parse)."""
    targets = [url for url, _ in SPELLINGS] + ["2852039166", "0xa9fea9fe"]  # the last two: domains, as the CLI takes them
    report = crawl(registry, *targets, settings=settings)
    messages = report.errors + [s.error or "" for s in report.sources]
    assert len(messages) == len(targets)
    for url, address in [*SPELLINGS, ("2852039166", METADATA), ("0xa9fea9fe", METADATA)]:
        assert any(url.lower() in m.lower() and f"points to {address}" in m for m in messages), url
    assert not any("robots" in m for m in messages)
    assert report.failed and registry.store.count() == 0 and loopback_only == []


def test_a_loopback_target_spelled_as_a_number_is_refused_as_loopback(registry: Registry, site: Publisher) -> None:
    """Through a DNS server (`--dns-server`), which has no answer for `0x7f000001`: the host is read as the
    address it spells, never asked of DNS, and the refusal names loopback instead of a failed robots.txt."""
    with DnsResponder() as dns:
        settings = CrawlSettings(dns_server=f"127.0.0.1:{dns.port}")
        report = crawl(registry, f"http://0x7f000001:{site.port}/", f"http://2130706433:{site.port}/catalog.json", settings=settings)
    messages = report.errors + [s.error or "" for s in report.sources]
    assert len(messages) == 2 and all("resolves to 127.0.0.1, a loopback address" in m for m in messages), messages
    assert site.requests == []


def test_a_failing_robots_txt_is_reported_as_the_servers_error_not_as_a_disallow(registry: Registry, site: Publisher) -> None:
    site.put("/robots.txt", "oops", content_type="text/plain", status=500, etag=False)
    site.put("/.well-known/ai-catalog.json", manifest(WEATHER))
    report = crawl(registry, site.origin)

    probes = [s for s in report.sources if s.via == "well-known"]
    assert len(probes) == len(WELL_KNOWN) and {s.status for s in probes} == {"server-error"}
    for probe in probes:  # never asked for: the report says why, and that it is not robots.txt's rules
        assert "not fetched: robots.txt answered HTTP 500 (unreachable)" in (probe.error or "") and "disallows" not in (probe.error or "")
    assert [r.path for r in site.requests] == ["/robots.txt"]
    assert report.failed and registry.store.count() == 0


def test_a_server_error_on_a_well_known_uri_is_not_reported_as_not_found(registry: Registry, site: Publisher) -> None:
    site.put("/.well-known/ai-catalog.json", manifest(WEATHER))
    site.put("/.well-known/ard.json", "boom", content_type="text/plain", status=500)
    report = crawl(registry, site.origin)
    outcome = {s.url.rsplit("/", 1)[-1]: s for s in report.sources}
    assert outcome["ai-catalog.json"].status == "ingested" and outcome["agent.json"].status == "not-found"
    assert outcome["ard.json"].status == "server-error" and "HTTP 500" in (outcome["ard.json"].error or "")
    assert not report.failed

    with Publisher() as broken:  # nothing but a server error: the crawl failed, without claiming nothing is there
        broken.put("/.well-known/ard.json", "boom", content_type="text/plain", status=503)
        report = crawl(registry, broken.origin)
    assert [s.status for s in report.sources if s.status != "not-found"] == ["server-error"]
    assert report.failed and report.errors == []


def test_depth_and_document_limits(registry: Registry, site: Publisher) -> None:
    for level in range(4):
        site.put(f"/l{level}.json", manifest(nested_link(f"urn:air:example.com:catalog:l{level + 1}", f"/l{level + 1}.json")))
    settings = CrawlSettings(allow_private_networks=True, limits=CrawlLimits(max_depth=2))
    report = crawl(registry, site.url("/l0.json"), settings=settings)
    assert [s.url.rsplit("/", 1)[-1] for s in report.sources] == ["l0.json", "l1.json", "l2.json"]
    assert any("depth limit 2" in w for w in report.warnings)


# -- an MCP registry -------------------------------------------------------------------------------------------------


def _server(name: str, description: str, status: str = "active") -> dict[str, Any]:
    official = {"status": status, "isLatest": True, "publishedAt": "2026-01-05T10:00:00Z", "updatedAt": "2026-01-05T10:00:00Z"}
    return {
        "server": {"name": name, "description": description, "version": "1.0.0"},
        "_meta": {"io.modelcontextprotocol.registry/official": official},
    }


def test_mcp_registry_import_pages_and_updates_incrementally(registry: Registry, site: Publisher) -> None:
    servers = [_server(f"io.github.dev{i}/tool{i}", f"Tool number {i} for testing the import.") for i in range(5)]
    seen: list[dict[str, str]] = []

    def page(query: dict[str, str], headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        seen.append(query)
        pool = servers if "updated_since" not in query else [_server("io.github.dev1/tool1", "", status="deleted")]
        start = int(query.get("cursor") or 0)
        size = 2
        body: dict[str, Any] = {"servers": pool[start : start + size], "metadata": {"count": len(pool[start : start + size])}}
        if start + size < len(pool):
            body["metadata"]["nextCursor"] = str(start + size)
        return 200, {}, json.dumps(body).encode()

    site.handle("/v0.1/servers", page)

    async def run() -> CrawlReport:
        async with open_crawler(registry, LOCAL) as crawler:
            await import_registry(crawler, site.origin)
            return crawler.report

    first = anyio.run(run)
    assert first.added == 5 and [s.status for s in first.sources] == ["ingested"]
    assert registry.get("urn:air:dev3.github.io:server:tool3").description.startswith("Tool number 3")
    assert [q.get("cursor") for q in seen[1:]] == [None, "2", "4"]  # seen[0]: the version probe

    seen.clear()
    second = anyio.run(run)
    assert second.removed == ["urn:air:dev1.github.io:server:tool1"]
    assert all("updated_since" in q for q in seen[1:])
    assert registry.store.count() == 4


def test_a_serving_registry_refreshes_due_documents_by_itself(registry: Registry, site: Publisher) -> None:
    fast = CrawlSettings(allow_private_networks=True, schedule=Schedule(interval=0.2, min_interval=0.2))
    site.put("/catalog.json", manifest(WEATHER))
    crawl(registry, site.url("/catalog.json"), settings=fast)
    site.put("/catalog.json", manifest(WEATHER, PDF))

    async def serve_until_refreshed() -> None:
        async with anyio.create_task_group() as background:
            background.start_soon(refresh_forever, lambda: registry, fast, 0.1)
            with anyio.fail_after(20):
                while registry.store.get(PDF["identifier"]) is None:
                    await anyio.sleep(0.05)
            background.cancel_scope.cancel()

    anyio.run(serve_until_refreshed)
    assert metadata(registry, PDF["identifier"])["crawlSource"] == site.url("/catalog.json")
    facets = registry.explore(None, None, [FacetRequest(field="metadata.crawlVia")])
    assert facets.facets["metadata.crawlVia"].buckets[0].value == "direct"
