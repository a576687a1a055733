"""What a serving registry shares across its surfaces and requests: the federation (upstream connection
pools, circuit breakers) and the trust checks (key caches). Each is made on first use: they bring httpx
pools, the ranking and the JWS library, none of which the first `tools/list` should wait for. The HTTP
app makes one and hands it to the MCP server it mounts, so MCP and REST share pools, breakers and caches.

Both resolve names as the crawler does (`--dns-server` when given: one DNS view for crawling, key fetches
and federation), and federation screens remote results with the same trust checks and policy as
registrations."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ard_mcp.federation.settings import FederationSettings
from ard_mcp.invocation.policy import InvocationPolicy
from ard_mcp.trust.policy import TrustPolicy
from ard_mcp.web.settings import CrawlSettings

if TYPE_CHECKING:
    from anyio import CapacityLimiter
    from anyio.abc import TaskGroup

    from ard_mcp.federation.service import Federation
    from ard_mcp.invocation.service import Invoker
    from ard_mcp.net.guard import Resolver
    from ard_mcp.registry import Registry
    from ard_mcp.trust.service import TrustChecks


class Services:
    def __init__(
        self,
        identity: str,
        federation: FederationSettings | None = None,
        crawl: CrawlSettings | None = None,
        trust_policy: TrustPolicy = "show",
        trust: TrustChecks | None = None,
        invocation: InvocationPolicy | None = None,
    ) -> None:
        """`identity` names this registry on federated requests' paths; `crawl` decides whether private
        networks may be fetched from (trust keys, upstreams named by entries); `trust` replaces the trust
        checks made on first use (tests point key fetches at loopback with it); `invocation` is the policy
        for calling agents (off when not given)."""
        self._federation_settings = dataclasses.replace(federation or FederationSettings(), identity=identity)
        self._allow_private = crawl.allow_private_networks if crawl else False
        self._dns_server = crawl.dns_server if crawl else None
        self.trust_policy = trust_policy
        self._federation: Federation | None = None
        self._trust = trust
        self._resolver: Resolver | None = None
        self.invocation = invocation or InvocationPolicy()
        self._invoker: Invoker | None = None
        self._background: TaskGroup | None = None
        self._search_slots: CapacityLimiter | None = None

    def attach(self, background: TaskGroup) -> None:
        """The serving registry's background task group, for what outlives one request (kept MCP sessions)."""
        self._background = background

    def federation(self) -> Federation:
        if self._federation is None:
            from ard_mcp.federation.service import Federation

            self._federation = Federation(self._federation_settings, self.trust(), self.trust_policy, self.resolver())
        return self._federation

    def trust(self) -> TrustChecks:
        if self._trust is None:
            from ard_mcp.trust.service import TrustChecks

            self._trust = TrustChecks(self._allow_private, self.resolver())
        return self._trust

    def resolver(self) -> Resolver:
        """The crawler's resolver (`open_crawler`): the DNS server given, else the system's."""
        if self._resolver is None:
            if self._dns_server:
                from ard_mcp.web.dns_discovery import DnsDiscovery

                self._resolver = DnsDiscovery(self._dns_server)
            else:
                from ard_mcp.net.guard import SystemResolver

                self._resolver = SystemResolver()
        return self._resolver

    def invoker(self, registry: Registry) -> Invoker:
        """The agent caller over `registry`: one for the services, so its connection pool and tool-list cache
        are shared by every surface and request (a registry opened again, as stdio's opens lazily, is followed)."""
        if self._invoker is None:
            from ard_mcp.invocation.service import Invoker

            self._invoker = Invoker(registry, self.invocation, self.resolver(), self._background)
        self._invoker.registry = registry
        return self._invoker

    def search_slots(self) -> CapacityLimiter:
        """The worker threads that may run searches at once (`search_slot_count`), in the order they asked."""
        if self._search_slots is None:
            import anyio

            self._search_slots = anyio.CapacityLimiter(search_slot_count())
        return self._search_slots

    @contextmanager
    def search_slot(self) -> Iterator[None]:
        """One of the search slots, held from a worker thread (a synchronous MCP tool runs in one)."""
        import anyio.from_thread

        limiter, borrower = self.search_slots(), object()
        anyio.from_thread.run(limiter.acquire_on_behalf_of, borrower)
        try:
            yield
        finally:
            anyio.from_thread.run_sync(limiter.release_on_behalf_of, borrower)

    async def trust_findings(self, entry: Mapping[str, Any]) -> set[tuple[str, str]] | None:
        """What the check of an entry being registered found; None for an entry without a trust manifest
        (the indexer records it as self-asserted without any of this). Refuses an invalid one when the
        policy says so."""
        if entry.get("trustManifest") is None:
            return None
        return await self.trust().findings(entry, self.trust_policy)

    async def aclose(self) -> None:
        if self._federation is not None:
            await self._federation.aclose()
        if self._trust is not None:
            await self._trust.aclose()
        if self._invoker is not None:
            await self._invoker.aclose()


def search_slot_count() -> int:
    """Searches run at once by one process: twice its usable cores. A search is CPU work (the query's embedding,
    the ranking, the page's JSON) apart from short waits on a store or a Chroma server; with one thread per
    request (anyio's 40), 16 concurrent REST searches on 2 cores ran 16 threads taking the GIL from each other.
    Measured with `bench/throughput.py` (2 cores, 16 clients, alternating runs): no bound 112-113 searches/s,
    12.5-12.7 ms of CPU each, p99 251-256 ms; 2 at once 124-127/s, 11.5-11.7 ms, p99 158-159 ms; 4 at once
    122/s, 11.7 ms, p99 170 ms. Twice the cores keeps a core busy while another search waits on the network.
    The cores this process may run on where the system says (Linux), else the machine's (macOS has no affinity)."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return 2 * (usable or 1)
