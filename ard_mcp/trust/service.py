"""Checking entries as they arrive: one `Verifier` per server or crawl, its keys fetched under the network rules.

An entry is checked as it was published, before the lenient reader normalises it (a changed trust manifest
would no longer match its signature). An entry without a trust manifest is `self-asserted` at once, with no
network; one with a manifest costs at most one key-set fetch per publisher per cache lifetime. Key fetches
go through the crawler's `Fetcher` (no private addresses unless allowed, sizes and times bounded) but do not
ask robots.txt: fetching a key to check a signature is not crawling.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio

from ard_mcp.errors import PermissionDenied
from ard_mcp.formats.entry_facts import trust_values
from ard_mcp.formats.identifiers import normalize_identifier, publisher_of
from ard_mcp.net.fetcher import Fetcher
from ard_mcp.net.guard import NetworkPolicy, Resolver, SystemResolver
from ard_mcp.net.limits import FetchLimits
from ard_mcp.trust.keys import KeyStore, OriginFor
from ard_mcp.trust.origin import third_party
from ard_mcp.trust.policy import TrustPolicy, refused_by
from ard_mcp.trust.status import TrustResult
from ard_mcp.trust.verifier import Verifier

BATCH_CONCURRENCY = 8  # entries of one document checked at once (one key-set fetch per publisher, then cached)
SELF_ASSERTED = "no trust manifest: the publisher in the identifier is a claim nobody checked"


class TrustChecks:
    def __init__(self, allow_private_networks: bool = False, resolver: Resolver | None = None, origin_for: OriginFor | None = None) -> None:
        """`origin_for` maps a domain to the origin its keys are fetched from (tests point one at loopback)."""
        self._policy = NetworkPolicy(allow_private_networks, "fetch signing keys from private networks")
        self._resolver = resolver or SystemResolver()
        self._origin_for = origin_for
        self._verifier: Verifier | None = None
        self._fetcher: Fetcher | None = None

    def _made(self) -> Verifier:
        """Made on first use: a registry whose entries carry no trust manifests never opens a connection pool."""
        if self._verifier is None:
            self._fetcher = Fetcher(self._policy, FetchLimits(delay=0), self._resolver, respect_robots=False)
            self._verifier = Verifier(KeyStore(self._fetcher, origin_for=self._origin_for))
        return self._verifier

    async def check(self, entry: Mapping[str, Any]) -> TrustResult:
        if not isinstance(entry, Mapping) or entry.get("trustManifest") is None:
            return TrustResult("self-asserted", SELF_ASSERTED)
        return await self._made().verify(entry)

    async def findings(self, entry: Mapping[str, Any], policy: TrustPolicy = "show", served_by: str | None = None) -> set[tuple[str, str]]:
        """The filter values recording `entry`'s check; `served_by` names the host of a third-party claim
        (`origin`). An entry whose status the policy refuses is refused (`PermissionDenied`, saying why)."""
        result = await self.check(entry)
        if served_by is not None:
            result = third_party(result, publisher_of(normalize_identifier(str(entry["identifier"]))), served_by)
        if result.status in refused_by(policy):
            what = "its trust manifest is invalid" if result.status == "invalid" else "it is a third-party claim"
            raise PermissionDenied(
                f"{entry.get('identifier')}: {what} ({result.reason}); this registry refuses such entries (--trust-policy {policy})"
            )
        return trust_values(result.status, result.reason, result.checked_at)

    async def batch(
        self, items: list[tuple[str, Any]], policy: TrustPolicy = "show", served_by: Mapping[str, str] | None = None
    ) -> tuple[dict[str, set[tuple[str, str]]], list[str]]:
        """Check the entries of a crawled document, a few at a time: their findings by identifier, and why
        each refused one was (`policy`); refused entries are taken out of `items`. `served_by` maps the
        identifiers of third-party claims to the host that served them."""
        found: dict[str, set[tuple[str, str]]] = {}
        refused: dict[int, str] = {}
        limiter = anyio.CapacityLimiter(BATCH_CONCURRENCY)

        async def check(raw: dict[str, Any]) -> None:
            async with limiter:
                try:
                    identifier = normalize_identifier(raw["identifier"])
                    found[identifier] = await self.findings(raw, policy, (served_by or {}).get(identifier))
                except PermissionDenied as exc:
                    refused[id(raw)] = exc.message

        async with anyio.create_task_group() as group:
            for _, raw in items:
                if isinstance(raw, dict) and isinstance(raw.get("identifier"), str):
                    group.start_soon(check, raw)
        items[:] = [(where, raw) for where, raw in items if id(raw) not in refused]
        return found, list(refused.values())

    async def aclose(self) -> None:
        if self._fetcher is not None:
            await self._fetcher.aclose()
            self._fetcher = self._verifier = None
