"""One polite, bounded, safe HTTP GET: what every fetch the registry makes goes through (the crawl's, the trust checks').

Bounded: connect and read timeouts and an overall deadline, a size cap read as the body streams in (a
server can lie in Content-Length or send none), at most `max_redirects` redirects, each checked like the
first URL. Safe: every URL, the first and each redirect's, passes `urls.check_url` before anything is
sent (http(s) only, never an address the registry refuses however it is spelled), and connections go
only to addresses `NetworkPolicy` allows (checked where the socket opens, see `guard`). Polite:
robots.txt is honoured, at most `per_host` requests to a host at once and `delay` seconds between the
starts of two requests to it, and a User-Agent that says who we are.
Conditional: the caller's ETag / Last-Modified go out as If-None-Match / If-Modified-Since, so a refresh
of an unchanged catalog costs one 304 and no body.
Pinned: a fetch `same_origin` follows only redirects within the first URL's origin (scheme, host, port).
A signing key proves who serves it only if it comes from the origin it was asked of: an open redirect on
a publisher's host once made an attacker's key, served anywhere (plain http too), verify its signatures.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

import anyio
import httpx

from ard_mcp import __version__
from ard_mcp.net.guard import BlockedAddress, NetworkPolicy, Resolver, SystemResolver
from ard_mcp.net.limits import FetchLimits
from ard_mcp.net.robots import Robots, parse_robots, robots_for_failure
from ard_mcp.net.urls import RefusedUrl, check_url

log = logging.getLogger(__name__)

USER_AGENT = f"ard-mcp/{__version__} (+https://github.com/ard-mcp/ard-mcp; agent catalog crawler)"
ROBOTS_TOKEN = "ard-mcp"  # the product token robots.txt groups name us by


@dataclass(frozen=True)
class Expect:
    """What a fetch asks for (`accept`, the Accept header) and which content types it takes (`+json`: any
    structured-syntax suffix). A response of another type is refused: an image or an archive is not parsed."""

    accept: str
    types: tuple[str, ...]

    def takes(self, content_type: str) -> bool:
        return any(content_type.endswith(t) if t.startswith("+") else content_type == t for t in self.types)


# static hosts (raw file servers, object stores) often serve JSON as text/plain
JSON = Expect("application/json, application/*+json;q=0.9, text/plain;q=0.5", ("application/json", "+json", "text/json", "text/plain"))
HTML = Expect("text/html, application/xhtml+xml;q=0.9", ("text/html", "application/xhtml+xml"))
TEXT = Expect("text/plain", ("text/plain",))
_MAX_AGE = re.compile(r"(?:^|,)\s*(?:s-maxage|max-age)\s*=\s*(\d+)", re.IGNORECASE)


class FetchError(Exception):
    """A fetch that failed, with a message that names the URL and says what went wrong."""

    def __init__(self, url: str, reason: str, status: int | None = None, blocked: bool = False) -> None:
        super().__init__(f"{url}: {reason}")
        self.url = url
        self.reason = reason
        self.status = status  # the HTTP status that decided it: the URL's, or its robots.txt's 5xx when that kept it unfetched
        self.blocked = blocked  # refused by the network policy, not a failure of the publisher

    @property
    def server_error(self) -> bool:
        """The publisher's server failed (a 5xx): what is there may be fine, and is asked for again later."""
        return self.status is not None and self.status >= 500


@dataclass(frozen=True)
class Fetched:
    """A response the crawler can use: a body (or `not_modified`), where it ended up, and its validators."""

    url: str
    status: int
    body: bytes
    content_type: str
    etag: str | None
    last_modified: str | None
    max_age: int | None  # seconds the publisher says the document stays fresh (Cache-Control)

    @property
    def not_modified(self) -> bool:
        return self.status == 304


def checked(url: str) -> None:
    """Refuse a URL `check_url` refuses before anything is sent for it, not even its origin's robots.txt:
    `blocked` when it points at a refused address, so the error names that address."""
    try:
        check_url(url)
    except RefusedUrl as exc:
        raise FetchError(url, exc.reason, blocked=exc.points_to is not None) from None


async def _check_location(response: httpx.Response) -> None:
    """A redirect's Location is checked as it arrives, before httpx reads it: httpx cannot parse some
    spellings of an address (`0251.0376.0251.0376`, octal parts) and would fail with an error that hides
    where the redirect pointed."""
    location = response.headers.get("location")
    if response.is_redirect and location:
        checked(urljoin(str(response.request.url), location))


def origin_of(url: str) -> tuple[str, str, int | None]:
    """A URL's origin (RFC 6454): scheme, host and port, the default port spelled out, so `https://a.test`
    and `https://A.test:443/x` are one origin and `http://a.test` another."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port if port is not None else {"http": 80, "https": 443}.get(scheme)


def _max_age(cache_control: str | None) -> int | None:
    if not cache_control:
        return None
    if "no-store" in cache_control.lower() or "no-cache" in cache_control.lower():
        return 0
    found = _MAX_AGE.search(cache_control)
    return int(found.group(1)) if found else None


@dataclass
class _Host:
    gate: anyio.Semaphore
    last_start: float = 0.0
    lock: anyio.Lock = field(default_factory=anyio.Lock)


class Fetcher:
    """Shared by one crawl (or one refresh loop): connection pool, per-host gates and robots.txt cache."""

    def __init__(
        self,
        policy: NetworkPolicy | None = None,
        limits: FetchLimits | None = None,
        resolver: Resolver | None = None,
        user_agent: str = USER_AGENT,
        respect_robots: bool = True,
    ) -> None:
        from ard_mcp.net.guard import GuardedTransport

        self.policy = policy or NetworkPolicy()
        self.limits = limits or FetchLimits()
        self.user_agent = user_agent
        self.respect_robots = respect_robots
        if self.policy.allow_private:
            log.warning("crawling private networks is allowed: loopback and private addresses will be fetched")
        timeout = httpx.Timeout(self.limits.read_timeout, connect=self.limits.connect_timeout)
        self._client = httpx.AsyncClient(
            transport=GuardedTransport(self.policy, resolver or SystemResolver()),
            timeout=timeout,
            headers={"User-Agent": user_agent},
            follow_redirects=False,
            event_hooks={"response": [_check_location]},
        )
        self._hosts: dict[str, _Host] = {}
        self._robots: dict[str, Robots] = {}

    async def aclose(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> Fetcher:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- robots.txt --------------------------------------------------------------------------------------
    async def robots(self, url: str) -> Robots:
        """The robots.txt of the URL's origin, fetched once per crawl; raises `FetchError` when the
        network policy refuses the origin (nothing else from it would be fetched either)."""
        checked(url)
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        if origin not in self._robots:
            try:
                got = await self._get(f"{origin}/robots.txt", TEXT, None, None, check_robots=False)
                self._robots[origin] = parse_robots(got.body.decode("utf-8", "replace"), origin)
            except FetchError as exc:
                if exc.blocked:
                    raise
                if exc.status is not None and 200 <= exc.status < 300:  # not text, or too large: no rules we can read
                    log.info("%s: robots.txt unusable (%s): read as no rules", origin, exc.reason)
                    self._robots[origin] = Robots(None)
                    return self._robots[origin]
                self._robots[origin] = robots_for_failure(exc.reason, exc.status)
                if self._robots[origin].unreachable is not None:
                    log.info("%s: robots.txt unreachable (%s): nothing is fetched from this origin for now", origin, exc.reason)
        return self._robots[origin]

    # -- GET -------------------------------------------------------------------------------------------------
    async def get(
        self, url: str, accept: Expect, etag: str | None = None, last_modified: str | None = None, *, same_origin: bool = False
    ) -> Fetched:
        """GET `url`, following redirects (with `same_origin`, only those that stay on `url`'s origin); raises
        `FetchError` for anything the crawler cannot use."""
        return await self._get(url, accept, etag, last_modified, check_robots=self.respect_robots, same_origin=same_origin)

    async def _get(
        self, url: str, accept: Expect, etag: str | None, last_modified: str | None, check_robots: bool, same_origin: bool = False
    ) -> Fetched:
        try:
            with anyio.fail_after(self.limits.deadline):
                return await self._follow(url, accept, etag, last_modified, check_robots, same_origin)
        except TimeoutError:
            raise FetchError(url, f"no complete answer within {self.limits.deadline:g} s") from None

    async def _follow(
        self, url: str, accept: Expect, etag: str | None, last_modified: str | None, check_robots: bool, same_origin: bool
    ) -> Fetched:
        current = url
        for _ in range(self.limits.max_redirects + 1):
            checked(current)
            robots = await self.robots(current) if check_robots else None
            if robots is not None and not robots.allows(ROBOTS_TOKEN, current):
                raise FetchError(current, robots.refusal(), robots.status)  # a 5xx of robots.txt is the origin's server error
            headers = {"Accept": accept.accept}
            if etag:
                headers["If-None-Match"] = etag
            if last_modified:
                headers["If-Modified-Since"] = last_modified
            status, response_headers, body = await self._request(current, headers)
            if status in (301, 302, 303, 307, 308):
                location = response_headers.get("location")
                if not location:
                    raise FetchError(current, f"redirect {status} without a Location", status)
                target = urljoin(current, location)
                if same_origin and origin_of(target) != origin_of(url):
                    start = urlsplit(url)
                    only = f"{start.scheme}://{start.netloc}"
                    raise FetchError(target, f"{current} redirected to {target}, another origin: only {only} is fetched from")
                current = target
                continue
            if status == 304:
                return Fetched(current, 304, b"", "", etag, last_modified, _max_age(response_headers.get("cache-control")))
            if not 200 <= status < 300:
                raise FetchError(current, f"HTTP {status}", status)
            content_type = response_headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if not accept.takes(content_type):
                raise FetchError(current, f"content type {content_type or 'missing'} is not one of {', '.join(accept.types)}", status)
            return Fetched(
                current,
                status,
                body,
                content_type,
                response_headers.get("etag"),
                response_headers.get("last-modified"),
                _max_age(response_headers.get("cache-control")),
            )
        raise FetchError(url, f"more than {self.limits.max_redirects} redirects")

    async def _request(self, url: str, headers: dict[str, str]) -> tuple[int, httpx.Headers, bytes]:
        host = await self._host(url)
        async with host.gate:
            async with host.lock:
                wait = host.last_start + self.limits.delay - time.monotonic()
                if wait > 0:
                    await anyio.sleep(wait)
                host.last_start = time.monotonic()
            try:
                async with self._client.stream("GET", url, headers=headers) as response:
                    declared = response.headers.get("content-length")
                    if declared and declared.isdigit() and int(declared) > self.limits.max_bytes:
                        raise FetchError(url, f"larger than {self.limits.max_bytes} bytes ({declared} declared)", response.status_code)
                    body = bytearray()
                    async for chunk in response.aiter_bytes():
                        body += chunk
                        if len(body) > self.limits.max_bytes:
                            raise FetchError(url, f"larger than {self.limits.max_bytes} bytes", response.status_code)
                    return response.status_code, response.headers, bytes(body)
            except BlockedAddress as exc:
                raise FetchError(url, str(exc), blocked=True) from None
            except httpx.TimeoutException:
                raise FetchError(url, "timed out") from None
            except httpx.InvalidURL as exc:  # e.g. a redirect to javascript:... or mailto:..., which httpx cannot even parse as a next hop
                raise FetchError(url, f"unusable URL or redirect Location ({exc})") from None
            except httpx.HTTPError as exc:
                raise FetchError(url, f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__) from None

    async def _host(self, url: str) -> _Host:
        key = urlsplit(url).netloc.lower()
        if key not in self._hosts:
            self._hosts[key] = _Host(anyio.Semaphore(self.limits.per_host))
        return self._hosts[key]
