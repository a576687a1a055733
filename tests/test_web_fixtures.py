"""The crawler's loopback fixtures work against real clients: httpx for `Publisher`, dnspython's resolver for `DnsResponder`."""

from __future__ import annotations

import asyncio
import time

import dns.asyncquery
import dns.asyncresolver
import dns.exception
import dns.flags
import dns.message
import dns.rcode
import dns.resolver
import httpx
import pytest
from dns.rdtypes.IN.SVCB import SVCB
from dns.rdtypes.svcbbase import GenericParam, ParamKey, PortParam

from tests.dns_responder import DnsResponder
from tests.web_publisher import Publisher

# --- Publisher ---


def test_publishes_json_with_validators_and_answers_304() -> None:
    with Publisher() as site, httpx.Client(base_url=site.origin, timeout=5) as client:
        site.put("/.well-known/ai-catalog.json", {"entries": []})
        first = client.get("/.well-known/ai-catalog.json", headers={"User-Agent": "ard-crawler/test"})
        assert first.status_code == 200
        assert first.json() == {"entries": []}
        assert first.headers["content-type"] == "application/json"
        etag, modified = first.headers["etag"], first.headers["last-modified"]
        assert etag.startswith('"')
        assert not etag.startswith('"W/')

        by_etag = client.get("/.well-known/ai-catalog.json", headers={"If-None-Match": etag})
        by_date = client.get("/.well-known/ai-catalog.json", headers={"If-Modified-Since": modified})
        assert (by_etag.status_code, by_etag.content, by_etag.headers["etag"]) == (304, b"", etag)
        assert (by_date.status_code, by_date.content) == (304, b"")

        site.put("/.well-known/ai-catalog.json", {"entries": [1]})  # republished within the same second
        changed = client.get("/.well-known/ai-catalog.json", headers={"If-None-Match": etag, "If-Modified-Since": modified})
        assert changed.status_code == 200
        assert changed.headers["etag"] != etag
        assert client.get("/.well-known/ai-catalog.json", headers={"If-Modified-Since": modified}).status_code == 200

        assert site.count("/.well-known/ai-catalog.json") == 5
        assert site.requests[0].headers["user-agent"] == "ard-crawler/test"
        assert site.requests[1].headers["if-none-match"] == etag


def test_text_html_redirect_remove_and_unknown_paths() -> None:
    with Publisher() as site, httpx.Client(base_url=site.origin, timeout=5) as client:
        site.put("/", '<html><head><link rel="ai-catalog" href="/c.json"></head></html>', content_type="text/html")
        site.put("/robots.txt", "User-agent: *\nAgentmap: /c.json\n", content_type="text/plain", etag=False)
        site.put("/c.json", b"{}", headers={"Cache-Control": "max-age=60"})
        site.redirect("/.well-known/ai-catalog.json", site.url("/c.json"), status=301)

        assert 'rel="ai-catalog"' in client.get("/").text
        robots = client.get("/robots.txt")
        assert "Agentmap: /c.json" in robots.text
        assert "etag" not in robots.headers
        moved = client.get("/.well-known/ai-catalog.json", follow_redirects=True)
        assert [r.status_code for r in moved.history] == [301]
        assert (moved.status_code, moved.url.path, moved.headers["cache-control"]) == (200, "/c.json", "max-age=60")
        head = client.head("/c.json")
        assert (head.status_code, head.headers["content-length"], head.content) == (200, "2", b"")

        site.remove("/c.json")
        gone = client.get("/c.json")
        assert (gone.status_code, gone.headers["content-type"].split(";")[0]) == (404, "text/plain")
        assert client.get("/nothing").status_code == 404
        assert [(r.method, r.path) for r in site.requests][-3:] == [("HEAD", "/c.json"), ("GET", "/c.json"), ("GET", "/nothing")]


def test_query_strings_match_exactly_or_fall_back_to_the_bare_path() -> None:
    with Publisher() as site, httpx.Client(base_url=site.origin, timeout=5) as client:
        site.put("/v0/servers?limit=2", {"page": 1})
        site.put("/v0/servers?cursor=abc&limit=2", {"page": 2})
        site.put("/v0/servers", {"page": "any"})
        assert client.get("/v0/servers?limit=2").json() == {"page": 1}
        assert client.get("/v0/servers?cursor=abc&limit=2").json() == {"page": 2}
        assert client.get("/v0/servers?limit=3").json() == {"page": "any"}
        assert site.count("/v0/servers") == 3
        assert site.count("/v0/servers?limit=2") == 1


def test_paged_handler() -> None:
    servers = [{"name": f"s{i}"} for i in range(5)]

    def page(query: dict[str, str], headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        start, limit = int(query.get("cursor", "0")), int(query.get("limit", "2"))
        more = start + limit < len(servers)
        body = {"servers": servers[start : start + limit], "metadata": {"nextCursor": str(start + limit) if more else None}}
        return 200, {"X-Accept": headers.get("accept", "")}, httpx.Response(200, json=body).content

    with Publisher() as site, httpx.Client(base_url=site.origin, timeout=5) as client:
        site.handle("/v0/servers", page)
        names, params = [], {"limit": "2"}
        while True:
            answer = client.get("/v0/servers", params=params, headers={"Accept": "application/json"})
            assert (answer.headers["content-type"], answer.headers["x-accept"]) == ("application/json", "application/json")
            names += [s["name"] for s in answer.json()["servers"]]
            if not (cursor := answer.json()["metadata"]["nextCursor"]):
                break
            params = {"limit": "2", "cursor": cursor}
        assert names == ["s0", "s1", "s2", "s3", "s4"]
        assert [r.path for r in site.requests] == ["/v0/servers?limit=2", "/v0/servers?limit=2&cursor=2", "/v0/servers?limit=2&cursor=4"]

        site.handle("/broken", lambda query, headers: 1 // 0)  # type: ignore[arg-type, return-value]
        assert client.get("/broken").status_code == 500


def test_delay_times_out_a_client_and_does_not_hold_up_close() -> None:
    site = Publisher().__enter__()
    try:
        site.put("/slow.json", {"ok": True}, delay=0.3)
        started = time.monotonic()
        assert httpx.get(site.url("/slow.json"), timeout=5).json() == {"ok": True}
        assert time.monotonic() - started >= 0.3

        site.put("/stuck.json", {}, delay=30)
        with pytest.raises(httpx.ReadTimeout):
            httpx.get(site.url("/stuck.json"), timeout=0.2)
        assert site.count("/stuck.json") == 1
    finally:
        started = time.monotonic()
        site.close()
        assert time.monotonic() - started < 2.5


def test_large_bodies_stream_and_a_client_can_stop_reading() -> None:
    with Publisher() as site, httpx.Client(base_url=site.origin, timeout=5) as client:
        site.put("/big.json", b"x" * 5_000_000)
        site.put("/big-chunked.json", b"y" * 5_000_000, chunked=True)
        assert client.head("/big.json").headers["content-length"] == "5000000"
        for path in ("/big.json", "/big-chunked.json"):
            with client.stream("GET", path) as answer:
                assert ("content-length" in answer.headers) is (path == "/big.json")
                read = 0
                for piece in answer.iter_raw():
                    read += len(piece)
                    if read >= 100_000:  # a crawler's size cap
                        break
            assert read >= 100_000
        assert len(client.get("/big-chunked.json").content) == 5_000_000
        started = time.monotonic()
    assert time.monotonic() - started < 2.5


# --- DnsResponder ---


def _resolver(server: DnsResponder, *, lifetime: float = 2.0) -> dns.asyncresolver.Resolver:
    resolver = dns.asyncresolver.Resolver(configure=False)
    resolver.nameservers = [server.address]
    resolver.port = server.port
    resolver.lifetime = lifetime
    return resolver


def test_resolves_svcb_txt_a_and_aaaa() -> None:
    with DnsResponder() as server:
        server.add("_index._agents.example.test.", "SVCB", '1 example.test. port=43123 alpn=h2 key65400="/x/y.json"')
        server.add("_index._agents.example.test.", "TXT", '"well-known=/catalogs/main.json"')
        server.add("example.test.", "A", "127.0.0.1")
        server.add("example.test.", "AAAA", "::1")

        async def lookups() -> tuple[dns.resolver.Answer, ...]:
            resolver = _resolver(server)
            return tuple([await resolver.resolve("_index._agents.example.test.", kind) for kind in ("SVCB", "TXT")]) + tuple(
                [await resolver.resolve("example.test.", kind) for kind in ("A", "AAAA")]
            )

        svcb, txt, a, aaaa = asyncio.run(lookups())
        record = svcb[0]
        assert isinstance(record, SVCB)
        assert (record.priority, record.target.to_text()) == (1, "example.test.")
        port = record.params[ParamKey.PORT]
        assert isinstance(port, PortParam)
        assert port.port == 43123
        unregistered = record.params[65400]  # an unregistered key: GenericParam holding the raw bytes
        assert isinstance(unregistered, GenericParam)
        assert unregistered.value == b"/x/y.json"
        assert ParamKey.make(65400).name == "KEY65400"
        assert 'key65400="/x/y.json"' in record.to_text()
        assert [s for r in txt for s in r.strings] == [b"well-known=/catalogs/main.json"]
        assert [r.address for r in a] == ["127.0.0.1"]
        assert [r.address for r in aaaa] == ["::1"]
        assert svcb.response.flags & dns.flags.AA
        assert server.queries == [
            ("_index._agents.example.test.", "SVCB"),
            ("_index._agents.example.test.", "TXT"),
            ("example.test.", "A"),
            ("example.test.", "AAAA"),
        ]


def test_negative_answers() -> None:
    with DnsResponder() as server:
        server.add("_index._agents.example.test.", "TXT", '"well-known=/c.json"')
        server.add("example.test.", "SOA", "ns.example.test. admin.example.test. 1 3600 600 86400 60")

        async def rcode_and_counts(name: str, kind: str) -> tuple[str, int, int]:
            query = dns.message.make_query(name, kind)
            answer = await dns.asyncquery.udp(query, server.address, timeout=2, port=server.port)
            assert answer.flags & dns.flags.AA
            return dns.rcode.to_text(answer.rcode()), len(answer.answer), len(answer.authority)

        assert asyncio.run(rcode_and_counts("_index._agents.example.test.", "SVCB")) == ("NOERROR", 0, 1)  # NODATA
        assert asyncio.run(rcode_and_counts("_agents.example.test.", "TXT")) == ("NOERROR", 0, 1)  # empty non-terminal
        assert asyncio.run(rcode_and_counts("nope.example.test.", "A")) == ("NXDOMAIN", 0, 1)

        with pytest.raises(dns.resolver.NXDOMAIN):
            asyncio.run(_resolver(server).resolve("other.test.", "A"))
        with pytest.raises(dns.resolver.NoAnswer):
            asyncio.run(_resolver(server).resolve("_index._agents.example.test.", "SVCB"))


def test_cname_truncation_and_tcp_fallback() -> None:
    with DnsResponder() as server:
        server.add("_index._agents.example.test.", "CNAME", "_index._agents.hosting.test.")
        server.add("_index._agents.hosting.test.", "TXT", *[f'"well-known=/catalogs/{i:03}-{"x" * 40}.json"' for i in range(40)])
        answer = asyncio.run(_resolver(server).resolve("_index._agents.example.test.", "TXT"))
        assert len(answer) == 40
        assert answer.canonical_name.to_text() == "_index._agents.hosting.test."
        assert server.queries == [("_index._agents.example.test.", "TXT")] * 2  # UDP answer truncated (TC), then TCP

        truncated = asyncio.run(
            dns.asyncquery.udp(dns.message.make_query("_index._agents.hosting.test.", "TXT"), server.address, timeout=2, port=server.port)
        )
        assert truncated.flags & dns.flags.TC


def test_failures_and_silence() -> None:
    with DnsResponder() as server:
        server.add("example.test.", "A", "127.0.0.1")
        server.fail("example.test.", "SERVFAIL")
        with pytest.raises(dns.resolver.NoNameservers):
            asyncio.run(_resolver(server).resolve("example.test.", "A"))
        server.silence("slow.test.")
        started = time.monotonic()
        with pytest.raises(dns.exception.Timeout):
            asyncio.run(_resolver(server, lifetime=0.3).resolve("slow.test.", "A"))
        assert time.monotonic() - started < 2
