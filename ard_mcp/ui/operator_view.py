"""What the operator's page shows: whether the registry is open to anyone's writes, what the last crawl started
from the page failed at, the crawler's remembered documents (status, last and next fetch, last error), the
upstream registries (circuit breaker, last latency), the newest registrations and the invocation audit log.
Read from the same places `ard-mcp` and the REST routes read them.

A crawl's report is shown once, on the crawl's own page; a target that found nothing leaves no remembered
document behind, so without `LastCrawl` a failed crawl left no trace once the operator went back."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from ard_mcp.formats.catalog import CatalogEntry
from ard_mcp.invocation.audit import AuditLog, AuditRecord
from ard_mcp.registry import Registry
from ard_mcp.search.visibility import Viewer
from ard_mcp.surfaces.services import Services
from ard_mcp.web.report import FAILURES, CrawlReport
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
class LastCrawl:
    """The newest crawl started from the page, as it ended: kept in the server's memory (a restart forgets it)."""

    target: str
    finished_at: str
    report: CrawlReport | None
    error: str | None  # the crawl stopped before it had a report

    @classmethod
    def of(cls, target: str, report: CrawlReport | None = None, error: str | None = None) -> LastCrawl:
        return cls(target, datetime.now(UTC).isoformat(timespec="seconds"), report, error)

    @property
    def failures(self) -> list[str]:
        """What went wrong, one line each: the crawl's own error, targets that found nothing, documents that
        failed, entries refused."""
        if self.report is None:
            return [self.error] if self.error else []
        report = self.report
        failed = [f"{s.url}: {s.status}" + (f" ({s.error})" if s.error else "") for s in report.sources if s.status in FAILURES]
        return [*report.errors, *failed, *(f"rejected {r}" for r in report.rejected)]

    @property
    def failed(self) -> bool:
        """Nothing usable came of it."""
        return self.report is None or self.report.failed


@dataclass(frozen=True)
class OperatorView:
    sources: list[Source]
    source_count: int
    upstreams: list[UpstreamRow]
    recent: list[CatalogEntry]
    audit: list[AuditRecord]
    last_crawl: LastCrawl | None = None
    open_to: str | None = None  # who may write without a token, when the registry has no token file


def _upstreams(services: Services) -> list[UpstreamRow]:
    federation = services.federation()
    configured = [u.url for u in federation.settings.upstreams]
    rows = []
    for url in dict.fromkeys([*configured, *federation.breakers.known()]):
        breaker, failures = federation.breakers.state(url)
        latency = federation.breakers.latency.get(url)
        rows.append(UpstreamRow(url, url in configured, breaker, failures, None if latency is None else round(latency * 1000, 1)))
    return rows


def operator_view(
    registry: Registry, services: Services, viewer: Viewer, last_crawl: LastCrawl | None = None, open_to: str | None = None
) -> OperatorView:
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
        last_crawl=last_crawl,
        open_to=open_to,
    )
