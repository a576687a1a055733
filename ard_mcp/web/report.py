"""A crawl request and what the crawl did, as the CLI (`--json`), the MCP tool and the REST route take and
report them: one wire model each. Light to import: the MCP server names them in its tool schemas at start."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from ard_mcp.index.indexer import IngestReport

MAX_TARGETS = 50


class CrawlRequest(BaseModel):
    targets: list[str] = Field(
        default_factory=list,
        max_length=MAX_TARGETS,
        description="Domains, origins or URLs of a catalog, an HTML page, an A2A agent card or an MCP server.json / server card.",
    )
    mcpRegistries: list[str] = Field(
        default_factory=list, max_length=MAX_TARGETS, description="MCP registries (base URLs) whose servers to import."
    )
    refresh: bool = Field(False, description="Fetch the remembered documents that are due again (conditional requests).")
    force: bool = Field(False, description="With refresh: all of them, due or not.")


Status = Literal["ingested", "not-modified", "not-found", "server-error", "failed", "removed"]
STATUSES = (
    "ingested: read, its entries registered; not-modified: unchanged since the last crawl (304); "
    "not-found: a well-known URI probed and not there (4xx, or not a document); "
    "server-error: the server answered 5xx, for the document or for its origin's robots.txt (then the document "
    "was not asked for), so it is asked again later; failed: any other failure (network, size, format, a refused address); "
    "removed: taken down by its publisher (404 or 410), its entries with it"
)


FAILURES = ("server-error", "failed")  # outcomes that are failures, whoever's


class SourceOutcome(BaseModel):
    """One document the crawl looked at: where, how it was found, what came of it."""

    url: str
    via: str = Field(description="how it was found: well-known, robots, link, dns-svcb, dns-txt, nested, direct, mcp-registry")
    status: Status = Field(description=STATUSES)
    entries: int = 0  # entries this document holds in the registry after the crawl
    error: str | None = None


class CrawlReport(BaseModel):
    sources: list[SourceOutcome] = Field(default_factory=list)
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: list[str] = Field(default_factory=list, description="entries removed because they vanished from their document")
    rejected: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    registries: list[str] = Field(default_factory=list, description="upstream registries found (entries of type ai-registry)")
    errors: list[str] = Field(default_factory=list, description="targets that found nothing, and why")

    def add_ingest(self, report: IngestReport) -> None:
        self.added += report.added
        self.updated += report.updated
        self.unchanged += report.unchanged
        self.rejected += report.rejected
        self.warnings += report.warnings

    @property
    def failed(self) -> bool:
        """Nothing usable came of the crawl."""
        usable = any(s.status in ("ingested", "not-modified") for s in self.sources)
        return not usable and bool(self.errors or any(s.status in FAILURES for s in self.sources))
