"""robots.txt: whether the crawler may fetch a path, and the `Agentmap:` lines that point to catalogs (ARD §6.1).

Rules are read with the standard library's parser (RFC 9309 groups, `Allow` / `Disallow`, the longest
match wins); what a missing or failing robots.txt means follows RFC 9309 §2.3.1: a 4xx (none published)
allows everything, a 5xx or an unreachable server allows nothing for now.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.robotparser import RobotFileParser

_AGENTMAP = re.compile(r"^\s*agentmap\s*:\s*(\S+)", re.IGNORECASE | re.MULTILINE)


@dataclass
class Robots:
    """One origin's robots.txt as the crawler uses it."""

    parser: RobotFileParser | None  # None: no rules (allow all) or, with `deny_all`, none could be read
    agentmaps: list[str] = field(default_factory=list)
    deny_all: bool = False

    def allows(self, user_agent: str, url: str) -> bool:
        if self.deny_all:
            return False
        return self.parser is None or self.parser.can_fetch(user_agent, url)


def parse_robots(text: str) -> Robots:
    parser = RobotFileParser()
    parser.parse(text.splitlines())
    return Robots(parser, _AGENTMAP.findall(text))


def robots_for_status(status: int) -> Robots:
    """What a robots.txt answered with `status` (not 2xx) means: 4xx allow everything, otherwise nothing."""
    return Robots(None, deny_all=not 400 <= status < 500)
