"""Who may call what through the registry: a policy a cautious operator can accept (AIDIP §6).

- Over HTTP, invocation is off unless the operator turns it on (`--allow-invocation`): a registry that
  only lists agents must not become a proxy to them by upgrading. Over stdio it is on: the caller is the
  local user's own host, which could start any of these servers itself (`--no-invocation` turns it off).
- A caller needs a credential with the invoke scope (the token file's fourth column `invoke`, or the OAuth
  scope `ard:invoke`); an open loopback registry that allows invocation lets its local callers invoke.
- Only entries the caller may see (`metadata.visibleTo`), and only publisher-served ones: never `invalid`
  (a forged manifest) and never `third-party` (an impostor's copy could send the caller's arguments to its
  own host). `--invoke-trust` lists the statuses allowed.
- Connections follow the crawler's network rules (no private addresses unless allowed, never link-local or
  cloud metadata), within time and size limits (`calls.Limits`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ard_mcp.errors import PermissionDenied
from ard_mcp.invocation.credentials import AgentCredentials
from ard_mcp.packages.settings import PackagePolicy


@dataclass(frozen=True)
class Limits:
    """One call's bounds (light to import: the command line's defaults come from here)."""

    connect: float = 5.0  # seconds to open a connection
    total: float = 60.0  # seconds for the whole call, a running A2A task followed to its end included
    max_bytes: int = 2 * 2**20  # the most of an agent's answer read


@dataclass(frozen=True)
class Caller:
    """Who calls: the credential's name (for the audit log) and whether it holds the invoke scope."""

    name: str
    may_invoke: bool


LOCAL = Caller("local", True)  # stdio and the command line: the local user's own host
PUBLISHER_SERVED = ("verified", "unverified", "self-asserted")
INVOKE_SCOPE = "ard:invoke"


@dataclass(frozen=True)
class InvocationPolicy:
    enabled: bool = False
    turned_on_by: str = "its operator can turn it on with --allow-invocation"  # over stdio: restart without --no-invocation
    allowed_trust: tuple[str, ...] = PUBLISHER_SERVED
    allow_private_networks: bool = False
    limits: Limits = field(default_factory=Limits)
    credentials: AgentCredentials = field(default_factory=AgentCredentials)
    packages: PackagePolicy = field(default_factory=PackagePolicy)

    def check(self, identifier: str, trust_status: str | None, may_invoke: bool) -> None:
        """Refuse (`PermissionDenied`, saying why and what the operator can change) a call this policy does not allow."""
        if not self.enabled:
            raise PermissionDenied(f"invocation is off on this registry; {self.turned_on_by}")
        if not may_invoke:
            raise PermissionDenied(
                f"calling agents needs a credential with the invoke scope (token file column 'invoke', OAuth scope {INVOKE_SCOPE})"
            )
        status = trust_status or "self-asserted"
        if status not in self.allowed_trust:
            allowed = ", ".join(self.allowed_trust)
            raise PermissionDenied(
                f"{identifier} is {status}; this registry calls only entries whose trust status is {allowed} (--invoke-trust)"
            )
