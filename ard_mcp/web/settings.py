"""How the crawler is set up, from the CLI, the server or a test: one frozen object (light to import: the
server's configuration carries it, and the server must start fast)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ard_mcp.net.limits import FetchLimits
from ard_mcp.trust.policy import TrustPolicy
from ard_mcp.web.sources import Schedule


@dataclass(frozen=True)
class CrawlLimits:
    max_depth: int = 3  # nested catalogs followed by URL, below the target's own documents
    max_documents: int = 100  # documents one crawl fetches (robots.txt and probes that found nothing aside)
    concurrency: int = 4  # documents fetched at once (each host still gets at most `FetchLimits.per_host`)


@dataclass(frozen=True)
class CrawlSettings:
    allow_private_networks: bool = False
    dns_server: str | None = None  # HOST[:PORT]; None: the system's resolvers
    limits: CrawlLimits = field(default_factory=CrawlLimits)
    fetch: FetchLimits = field(default_factory=FetchLimits)
    schedule: Schedule = field(default_factory=Schedule)
    background_refresh: bool = True  # a serving registry refreshes due documents by itself
    trust_policy: TrustPolicy = "show"  # refuse-invalid: crawled entries whose trust manifest fails its check are left out
