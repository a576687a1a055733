"""Installing an npm package into its cache directory without running any of its code, and the command that
starts it.

`npm install --ignore-scripts` fetches the package and its dependencies and runs no lifecycle script
(`preinstall`, `install`, `postinstall`, `prepare`: the way an npm package runs code on the machine that
installs it). npm reads its settings from `~/.npmrc`, the global npmrc, `npm_config_*` variables and the
project's `.npmrc`; here it gets an empty user and global config, a clean environment (`processes`) and a
cache of its own, so the registry it uses is the one given (`--registry`) and nothing of the user's applies;
where the operator opts in, the operator's user config, under the command line's settings (`installer_config`).

Dependencies come from the allowed registries only. A package's dependency can name a tarball URL, a git
repository (`git+https://...`, `user/repo`) or a path (`file:`), and npm fetches each from there, even when the
package came from the registry; measured: a dependency on `http://127.0.0.1:PORT/x.tgz` is fetched from that
port. So npm runs in two steps, each through `egress` (every request it makes goes to an allowed registry or
is refused) with no git on its PATH (`processes`):

1. `npm install --package-lock-only` resolves the tree into a lockfile, reading packuments only (a tarball-URL
   or git dependency fails here: its request is refused, git is not found); the lockfile is checked before
   any package is fetched: every package must come from the registry (`inBundle` ones ship inside their
   parent; a `file:` dependency is a link to a directory), and the package be the approved version;
2. `npm ci` installs exactly that lockfile, which is checked again, with the version the package's own
   package.json says. The integrity npm verified the package against (`sha512-...`) is what the install records.
   Where `npm ci` refuses the lockfile npm itself just wrote (`EUSAGE ... Missing: x@ from lock file`), the
   same lockfile is installed with `npm install` (scripts off too), and it must come out unchanged. That is a
   package whose optional dependencies for other platforms were never published (`slack-mcp-server` 1.2.3
   names six `slack-mcp-server-<os>-<cpu>` packages, of which npm has one): the lock-only resolve skips an
   optional dependency it cannot fetch, and `npm ci` then finds the lockfile out of step with the package.json.
   `--os`/`--cpu`/`--include=optional` do not help, as the packages are not there to be locked.

A refusal names its cause: the dependency npm's debug log or last words name (`name@spec`, as its parent asks
for it), a pinned version the registry does not have (`refusal.VersionGone`, with the nearest newer release),
a dependency whose range matches no version, else npm's own leading `npm error` lines (its usage text, which
follows them for some errors, is left out: its last 2000 characters were once nothing else).

A package that needs its install script (a native addon compiled by node-gyp) installs here but fails when
started; its stderr says so. The server is started as `node <bin script> ARGS`, the script named by the package's `bin` (the entry of the
package's own name when it has several): the same program `npx <package>` would start, without npx, which
would look the package up again and could install another version.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import httpx

from ard_mcp.formats.bounded_json import UnreadableJson, read_json
from ard_mcp.packages import egress, installer_config, lookup, processes
from ard_mcp.packages.cache import private_dirs
from ard_mcp.packages.egress import Egress
from ard_mcp.packages.names import pinned_version, requirement
from ard_mcp.packages.refusal import InstallRefused, VersionGone, certificate, pointed_elsewhere
from ard_mcp.packages.specs import PackageSpec

_MAX_JSON = 64 * 1024 * 1024  # a lockfile of a package with thousands of dependencies runs to megabytes
_MAX_LOG = 4 * 1024 * 1024  # how much of the end of npm's debug log is read for the dependency it failed on
_FETCHED = re.compile(r"\bfetch manifest (\S+@\S+)")  # npm's debug log, for each dependency it resolves: name@spec
_UNSUPPORTED = re.compile(r'Unsupported URL Type "[^"]*": (\S+)')  # npm's last words on a spec it cannot fetch (`link:`)
_NO_VERSION = re.compile(r"No matching version found for (@?[^@\s]+)@(\S*?)\.?$", re.MULTILINE)  # ETARGET
_NOT_FOUND = re.compile(r"'(@?[^@\s']+)@[^'\s]*' (?:could not be found|is not in this registry)")  # E404, npm 11 and older
_LOG_ERROR = re.compile(r"^\d+ error ?(.*)$", re.MULTILINE)  # npm's debug log: `37 error Missing: ...`
_TAIL_ERROR = re.compile(r"^npm (?:error|ERR!) ?(.*)$", re.MULTILINE)  # its output (npm 10 on: `npm error`)
_SAID_CHARS = 1500


class _LockRefused(InstallRefused):
    """`npm ci` found the lockfile npm had just written out of step with the package.json (`EUSAGE`)."""


def _npm() -> str:
    found = shutil.which("npm")
    if found is None:
        raise InstallRefused("npm is not installed on this machine (it is needed to install npm packages)")
    return found


def _node() -> Path:
    found = shutil.which("node")
    if found is None:
        raise InstallRefused("node is not installed on this machine (it runs npm package servers)")
    return Path(found).resolve()


def _settings(cache: Path, registry: str, out: Egress, logs: Path, own: bool) -> list[str]:
    """npm's settings: on its command line, so they beat any npmrc; the operator's user config only where `own`."""
    home, npm_cache, _ = private_dirs(cache)
    for name in ("npmrc", "global-npmrc"):  # npm refuses one file as both
        (home / name).touch()
    return [
        "--registry",
        registry,
        "--userconfig",
        str(installer_config.npmrc() if own else home / "npmrc"),
        "--globalconfig",
        str(home / "global-npmrc"),
        "--cache",
        str(npm_cache),
        "--logs-dir",
        str(logs),
        "--no-update-notifier",
        "--proxy",
        out.url,
        "--https-proxy",
        out.url,
        "--noproxy=",  # loopback and private registries go through `egress` too
        # what an operator's npmrc could otherwise change (`installer_config`), as npm has it by default
        "--strict-ssl=true",
        "--git=git",  # the bare PATH has no git
        "--global=false",
        "--dry-run=false",
    ]


def _read(path: Path, what: str) -> Any:
    try:
        return read_json(path.read_bytes(), max_bytes=_MAX_JSON)
    except (OSError, UnreadableJson) as exc:
        raise InstallRefused(f"{what} cannot be read: {exc}") from None


def _elsewhere(logs: Path, tail: str) -> list[str]:
    """The dependencies (`name@spec`) npm was asked to fetch from somewhere other than a registry, as its debug
    log and its last words name them: a URL, a git repository, a GitHub shorthand (`user/repo`), a path."""
    found = _UNSUPPORTED.findall(tail)
    for log in sorted(logs.glob("*debug*.log")):
        for wanted in _FETCHED.findall(log.read_text(encoding="utf-8", errors="replace")[-_MAX_LOG:]):
            spec = wanted[1:].partition("@")[2]  # a scoped name starts with @ too
            if "/" in spec or (":" in spec and not spec.startswith("npm:")):
                found.append(wanted)
    return list(dict.fromkeys(found))


def _said(logs: Path, tail: str) -> str:
    """npm's own account of a failure: its `npm error` lines from the start (the debug log has them all; the
    output's tail may have lost the first), without the usage text some errors end with or the log's path."""
    lines: list[str] = []
    for log in sorted(logs.glob("*debug*.log"))[-1:]:
        lines = _LOG_ERROR.findall(log.read_text(encoding="utf-8", errors="replace")[-_MAX_LOG:])
    lines = lines or _TAIL_ERROR.findall(tail)
    if "Usage:" in lines:  # `<what the command does>`, a blank line, `Usage:`, its options
        lines = lines[: lines.index("Usage:")]
        while lines and not lines[-1].strip():
            lines.pop()
        lines = lines[:-1]
    words = " ".join(line.strip() for line in lines if line.strip() and not line.startswith("A complete log of this run"))
    return (words[:_SAID_CHARS] + " ...") if len(words) > _SAID_CHARS else words or tail[-2000:]


async def _missing(spec: PackageSpec, registry: str, tail: str, client: httpx.AsyncClient | None) -> InstallRefused | None:
    """Why npm found no package or version: the one asked for (a pinned version not there: `VersionGone`, with
    its nearest newer release), or a dependency (named, as its parent asks for it)."""
    gone = _NO_VERSION.search(tail)
    absent = _NOT_FOUND.search(tail)
    if gone is not None and gone[1] == spec.name:
        if not spec.version or pinned_version("npm", spec.version) != spec.version:  # a range or tag (`newest`)
            return InstallRefused(f"{spec.key()}: no release of {spec.name} on {registry} matches {spec.version or 'latest'}")
        newer = None
        with contextlib.suppress(lookup.LookupFailed):
            listed = await lookup.npm_versions(client, registry, spec.name) if client is not None else None
            newer = lookup.nearest_newer("npm", listed or (), spec.version)
        return VersionGone(spec.key(), registry, "npm", spec.name, spec.version, newer)
    if gone is not None:
        listed = None
        with contextlib.suppress(lookup.LookupFailed):
            listed = await lookup.npm_versions(client, registry, gone[1]) if client is not None else None
        has = sorted(listed, key=lambda v: lookup.semver_key(v) or ())[-5:] if listed else []
        there = f" (it has {', '.join(has)})" if has else ""
        return InstallRefused(f"{spec.key()}: its dependency {gone[1]}@{gone[2]} matches no version on {registry}{there}")
    if absent is not None and absent[1] != spec.name:
        return InstallRefused(f"{spec.key()}: its dependency {absent[1]} is not on {registry}")
    if "E404" in tail:
        return InstallRefused(f"{spec.key()}: no package {spec.name} on {registry}")
    return None


async def _failure(
    spec: PackageSpec, registry: str, finished: processes.Finished, out: Egress, logs: Path, client: httpx.AsyncClient | None, own: bool
) -> InstallRefused:
    kinds = "a tarball URL, a git repository or a path on this machine"
    said = out.said() if out.refused else ""
    elsewhere = pointed_elsewhere(spec.key(), _elsewhere(logs, finished.tail), kinds, f"the registry {registry}", "npm", said)
    if elsewhere is not None:
        return elsewhere
    unverified = certificate(spec.key(), finished.tail, registry, "NODE_EXTRA_CA_CERTS")
    if unverified is not None:
        return unverified
    denied = installer_config.refused(spec.key(), f"the registry {registry}", finished.tail, "npm", own)
    if denied is not None:
        return denied
    if "spawn git" in finished.tail:
        return InstallRefused(f"{spec.key()}: a dependency is a git repository, and git is not run here: only packages from {registry}")
    missing = await _missing(spec, registry, finished.tail, client)
    if missing is not None:
        return missing
    words = _said(logs, finished.tail)
    if "EUSAGE" in finished.tail and "from lock file" in words:
        return _LockRefused(f"{spec.key()}: npm ci refused the lockfile npm wrote: {words}")
    return InstallRefused(f"{spec.key()}: npm could not install it (exit {finished.returncode}): {words}")


async def _npm_run(
    what: str,
    spec: PackageSpec,
    argv: list[str],
    registry: str,
    allowed: Sequence[str],
    cache: Path,
    cwd: Path,
    timeout: float,
    client: httpx.AsyncClient | None = None,
    own: bool = False,
) -> str:
    """Run npm with `argv` (its settings appended) through `egress`; its stdout, or InstallRefused saying why it
    failed. `own`: with the operator's own npm configuration (`installer_config`)."""
    home, _, _ = private_dirs(cache)
    logs = Path(tempfile.mkdtemp(prefix="npm-logs-", dir=home))
    try:
        async with egress.proxy(allowed) as out:
            env = processes.clean_environment(cache, {**(installer_config.npm_environment() if own else {}), **out.environment()})
            finished = await processes.run(what, [*argv, *_settings(cache, registry, out, logs, own)], env, cwd, timeout)
        if finished.returncode != 0:
            raise await _failure(spec, registry, finished, out, logs, client, own)
        return finished.stdout
    finally:
        shutil.rmtree(logs, ignore_errors=True)


async def newest(
    spec: PackageSpec, registry: str, allowed: Sequence[str], cache: Path, timeout: float, client: httpx.AsyncClient, own: bool
) -> str:
    """The release npm would install for an unpinned version (a range, a dist-tag, none: `latest`)."""
    try:
        wanted = requirement("npm", spec.name, spec.version)
    except ValueError as exc:
        raise InstallRefused(f"{spec.key()}: {exc}") from None
    argv = [_npm(), "view", wanted, "version", "--json"]
    said = await _npm_run("npm view", spec, argv, registry, allowed, cache, cache, timeout, client, own)
    if not said:
        raise InstallRefused(f"{spec.key()}: no release of {spec.name} on {registry} matches {spec.version or 'latest'}")
    try:
        found = read_json(said.encode(), max_bytes=processes.TAIL_BYTES)
    except UnreadableJson:
        raise InstallRefused(f"{spec.key()}: npm view said {said[-500:]!r}, not a version") from None
    versions = found if isinstance(found, list) else [found]
    version = pinned_version("npm", str(versions[-1])) if versions else None
    if version is None:
        raise InstallRefused(f"{spec.key()}: no release of {spec.name} on {registry} matches {spec.version or 'latest'}")
    return version


def _links_first(stray: str) -> bool:
    return " is a link to " not in stray


def _locked(spec: PackageSpec, directory: Path, registry: str) -> str:
    """The package's integrity from npm's lockfile, every package of which must come from `registry`."""
    lock = _read(directory / "package-lock.json", f"{spec.key()}: npm's lockfile")
    packages = lock.get("packages") if isinstance(lock, dict) else None
    if not isinstance(packages, dict):
        raise InstallRefused(f"{spec.key()}: npm's lockfile lists no packages")
    prefix = registry.rstrip("/") + "/"
    strays = [
        f"{path} is a link to {entry.get('resolved')!r}, a directory on this machine"
        if entry.get("link")
        else f"{path} came from {entry['resolved']!r}"
        if entry.get("resolved")
        else f"{path} is a directory on this machine"
        for path, entry in packages.items()
        if path and isinstance(entry, dict) and not entry.get("inBundle") and not str(entry.get("resolved", "")).startswith(prefix)
    ]
    if strays:
        raise InstallRefused(f"{spec.key()}: {'; '.join(sorted(strays, key=_links_first))}: not from the registry {registry}")
    own = packages.get(f"node_modules/{spec.name}")
    own = own if isinstance(own, dict) else {}
    integrity = own.get("integrity")
    if not isinstance(integrity, str) or not integrity:
        raise InstallRefused(f"{spec.key()}: {registry} gave no integrity for it, so what was installed cannot be told")
    if own.get("version") != spec.version:
        raise InstallRefused(f"{spec.key()}: npm resolved version {own.get('version')!r}, not {spec.version}")
    return integrity


async def install(
    spec: PackageSpec,
    directory: Path,
    registry: str,
    allowed: Sequence[str],
    cache: Path,
    timeout: float,
    client: httpx.AsyncClient,
    own: bool,
) -> str:
    """Install `spec` (pinned) into `directory`; the package's integrity. First the tree is resolved into a
    lockfile alone (packuments only), which is checked before any package is fetched; then exactly that
    lockfile is installed, and checked again with the package's own package.json. `own`: with the
    operator's own npm configuration (`installer_config`)."""
    common = ["--prefix", str(directory), "--ignore-scripts", "--no-audit", "--no-fund", "--omit=dev"]
    deadline = anyio.current_time() + timeout

    def left() -> float:
        return max(deadline - anyio.current_time(), 0.001)

    argv = [_npm(), "install", f"{spec.name}@{spec.version}", "--package-lock-only", "--save-exact", *common]
    await _npm_run("npm install --package-lock-only", spec, argv, registry, allowed, cache, directory, timeout, client, own)
    _locked(spec, directory, registry)
    checked = _tree(spec, directory)
    try:
        await _npm_run("npm ci", spec, [_npm(), "ci", *common], registry, allowed, cache, directory, left(), client, own)
    except _LockRefused as refused:
        await _npm_run("npm install", spec, [_npm(), "install", *common], registry, allowed, cache, directory, left(), client, own)
        if _tree(spec, directory) != checked:
            raise InstallRefused(f"{spec.key()}: installing the lockfile npm ci refused changed what it resolved ({refused})") from None
    integrity = _locked(spec, directory, registry)
    manifest = _read(directory / "node_modules" / spec.name / "package.json", f"{spec.key()}: its package.json")
    said = manifest.get("version") if isinstance(manifest, dict) else None
    if said != spec.version:
        raise InstallRefused(f"{spec.key()}: the package npm installed says it is version {said!r}, not {spec.version}")
    return integrity


def _tree(spec: PackageSpec, directory: Path) -> Any:
    """The packages npm's lockfile holds (each with its version, source and integrity)."""
    lock = _read(directory / "package-lock.json", f"{spec.key()}: npm's lockfile")
    return lock.get("packages") if isinstance(lock, dict) else None


def _bin(spec: PackageSpec, manifest: Any) -> str:
    """The package's script to run: its `bin`, or the entry of its own (unscoped) name when it lists several."""
    bins = manifest.get("bin") if isinstance(manifest, dict) else None
    if isinstance(bins, str):
        return bins
    if isinstance(bins, dict) and bins:
        own = spec.name.rpartition("/")[2]
        chosen = bins.get(own, bins.get(spec.name)) if len(bins) > 1 else next(iter(bins.values()))
        if isinstance(chosen, str):
            return chosen
        raise InstallRefused(f"{spec.key()}: it has several programs ({', '.join(sorted(bins))}) and none is named {own}")
    raise InstallRefused(f"{spec.key()}: its package.json names no program (bin) to start")


def command(spec: PackageSpec, directory: Path) -> tuple[tuple[str, ...], tuple[Path, ...]]:
    """The argv that starts the installed server, and the host directories it needs (node's installation)."""
    package_dir = (directory / "node_modules" / spec.name).resolve()
    script = (package_dir / _bin(spec, _read(package_dir / "package.json", f"{spec.key()}: its package.json"))).resolve()
    if not script.is_relative_to(package_dir) or not script.is_file():
        raise InstallRefused(f"{spec.key()}: its program {script} is not a file inside the package")
    node = _node()
    return (str(node), *spec.runtime_arguments, str(script), *spec.package_arguments), (node.parent.parent,)
