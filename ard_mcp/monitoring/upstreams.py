"""The `upstream` label of the federation metrics, bounded: the N most asked upstream origins by name, every
other one as `other`.

The upstreams a federated search asks are the configured ones and the `application/ai-registry+json` entries of
the catalog, and anyone who may write an entry can add one: 60 entries from one writer made 825 series, each
kept in memory and sent on every scrape for the life of the process. So at most `limit` origins have a label of
their own (`ARD_MCP_METRICS_UPSTREAMS`, 20 by default), the rest share `other`, and a scrape has at most
`limit` + 1 values of the label whatever the catalog holds.

Which N: the most asked since the process started. A free place goes to the first origin asked; once all are
taken, an origin asked at least twice as often as the least asked labelled one (and `PROMOTE_AFTER` times at
least) takes its place, and the one it replaced leaves the scrape (its calls from then on count as `other`).
The margin keeps two upstreams asked about as often from trading places on every search. Configured upstreams
are asked on every federated search, so they are among the most asked. Counts are kept for at most
`limit` * 8 origins (the least asked unlabelled ones are forgotten first), so memory is bounded too.

In multiprocess mode prometheus_client cannot remove a series, so places are kept by whoever took them first."""

from __future__ import annotations

import threading
from collections.abc import Callable

OTHER = "other"
DEFAULT_LIMIT = 20
PROMOTE_AFTER = 8  # asks before an origin may take a labelled one's place


class UpstreamLabels:
    """Which origins are labelled by name; `dropped` is told of an origin that lost its place (to remove its series)."""

    def __init__(self, limit: int = DEFAULT_LIMIT, dropped: Callable[[str], None] | None = None) -> None:
        self.limit = max(0, limit)
        self._dropped = dropped
        self._asked: dict[str, int] = {}
        self._named: set[str] = set()
        self._lock = threading.Lock()

    def asked(self, origin: str) -> str:
        """The label of a call of (or one left out for) `origin`, counting it as asked."""
        with self._lock:
            self._asked[origin] = self._asked.get(origin, 0) + 1
            if origin in self._named:
                return origin
            if len(self._named) < self.limit:
                self._named.add(origin)
                return origin
            replaced = self._replaced_by(origin)
            if replaced is None:
                self._forget_some()
                return OTHER
            self._named.discard(replaced)
            self._named.add(origin)
        if self._dropped is not None:
            self._dropped(replaced)
        return origin

    def label(self, origin: str) -> str:
        """The label `origin` has now, without counting it as asked (a breaker's state)."""
        with self._lock:
            return origin if origin in self._named else OTHER

    def named(self) -> set[str]:
        with self._lock:
            return set(self._named)

    def _replaced_by(self, origin: str) -> str | None:
        if self._dropped is None or not self._named:
            return None
        count = self._asked[origin]
        least = min(self._named, key=lambda o: self._asked.get(o, 0))
        return least if count >= PROMOTE_AFTER and count >= 2 * self._asked.get(least, 0) else None

    def _forget_some(self) -> None:
        """Past `limit` * 8 counted origins, forget the least asked half of the unlabelled ones."""
        if len(self._asked) <= max(64, self.limit * 8):
            return
        unnamed = sorted((o for o in self._asked if o not in self._named), key=lambda o: self._asked[o])
        for origin in unnamed[: len(unnamed) // 2]:
            del self._asked[origin]
