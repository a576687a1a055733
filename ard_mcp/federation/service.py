"""A search answered with what other registries know (ARD §8): `none`, `referrals` or `auto`.

`none` is the local search. `referrals` adds the upstream registries as catalog entries the client may ask
itself. `auto` asks them concurrently (each within its timeout, all within a deadline, none whose circuit
is open), fuses their rankings with the local one (`merge`) and says in `warnings` which upstream failed or
was late: partial results beat none. Federation applies to the first page; later pages (the local page
token) continue the local ranking. Upstreams are the configured ones and, unless turned off, the
`application/ai-registry+json` entries the catalog holds that are most relevant to the query.

A malicious upstream changes no local result: its rows are screened as this registry's own (`screening`),
a row for an identifier this registry holds never replaces or stands in for the local entry (the local copy
is shown, the upstream named among its sources; one the local search did not find stays out), and what
it sent beside its rows (unknown fields, rows over the page, rows left out) is a warning, logged.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import anyio
import anyio.to_thread

from ard_mcp.federation.breaker import Breakers
from ard_mcp.federation.client import UpstreamClient, UpstreamError, search_endpoint
from ard_mcp.federation.hops import InFlight, Path
from ard_mcp.federation.merge import confident, fuse
from ard_mcp.federation.screening import Screening
from ard_mcp.federation.settings import FederationSettings, Upstream
from ard_mcp.formats.identifiers import normalize_identifier, publisher_of, registry_identifier
from ard_mcp.formats.media_types import AI_REGISTRY
from ard_mcp.formats.messages import AGENT_RESOURCE, BriefResult, Detail, RegistryReferral, SearchResponse, SearchResult
from ard_mcp.monitoring import metrics, tracing
from ard_mcp.net.guard import Resolver
from ard_mcp.search.query import SearchQuery
from ard_mcp.search.results import brief
from ard_mcp.search.visibility import Viewer
from ard_mcp.trust.policy import TrustPolicy
from ard_mcp.trust.service import TrustChecks

if TYPE_CHECKING:
    from ard_mcp.registry import Registry

log = logging.getLogger(__name__)
Mode = Literal["auto", "referrals", "none"]
SCREENING_TIME = 0.25  # seconds of the deadline kept for screening and merging: trust checks stop this much earlier


@dataclass
class FederatedPage:
    """The first page of a federated search (or a local one): results best first, referrals, warnings."""

    results: list[SearchResult]
    page_token: str | None
    total: int
    confident: bool
    referrals: list[RegistryReferral] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def response(self, detail: Detail | None, compact: bool) -> SearchResponse:
        """The page as `search_agents` answers it: brief lines, or entries at a detail level."""
        results: list[SearchResult] | list[BriefResult]
        if compact:
            results = [brief(r) for r in self.results]
        else:
            results = [r.at_detail(detail, AGENT_RESOURCE.format(identifier=r.identifier)) for r in self.results]
        return SearchResponse(
            results=results,
            pageToken=self.page_token,
            totalResults=self.total,
            confidence=None if not self.results else "high" if self.confident else "low",
            referrals=self.referrals or None,
            warnings=self.warnings or None,
        )


class Federation:
    """One per serving registry: its upstream connection pools, circuit breakers, the searches it has in
    flight, and the trust checks and policy its screening applies."""

    def __init__(self, settings: FederationSettings, trust: TrustChecks, policy: TrustPolicy, resolver: Resolver) -> None:
        self.settings = settings
        self.breakers = Breakers(settings.breaker_failures, settings.breaker_cooldown)
        self.client = UpstreamClient(settings, resolver)
        self.in_flight = InFlight()
        self.trust = trust
        self.policy = policy

    async def aclose(self) -> None:
        await self.client.aclose()

    def may_federate(self, registry: Registry) -> bool:
        """Whether there is anyone to ask: configured upstreams, or registry entries in the catalog (cheap:
        a filter-value lookup), so a registry without any skips federation's extra work altogether."""
        if self.settings.upstreams:
            return True
        return self.settings.registry_entries and bool(registry.store.filter_agents({"type": [AI_REGISTRY]}))

    def upstreams(self, registry: Registry, text: str, viewer: Viewer) -> list[Upstream]:
        """The configured upstreams, then the registry entries most relevant to `text`; never this registry itself."""
        found = list(self.settings.upstreams)
        if self.settings.registry_entries and self.settings.max_registry_entries > 0:
            query = SearchQuery.of(text, {"type": [AI_REGISTRY]}, page_size=self.settings.max_registry_entries)
            page = registry.search(query, viewer=viewer)
            for result in page.results():
                if result.url:
                    found.append(Upstream(result.url, configured=False, identifier=result.identifier, name=result.displayName))
        own = {self.settings.identity.rstrip("/"), search_endpoint(self.settings.identity)} - {""}
        unique: dict[str, Upstream] = {}
        for upstream in found:
            endpoint = search_endpoint(upstream.url)
            if endpoint not in unique and upstream.url.rstrip("/") not in own and endpoint not in own:
                unique[endpoint] = upstream
        return list(unique.values())

    async def search(self, registry: Registry, query: SearchQuery, mode: Mode, path: Path, viewer: Viewer) -> FederatedPage:
        page = await anyio.to_thread.run_sync(lambda: registry.search(query, viewer=viewer))
        local = page.results()
        answer = FederatedPage(local, page.page_token, page.total or len(local), page.confident)
        if mode == "none" or query.page_token is not None:
            return answer
        text = query.text or ""
        stop = path.stops_at(self.settings.identity, self.settings.max_hops)
        if stop is None and mode == "auto":
            stop = self.in_flight.returning(text)
        if stop is not None:
            answer.warnings.append(stop)
            return answer
        upstreams = await anyio.to_thread.run_sync(lambda: self.upstreams(registry, text, viewer))
        if mode == "referrals":
            publisher = publisher_of(registry.config.identifier)
            answer.referrals = [_referral(u, publisher) for u in upstreams]
            return answer
        with self.in_flight.asking(text):
            await self._merge(answer, registry, query, upstreams, path)
        return answer

    async def _merge(self, answer: FederatedPage, registry: Registry, query: SearchQuery, upstreams: list[Upstream], path: Path) -> None:
        wanted = {"text": query.text, **({"filter": query.filter} if query.filter else {})}
        body = {"query": wanted, "pageSize": query.page_size, "federation": "auto"}  # upstreams may federate on (hops stop loops)
        screening = Screening(registry.tuning, self.trust, self.policy, registry.config.limits)
        until = anyio.current_time() + self.settings.deadline - SCREENING_TIME
        rankings: dict[str, list[SearchResult]] = {}

        def warn(upstream: Upstream, notes: list[str]) -> None:
            for note in notes:
                log.warning("upstream %s: %s", upstream.url, note)
                answer.warnings.append(f"upstream {upstream.url}: {note}")

        async def ask(upstream: Upstream) -> None:
            started, outcome = anyio.current_time(), "late"  # a call the deadline cancels is late
            with tracing.span("upstream", {"ard.upstream": metrics.origin(upstream.url)}) as span:
                try:
                    got = await self.client.search(upstream, body, path, self.settings.identity, query.page_size)
                    outcome = "ok"
                except UpstreamError as exc:
                    outcome = "failed"
                    self.breakers.failed(upstream.url)
                    answer.warnings.append(str(exc))
                    return
                finally:
                    metrics.upstream(upstream.url, outcome, anyio.current_time() - started)
                    tracing.ended(span, {"ard.upstream.outcome": outcome}, failed=outcome != "ok")
            self.breakers.succeeded(upstream.url, anyio.current_time() - started)
            rankings[upstream.url], notes = await screening.results(got.rows, upstream.url, until)
            warn(upstream, [*got.notes, *notes])

        asked = []
        for upstream in upstreams:
            if self.breakers.allows(upstream.url):
                asked.append(upstream)
            else:
                metrics.upstream_skipped(upstream.url)
                answer.warnings.append(f"upstream {upstream.url}: not asked (it kept failing; trying again later)")
        with anyio.move_on_after(self.settings.deadline):
            async with anyio.create_task_group() as group:
                for upstream in asked:
                    group.start_soon(ask, upstream)
        for upstream in asked:
            if upstream.url not in rankings and not any(upstream.url in w for w in answer.warnings):
                self.breakers.failed(upstream.url)
                answer.warnings.append(f"upstream {upstream.url}: no answer within {self.settings.deadline:g} s")
        for upstream in upstreams:
            metrics.breaker(upstream.url, self.breakers.state(upstream.url)[0] == "open")
        if not rankings:
            return
        held = await _held_elsewhere(registry, answer.results, rankings.values())
        remote = [[r for r in rankings[u.url] if normalize_identifier(r.identifier) not in held] for u in asked if u.url in rankings]
        answer.results = [m.noted() for m in fuse([answer.results, *remote], query.page_size)]
        answer.total = max(answer.total, len(answer.results))
        answer.confident = answer.confident or any(confident(r) for r in answer.results)


async def _held_elsewhere(registry: Registry, local: list[SearchResult], rankings: Iterable[list[SearchResult]]) -> set[str]:
    """The identifiers upstreams returned that this registry holds but did not list: an upstream's copy
    never stands in for a local entry the local search did not find (nor for one this viewer may not see)."""
    listed = {normalize_identifier(r.identifier) for r in local}
    remote = {normalize_identifier(r.identifier) for ranking in rankings for r in ranking} - listed
    if not remote:
        return set()
    return set(await anyio.to_thread.run_sync(registry.store.get_many, remote))


def _referral(upstream: Upstream, publisher: str) -> RegistryReferral:
    """An upstream as a catalog entry a client may ask: named by its registry entry's identifier, else by its
    domain, else (an IP address is no publisher) under this registry's own publisher domain."""
    identifier = upstream.identifier or registry_identifier(upstream.url, publisher)
    host = upstream.url.split("://", 1)[-1].split("/", 1)[0]
    return RegistryReferral(
        identifier=identifier, displayName=upstream.name or host, type="application/ai-registry+json", url=search_endpoint(upstream.url)
    )
