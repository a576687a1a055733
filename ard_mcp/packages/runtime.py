"""The package room as the invocation service uses it: from an entry's package to a running server, with the
person's consent checked on the way.

`prepare` is everything before a call: the registry of a seed record's `unknown` package resolved, the
approval looked up (or recorded, when the person just gave it), the package installed (or found in the
cache), its environment gathered. `session` is the running server for what `prepare` gave. `question` is what
the person is asked first: which registry, package and version, who says they publish it and how far that
was checked, and what it will need.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path

from anyio.abc import TaskGroup
from mcp import Client

from ard_mcp.errors import InvalidArgument, PermissionDenied
from ard_mcp.packages.cache import MARKER
from ard_mcp.packages.consent import Approval, Approvals
from ard_mcp.packages.environment import server_environment
from ard_mcp.packages.install import Installed, Installer, InstallRefused
from ard_mcp.packages.servers import PackageServers, Start
from ard_mcp.packages.settings import PackagePolicy
from ard_mcp.packages.specs import PackageSpec

ASKED = "the person, asked through their host"
APPROVED_FROM_CLI = "the command line"


@dataclass(frozen=True)
class Consent:
    """What the person answered when asked (`consent.PackageConsent`)."""

    network: bool


class PackageRuntime:
    def __init__(self, data_dir: Path, policy: PackagePolicy, group: TaskGroup | None, environ: dict[str, str]) -> None:
        """`group`: the serving registry's background task group, where running servers are held (without one,
        as in a one-shot command, nothing is started); `environ`: ard-mcp's own environment, a source of values (`environment`)."""
        root = data_dir / "packages"
        self.policy = policy
        self.approvals = Approvals(root)
        self.installer = Installer(root / "cache", policy.registries, policy.allow_unpinned)
        self._environ = environ
        self._servers: PackageServers | None = None
        if group is not None:
            self._servers = PackageServers(group, root / "servers", self.approvals, policy.confinement, policy.allow_unsandboxed)
        self._resolved: dict[str, PackageSpec] = {}
        # what an install gave, while its marker stands: the installer's check of the cache (its lock, its marker,
        # the package's entry points read again) was 0.25-0.6 ms of a warm call's 2.4-3.1 ms (bench/packages.py)
        self._installed: dict[str, Installed] = {}

    async def resolved(self, spec: PackageSpec) -> PackageSpec:
        """`spec` with a seed record's `unknown` registry resolved (kept: the answer is asked for once)."""
        key = spec.key()
        if key not in self._resolved:
            try:
                self._resolved[key] = await self.installer.resolve(spec)
            except InstallRefused as exc:
                raise InvalidArgument(str(exc)) from None
        return self._resolved[key]

    async def question(self, spec: PackageSpec, identifier: str, trust: str) -> str | None:
        """What to ask the person before `spec` is first installed, or None when it is approved already."""
        resolved = await self.resolved(spec)
        if self.approvals.get(resolved.key()) is not None:
            return None
        publisher = identifier.split(":", 3)[2] if identifier.count(":") >= 3 else identifier
        lines = [
            f"Install and start {resolved.registry} package {resolved.name} version {resolved.version or '(unpinned)'} for {identifier}?",
            f"The entry says {publisher} publishes it; trust status: {trust}.",
            "It runs in a sandbox: no access to your files, no network unless you allow it below.",
        ]
        if spec.registry == "unknown":
            lines.append(f"Its record names no registry: it was found on {resolved.registry} only, under that name.")
        if resolved.environment:
            shown = ", ".join(
                v.name + (" (secret)" if v.secret else "") + ("" if v.required else " (optional)") for v in resolved.environment
            )
            lines.append(f"It reads these environment variables, set by the operator, never typed here: {shown}.")
        return "\n".join(lines)

    async def prepare(self, spec: PackageSpec, consent: Consent | None) -> tuple[Start, Installed]:
        """The server to start for `spec`, installed; `consent` is the person's answer when they were just asked.
        PermissionDenied when it is neither approved nor consented to; InvalidArgument when it cannot be installed."""
        if not self.policy.enabled:
            raise PermissionDenied(f"package servers are off on this registry; {self.policy.turned_on_by}")
        resolved = await self.resolved(spec)
        approval = self.approvals.get(resolved.key()) or self._consented(resolved, consent)
        installed = self._installed.get(resolved.key())
        if installed is None or not (installed.directory / MARKER).is_file():
            try:
                installed = self._installed[resolved.key()] = await self.installer.install(resolved)
            except InstallRefused as exc:
                raise InvalidArgument(str(exc)) from None
        environment = server_environment(installed.spec, self.policy.secrets, self._environ)
        return Start(installed, approval.network, tuple(sorted(environment.items()))), installed

    def _consented(self, spec: PackageSpec, consent: Consent | None) -> Approval:
        if consent is not None:
            return self.approvals.allow(spec.key(), consent.network, ASKED)
        asked = "" if self.policy.ask else " (over HTTP only approved packages run)"
        raise PermissionDenied(
            f"{spec.key()} has not been approved to run here{asked}; approve it from the command line with "
            f"'ard-mcp packages allow {spec.key()}' (add --network to let it reach the network), or use a host that asks"
        )

    def session(self, start: Start, open_within: float, max_message_bytes: int) -> AbstractAsyncContextManager[Client]:
        """The running server for `start` (`PackageServers.session`); PermissionDenied where this process holds none."""
        if self._servers is None:
            raise PermissionDenied("package servers are started only by a serving registry (ard-mcp serve)")
        return self._servers.session(start, open_within, max_message_bytes)

    def close_all(self) -> None:
        if self._servers is not None:
            self._servers.close_all()
