"""Asking one upstream registry: `POST {url}/search` with the request's path, bounded in time and size.

Every connection resolves names with the crawler's resolver (the `--dns-server` one when given, so one DNS
view decides crawling and federation alike) and goes through the crawler's connection layer
(`ard_mcp.net.guard`). Upstreams the operator configured may be anywhere (a private network is often
the point); upstreams that an `ai-registry` entry named are third-party input, so the crawler's network
rules apply to them (`--allow-private-networks`). Every upstream URL, either kind, passes
`ard_mcp.net.urls.check_url` first: cloud metadata is never asked, in any spelling. What comes back is read
by `answer`: JSON only, at most a page of rows; a registry that answers something else fails like one that
does not answer.
"""

from __future__ import annotations

from typing import Any

import httpx

from ard_mcp.federation.answer import Answer, NotAnAnswer, read_answer
from ard_mcp.federation.hops import Path
from ard_mcp.federation.settings import FederationSettings, Upstream
from ard_mcp.monitoring import tracing
from ard_mcp.net.fetcher import USER_AGENT
from ard_mcp.net.guard import BlockedAddress, GuardedTransport, NetworkPolicy, Resolver
from ard_mcp.net.urls import RefusedUrl, check_url

MAX_RESPONSE_BYTES = 5 * 1024 * 1024


class UpstreamError(Exception):
    def __init__(self, upstream: Upstream, reason: str) -> None:
        super().__init__(f"upstream {upstream.url}: {reason}")
        self.upstream = upstream
        self.reason = reason


def search_endpoint(url: str) -> str:
    return url if url.rstrip("/").endswith("/search") else url.rstrip("/") + "/search"


class UpstreamClient:
    """Connection pools for the two kinds of upstream, shared by every federated search of a server."""

    def __init__(self, settings: FederationSettings, resolver: Resolver) -> None:
        self._settings = settings
        self._resolver = resolver
        self._pools: tuple[httpx.AsyncClient, httpx.AsyncClient] | None = None

    def _clients(self) -> tuple[httpx.AsyncClient, httpx.AsyncClient]:
        """Made on first use: a TLS context costs ~0.1 s, which a registry that never federates should not pay at start."""
        if self._pools is None:
            timeout = httpx.Timeout(self._settings.timeout)
            headers = {"User-Agent": USER_AGENT}

            def pool(allow_private: bool) -> httpx.AsyncClient:
                transport = GuardedTransport(NetworkPolicy(allow_private, "ask registries on private networks"), self._resolver)
                return httpx.AsyncClient(transport=transport, timeout=timeout, headers=headers, follow_redirects=False)

            self._pools = (pool(True), pool(self._settings.allow_private_networks))  # configured upstreams, named ones
        return self._pools

    async def aclose(self) -> None:
        if self._pools is not None:
            for pool in self._pools:
                await pool.aclose()
            self._pools = None

    async def search(self, upstream: Upstream, body: dict[str, Any], path: Path, identity: str, limit: int) -> Answer:
        """The upstream's answer to `body`: at most `limit` raw result rows (`answer.read_answer`)."""
        headers = path.forwarded_by(identity) | tracing.outgoing()  # the trace goes on upstream (a traceparent, nothing else)
        if upstream.token:
            headers["Authorization"] = f"Bearer {upstream.token}"
        configured, named = self._clients()
        client = configured if upstream.configured else named
        endpoint = search_endpoint(upstream.url)
        try:
            check_url(endpoint)  # never cloud metadata, whoever named the upstream, however it is spelled
            async with client.stream("POST", endpoint, json=body, headers=headers) as response:
                data = bytearray()
                async for chunk in response.aiter_bytes():
                    data += chunk
                    if len(data) > MAX_RESPONSE_BYTES:
                        raise UpstreamError(upstream, f"answer larger than {MAX_RESPONSE_BYTES} bytes")
                status, content_type = response.status_code, response.headers.get("content-type")
        except RefusedUrl as exc:
            raise UpstreamError(upstream, exc.reason) from None
        except BlockedAddress as exc:
            raise UpstreamError(upstream, str(exc)) from None
        except httpx.TimeoutException:
            raise UpstreamError(upstream, "timed out") from None
        except httpx.HTTPError as exc:
            raise UpstreamError(upstream, f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__) from None
        if status != 200:
            raise UpstreamError(upstream, f"HTTP {status}")
        try:
            return read_answer(bytes(data), content_type, limit, MAX_RESPONSE_BYTES)
        except NotAnAnswer as exc:
            raise UpstreamError(upstream, str(exc)) from None
