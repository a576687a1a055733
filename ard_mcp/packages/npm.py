"""Installing an npm package into its cache directory without running any of its code, and the command that
starts it.

`npm install --ignore-scripts` fetches the package and its dependencies and runs no lifecycle script
(`preinstall`, `install`, `postinstall`, `prepare`: the way an npm package runs code on the machine that
installs it). npm reads its settings from `~/.npmrc`, the global npmrc, `npm_config_*` variables and the
project's `.npmrc`; here it gets an empty user and global config, a clean environment (`processes`) and a
cache of its own, so the registry it uses is the one given (`--registry`) and nothing of the user's applies.

Afterwards the lockfile is checked: every package must have come from that registry (a dependency on a git
repository or a tarball URL would have been fetched from elsewhere; `inBundle` ones ship inside their parent),
and the integrity npm verified the package against (`sha512-...`) is what the install records.

A package that needs its install script (a native addon compiled by node-gyp) installs here but fails when
started; its stderr says so. The server is started as `node <bin script> ARGS`, the script named by the package's `bin` (the entry of the
package's own name when it has several): the same program `npx <package>` would start, without npx, which
would look the package up again and could install another version.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from ard_mcp.formats.bounded_json import UnreadableJson, read_json
from ard_mcp.packages import processes
from ard_mcp.packages.cache import private_dirs
from ard_mcp.packages.names import pinned_version, requirement
from ard_mcp.packages.refusal import InstallRefused
from ard_mcp.packages.specs import PackageSpec

_MAX_JSON = 64 * 1024 * 1024  # a lockfile of a package with thousands of dependencies runs to megabytes


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


def _settings(cache: Path, registry: str) -> list[str]:
    home, npm_cache, _ = private_dirs(cache)
    for name in ("npmrc", "global-npmrc"):  # npm refuses one file as both
        (home / name).touch()
    return [
        "--registry",
        registry,
        "--userconfig",
        str(home / "npmrc"),
        "--globalconfig",
        str(home / "global-npmrc"),
        "--cache",
        str(npm_cache),
        "--no-update-notifier",
    ]


def _read(path: Path, what: str) -> Any:
    try:
        return read_json(path.read_bytes(), max_bytes=_MAX_JSON)
    except (OSError, UnreadableJson) as exc:
        raise InstallRefused(f"{what} cannot be read: {exc}") from None


def _failure(spec: PackageSpec, registry: str, finished: processes.Finished) -> InstallRefused:
    if "E404" in finished.tail:
        return InstallRefused(f"{spec.key()}: no package {spec.name} on {registry}")
    if "ETARGET" in finished.tail:
        return InstallRefused(f"{spec.key()}: {registry} has no version {spec.version} of {spec.name}")
    return InstallRefused(f"{spec.key()}: npm could not install it (exit {finished.returncode}): {finished.tail[-2000:]}")


async def newest(spec: PackageSpec, registry: str, cache: Path, timeout: float) -> str:
    """The release npm would install for an unpinned version (a range, a dist-tag, none: `latest`)."""
    try:
        wanted = requirement("npm", spec.name, spec.version)
    except ValueError as exc:
        raise InstallRefused(f"{spec.key()}: {exc}") from None
    argv = [_npm(), "view", wanted, "version", "--json", *_settings(cache, registry)]
    finished = await processes.run("npm view", argv, processes.clean_environment(cache / ".home", {}), cache, timeout)
    if finished.returncode != 0:
        raise _failure(spec, registry, finished)
    if not finished.stdout:
        raise InstallRefused(f"{spec.key()}: no release of {spec.name} on {registry} matches {spec.version or 'latest'}")
    try:
        found = read_json(finished.stdout.encode(), max_bytes=processes.TAIL_BYTES)
    except UnreadableJson:
        raise InstallRefused(f"{spec.key()}: npm view said {finished.tail[-500:]!r}, not a version") from None
    versions = found if isinstance(found, list) else [found]
    version = pinned_version("npm", str(versions[-1])) if versions else None
    if version is None:
        raise InstallRefused(f"{spec.key()}: no release of {spec.name} on {registry} matches {spec.version or 'latest'}")
    return version


async def install(spec: PackageSpec, directory: Path, registry: str, cache: Path, timeout: float) -> str:
    """Install `spec` (pinned) into `directory`; the package's integrity."""
    argv = [
        _npm(),
        "install",
        f"{spec.name}@{spec.version}",
        "--prefix",
        str(directory),
        "--ignore-scripts",
        "--no-audit",
        "--no-fund",
        "--omit=dev",
        *_settings(cache, registry),
    ]
    finished = await processes.run("npm install", argv, processes.clean_environment(cache / ".home", {}), directory, timeout)
    if finished.returncode != 0:
        raise _failure(spec, registry, finished)
    lock = _read(directory / "package-lock.json", f"{spec.key()}: npm's lockfile")
    packages = lock.get("packages") if isinstance(lock, dict) else None
    if not isinstance(packages, dict):
        raise InstallRefused(f"{spec.key()}: npm's lockfile lists no packages")
    prefix = registry.rstrip("/") + "/"
    for path, entry in packages.items():
        if path and isinstance(entry, dict) and not entry.get("inBundle") and not str(entry.get("resolved", "")).startswith(prefix):
            raise InstallRefused(f"{spec.key()}: {path} came from {entry.get('resolved')!r}, not from the registry {registry}")
    own = packages.get(f"node_modules/{spec.name}")
    own = own if isinstance(own, dict) else {}
    integrity = own.get("integrity")
    if not isinstance(integrity, str) or not integrity:
        raise InstallRefused(f"{spec.key()}: {registry} gave no integrity for it, so what was installed cannot be told")
    if own.get("version") != spec.version:
        raise InstallRefused(f"{spec.key()}: npm installed version {own.get('version')!r}, not {spec.version}")
    return integrity


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
