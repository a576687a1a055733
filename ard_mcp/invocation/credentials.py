"""The operator's credentials for the agents the registry calls: a file, never the caller's own token.

One credential a line, `TARGET HEADER VALUE`, blank lines and `#` comments ignored. TARGET is a publisher
domain (`example.com`, its subdomains too) or an endpoint URL prefix (`https://api.example.com/agents/`);
HEADER is `bearer` (sent as `Authorization: Bearer VALUE`) or a header name ending in a colon
(`X-API-Key:`). The most specific line wins: the longest URL prefix, then the publisher. A caller's
`Authorization` header is never forwarded, so a token for this registry cannot reach an agent (AIDIP §6).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ard_mcp.formats.identifiers import is_publisher_domain, within
from ard_mcp.secret_files import read_secrets


@dataclass(frozen=True)
class _Credential:
    target: str
    header: str
    value: str

    def applies(self, publisher: str, url: str) -> int:
        """How specifically this line names the agent (0: not at all): a URL prefix beats a domain."""
        if "://" in self.target:
            return 1000 + len(self.target) if url.startswith(self.target) else 0
        return 1 + len(self.target) if within(publisher, self.target) else 0


@dataclass(frozen=True)
class AgentCredentials:
    lines: tuple[_Credential, ...] = ()

    @classmethod
    def load(cls, path: Path) -> AgentCredentials:
        found = []
        for number, line in enumerate(read_secrets(path, "agent credentials file").splitlines(), 1):
            fields = line.split("#", 1)[0].split(None, 2)
            if not fields:
                continue
            where = f"agent credentials file {path}, line {number}"
            if len(fields) != 3 or not (fields[1].lower() == "bearer" or fields[1].endswith(":")):
                raise ValueError(f"{where}: expected 'TARGET bearer TOKEN' or 'TARGET Header-Name: VALUE'")
            target = fields[0].lower() if "://" not in fields[0] else fields[0]
            if "://" not in target and not is_publisher_domain(target):
                raise ValueError(f"{where}: {fields[0]!r} is neither a publisher domain nor an http(s) URL prefix")
            header = "Authorization" if fields[1].lower() == "bearer" else fields[1][:-1]
            value = f"Bearer {fields[2].strip()}" if fields[1].lower() == "bearer" else fields[2].strip()
            found.append(_Credential(target, header, value))
        return cls(tuple(found))

    def headers_for(self, publisher: str, url: str) -> dict[str, str]:
        """The headers of the most specific line for this agent; none when no line names it."""
        best = max(self.lines, key=lambda c: c.applies(publisher, url), default=None)
        return {best.header: best.value} if best is not None and best.applies(publisher, url) else {}
