"""Where things live: the data directory, the model directory and the registry's public name.

Every CLI flag has an `ARD_MCP_*` environment fallback (MCP hosts configure servers through env vars).
"""

from __future__ import annotations

import ipaddress
import os
import re
import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from ard_mcp.auth import TokenStore


def default_data_dir() -> Path:
    """The user's data directory, as each platform defines it."""
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "ard-mcp"


def env(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(f"ARD_MCP_{name}")
    return value if value not in (None, "") else default


@dataclass(frozen=True)
class Config:
    data_dir: Path
    model_dir: Path | None = None
    source_url: str | None = None
    chroma_url: str | None = None  # a `chroma run` server shared by several processes; None = embedded Chroma

    @cached_property
    def source(self) -> str:
        """The `source` of every result: the public URL when one is set, else this data directory."""
        return self.source_url or self.data_dir.resolve().as_uri()


DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024  # the MCP SDK's own default, so /mcp and the REST routes agree
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
    """How `serve` runs over HTTP: one Starlette app with MCP and the REST routes."""

    transport: str = "streamable-http"  # or "sse"
    host: str = "127.0.0.1"
    port: int = 8000
    allowed_hosts: tuple[str, ...] | None = None  # None: loopback names when bound to loopback, else any
    cors_origins: tuple[str, ...] = ()  # empty: no CORS headers at all
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    tokens: TokenStore = field(default_factory=TokenStore)

    def host_patterns(self) -> tuple[str, ...]:
        """Allowed Host headers, in the MCP SDK's syntax (`name` or `name:*`); `*` alone allows any."""
        if self.allowed_hosts is None:
            return LOOPBACK_HOSTS if is_loopback(self.host) else ("*",)
        out: list[str] = []
        for host in self.allowed_hosts:
            host = host.strip().lower()
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

    def origin_patterns(self) -> list[str]:
        """Origins the MCP endpoint accepts: loopback pages, the CORS origins and pages of the allowed hosts."""
        origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*", *self.cors_origins]
        for host in self.host_patterns():
            if host != "*":
                origins += [f"http://{host}", f"https://{host}"]
        return list(dict.fromkeys(origins))
