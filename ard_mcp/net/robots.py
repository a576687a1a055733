"""robots.txt: whether the crawler may fetch a path, and the `Agentmap:` lines that point to catalogs (ARD §6.1).

Rules are read with Protego (Scrapy's parser): RFC 9309 groups, `*` and `$` patterns, the longest match
wins and `Allow` wins a tie, which the standard library's parser gets wrong (first match, no wildcards: a
site's `Disallow: /*.json$` would be ignored). What a missing or failing robots.txt means follows RFC 9309
§2.3.1: a 4xx (none published) allows everything, a 5xx or an unreachable server allows nothing for now,
and a URL refused for that says so, with the status robots.txt answered.
A robots.txt that answers 200 with something other than text (a single-page app's HTML for every path)
publishes no rules. `Agentmap:` values are resolved against the origin, so `Agentmap: /catalog.json` works.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urljoin

from protego import Protego

_AGENTMAP = re.compile(r"^\s*agentmap\s*:\s*(\S+)", re.IGNORECASE | re.MULTILINE)


@dataclass
class Robots:
    """One origin's robots.txt as the crawler uses it."""

    rules: Protego | None  # None: no rules (allow all) or, with `unreachable`, none could be read
    agentmaps: list[str] = field(default_factory=list)
    unreachable: str | None = None  # why robots.txt could not be read (a 5xx, a network failure): nothing is fetched
    status: int | None = None  # the HTTP status of an unreachable robots.txt, when it answered one

    def allows(self, user_agent: str, url: str) -> bool:
        if self.unreachable is not None:
            return False
        return self.rules is None or bool(self.rules.can_fetch(url, user_agent))

    def refusal(self) -> str:
        """Why `allows` said no, as a report says it: an unreachable robots.txt is no rule about the URL, and
        a crawl once reported its 500 as "robots.txt disallows fetching it" for URLs it never asked for."""
        if self.unreachable is None:
            return "robots.txt disallows fetching it"
        what = f"answered HTTP {self.status} (unreachable)" if self.status is not None else f"is unreachable ({self.unreachable})"
        return f"not fetched: robots.txt {what}; until it answers, nothing is fetched from this origin (RFC 9309 §2.3.1.4)"


def parse_robots(text: str, origin: str) -> Robots:
    return Robots(Protego.parse(text), [urljoin(origin + "/", m) for m in _AGENTMAP.findall(text)])


def robots_for_failure(reason: str, status: int | None) -> Robots:
    """What a robots.txt that could not be read means: a 4xx (none published) allows everything; a 5xx or
    no answer at all allows nothing for now."""
    if status is not None and 400 <= status < 500:
        return Robots(None)
    return Robots(None, unreachable=reason, status=status)
