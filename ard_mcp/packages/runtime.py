"""The package room as the invocation service uses it: from an entry's package to a running server, with the
person's consent checked on the way.

`plan` is exactly what would run (`plans.LaunchPlan`), a seed record's `unknown` registry resolved and the
launch screened (`screened`: no variable that changes how a program starts, no interpreter argument that
runs other code unless the operator allows it). `question` is what the person is asked first: ard-mcp's own
words (`question`), with the digest of what it showed. `prepare` is everything before a call: the
approval looked up, or recorded when the person just answered the very question the launch still matches,
the package installed (or found in the cache), its integrity checked against the approval, its environment
gathered. `session` is the running server for what `prepare` gave.

Nothing is kept by package name alone: resolving `unknown` keeps only which registry holds a name; the
launch a call prepares, and the install it runs, are kept per plan digest, so an entry naming an approved
package with its own arguments never borrows (or leaves behind) another entry's launch.
"""

from __future__ import annotations

import dataclasses
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path

from anyio.abc import TaskGroup
from mcp import Client

from ard_mcp.errors import InvalidArgument, PermissionDenied
from ard_mcp.formats import package_variables
from ard_mcp.packages import grants, interpreter_flags, names, question
from ard_mcp.packages.cache import MARKER
from ard_mcp.packages.consent import Approval, Approvals
from ard_mcp.packages.environment import server_environment
from ard_mcp.packages.install import Installed, Installer, InstallRefused, VersionGone
from ard_mcp.packages.plans import PREFIX, LaunchPlan, plan_of
from ard_mcp.packages.servers import PackageServers, Start
from ard_mcp.packages.settings import PackagePolicy
from ard_mcp.packages.specs import PackageSpec
from ard_mcp.redaction import Redactor

ASKED = "the person, asked through their host"
APPROVED_FROM_CLI = "the command line"


@dataclass(frozen=True)
class Consent:
    """What the person answered (`consent.PackageConsent`), and the digest of the launch they were shown."""

    network: bool
    web_pages: bool
    plan: str
    path: str | None = None  # the folder or file they typed, where the launch takes one (`grants`)
    writable: bool = False


@dataclass(frozen=True)
class Asked:
    """A question to put to the person, the digest of the launch it shows, and what it asks for besides
    ("folder" or "file", where the launch takes one, else an optional root folder: `grants.asked_for`)."""

    text: str
    plan: str
    asks_for: str = grants.ROOT
    needs_network: bool = False  # the network box ticked by default (`question.network_reasons`)


class PackageRuntime:
    def __init__(
        self, data_dir: Path, policy: PackagePolicy, group: TaskGroup | None, environ: dict[str, str], redactor: Redactor | None = None
    ) -> None:
        """`group`: the serving registry's background task group, where running servers are held (without one,
        as in a one-shot command, nothing is started); `environ`: ard-mcp's own environment, a source of values
        (`environment`); `redactor`: the operator's secrets, kept out of the servers' stderr files."""
        root = data_dir / "packages"
        self._data_dir = data_dir
        self.policy = policy
        self.approvals = Approvals(root)
        self.installer = Installer(root / "cache", policy.registries, policy.allow_unpinned)
        self._environ = environ
        self._servers: PackageServers | None = None
        if group is not None:
            servers = root / "servers"
            self._servers = PackageServers(group, servers, self.approvals, policy.confinement, policy.allow_unsandboxed, redactor)
        self._registry_of: dict[str, str] = {}  # an `unknown` record's name -> the one registry that has it
        # (registry, name, pinned version the registry no longer has) -> its nearest newer release, found by an install:
        # the next call plans that one, a new launch the person is asked about afresh (issue #54)
        self._newer: dict[tuple[str, str, str], str] = {}
        # what an install gave, per plan, while its marker stands: the installer's check of the cache (its lock, its marker,
        # the package's entry points read again) was 0.25-0.6 ms of a warm call's 2.4-3.1 ms (bench/packages.py)
        self._installed: dict[str, Installed] = {}

    async def resolved(self, spec: PackageSpec) -> PackageSpec:
        """`spec` with a seed record's `unknown` registry resolved (which registry has the name is asked once, and
        only that is kept: the rest is this spec's own); InstallRefused when it cannot be."""
        if spec.registry == "unknown":
            if spec.name not in self._registry_of:
                self._registry_of[spec.name] = (await self.installer.resolve(spec)).registry
            registry = self._registry_of[spec.name]
            spec = dataclasses.replace(spec, registry=registry, version=names.pinned_version(registry, spec.version) or spec.version)
        resolved = await self.installer.resolve(spec)
        newer = self._newer.get((resolved.registry, resolved.name, str(resolved.version)))
        return dataclasses.replace(resolved, version=newer) if newer else resolved

    def _replaced(self, spec: PackageSpec, resolved: PackageSpec) -> str | None:
        """The version `spec` pins where `resolved` is its nearest newer release instead, else None."""
        pinned = names.pinned_version(resolved.registry, spec.version) or spec.version
        return pinned if pinned != resolved.version and self._newer.get((resolved.registry, resolved.name, str(pinned))) else None

    async def plan(self, spec: PackageSpec) -> tuple[PackageSpec, LaunchPlan]:
        """The resolved spec and exactly what would run; InvalidArgument for a launch that may not run here."""
        try:
            resolved = await self.resolved(spec)
            source = self.installer.registries.url_for(resolved)
        except InstallRefused as exc:
            raise InvalidArgument(str(exc)) from None
        plan = plan_of(resolved, source)
        refused = screened(plan, self.policy.allow_interpreter_code)
        if refused is not None:
            raise InvalidArgument(f"{plan.key} will not be started: {refused}")
        return resolved, plan

    async def question(self, spec: PackageSpec, identifier: str, trust: str) -> Asked | None:
        """What to ask the person before `spec` is first installed, or None when it is approved already.
        InvalidArgument where it could not run anyway (a refused launch, a required value the operator has not
        set): nothing is asked then, and the call says why."""
        resolved, plan = await self.plan(spec)
        approval = self.approvals.get(plan.digest)
        if approval is not None and approval.changed is None:
            return None
        values = server_environment(resolved, self.policy.secrets, self._environ)
        earlier = approval or next(iter(self.approvals.of_package(plan.registry, plan.name)), None)
        replaced = self._replaced(spec, resolved)
        text = question.text(plan, resolved, identifier, trust, earlier, values, spec.registry == "unknown", replaced)
        return Asked(text, plan.digest, grants.asked_for(plan.package_arguments), bool(question.network_reasons(plan)))

    async def prepare(self, spec: PackageSpec, consent: Consent | None) -> tuple[Start, Installed]:
        """The server to start for `spec`, installed; `consent` is the person's answer when they were just asked.
        PermissionDenied when it is neither approved nor consented to; InvalidArgument when it cannot be installed."""
        if not self.policy.enabled:
            raise PermissionDenied(f"package servers are off on this registry; {self.policy.turned_on_by}")
        resolved, plan = await self.plan(spec)
        environment = server_environment(resolved, self.policy.secrets, self._environ)  # a missing value: said before approving
        approval = self.approvals.get(plan.digest)
        answered = consent is not None and consent.plan == plan.digest
        if consent is not None and not answered and (approval is None or approval.changed is not None):
            raise PermissionDenied(
                f"{plan.key}: what would run changed while the person was asked (shown launch {consent.plan}, now {plan.digest}): "
                "nothing was installed or started; call again to be asked about what it is now"
            )
        if approval is None and not answered:
            self.approvals.request(plan)
            raise PermissionDenied(self._not_approved(plan))
        grant = self._grant(plan, approval, consent if answered else None)
        installed = await self._install(resolved, plan)
        approval = self._approved(plan, approval, consent if answered else None, installed.integrity, grant)
        start = Start(plan, installed, approval.network, approval.web_pages, tuple(sorted(environment.items())), approval.grant)
        return start, installed

    def _grant(self, plan: LaunchPlan, approval: Approval | None, consent: Consent | None) -> grants.Grant | None:
        """The folder or file the launch is given: what the person just typed (checked), else the approval's; for
        a launch with no slot, the folder they chose to give it, if any."""
        kind = grants.needed(plan.package_arguments)
        if kind is None:
            if consent is not None:
                return grants.checked(consent.path, "folder", consent.writable, self._data_dir) if consent.path else None
            return approval.grant if approval is not None else None
        if consent is not None:
            return grants.checked(consent.path or "", kind, consent.writable, self._data_dir)
        if approval is None or approval.grant is None:
            raise PermissionDenied(
                f"{plan.key} works on a {kind} of the person's, and none was given: approve it from a host that asks, or with "
                f"'ard-mcp packages allow {PREFIX}{plan.digest} --{kind} PATH'"
            )
        return approval.grant

    def _approved(
        self, plan: LaunchPlan, approval: Approval | None, consent: Consent | None, integrity: str, grant: grants.Grant | None
    ) -> Approval:
        """The approval that lets `plan` run with files of `integrity`: recorded now when the person just said yes
        (a failed install records nothing), pinned on the first install after an approval from the command line;
        PermissionDenied when the files differ from those approved and the person was not just asked about it."""
        if consent is not None:
            return self.approvals.allow(plan, consent.network, ASKED, integrity, consent.web_pages, grant)
        assert approval is not None
        if approval.integrity is None or approval.integrity == integrity:
            if approval.integrity is None or approval.changed is not None:
                self.approvals.record_integrity(plan.digest, integrity, matches=True)
            return approval
        self.approvals.record_integrity(plan.digest, integrity, matches=False)
        self.approvals.request(plan)  # so that `allow plan:DIGEST` approves it with the files it has now
        again = "call it again from a host that asks, or " if self.policy.ask else ""
        raise PermissionDenied(
            f"{plan.key}: the files installed ({integrity}) are not the ones approved ({approval.integrity}); nothing was started. "
            f"To run them, {again}approve them with 'ard-mcp packages allow {PREFIX}{plan.digest}'"
        )

    def _not_approved(self, plan: LaunchPlan) -> str:
        asked = "" if self.policy.ask else " (over HTTP only approved launches run)"
        return (
            f"{plan.key} has not been approved to run here with this launch{asked}; approve exactly this launch from the command "
            f"line with 'ard-mcp packages allow {PREFIX}{plan.digest}' (it shows what runs; add --network to let it reach the "
            "network), or use a host that asks"
        )

    async def _install(self, resolved: PackageSpec, plan: LaunchPlan) -> Installed:
        installed = self._installed.get(plan.digest)
        if installed is None or not (installed.directory / MARKER).is_file():
            try:
                installed = self._installed[plan.digest] = await self.installer.install(resolved)
            except VersionGone as exc:
                if exc.newer is None:
                    raise InvalidArgument(str(exc)) from None
                self._newer[(exc.registry, exc.name, exc.version)] = exc.newer
                raise InvalidArgument(
                    f"{plan.key}: {plan.source} no longer has version {exc.version} of {exc.name}, so nothing was installed; "
                    f"its nearest newer release is {exc.newer}: call again to be asked about that one (approved afresh, never "
                    "carried over)"
                ) from None
            except InstallRefused as exc:
                raise InvalidArgument(str(exc)) from None
        return installed

    def session(self, start: Start, open_within: float, max_message_bytes: int) -> AbstractAsyncContextManager[Client]:
        """The running server for `start` (`PackageServers.session`); PermissionDenied where this process holds none."""
        if self._servers is None:
            raise PermissionDenied("package servers are started only by a serving registry (ard-mcp serve)")
        return self._servers.session(start, open_within, max_message_bytes)

    def close_all(self) -> None:
        if self._servers is not None:
            self._servers.close_all()


def screened(plan: LaunchPlan, allow_interpreter_code: bool) -> str | None:
    """Why `plan` may not run whatever the person says, or None: a declared variable that changes how a program
    starts (`formats.package_variables`), an interpreter argument that runs other code (`interpreter_flags`)."""
    for name, _ in plan.variables:
        refused = package_variables.refusal(name)
        if refused is not None:
            return refused
    if allow_interpreter_code:
        return None
    refused = interpreter_flags.refused(plan.registry, plan.runtime_arguments)
    return f"{refused} (the operator can allow such arguments with --allow-interpreter-code)" if refused else None
