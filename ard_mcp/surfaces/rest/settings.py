"""How `serve` runs over HTTP: the bind address, which Host headers and origins it answers, the body size
limit and the write tokens. One Starlette app serves MCP and the REST routes with these settings."""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass, field, replace

from ard_mcp.config import Config
from ard_mcp.federation.settings import FederationSettings
from ard_mcp.invocation.policy import InvocationPolicy
from ard_mcp.surfaces.auth import TokenStore
from ard_mcp.surfaces.rest.ratelimit import DEFAULT_RATE_LIMITS, RateLimits
from ard_mcp.trust.policy import TrustPolicy
from ard_mcp.web.settings import CrawlSettings

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024  # the MCP SDK's own default, so /mcp and the REST routes agree
DEFAULT_BODY_TIMEOUT = 30.0  # a 4 MiB body needs ~1.1 Mbit/s to make it
DEFAULT_HEADER_TIMEOUT = 15.0  # a request line and headers are a few hundred bytes: one round trip on any working link
KEEP_ALIVE_SECONDS = 65
"""How long an idle connection stays open: longer than clients keep one in their pools (httpx 5 s, most
60 s). With uvicorn's 5 s, under 30 clients a request now and then went out on a connection the server was
closing, and the client saw it dropped without an answer (the reliability suite, 3 of 9 runs)."""
LOOPBACK_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]")


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the server on this machine (unknown names count as not)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class HttpSettings:
    transport: str = "streamable-http"  # or "sse"
    host: str = "127.0.0.1"
    port: int = 8000
    allowed_hosts: tuple[str, ...] | None = None  # None: loopback names when bound to loopback, else any
    cors_origins: tuple[str, ...] = ()  # empty: no CORS headers at all
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    tokens: TokenStore = field(default_factory=TokenStore)
    rate_limits: RateLimits = DEFAULT_RATE_LIMITS
    mcp_issuer: str | None = None  # when set, every MCP request needs a token, and this authorization server is advertised
    crawl: CrawlSettings | None = None  # the crawl route's settings and the background refresh; None: defaults, no refresh
    federation: FederationSettings | None = None  # upstream registries; None: only the ai-registry entries of the catalog
    trust_policy: TrustPolicy = "show"  # refuse-invalid: registrations whose trust manifest fails its check are refused
    body_timeout: float = DEFAULT_BODY_TIMEOUT  # seconds for a whole request body to arrive
    header_timeout: float = DEFAULT_HEADER_TIMEOUT  # seconds for a request's headers, from the connection's opening or its first byte
    invocation: InvocationPolicy = field(default_factory=InvocationPolicy)  # off unless --allow-invocation
    metrics_address: tuple[str, int] | None = None  # --metrics-address: metrics served there, not at /metrics

    def base_url(self) -> str:
        """The URL this server is reached at when no public URL was given: the bound address, or for a
        wildcard bind this machine's name (what another machine would use)."""
        host = self.host.strip("[]")
        if host in ("0.0.0.0", "::", ""):
            host = socket.gethostname()
        return f"http://[{host}]:{self.port}/" if ":" in host else f"http://{host}:{self.port}/"

    def named(self, config: Config) -> Config:
        """`config` with the registry's URL filled from the bound address when `--public-url` was not
        given, so results name a `source` a client can reach and the registry an identity of its own."""
        return config if config.source_url else replace(config, source_url=self.base_url())

    def host_patterns(self) -> tuple[str, ...]:
        """Allowed Host headers, in the MCP SDK's syntax (`name` or `name:*`); `*` alone allows any."""
        if self.allowed_hosts is None:
            return LOOPBACK_HOSTS if is_loopback(self.host) else ("*",)
        out: list[str] = []
        for allowed in self.allowed_hosts:
            host = allowed.strip().lower()
            if host:
                out += [host] if host == "*" or host.endswith(":*") or re.search(r":\d+$", host) else [host, f"{host}:*"]
        return tuple(dict.fromkeys(out))

    def host_allowed(self, host: str | None) -> bool:
        patterns = self.host_patterns()
        if "*" in patterns:
            return True
        if not host:
            return False
        host = host.lower()
        return host in patterns or any(p.endswith(":*") and host.startswith(p[:-1]) and host[len(p) - 1 :].isdigit() for p in patterns)

    def origin_allowed(self, origin: str | None, host: str | None) -> bool:
        """Whether a request sent by a web page at `origin` may write here or use the MCP endpoint, the one
        rule for both. No Origin header: no browser sent it cross-site (curl, SDKs). Otherwise the page must
        be at a configured CORS origin (`*`: any), at the request's own Host (the scheme is not compared:
        behind a TLS-terminating proxy the request arrives over http) or at an allowed host (by default the
        loopback names: pages this machine serves; never through `*`, which would let every page in).
        `null` (a sandboxed frame, a file: page, a redirect) names no host and is foreign."""
        if origin is None or "*" in self.cors_origins or origin in self.cors_origins:
            return True
        scheme, separator, authority = origin.lower().partition("://")
        if not separator or scheme not in ("http", "https") or not authority:
            return False
        return authority == (host or "").lower() or ("*" not in self.host_patterns() and self.host_allowed(authority))
