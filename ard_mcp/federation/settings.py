"""Which registries this one federates with, and how patiently (light to import: the server's settings carry it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ard_mcp.net.urls import check_url


@dataclass(frozen=True)
class Upstream:
    """A registry to ask: its ARD base URL (`POST {url}/search`), a bearer token for it, and whether the
    operator configured it (then any address is allowed) or an `ai-registry` entry named it (then the
    crawler's network rules apply: a third party must not point this registry at a private network)."""

    url: str
    token: str | None = None
    configured: bool = True
    identifier: str | None = None  # the registry entry's identifier, for referrals
    name: str | None = None


@dataclass(frozen=True)
class FederationSettings:
    upstreams: tuple[Upstream, ...] = ()
    registry_entries: bool = True  # also ask the registries the catalog holds as application/ai-registry+json entries
    max_registry_entries: int = 5  # ... at most this many, the most relevant to the query
    timeout: float = 3.0  # one upstream's answer
    deadline: float = 5.0  # all of them: what is late is left out, with a warning
    max_hops: int = 3  # a request that has passed this many registries is answered locally
    breaker_failures: int = 3  # consecutive failures that open an upstream's circuit ...
    breaker_cooldown: float = 30.0  # ... for this many seconds, then one request may try again
    allow_private_networks: bool = False  # for upstreams named by entries (configured ones are the operator's choice)
    identity: str = ""  # this registry's own identity in the Via list (its public URL or identifier)


def load_upstreams(urls: list[str], token_file: Path | None) -> tuple[Upstream, ...]:
    """Configured upstreams; a token file holds one `URL TOKEN` per line (`#` comments), as the token file
    of `--token-file` holds ours. A URL with no token line is asked without one."""
    tokens: dict[str, str] = {}
    if token_file is not None:
        for number, raw in enumerate(token_file.read_text(encoding="utf-8").splitlines(), start=1):
            parts = raw.split()
            if not parts or parts[0].startswith("#"):
                continue
            if len(parts) != 2:
                raise ValueError(f"{token_file}:{number}: expected 'URL TOKEN'")
            tokens[parts[0].rstrip("/")] = parts[1]
    for url in urls:
        check_url(url, f"--upstream {url!r}")  # a RefusedUrl is a ValueError, reported as the other settings errors are
    return tuple(Upstream(url.rstrip("/"), tokens.get(url.rstrip("/"))) for url in dict.fromkeys(urls))
