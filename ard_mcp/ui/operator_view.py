"""What the operator's page shows: the crawler's remembered documents (status, last and next fetch, last
error), the upstream registries (circuit breaker, last latency), the newest registrations and the invocation
audit log. Read from the same places `ard-mcp` and the REST routes read them."""

from __future__ import annotations

from dataclasses import dataclass

from ard_mcp.formats.catalog import CatalogEntry
from ard_mcp.invocation.audit import AuditLog, AuditRecord
from ard_mcp.registry import Registry
from ard_mcp.search.visibility import Viewer
from ard_mcp.surfaces.services import Services
from ard_mcp.web.sources import Source

RECENT = 20
AUDIT = 50
MAX_SOURCES = 500  # the most failing and the most recently checked first; a page, not a dump


@dataclass(frozen=True)
class UpstreamRow:
    url: str
    configured: bool  # named by the operator (else found as an ai-registry entry)
    breaker: str  # closed, open or half-open
    failures: int
    latency_ms: float | None


@dataclass(frozen=True)
class OperatorView:
    sources: list[Source]
    source_count: int
    upstreams: list[UpstreamRow]
    recent: list[CatalogEntry]
    audit: list[AuditRecord]


def _upstreams(services: Services) -> list[UpstreamRow]:
    federation = services.federation()
    configured = [u.url for u in federation.settings.upstreams]
    rows = []
    for url in dict.fromkeys([*configured, *federation.breakers.known()]):
        breaker, failures = federation.breakers.state(url)
        latency = federation.breakers.latency.get(url)
        rows.append(UpstreamRow(url, url in configured, breaker, failures, None if latency is None else round(latency * 1000, 1)))
    return rows


def operator_view(registry: Registry, services: Services, viewer: Viewer) -> OperatorView:
    """Blocking (SQLite, the audit file): call from a worker thread."""
    sources = [Source.from_dict(s) for s in registry.store.crawl_sources().values()]
    sources.sort(key=lambda s: s.checked_at or "", reverse=True)
    failing, rest = [s for s in sources if s.failures], [s for s in sources if not s.failures]
    return OperatorView(
        sources=(failing + rest)[:MAX_SOURCES],
        source_count=len(sources),
        upstreams=_upstreams(services),
        recent=registry.list(None, "createdAt DESC", RECENT, None, viewer).items,
        audit=AuditLog(registry.config.data_dir).newest(AUDIT),
    )
