"""robots.txt: whether the crawler may fetch a path, and the `Agentmap:` lines that point to catalogs (ARD §6.1).

Rules are read with Protego (Scrapy's parser): RFC 9309 groups, `*` and `$` patterns, the longest match
wins and `Allow` wins a tie, which the standard library's parser gets wrong (first match, no wildcards: a
site's `Disallow: /*.json$` would be ignored). What a missing or failing robots.txt means follows RFC 9309
§2.3.1: a 4xx (none published) allows everything, a 5xx or an unreachable server allows nothing for now.
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

    rules: Protego | None  # None: no rules (allow all) or, with `deny_all`, none could be read
    agentmaps: list[str] = field(default_factory=list)
    deny_all: bool = False

    def allows(self, user_agent: str, url: str) -> bool:
        if self.deny_all:
            return False
        return self.rules is None or bool(self.rules.can_fetch(url, user_agent))


def parse_robots(text: str, origin: str) -> Robots:
    return Robots(Protego.parse(text), [urljoin(origin + "/", m) for m in _AGENTMAP.findall(text)])


def robots_for_status(status: int) -> Robots:
    """What a robots.txt answered with `status` (not 2xx) means: 4xx allow everything, otherwise nothing."""
    return Robots(None, deny_all=not 400 <= status < 500)
