"""The crawler's HTTP layer (`ard_mcp.net.fetcher` over `ard_mcp.net.guard`) against real loopback servers.

Covered, each through a real socket (`tests.web_publisher.Publisher`) and, for host names, a real DNS server
(`tests.dns_responder.DnsResponder` behind `DnsDiscovery` as the fetcher's resolver):

- safety by default: loopback in every spelling is refused before a byte is sent (`FetchError.blocked`, a message that
  names the reason and `--allow-private-networks`); `why_blocked` / `NetworkPolicy.check` on their own, no network;
- cloud metadata in every spelling (`tests.url_spellings`) refused even where private networks are allowed: the URL
  before any connection or robots.txt, a redirect's Location as it arrives, a numeric host where the socket would open;
- the check happens after DNS resolution: a name that resolves to loopback, or to one public and one private address,
  is refused; `allow_private` lifts the rule;
- redirects: every status code followed up to `max_redirects` and no further; other schemes refused; a redirect from
  a trusted host into a private address refused where the new connection opens, the target never asked;
- size cap, with Content-Length, chunked and gzip-encoded bodies; read timeout, overall deadline (redirects included);
- content types per expectation, HTTP errors, conditional GETs (If-None-Match / If-Modified-Since → 304) and
  Cache-Control → `max_age`;
- robots.txt: groups for `*` and for our token, 404 allows, 5xx forbids (and the refusal says robots.txt failed),
  checked on each redirect hop, fetched once per origin, `Agentmap:` lines;
- politeness: the delay between request starts to one host, the per-host concurrency limit, hosts not delaying each
  other, and the User-Agent.

A resolver error, a malformed URL and an unusable redirect Location are `FetchError`s like any other failure: one
escaping as anything else would abort a whole crawl.
"""

from __future__ import annotations

import gzip
import ipaddress
import re
import socket
import threading
import time
from collections.abc import Iterable, Iterator

import anyio
import pytest

from ard_mcp.net.fetcher import HTML, JSON, TEXT, USER_AGENT, Expect, Fetched, Fetcher, FetchError
from ard_mcp.net.guard import BlockedAddress, GuardedBackend, NetworkPolicy, Resolver, why_blocked
from ard_mcp.net.limits import FetchLimits
from ard_mcp.web.dns_discovery import DnsDiscovery
from tests.dns_responder import DnsResponder
from tests.url_spellings import IDS, SPELLINGS
from tests.web_publisher import Publisher

pytestmark = pytest.mark.anyio

FAST = FetchLimits(connect_timeout=2, read_timeout=5, deadline=10, delay=0)  # no politeness wait unless a test asks for it
PRIVATE = NetworkPolicy(allow_private=True)
DOC: dict[str, list[object]] = {"entries": []}


# --- helpers ----------------------------------------------------------------------------------------------------------


@pytest.fixture
def site() -> Iterator[Publisher]:
    with Publisher() as publisher:
        yield publisher


@pytest.fixture
def dns() -> Iterator[DnsResponder]:
    with DnsResponder() as responder:
        yield responder


def make_fetcher(
    policy: NetworkPolicy = PRIVATE, limits: FetchLimits = FAST, resolver: Resolver | None = None, robots: bool = False
) -> Fetcher:
    """A fetcher for loopback tests: private networks allowed and robots.txt ignored unless the test says otherwise."""
    return Fetcher(policy=policy, limits=limits, resolver=resolver, respect_robots=robots)


def dns_resolver(dns: DnsResponder) -> DnsDiscovery:
    return DnsDiscovery(f"{dns.address}:{dns.port}", timeout=2)


async def refused(fetcher: Fetcher, url: str, expect: Expect = JSON, **validators: str) -> FetchError:
    """The `FetchError` a GET of `url` ends in (failing the test if it succeeds)."""
    with pytest.raises(FetchError) as caught:
        await fetcher.get(url, expect, **validators)
    return caught.value


def assert_blocked(error: FetchError, host: str, address: str, reason: str) -> None:
    assert error.blocked
    assert error.status is None
    assert f"{host} resolves to {address}, {reason}" in str(error)
    assert "--allow-private-networks" in str(error)


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def chain(site: Publisher, prefix: str, hops: int) -> str:
    """`hops` redirects, each status code in turn and every other Location relative, ending at a JSON document."""
    statuses = (301, 302, 303, 307, 308)
    for hop in range(hops):
        target = f"/{prefix}{hop + 1}"
        site.redirect(f"/{prefix}{hop}", target if hop % 2 else site.url(target), status=statuses[hop % len(statuses)])
    site.put(f"/{prefix}{hops}", DOC)
    return site.url(f"/{prefix}0")


class ArrivalLog:
    """A `Publisher` handler that records when each request arrives and how many are being answered at once."""

    def __init__(self, hold: float = 0.0) -> None:
        self.hold = hold  # seconds each answer takes (bounded: the server thread sleeps this long)
        self.arrivals: list[float] = []
        self.user_agents: list[str] = []
        self.peak = 0
        self._busy = 0
        self._lock = threading.Lock()

    def __call__(self, query: dict[str, str], headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            self.arrivals.append(time.monotonic())
            self.user_agents.append(headers.get("user-agent", ""))
            self._busy += 1
            self.peak = max(self.peak, self._busy)
        time.sleep(self.hold)
        with self._lock:
            self._busy -= 1
        return 200, {}, b"{}"


async def fetch_all(fetcher: Fetcher, urls: Iterable[str]) -> list[Fetched]:
    """GET every URL at once; the results in no particular order."""
    results: list[Fetched] = []

    async def one(url: str) -> None:
        results.append(await fetcher.get(url, JSON))

    async with anyio.create_task_group() as group:
        for url in urls:
            group.start_soon(one, url)
    return results


# --- 1. safety by default -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("10.0.0.1", "a private address"),
        ("192.168.1.1", "a private address"),
        ("172.16.0.1", "a private address"),
        ("169.254.169.254", "a link-local address"),  # cloud metadata
        ("224.0.0.1", "a multicast address"),
        ("127.0.0.1", "a loopback address"),
        ("::1", "a loopback address"),
        ("::ffff:127.0.0.1", "a loopback address"),  # IPv4-mapped: judged as the IPv4 address it carries
        ("::ffff:10.0.0.1", "a private address"),
        ("0.0.0.0", "an unspecified address"),  # reaches the local host on Linux
        ("::", "an unspecified address"),
        ("fe80::1", "a link-local address"),
        ("fc00::1", "a private address"),
        ("100.64.0.1", "not a public address"),  # shared address space (carrier-grade NAT)
        ("2002:7f00:1::1", "a loopback address"),  # 6to4 wrapping 127.0.0.1: judged as the IPv4 address it carries
        ("fec0::1", "a site-local address"),
    ],
)
def test_why_blocked_names_the_kind_of_address(address: str, reason: str) -> None:
    assert why_blocked(ipaddress.ip_address(address)) == reason


@pytest.mark.parametrize("address", ["93.184.216.34", "2606:2800:220:1::1", "8.8.8.8"])
def test_why_blocked_allows_public_unicast(address: str) -> None:
    assert why_blocked(ipaddress.ip_address(address)) is None


def test_policy_check_refuses_any_private_answer_and_no_answer() -> None:
    policy = NetworkPolicy()
    assert policy.check("example.com", ["93.184.216.34", "2606:2800:220:1::1"]) == ["93.184.216.34", "2606:2800:220:1::1"]
    with pytest.raises(BlockedAddress, match=r"mixed\.test resolves to 10\.0\.0\.5, a private address"):
        policy.check("mixed.test", ["93.184.216.34", "10.0.0.5"])
    with pytest.raises(BlockedAddress, match="has no address"):
        policy.check("empty.test", [])
    assert PRIVATE.check("lan.test", ["10.0.0.5", "fd00::5%eth0"]) == ["10.0.0.5", "fd00::5"]  # scope id dropped
    with pytest.raises(BlockedAddress, match="has no address"):
        PRIVATE.check("empty.test", [])


@pytest.mark.parametrize("address", ["169.254.169.254", "169.254.170.2", "fe80::1%eth0", "::ffff:a9fe:a9fe", "fd00:ec2::254"])
def test_link_local_and_cloud_metadata_are_refused_even_where_private_networks_are_allowed(address: str) -> None:
    with pytest.raises(BlockedAddress, match=r"meta\.test resolves to .*, which the registry refuses"):
        PRIVATE.check("meta.test", ["10.0.0.5", address])


@pytest.mark.parametrize(
    ("host", "address", "reason"),
    [
        ("127.0.0.1", "127.0.0.1", "a loopback address"),
        ("[::1]", "::1", "a loopback address"),
        ("[::ffff:127.0.0.1]", "::ffff:7f00:1", "a loopback address"),
        ("127.1", "127.0.0.1", "a loopback address"),  # short and decimal spellings: the system resolver expands them
        ("2130706433", "127.0.0.1", "a loopback address"),
    ],
)
async def test_default_fetcher_refuses_loopback_without_sending_a_request(site: Publisher, host: str, address: str, reason: str) -> None:
    site.put("/doc.json", DOC)
    url = f"http://{host}:{site.port}/doc.json"
    async with Fetcher(limits=FAST) as fetcher:  # default policy, robots.txt respected: the robots.txt fetch is refused
        error = await refused(fetcher, url)
    assert_blocked(error, host.strip("[]"), address, reason)
    async with Fetcher(limits=FAST, respect_robots=False) as fetcher:  # and the document itself, without robots.txt
        assert_blocked(await refused(fetcher, url), host.strip("[]"), address, reason)
    assert site.requests == []


async def test_localhost_by_name_is_refused_and_allow_private_fetches_it(site: Publisher) -> None:
    site.put("/doc.json", DOC)
    async with Fetcher(limits=FAST) as fetcher:
        error = await refused(fetcher, f"http://localhost:{site.port}/doc.json")
    assert error.blocked
    assert "localhost resolves to" in str(error)
    assert "a loopback address" in str(error)
    assert site.requests == []
    async with make_fetcher(robots=True) as fetcher:  # the same URL with the flag: the refusal was the policy's
        got = await fetcher.get(site.url("/doc.json"), JSON)
    assert (got.status, got.body) == (200, b'{"entries": []}')


@pytest.mark.parametrize(("url", "address"), SPELLINGS, ids=IDS)
async def test_every_spelling_of_cloud_metadata_is_refused_before_any_connection(url: str, address: str, loopback_only: list[str]) -> None:
    """Even where private networks are allowed, and before robots.txt is asked for."""
    async with make_fetcher(robots=True) as fetcher:
        error = await refused(fetcher, url)
        with pytest.raises(FetchError) as robots:
            await fetcher.robots(url)
    assert error.blocked and robots.value.blocked
    assert error.reason.startswith(f"points to {address}") and error.reason.endswith("which the registry refuses")
    assert loopback_only == []


@pytest.mark.parametrize(("url", "address"), SPELLINGS, ids=IDS)
async def test_a_redirect_to_any_spelling_of_cloud_metadata_is_refused(
    site: Publisher, url: str, address: str, loopback_only: list[str]
) -> None:
    site.redirect("/go", url)
    async with make_fetcher(robots=True) as fetcher:
        error = await refused(fetcher, site.url("/go"))
    assert (error.url.lower(), error.blocked) == (url.lower(), True)  # urljoin lower-cases the scheme
    assert f"points to {address}" in error.reason
    assert [r.path for r in site.requests] == ["/robots.txt", "/go"]
    assert loopback_only == []


class NoDns:
    """A resolver that fails the test: hosts that are addresses must be judged without asking DNS."""

    async def addresses(self, host: str) -> list[str]:
        raise AssertionError(f"DNS was asked for {host}")


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("2852039166", "169.254.169.254"),
        ("0xa9fea9fe", "169.254.169.254"),
        ("0251.0376.0251.0376", "169.254.169.254"),
        ("169.254.43518", "169.254.169.254"),
        ("169.254.169.254.", "169.254.169.254"),
        ("%31%36%39.254.169.254", "169.254.169.254"),
        ("::ffff:a9fe:a9fe", "::ffff:a9fe:a9fe"),
        ("fd00:ec2::254", "fd00:ec2::254"),
        ("fe80::1%eth0", "fe80::1"),
    ],
)
async def test_the_guard_reads_numeric_hosts_as_addresses_and_refuses_them(host: str, address: str, loopback_only: list[str]) -> None:
    """Where the connection opens (a redirect's Location reaches it as httpx read it): no DNS, no socket."""
    with pytest.raises(BlockedAddress, match=re.escape(f"{host} resolves to {address}, ")):
        await GuardedBackend(PRIVATE, NoDns()).connect_tcp(host, 80)
    assert loopback_only == []


# --- 2. host names through DNS ---------------------------------------------------------------------------------------


async def test_a_name_resolving_to_loopback_is_refused_after_resolution(site: Publisher, dns: DnsResponder) -> None:
    site.put("/doc.json", DOC)
    dns.add("publisher.test.", "A", "127.0.0.1")
    url = f"http://publisher.test:{site.port}/doc.json"
    async with make_fetcher(NetworkPolicy(), resolver=dns_resolver(dns)) as fetcher:
        error = await refused(fetcher, url)
    assert_blocked(error, "publisher.test", "127.0.0.1", "a loopback address")
    assert ("publisher.test.", "A") in dns.queries  # refused for the address the name got, not for the name
    assert site.requests == []

    async with make_fetcher(PRIVATE, resolver=dns_resolver(dns)) as fetcher:
        got = await fetcher.get(url, JSON)
    assert (got.status, got.url, got.body) == (200, url, b'{"entries": []}')
    assert [r.headers["host"] for r in site.requests] == [f"publisher.test:{site.port}"]


@pytest.mark.parametrize(
    ("records", "address", "reason"),
    [
        ([("A", "93.184.216.34"), ("A", "10.0.0.5")], "10.0.0.5", "a private address"),
        ([("A", "93.184.216.34"), ("AAAA", "::1")], "::1", "a loopback address"),
    ],
)
async def test_a_name_with_a_public_and_a_private_address_is_refused(
    dns: DnsResponder, records: list[tuple[str, str]], address: str, reason: str
) -> None:
    for rdtype, text in records:
        dns.add("mixed.test.", rdtype, text)
    # refused before any connection: nothing is sent, not even to the public address
    async with make_fetcher(NetworkPolicy(), FetchLimits(connect_timeout=1, deadline=5, delay=0), dns_resolver(dns)) as fetcher:
        error = await refused(fetcher, f"http://mixed.test:{closed_port()}/doc.json")
    assert_blocked(error, "mixed.test", address, reason)


async def test_an_unknown_name_is_a_fetch_error(dns: DnsResponder) -> None:
    async with make_fetcher(resolver=dns_resolver(dns)) as fetcher:
        error = await refused(fetcher, "http://nowhere.test/doc.json")
    assert not error.blocked
    assert "nowhere.test" in str(error)


# --- 3. redirects -----------------------------------------------------------------------------------------------------


async def test_five_redirects_are_followed_and_six_refused(site: Publisher) -> None:
    five, six = chain(site, "a", 5), chain(site, "b", 6)
    async with make_fetcher() as fetcher:
        got = await fetcher.get(five, JSON)
        assert (got.status, got.url, got.body) == (200, site.url("/a5"), b'{"entries": []}')
        error = await refused(fetcher, six)
    assert "more than 5 redirects" in str(error)
    assert error.url == six
    assert not error.blocked
    assert [site.count(f"/b{hop}") for hop in range(7)] == [1, 1, 1, 1, 1, 1, 0]  # the document was never asked for


async def test_max_redirects_is_configurable(site: Publisher) -> None:
    url = chain(site, "c", 2)
    async with make_fetcher(limits=FetchLimits(max_redirects=1, delay=0)) as fetcher:
        assert "more than 1 redirects" in str(await refused(fetcher, url))
    async with make_fetcher(limits=FetchLimits(max_redirects=0, delay=0)) as fetcher:
        assert (await fetcher.get(site.url("/c2"), JSON)).status == 200  # no redirect needed: fine
        assert "more than 0 redirects" in str(await refused(fetcher, url))


@pytest.mark.parametrize("target", ["file:///etc/passwd", "gopher://127.0.0.1:70/1", "ftp://127.0.0.1/x.json", "FILE:///etc/passwd"])
async def test_a_redirect_to_another_scheme_is_refused(site: Publisher, target: str) -> None:
    site.redirect("/go", target)
    async with make_fetcher() as fetcher:
        error = await refused(fetcher, site.url("/go"))
    scheme = target.split(":", 1)[0].lower()
    assert error.url == target
    assert not error.blocked
    assert f"must be an http or https URL (got {scheme})" in str(error)


@pytest.mark.parametrize("target", ["javascript:alert(1)", "mailto:someone@example.com", "data:application/json,{}"])
async def test_a_redirect_to_a_url_without_authority_is_a_fetch_error(site: Publisher, target: str) -> None:
    site.redirect("/go", target)
    async with make_fetcher() as fetcher:
        error = await refused(fetcher, site.url("/go"))
    assert not error.blocked


async def test_a_malformed_url_is_a_fetch_error() -> None:
    async with make_fetcher() as fetcher:
        error = await refused(fetcher, "http://[::1/doc.json")
    assert not error.blocked


async def test_a_url_of_another_scheme_is_refused_before_anything_is_sent(site: Publisher) -> None:
    async with make_fetcher(robots=True) as fetcher:
        assert "must be an http or https URL (got file)" in str(await refused(fetcher, "file:///etc/passwd"))
        assert "must be an http or https URL (got no scheme)" in str(await refused(fetcher, "/relative.json"))
    assert site.requests == []


async def test_a_redirect_without_location_is_an_error(site: Publisher) -> None:
    site.put("/moved", b"", content_type=None, status=302, etag=False)
    async with make_fetcher() as fetcher:
        error = await refused(fetcher, site.url("/moved"))
    assert (error.status, error.reason) == (302, "redirect 302 without a Location")


class TrustStart(NetworkPolicy):
    """The default rule, except that `start.test` is taken as public whatever it resolves to (it stands in for a public
    host in these loopback tests)."""

    def check(self, host: str, addresses: Iterable[str]) -> list[str]:
        if host == "start.test":
            return [str(ipaddress.ip_address(a)) for a in addresses]
        return super().check(host, addresses)


@pytest.mark.parametrize("robots", [False, True], ids=["without-robots", "with-robots"])
async def test_a_redirect_from_a_public_host_into_a_private_address_is_refused(site: Publisher, dns: DnsResponder, robots: bool) -> None:
    dns.add("start.test.", "A", "127.0.0.1")
    dns.add("internal.test.", "A", "127.0.0.1")
    site.redirect("/go.json", f"http://internal.test:{site.port}/secret.json")
    site.put("/secret.json", {"secret": True})
    async with make_fetcher(TrustStart(), resolver=dns_resolver(dns), robots=robots) as fetcher:
        assert (await fetcher.get(f"http://start.test:{site.port}/secret.json", JSON)).status == 200  # the trusted way in works
        error = await refused(fetcher, f"http://start.test:{site.port}/go.json")
    assert_blocked(error, "internal.test", "127.0.0.1", "a loopback address")
    assert ("internal.test.", "A") in dns.queries  # the new host's connection resolved it and checked the address
    assert site.count("/secret.json") == 1  # only the direct fetch through start.test
    assert all(r.headers["host"] == f"start.test:{site.port}" for r in site.requests)  # nothing reached internal.test


# --- 4. size cap ------------------------------------------------------------------------------------------------------

SMALL = FetchLimits(max_bytes=10_000, delay=0)


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
async def test_a_body_over_max_bytes_is_refused(site: Publisher, chunked: bool) -> None:
    site.put("/big.json", b"x" * 10_001, chunked=chunked)
    site.put("/huge.json", b"x" * 3_000_000, chunked=chunked)  # several server writes: the client stops reading at the cap
    site.put("/exact.json", b"x" * 10_000, chunked=chunked)
    async with make_fetcher(limits=SMALL) as fetcher:
        big = await refused(fetcher, site.url("/big.json"))
        huge = await refused(fetcher, site.url("/huge.json"))
        exact = await fetcher.get(site.url("/exact.json"), JSON)
    assert "larger than 10000 bytes" in str(big)
    assert ("(10001 declared)" in str(big)) is not chunked  # without Content-Length the count of bytes read decides
    assert (big.status, big.blocked) == (200, False)
    assert "larger than 10000 bytes" in str(huge)
    assert len(exact.body) == 10_000


async def test_the_cap_counts_decoded_bytes_of_a_compressed_body(site: Publisher) -> None:
    """A gzip bomb: 60 kB of zeros compress to well under the cap, but the body the crawler would parse is over it."""
    bomb, small = gzip.compress(b"0" * 60_000), gzip.compress(b'{"entries": []}')
    assert len(bomb) < 10_000
    site.handle("/bomb.json", lambda query, headers: (200, {"Content-Encoding": "gzip"}, bomb))
    site.handle("/small.json", lambda query, headers: (200, {"Content-Encoding": "gzip"}, small))
    async with make_fetcher(limits=SMALL) as fetcher:
        error = await refused(fetcher, site.url("/bomb.json"))
        got = await fetcher.get(site.url("/small.json"), JSON)
    assert "larger than 10000 bytes" in str(error)
    assert got.body == b'{"entries": []}'


# --- 5. slow answers --------------------------------------------------------------------------------------------------


async def test_an_answer_slower_than_read_timeout_times_out(site: Publisher) -> None:
    site.put("/slow.json", DOC, delay=5)
    start = time.monotonic()
    async with make_fetcher(limits=FetchLimits(read_timeout=0.3, deadline=10, delay=0)) as fetcher:
        error = await refused(fetcher, site.url("/slow.json"))
    assert time.monotonic() - start < 3
    assert error.reason == "timed out"
    assert not error.blocked


async def test_the_deadline_bounds_a_slow_answer(site: Publisher) -> None:
    site.put("/slow.json", DOC, delay=5)
    start = time.monotonic()
    async with make_fetcher(limits=FetchLimits(read_timeout=10, deadline=0.4, delay=0)) as fetcher:
        error = await refused(fetcher, site.url("/slow.json"))
    assert time.monotonic() - start < 3
    assert error.reason == "no complete answer within 0.4 s"
    assert error.url == site.url("/slow.json")


async def test_the_deadline_covers_the_whole_redirect_chain(site: Publisher) -> None:
    """Each hop answers well within the read timeout; together they outlast the deadline."""
    for hop in range(4):
        site.put(f"/h{hop}", b"", content_type=None, status=302, headers={"Location": f"/h{hop + 1}"}, delay=0.3, etag=False)
    site.put("/h4", DOC)
    start = time.monotonic()
    async with make_fetcher(limits=FetchLimits(read_timeout=5, deadline=0.8, delay=0)) as fetcher:
        error = await refused(fetcher, site.url("/h0"))
    assert time.monotonic() - start < 3
    assert "no complete answer within 0.8 s" in str(error)
    assert site.count("/h4") == 0


async def test_a_refused_connection_is_a_fetch_error() -> None:
    url = f"http://127.0.0.1:{closed_port()}/doc.json"
    async with make_fetcher() as fetcher:
        error = await refused(fetcher, url)
    assert (error.url, error.status, error.blocked) == (url, None, False)
    assert "ConnectError" in error.reason


# --- 6. content types and statuses ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expect", "content_type", "taken"),
    [
        (JSON, "application/json", True),
        (JSON, "application/json; charset=utf-8", True),
        (JSON, "Application/JSON", True),
        (JSON, "application/ld+json", True),
        (JSON, "application/ai-catalog+json", True),
        (JSON, "text/json", True),
        (JSON, "text/plain; charset=utf-8", True),  # raw file hosts serve JSON as text
        (JSON, "image/png", False),
        (JSON, "text/html", False),
        (JSON, "application/octet-stream", False),
        (JSON, None, False),
        (HTML, "text/html; charset=utf-8", True),
        (HTML, "application/xhtml+xml", True),
        (HTML, "application/json", False),
        (TEXT, "text/plain", True),
        (TEXT, "text/html", False),
    ],
)
async def test_content_type_is_checked_against_the_expectation(
    site: Publisher, expect: Expect, content_type: str | None, taken: bool
) -> None:
    site.put("/doc", b"{}", content_type=content_type)
    async with make_fetcher() as fetcher:
        if taken:
            got = await fetcher.get(site.url("/doc"), expect)
            assert (got.content_type, got.body) == ((content_type or "").split(";")[0].lower(), b"{}")
        else:
            error = await refused(fetcher, site.url("/doc"), expect)
            shown = (content_type or "missing").split(";")[0]
            assert f"content type {shown} is not one of {', '.join(expect.types)}" in str(error)
            assert error.status == 200
    assert site.requests[0].headers["accept"] == expect.accept


@pytest.mark.parametrize("status", [404, 410, 500, 503])
async def test_an_http_error_status_is_a_fetch_error_with_the_status(site: Publisher, status: int) -> None:
    site.put("/doc.json", {"error": "no"}, status=status)
    async with make_fetcher() as fetcher:
        error = await refused(fetcher, site.url("/doc.json"))
    assert (error.status, error.reason, error.blocked) == (status, f"HTTP {status}", False)


# --- 7. conditional GET and freshness ---------------------------------------------------------------------------------


async def test_validators_make_a_refresh_of_an_unchanged_document_a_304(site: Publisher) -> None:
    site.put("/doc.json", DOC, headers={"Cache-Control": "max-age=120"})
    async with make_fetcher() as fetcher:
        first = await fetcher.get(site.url("/doc.json"), JSON)
        assert first.etag and first.last_modified
        by_etag = await fetcher.get(site.url("/doc.json"), JSON, etag=first.etag)
        by_date = await fetcher.get(site.url("/doc.json"), JSON, last_modified=first.last_modified)
        site.put("/doc.json", {"entries": [1]})
        changed = await fetcher.get(site.url("/doc.json"), JSON, etag=first.etag, last_modified=first.last_modified)

    assert (first.status, first.not_modified, first.max_age) == (200, False, 120)
    assert (by_etag.status, by_etag.not_modified, by_etag.body, by_etag.etag) == (304, True, b"", first.etag)
    assert by_etag.max_age == 120  # a 304's Cache-Control renews the freshness
    assert (by_date.status, by_date.last_modified) == (304, first.last_modified)
    assert (changed.status, changed.body) == (200, b'{"entries": [1]}')
    assert changed.etag not in (None, first.etag)

    sent = [r.headers for r in site.requests]
    assert "if-none-match" not in sent[0]
    assert "if-modified-since" not in sent[0]
    assert sent[1]["if-none-match"] == first.etag
    assert "if-modified-since" not in sent[1]
    assert sent[2]["if-modified-since"] == first.last_modified
    assert (sent[3]["if-none-match"], sent[3]["if-modified-since"]) == (first.etag, first.last_modified)


@pytest.mark.parametrize(
    ("cache_control", "max_age"),
    [
        ("max-age=120", 120),
        ("public, max-age=120", 120),
        ("max-age=60, must-revalidate", 60),
        ("MAX-AGE=30", 30),
        ("no-cache", 0),
        ("no-store, max-age=600", 0),
        ("private", None),
        (None, None),
    ],
)
async def test_cache_control_becomes_max_age(site: Publisher, cache_control: str | None, max_age: int | None) -> None:
    site.put("/doc.json", DOC, headers={"Cache-Control": cache_control} if cache_control else None)
    async with make_fetcher() as fetcher:
        got = await fetcher.get(site.url("/doc.json"), JSON)
    assert got.max_age == max_age


# --- 8. robots.txt ----------------------------------------------------------------------------------------------------


def put_robots(site: Publisher, text: str, status: int = 200) -> None:
    site.put("/robots.txt", text, content_type="text/plain", status=status, etag=False)


async def test_robots_disallow_for_everyone_is_honoured(site: Publisher) -> None:
    put_robots(site, "User-agent: *\nDisallow: /private\n")
    site.put("/private/x.json", DOC)
    site.put("/public.json", DOC)
    async with make_fetcher(robots=True) as fetcher:
        error = await refused(fetcher, site.url("/private/x.json"))
        assert (await fetcher.get(site.url("/public.json"), JSON)).status == 200
        assert (await fetcher.get(site.url("/public.json"), JSON)).status == 200
    assert error.reason == "robots.txt disallows fetching it"
    assert (error.status, error.blocked) == (None, False)
    assert site.count("/private/x.json") == 0
    assert site.count("/robots.txt") == 1  # once per origin, whatever the number of fetches
    robots_request = site.requests[0]
    assert robots_request.path == "/robots.txt"
    assert (robots_request.headers["accept"], robots_request.headers["user-agent"]) == (TEXT.accept, USER_AGENT)


async def test_a_robots_group_for_our_token_applies_instead_of_the_wildcard(site: Publisher) -> None:
    put_robots(site, "User-agent: ard-mcp\nDisallow: /catalogs/\n\nUser-agent: *\nDisallow: /\n")
    site.put("/catalogs/a.json", DOC)
    site.put("/public.json", DOC)
    async with make_fetcher(robots=True) as fetcher:
        assert "robots.txt disallows" in str(await refused(fetcher, site.url("/catalogs/a.json")))
        assert (await fetcher.get(site.url("/public.json"), JSON)).status == 200  # `*` would forbid it: ours allows it
    assert site.count("/catalogs/a.json") == 0


async def test_robots_is_checked_again_on_each_redirect_hop(site: Publisher) -> None:
    put_robots(site, "User-agent: *\nDisallow: /private\n")
    site.redirect("/public.json", "/private/x.json")
    site.put("/private/x.json", DOC)
    async with make_fetcher(robots=True) as fetcher:
        error = await refused(fetcher, site.url("/public.json"))
    assert (error.url, error.reason) == (site.url("/private/x.json"), "robots.txt disallows fetching it")
    assert site.count("/private/x.json") == 0


async def test_robots_rules_are_read_as_rfc_9309_says(site: Publisher) -> None:
    """The longest match wins, Allow wins a tie, `*` and `$` are patterns (the standard library's parser reads the
    first match and no wildcards)."""
    put_robots(site, "User-agent: *\nDisallow: /private\nAllow: /private/public.json\nDisallow: /*.secret.json$\n")
    async with make_fetcher(robots=True) as fetcher:
        robots = await fetcher.robots(site.url("/"))
    assert robots.allows("ard-mcp", site.url("/private/public.json"))
    assert not robots.allows("ard-mcp", site.url("/private/other.json"))
    assert not robots.allows("ard-mcp", site.url("/a/b.secret.json"))
    assert robots.allows("ard-mcp", site.url("/a/b.secret.json.txt"))


async def test_a_robots_txt_that_is_not_text_publishes_no_rules(site: Publisher) -> None:
    site.put("/robots.txt", "<html>an app shell served for every path</html>", content_type="text/html")
    site.put("/public.json", DOC)
    async with make_fetcher(robots=True) as fetcher:
        assert (await fetcher.get(site.url("/public.json"), JSON)).status == 200


async def test_a_missing_robots_txt_allows_everything(site: Publisher) -> None:
    site.put("/private/x.json", DOC)
    async with make_fetcher(robots=True) as fetcher:
        robots = await fetcher.robots(site.url("/"))
        assert (await fetcher.get(site.url("/private/x.json"), JSON)).status == 200
    assert robots.allows("ard-mcp", site.url("/private/x.json"))
    assert robots.agentmaps == []
    assert site.count("/robots.txt") == 1


@pytest.mark.parametrize("status", [500, 503])
async def test_a_failing_robots_txt_disallows_everything_and_says_it_failed(site: Publisher, status: int) -> None:
    """RFC 9309 §2.3.1.4: a 5xx robots.txt means complete disallow for now. The refusal says robots.txt
    answered a 5xx, and carries that status (a server error), not that its rules disallow the URL."""
    put_robots(site, "oops\n", status=status)
    site.put("/public.json", DOC)
    async with make_fetcher(robots=True) as fetcher:
        first = await refused(fetcher, site.url("/public.json"))
        second = await refused(fetcher, site.url("/public.json"))
    assert first.reason == second.reason
    assert first.reason.startswith(f"not fetched: robots.txt answered HTTP {status} (unreachable)")
    assert "disallows" not in first.reason
    assert (first.status, first.server_error, first.blocked) == (status, True, False)
    assert site.count("/public.json") == 0
    assert site.count("/robots.txt") == 1  # the failure is remembered for the crawl too


async def test_an_unreachable_robots_txt_says_why(dns: DnsResponder) -> None:
    """No answer at all (here: a name with no address) disallows everything too, and the refusal says why."""
    async with make_fetcher(resolver=dns_resolver(dns), robots=True) as fetcher:
        error = await refused(fetcher, "http://nowhere.test/doc.json")
    assert error.reason.startswith("not fetched: robots.txt is unreachable (") and "nowhere.test" in error.reason
    assert (error.status, error.server_error, error.blocked) == (None, False, False)


async def test_agentmap_lines_are_returned_and_robots_cached_per_origin(site: Publisher) -> None:
    put_robots(site, "User-agent: *\nAllow: /\nAgentmap: https://catalogs.example.com/ai-catalog.json\nagentmap:  /more.json  \n")
    with Publisher() as other:
        async with make_fetcher(robots=True) as fetcher:
            robots = await fetcher.robots(site.url("/some/page"))
            again = await fetcher.robots(site.url("/elsewhere.json"))
            elsewhere = await fetcher.robots(other.url("/"))
        assert other.count("/robots.txt") == 1
    assert robots.agentmaps == ["https://catalogs.example.com/ai-catalog.json", site.url("/more.json")]  # relative: on the origin
    assert again is robots
    assert elsewhere.agentmaps == []
    assert site.count("/robots.txt") == 1


# --- 9. politeness ----------------------------------------------------------------------------------------------------


async def test_requests_to_one_host_start_at_least_delay_apart(site: Publisher) -> None:
    log = ArrivalLog()
    site.handle("/doc.json", log)
    async with make_fetcher(limits=FetchLimits(per_host=1, delay=0.2)) as fetcher:
        await fetch_all(fetcher, [site.url("/doc.json")] * 3)
    gaps = [later - earlier for earlier, later in zip(log.arrivals, log.arrivals[1:], strict=False)]
    assert len(gaps) == 2
    assert min(gaps) >= 0.15, gaps  # 0.2 s between starts, less a little for when each request reached the server
    assert log.arrivals[-1] - log.arrivals[0] >= 0.35
    assert all(agent == USER_AGENT for agent in log.user_agents)
    assert USER_AGENT.startswith("ard-mcp/")


@pytest.mark.parametrize(("per_host", "peak"), [(1, 1), (3, 3)])
async def test_per_host_limits_requests_in_flight(site: Publisher, per_host: int, peak: int) -> None:
    log = ArrivalLog(hold=0.3)
    site.handle("/doc.json", log)
    async with make_fetcher(limits=FetchLimits(per_host=per_host, delay=0)) as fetcher:
        assert len(await fetch_all(fetcher, [site.url("/doc.json")] * 3)) == 3
    assert log.peak == peak


async def test_the_delay_is_per_host(site: Publisher) -> None:
    """Two hosts fetched at once are not held up by each other's politeness delay."""
    site.put("/doc.json", DOC)
    with Publisher() as other:
        other.put("/doc.json", DOC)
        start = time.monotonic()
        async with make_fetcher(limits=FetchLimits(delay=2.0)) as fetcher:
            await fetch_all(fetcher, [site.url("/doc.json"), other.url("/doc.json")])
        assert time.monotonic() - start < 1.5
        assert (site.count("/doc.json"), other.count("/doc.json")) == (1, 1)
