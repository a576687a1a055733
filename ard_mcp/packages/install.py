"""Installing a package server: the package a spec names, from a registry the operator allows, pinned, into
the cache (`cache`), without running any of the publisher's code (`npm`, `pypi`); and the command that starts it.

What is refused, each with its reason (`InstallRefused`): a version that pins no release (`None`, `latest`,
`^1.2`, `>=1.0`) unless the operator allows unpinned ones (then the newest release is installed and its
version recorded, so the key the person consents to is still one release); a registry the operator does not
allow, and a `registryBaseUrl` that is not among the allowed URLs (a record cannot send the installer to a
registry of its own choosing); a PyPI package with no wheel for this platform (a source build runs the
publisher's code); a seed record's `unknown` registry unless exactly one allowed registry has the name; a
dependency from anywhere but an allowed registry (a URL, a repository, a path: every request the installers
make goes through `egress`, which lets through only the allowed registries), and an installed version other
than the approved one (`npm`, `pypi`). A pinned version the registry does not have is `VersionGone`, which
names the nearest newer release (a consent flow may offer it as a new question).

Where the operator opts in (`Registries.installer_config`), the installers read the operator's own npm and pip
configuration for the allowed registries (credentials, a CA, timeouts: `installer_config`), and so does the
registry lookup (the operator's netrc). A refusal never holds a credential: those files' and the registry URLs'
own (`https://user:password@host/simple`) are redacted from it.

An install is done once: a complete one in the cache is reused without running anything (its marker is
written last), a half-done one is removed and done again, and two installs of one version wait for each
other (a lock file).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import netrc
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from ard_mcp.formats.timestamps import utc_text
from ard_mcp.packages import installer_config, lookup, names, npm, processes, pypi, shared_files
from ard_mcp.packages.cache import completed, fresh, locked, mark_complete, version_dir
from ard_mcp.packages.refusal import InstallRefused, VersionGone
from ard_mcp.packages.specs import PackageSpec
from ard_mcp.redaction import Redactor

__all__ = ["InstallRefused", "Installed", "Installer", "Registries", "VersionGone"]

log = logging.getLogger(__name__)
LOOKUP_TIMEOUT_S = 30.0  # one registry question (the installers themselves get the installer's timeout)
_UNPINNED_HINT = "pin one release in the server description, or the operator allows unpinned versions"


@dataclass(frozen=True)
class Registries:
    """The registries the operator allows: the public npm registry and PyPI's simple index unless told
    otherwise. A package's `registryBaseUrl` is honoured only when it is among these; without one, the first
    of its registry is used. `installer_config`: npm and pip reach them with the operator's own configuration."""

    npm: tuple[str, ...] = ("https://registry.npmjs.org",)
    pypi: tuple[str, ...] = ("https://pypi.org/simple",)
    installer_config: bool = False

    def urls(self, registry: str) -> tuple[str, ...]:
        return tuple(url.rstrip("/") for url in (self.npm if registry == "npm" else self.pypi if registry == "pypi" else ()))

    def url_for(self, spec: PackageSpec) -> str:
        """The URL to install `spec` from; InstallRefused when its registry, or its `registryBaseUrl`, is not allowed."""
        allowed = self.urls(spec.registry)
        if not allowed:
            raise InstallRefused(f"{spec.key()}: the operator allows no {spec.registry} registry")
        if spec.registry_base_url is None:
            return allowed[0]
        asked = spec.registry_base_url.rstrip("/")
        # PyPI's registryBaseUrl names the registry (https://pypi.org); pip is given its simple index
        for url in (asked, f"{asked}/simple") if spec.registry == "pypi" else (asked,):
            if url in allowed:
                return url
        raise InstallRefused(
            f"{spec.key()}: its registryBaseUrl {spec.registry_base_url} is not among the {spec.registry} registries the operator "
            f"allows ({', '.join(allowed)})"
        )


@dataclass(frozen=True)
class Installed:
    spec: PackageSpec  # resolved: registry npm or pypi, version pinned
    directory: Path  # <cache>/<registry>/<name>/<version>/
    command: tuple[str, ...]  # argv that starts it as a stdio MCP server: absolute paths, its arguments appended
    runtime_dirs: tuple[Path, ...]  # host directories the command reads (node's or Python's installation)
    integrity: str  # npm: the lockfile's `sha512-...`; PyPI: `sha256=...` of the wheel
    resolved_from: str | None  # how a seed record's `unknown` registry was resolved
    note: str | None = None  # what the install did otherwise than asked: PyPI dependencies resolved as of today (`pypi`)


class Installer:
    def __init__(self, cache: Path, registries: Registries = Registries(), allow_unpinned: bool = False, timeout: float = 300) -> None:
        self.cache = cache.resolve()
        self.registries = registries
        self.allow_unpinned = allow_unpinned
        self.timeout = timeout

    def _client(self) -> httpx.AsyncClient:
        """For the lookups: with the operator's netrc where they opted in, as pip has it (`installer_config`)."""
        auth = None
        if self.registries.installer_config and installer_config.netrc().is_file():
            with contextlib.suppress(OSError, netrc.NetrcParseError):  # pip, which reads it too, says nothing of one it cannot read
                auth = httpx.NetRCAuth(str(installer_config.netrc()))
        return httpx.AsyncClient(timeout=LOOKUP_TIMEOUT_S, follow_redirects=False, auth=auth)

    def _redact(self, refused: InstallRefused) -> None:
        """Take every credential out of `refused`'s message: the registry URLs' own passwords, and those of the
        operator's npm and pip configuration where it is read."""
        urls = [*self.registries.npm, *self.registries.pypi]
        known = [password for url in urls if (password := urlsplit(url).password)]
        redactor = Redactor([*known, *(installer_config.secrets() if self.registries.installer_config else [])])
        refused.args = (redactor.text(str(refused)),)

    async def resolve(self, spec: PackageSpec) -> PackageSpec:
        """`spec` with an `unknown` registry made npm or pypi: the one allowed registry that has the name;
        InstallRefused when both have it, neither has, or they cannot be asked. Other specs are returned as they are."""
        try:
            return (await self._resolved(spec))[0]
        except InstallRefused as refused:
            self._redact(refused)
            raise

    async def _resolved(self, spec: PackageSpec) -> tuple[PackageSpec, str | None]:
        if not names.valid_name(spec.registry, spec.name) or spec.registry not in (*names.REGISTRIES, "unknown"):
            raise InstallRefused(f"{spec.key()}: not a package name npm or PyPI can hold")
        if spec.registry == "pypi":
            return dataclasses.replace(spec, name=names.canonical_pypi(spec.name)), None
        if spec.registry != "unknown":
            return spec, None
        asked: list[str] = []
        found: list[tuple[str, str]] = []
        try:
            async with self._client() as client:
                for registry, has in (("npm", lookup.on_npm), ("pypi", lookup.on_pypi)):
                    urls = self.registries.urls(registry) if names.valid_name(registry, spec.name) else ()
                    asked += urls
                    for url in urls:
                        if await has(client, url, spec.name):
                            found.append((registry, url))
                            break
        except lookup.LookupFailed as exc:
            raise InstallRefused(f"{spec.key()}: which registry has it cannot be told: {exc}") from None
        where = ", ".join(asked) or "no allowed registry can hold that name"
        if not found:
            raise InstallRefused(f"{spec.key()}: the record names no registry, and neither npm nor PyPI has {spec.name} (asked {where})")
        if len(found) > 1:
            raise InstallRefused(
                f"{spec.key()}: the record names no registry, and both npm and PyPI have a package {spec.name}: "
                "which one it means cannot be told"
            )
        registry, url = found[0]
        name = names.canonical_pypi(spec.name) if registry == "pypi" else spec.name
        version = names.pinned_version(registry, spec.version) or spec.version
        label = "npm" if registry == "npm" else "PyPI"
        return dataclasses.replace(spec, registry=registry, name=name, version=version), f"found on {label} only ({url}; asked {where})"

    async def _pinned(self, spec: PackageSpec, url: str) -> PackageSpec:
        version = names.pinned_version(spec.registry, spec.version)
        if version is None:
            if not self.allow_unpinned:
                raise InstallRefused(f"{spec.key()}: version {spec.version or '(none)'} does not pin one release; {_UNPINNED_HINT}")
            newest = npm.newest if spec.registry == "npm" else pypi.newest
            async with self._client() as client:  # the registry is asked why, where none is found
                allowed, own = self.registries.urls(spec.registry), self.registries.installer_config
                version = await newest(spec, url, allowed, self.cache, self.timeout, client, own)
        return dataclasses.replace(spec, version=version)

    async def install(self, spec: PackageSpec) -> Installed:
        """Install `spec` (or reuse its install in the cache) and say how to start it; InstallRefused saying why not."""
        try:
            return await self._installed(spec)
        except InstallRefused as refused:
            self._redact(refused)
            raise

    async def _installed(self, spec: PackageSpec) -> Installed:
        spec, how = await self._resolved(spec)
        url = self.registries.url_for(spec)
        try:
            spec = await self._pinned(spec, url)
            directory = version_dir(self.cache, spec.registry, spec.name, str(spec.version))
            async with locked(directory, self.timeout):
                marker = completed(directory)
                # a PyPI install runs with a Python of the version it was made for: where it records none, or this machine
                # no longer has that version, it is made again (for a Python that is here)
                made_for = pypi.made_for(directory) if spec.registry == "pypi" else True
                if marker is None or marker.get("from") != url or not isinstance(marker.get("integrity"), str) or made_for is None:
                    marker = await self._install(spec, url, directory)
                command, runtime_dirs = (npm.command if spec.registry == "npm" else pypi.command)(spec, directory)
        except processes.TimedOut as exc:
            raise InstallRefused(f"{spec.key()}: {exc}") from None
        except TimeoutError:
            raise InstallRefused(f"{spec.key()}: another install of it was still running after {self.timeout:g} s") from None
        except ValueError as exc:
            raise InstallRefused(f"{spec.key()}: {exc}") from None
        note = marker.get("note")
        return Installed(spec, directory, command, runtime_dirs, str(marker["integrity"]), how, note if isinstance(note, str) else None)

    async def _install(self, spec: PackageSpec, url: str, directory: Path) -> dict[str, str]:
        """Install into a fresh `directory`, checking it can be started; the directory is removed if anything fails."""
        fresh(directory)
        allowed = self.registries.urls(spec.registry)  # what the installer may reach (`egress`)
        note = None
        try:
            async with self._client() as client:  # the registry is asked why, where an install fails
                own = self.registries.installer_config
                if spec.registry == "npm":
                    integrity = await npm.install(spec, directory, url, allowed, self.cache, self.timeout, client, own)
                else:
                    integrity, note = await pypi.install(spec, directory, url, allowed, self.cache, self.timeout, client, own)
            (npm.command if spec.registry == "npm" else pypi.command)(spec, directory)
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        kept = shared_files.share(directory, self.cache)  # identical files of other installs take disk once
        log.info("%s installed; %d files (%.1f MiB) shared with other installs", spec.key(), kept.files, kept.bytes / 2**20)
        marker = {"key": spec.key(), "from": url, "integrity": integrity, "at": utc_text(datetime.now(UTC), "seconds")}
        if note is not None:  # PyPI dependencies resolved as of today, not of the release (`pypi.install`)
            marker["note"] = note
        mark_complete(directory, marker)
        return marker
