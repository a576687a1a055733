"""What the crawler remembers of each document it fetched, and when it is due again.

One `Source` per URL: how it was found (and from where), the HTTP validators and freshness of the last
answer, the entries it yielded (so an entry that vanished from it can be removed, and only such an entry),
the nested catalogs it pointed to, and its failures. A source is due when the publisher's `max-age` has
passed (never sooner than `min_interval`, so a `max-age=0` does not make the registry hammer it), or the
registry's own interval when the publisher said nothing; each failure doubles the wait (up to 64 times),
and every wait gets up to 10% of jitter so sources found together do not fall due together.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from ard_mcp.formats.timestamps import stored_timestamp


@dataclass(frozen=True)
class Schedule:
    interval: float = 3600.0  # seconds between refreshes when the publisher gives no max-age
    min_interval: float = 60.0
    max_backoff: int = 64


@dataclass
class Source:
    url: str
    via: str  # how it was found: well-known, robots, link, dns-svcb, dns-txt, nested, direct, mcp-registry, refresh
    kind: str = "document"  # "document" (a catalog, card or server description), "mcp-registry" (a paged API) or
    # "dns-registry" (a registry endpoint read from DNS: refreshed by crawling its domain again)
    found_from: str | None = None  # the target or document that led to it
    depth: int = 0
    etag: str | None = None
    last_modified: str | None = None
    max_age: int | None = None
    fetched_at: str | None = None  # the last answer with a body
    checked_at: str | None = None  # the last attempt
    next_due: str | None = None
    failures: int = 0
    last_error: str | None = None
    identifiers: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)  # nested catalogs it points to by URL
    cursor_since: str | None = None  # mcp-registry: the `updated_since` of the next incremental run

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> Source:
        known = {k: v for k, v in state.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def due(self, now: datetime) -> bool:
        due = stored_timestamp(self.next_due)  # a value that is not a time (edited by hand) counts as due
        return due is None or due <= now

    def schedule(self, now: datetime, plan: Schedule, failed: bool) -> None:
        """Record an attempt at `now` and when the next one is due."""
        self.checked_at = now.isoformat()
        self.failures = self.failures + 1 if failed else 0
        wait = plan.interval if self.max_age is None or failed else max(plan.min_interval, float(self.max_age))
        if failed:
            wait *= min(plan.max_backoff, 2 ** (self.failures - 1))
        wait *= 1 + random.uniform(0, 0.1)
        self.next_due = (now + timedelta(seconds=wait)).isoformat()


def utcnow() -> datetime:
    return datetime.now(UTC)
