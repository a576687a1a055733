"""Installing a PyPI package into its cache directory without running any of its code, and the command that
starts it.

pip runs a package's code when it builds one from source (`setup.py`, or any PEP 517 backend the sdist names),
so only wheels are taken (`--only-binary=:all:`): a package or dependency with no wheel for this platform is
refused, not built. pip's settings come from pip.conf files and `PIP_*` variables; `--isolated` drops the
variables and the user's file, and `PIP_CONFIG_FILE=/dev/null` the rest (pip reads that one variable even
isolated), so the index is the one given (`--index-url`) and nothing of the user's applies (where the operator
opts in, the keys of their files that reach an index, and their netrc: `installer_config`). pip itself is
ard-mcp's own, run by the interpreter the release is installed for (`interpreters`): ard-mcp's own where the
release's Requires-Python allows it, else the newest here that it allows, so wheel tags, Requires-Python and
dependency markers are that interpreter's (`--python-version` keeps markers ard-mcp's). pip 23 (what a new
venv has) reads only its own CA bundle, so it is given the operator's (`--cert`), or PyPI fails wherever TLS
is inspected.

Dependencies come from the allowed indexes only. A wheel's `Requires-Dist: x @ URL` sends pip to that URL
(measured: to another loopback port, as root, while resolving), `x @ git+https://...` to git, `x @ file:///dir`
to a directory on this machine, and `--only-binary` does not cover these: pip sets out to build a direct
reference that is not a wheel, installing the build backend its pyproject names from the index and running
it. So pip runs through `egress` (a request to any other origin is refused), under an audit hook that
refuses every program it would start (a build, a version-control checkout), and a failure names the
dependency as pip's `Collecting x @ URL` line does. After the install, pip's `--report` is checked: every
package a release file from an allowed origin (`archive_info`, not a direct URL, `vcs_info` or `dir_info`).

The version installed is the one approved: pip is asked for `name===1.0`, not `name==1.0`, which PEP 440
lets match `1.0+anything` (a local label is another release, `Version("1.0+evil") != Version("1.0")`), and the
report's version is compared again. What is installed goes to `lib/` (`--target`); the report says which
wheel pip took and its sha256, the integrity the install records (the index's hash, which pip checked the
download against).

The server is started by a base interpreter of the version it was installed for (recorded in `PYTHON`;
ard-mcp's own `sys.base_prefix` where it is that version; never a virtual environment's, whose path is inside
someone's project), its installation mounted in the sandbox, as `python -I -S -B -c CODE ARGS`: `-I` ignores
`PYTHON*` variables and the user's site directory, `-S` leaves out the interpreter's own site-packages (whatever is installed there would
shadow the package's dependencies), `-B` writes no bytecode into the read-only cache (pip compiled it at
install time). CODE puts `lib/` on the path with `site.addsitedir` (so `.pth` files of namespace packages
work) and calls the console-script entry point as pip's generated script would.
"""

from __future__ import annotations

import configparser
import os
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from ard_mcp.formats.bounded_json import UnreadableJson, read_json
from ard_mcp.packages import egress, installer_config, interpreters, lookup, processes
from ard_mcp.packages.cache import private_dirs
from ard_mcp.packages.egress import Egress
from ard_mcp.packages.interpreters import NO_PROGRAM, Interpreter
from ard_mcp.packages.names import canonical_pypi, pinned_version, requirement, same_release
from ard_mcp.packages.refusal import AsOf, InstallRefused, VersionGone, certificate, dependency_unavailable, pointed_elsewhere
from ard_mcp.packages.specs import PackageSpec

LIB = "lib"
RELEASE_SLACK = timedelta(minutes=10)  # after the release's last file: what was on the index when it was published
MAX_LATER = 3  # how many times the date dependencies are resolved as of is moved later (`install`)
REPORT = "pip-report.json"
PYTHON = "python-version"  # the version the install was made for ("3.12"), which runs it
_MAX_REPORT = 64 * 1024 * 1024
_ENTRY = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*:\s*([A-Za-z_][\w.]*)\s*(?:\[[^\]]*\])?\s*$")


# a dependency pip was sent elsewhere for: `Collecting dep @ https://host/x.whl` (pip 23: `dep@ ...`), `Processing ./dir`
_REQUIRES_PYTHON = re.compile(r"requires a different Python: \S+ not in '([^']+)'|Requires-Python ([^\s,;]+)")
_DIRECT = re.compile(r"^\s*Collecting ([A-Za-z0-9][A-Za-z0-9._-]*(?:\[[^\]]*\])? ?@ \S+)|^\s*Processing (\S+)", re.MULTILINE)
_NO_MATCH = re.compile(r"No matching distribution found for (\S+)")  # pip's last words, naming the requirement
_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")  # Debian's and Ubuntu's system store


def origins(allowed: Sequence[str]) -> tuple[str, ...]:
    """What pip may reach: the allowed indexes, and PyPI's file host where PyPI is one of them."""
    hosts = {egress.origin(url)[0] for url in allowed}
    return (*allowed, *(["https://files.pythonhosted.org"] if "pypi.org" in hosts else []))


def _our_python(python: Interpreter) -> str:
    found = interpreters.versions()
    return (
        f"and it was installed for Python {python.label} (this machine has {found}): choose another server, or install a Python it supports"
    )


def _settings(cache: Path, index: str, out: Egress, own: bool) -> list[str]:
    _, _, pip_cache = private_dirs(cache)
    # pip 23 reads only its own CA bundle (`--isolated` drops pip.conf's `cert`): where TLS is inspected, the
    # operator's bundle is the one that verifies; the operator's pip.conf's `cert` where they opted in to it
    bundle = os.environ.get("SSL_CERT_FILE") or (str(_CA_BUNDLE) if _CA_BUNDLE.is_file() else None)
    tls = installer_config.pip_settings(bundle) if own else ["--cert", bundle] if bundle else []
    return [
        "--isolated",
        "--disable-pip-version-check",
        "--no-input",
        "--progress-bar",
        "off",
        "--only-binary=:all:",
        "--index-url",
        index,
        "--cache-dir",
        str(pip_cache),
        "--proxy",
        out.url,
        *tls,
    ]


def _environment(cache: Path, out: Egress, own: bool) -> dict[str, str]:
    netrc = installer_config.pip_environment() if own else {}
    return processes.clean_environment(cache, {"PIP_CONFIG_FILE": os.devnull, "PYTHONNOUSERSITE": "1", **netrc, **out.environment()})


def _exactly(spec: PackageSpec) -> str:
    """The requirement of exactly the approved release. `name==1.0` also matches `1.0+anything` (PEP 440 ignores
    a candidate's local label when the specifier has none), so it is `name===1.0`, the version as PEP 440
    normalizes it."""
    try:
        return f"{spec.name}==={Version(str(spec.version))}"
    except InvalidVersion:
        raise InstallRefused(f"{spec.key()}: {spec.version} is not a PEP 440 version") from None


def _report(report_file: Path, spec: PackageSpec) -> list[dict[str, Any]]:
    """pip's report: what it installed (or would)."""
    try:
        report = read_json(report_file.read_bytes(), max_bytes=_MAX_REPORT)
    except (OSError, UnreadableJson) as exc:
        raise InstallRefused(f"{spec.key()}: pip's report cannot be read: {exc}") from None
    items = report.get("install", []) if isinstance(report, dict) else []
    return [dict(item) for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def _name(item: dict[str, Any]) -> str:
    metadata = item.get("metadata")
    return canonical_pypi(str(metadata.get("name"))) if isinstance(metadata, dict) else ""


def _requested(items: list[dict[str, Any]], spec: PackageSpec) -> dict[str, Any]:
    """pip's report of the package asked for."""
    for item in items:
        if _name(item) == spec.name:
            return item
    raise InstallRefused(f"{spec.key()}: pip's report does not list {spec.name}")


def _check_origins(items: list[dict[str, Any]], spec: PackageSpec, allowed: Sequence[str]) -> None:
    """Every package pip installed must be a release file from an allowed index (`archive_info`), not a
    direct URL, a repository checkout (`vcs_info`) or a directory (`dir_info`)."""
    reachable = {egress.origin(url) for url in origins(allowed)}
    for item in items:
        download = item.get("download_info")
        url = str(download.get("url")) if isinstance(download, dict) else "(nowhere pip says)"
        try:
            where = egress.origin(url)
        except ValueError:
            where = ("", 0)
        kind = next((k for k in ("vcs_info", "dir_info") if isinstance(download, dict) and k in download), None)
        if item.get("is_direct") or kind or not isinstance(download, dict) or "archive_info" not in download or where not in reachable:
            how = "a repository checkout" if kind == "vcs_info" else "a directory" if kind == "dir_info" else "a direct URL"
            raise InstallRefused(
                f"{spec.key()}: its dependency {_name(item)} came from {url} ({how}), not as a release of an allowed index "
                f"({', '.join(allowed)})"
            )


async def _pip_run(
    what: str, python: Interpreter, argv: list[str], index: str, allowed: Sequence[str], cache: Path, cwd: Path, timeout: float, own: bool
) -> tuple[processes.Finished, Egress]:
    pip = interpreters.pip_command(python)
    async with egress.proxy(origins(allowed)) as out:
        env = _environment(cache, out, own)
        finished = await processes.run(what, [*pip, *argv, *_settings(cache, index, out, own)], env, cwd, timeout)
    return finished, out


def _elsewhere(spec: PackageSpec, index: str, finished: processes.Finished, out: Egress) -> InstallRefused | None:
    """Why pip failed when a dependency sent it outside the index: a direct URL, a repository, a path."""
    pointed = list(dict.fromkeys(url or path for url, path in _DIRECT.findall(finished.tail)))
    kinds = "a direct URL, a version-control repository or a path"
    said = out.said() if out.refused else ""
    elsewhere = pointed_elsewhere(spec.key(), pointed, kinds, f"the index {index}", "pip", said)
    if elsewhere is not None:
        return elsewhere
    if NO_PROGRAM in finished.tail:
        return InstallRefused(
            f"{spec.key()}: pip set out to build a package from source or check out a repository, which is not done here: "
            f"{finished.tail[-1000:]}"
        )
    return None


async def newest(
    spec: PackageSpec, index: str, allowed: Sequence[str], cache: Path, timeout: float, client: httpx.AsyncClient, own: bool
) -> str:
    """The release pip would install for an unpinned version: the newest with a wheel for this platform (`client`
    asks the index why, where pip found none; `own`: with the operator's own settings, `installer_config`)."""
    try:
        wanted = requirement("pypi", spec.name, spec.version)
    except ValueError as exc:
        raise InstallRefused(f"{spec.key()}: {exc}") from None
    report = cache / ".home" / f"newest-{os.getpid()}-{id(spec)}.json"
    argv = ["install", "--dry-run", "--ignore-installed", "--no-deps", "--report", str(report), wanted]
    try:
        finished, out = await _pip_run("pip install --dry-run", interpreters.own(), argv, index, allowed, cache, cache, timeout, own)
        if finished.returncode != 0:
            said = finished.tail + await installer_config.unlisted(client, index, spec.name)
            found = _elsewhere(spec, index, finished, out) or installer_config.refused(spec.key(), f"the index {index}", said, "pip", own)
            raise found or InstallRefused(
                f"{spec.key()}: no release of {spec.name} on {index} has a wheel for this platform: {finished.tail[-1500:]}"
            )
        metadata = _requested(_report(report, spec), spec).get("metadata")
        version = pinned_version("pypi", str(metadata.get("version"))) if isinstance(metadata, dict) else None
    finally:
        report.unlink(missing_ok=True)
    if version is None:
        raise InstallRefused(f"{spec.key()}: pip chose a release whose version cannot be read")
    return version


async def _failure(
    spec: PackageSpec,
    index: str,
    finished: processes.Finished,
    out: Egress,
    client: httpx.AsyncClient,
    as_of: AsOf | None,
    python: Interpreter,
    own: bool,
) -> tuple[InstallRefused, datetime | None]:
    """Why pip found nothing to install: a dependency from elsewhere, a certificate, a dependency it found no
    release of (`_dependency`), a Python it does not support, else told from the index's own list of files where
    it can be. The second item, where the one obstacle was the date dependencies are resolved as of (`as_of`),
    is the first moment that obstacle is gone."""
    said = finished.tail[-1500:]
    refused = _elsewhere(spec, index, finished, out) or certificate(spec.key(), finished.tail, index, "SSL_CERT_FILE")
    refused = refused or installer_config.refused(spec.key(), f"the index {index}", finished.tail, "pip", own)
    if refused is not None:
        return refused, None
    dependency = await _dependency(spec, index, finished.tail, client, as_of, python)
    if dependency is not None:
        return InstallRefused(f"{spec.key()}: {dependency[0]}"), dependency[1]
    needs = _REQUIRES_PYTHON.search(finished.tail)
    if needs is not None:
        return InstallRefused(f"{spec.key()}: it needs Python {needs[1] or needs[2]}, {_our_python(python)}"), None
    try:
        files = await lookup.pypi_listing(client, index, spec.name)
    except lookup.LookupFailed as exc:  # pip says nothing of an index page it was refused: what the index answered does
        denied = installer_config.refused(spec.key(), f"the index {index}", str(exc), "pip", own)
        return denied or InstallRefused(f"{spec.key()}: pip could not install it (exit {finished.returncode}): {said}"), None
    if files is None:
        return InstallRefused(f"{spec.key()}: no package {spec.name} on {index}"), None
    releases = [f for f in files if same_release(f.version, str(spec.version))]
    if not releases:
        public = str(spec.version).partition("+")[0]
        near = sorted({f.version for f in files if f.version.partition("+")[0] == public and "+" in f.version})
        if near:
            return InstallRefused(
                f"{spec.key()}: {index} has no version {spec.version} of {spec.name} (only {', '.join(near)}: a local version "
                "label makes another release)"
            ), None
        newer = lookup.nearest_newer("pypi", [f.version for f in files if f.fits], str(spec.version))
        newer = newer or lookup.nearest_newer("pypi", [f.version for f in files], str(spec.version))
        return VersionGone(spec.key(), index, "pypi", spec.name, str(spec.version), newer), None
    if not any(f.is_wheel for f in releases):
        return InstallRefused(
            f"{spec.key()}: no wheel, only a source distribution, and building one runs the publisher's code (not done here)"
        ), None
    return InstallRefused(
        f"{spec.key()}: no wheel of it or of a dependency fits this platform, and source builds are not done here: {said}"
    ), None


async def _dependency(
    spec: PackageSpec, index: str, tail: str, client: httpx.AsyncClient, as_of: AsOf | None, python: Interpreter
) -> tuple[str, datetime | None] | None:
    """Why pip found no release of a dependency it names (`No matching distribution found for rnet>=2.0.0`), told
    from the index's list of its files (`refusal.dependency_unavailable`); None where pip names no other package."""
    match = _NO_MATCH.search(tail)
    try:
        wanted = Requirement(match[1].rstrip(".,;")) if match else None
        if wanted is None or canonical_pypi(wanted.name) == spec.name:
            return None
        listed = await lookup.pypi_listing(client, index, wanted.name)
    except (InvalidRequirement, lookup.LookupFailed):
        return None
    return dependency_unavailable(wanted, listed, index, as_of, _our_python(python))


async def install(
    spec: PackageSpec,
    directory: Path,
    index: str,
    allowed: Sequence[str],
    cache: Path,
    timeout: float,
    client: httpx.AsyncClient,
    own: bool,
) -> tuple[str, str | None]:
    """Install `spec` (pinned) into `directory/lib`; the sha256 of its wheel, and a note when its dependencies
    could not be resolved as of its release. Every package must be a release of an allowed index, and the one
    asked for exactly the approved version.

    Where the one obstacle to resolving as of the release date is the date itself (a dependency with no release
    that fits until later), the release could never be installed as of its date; pip is run again as of the
    first moment that dependency has one (up to `MAX_LATER` times), the nearest to its date it can be resolved
    at. Not as of today: `mcp-rquest` 0.1.13 then got `mcp` 2.3 and crashed at start (`'Server' object has no
    attribute 'call_tool'`). The note says so (the install's marker keeps it)."""
    argv = ["install", "--no-warn-script-location", "--target", str(directory / LIB), "--report", str(directory / REPORT)]
    python = await interpreters.for_release(spec, index, client)
    released = await lookup.uploaded(client, index, spec.name, str(spec.version))
    deadline = anyio.current_time() + timeout  # for pip's runs, however many
    # its dependencies as they were when it was released (pip >= 26)
    as_of = AsOf(released, f"the release date of {spec.name} {spec.version}", RELEASE_SLACK) if released is not None else None
    moved: list[str] = []
    while True:
        dated = ["--uploaded-prior-to", as_of.bound.astimezone(UTC).isoformat(timespec="seconds")] if as_of else []
        left = max(deadline - anyio.current_time(), 0.001) if moved else timeout
        wanted = [*argv, *dated, _exactly(spec)]
        finished, out = await _pip_run("pip install", python, wanted, index, allowed, cache, directory, left, own)
        if finished.returncode == 0:
            break
        refused, later = await _failure(spec, index, finished, out, client, as_of, python, own)
        if later is None or len(moved) == MAX_LATER:
            raise refused
        moved.append(str(refused).removeprefix(f"{spec.key()}: "))
        as_of = AsOf(later, "the date they were moved to", RELEASE_SLACK)
    note = None
    if moved and as_of is not None:
        note = f"its dependencies were resolved as of {as_of.moment:%Y-%m-%d}, not of its release: {'; '.join(moved)}"
    items = _report(directory / REPORT, spec)
    _check_origins(items, spec, allowed)
    requested = _requested(items, spec)
    metadata = requested.get("metadata")
    version = str(metadata.get("version")) if isinstance(metadata, dict) else None
    if version is None or not same_release(version, str(spec.version)):
        raise InstallRefused(f"{spec.key()}: pip installed version {version} of {spec.name}, not {spec.version}")
    download = requested.get("download_info")
    archive = download.get("archive_info") if isinstance(download, dict) else None
    hashes = archive.get("hashes") if isinstance(archive, dict) else None
    sha256 = hashes.get("sha256") if isinstance(hashes, dict) else None
    if not isinstance(sha256, str) or not re.fullmatch(r"[0-9a-f]{64}", sha256):
        raise InstallRefused(f"{spec.key()}: {index} gave no sha256 for its wheel, so what was installed cannot be told")
    (directory / PYTHON).write_text(python.label + "\n", encoding="utf-8")
    return f"sha256={sha256}", note


def _entry_point(spec: PackageSpec, lib: Path) -> tuple[str, str, str]:
    """(script name, module, attribute) of the console script to run: the one of the package's own name, else
    its only one."""
    infos = [d for d in lib.glob("*.dist-info") if canonical_pypi(d.name.split("-")[0]) == spec.name]
    if len(infos) != 1:
        raise InstallRefused(f"{spec.key()}: pip left {len(infos)} records of {spec.name} in {lib}, not one")
    parser = configparser.ConfigParser(delimiters=("=",), interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # script names keep their case
    try:
        parser.read(infos[0] / "entry_points.txt", encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError) as exc:
        raise InstallRefused(f"{spec.key()}: its entry_points.txt cannot be read: {exc}") from None
    scripts = dict(parser["console_scripts"]) if parser.has_section("console_scripts") else {}
    own = [name for name in scripts if canonical_pypi(name) == spec.name]
    if not own and len(scripts) != 1:
        listed = ", ".join(sorted(scripts)) or "none"
        raise InstallRefused(
            f"{spec.key()}: no console script is named {spec.name}, and it has {listed}: which is the server cannot be told"
        )
    name = own[0] if own else next(iter(scripts))
    match = _ENTRY.match(scripts[name])
    if match is None:
        raise InstallRefused(f"{spec.key()}: its console script {name} = {scripts[name]!r} is not module:function")
    return name, match[1], match[2]


def made_for(directory: Path) -> Interpreter | None:
    """The interpreter that runs the install in `directory`: one of the version it was made for (`PYTHON`); None
    where it records none (made before versions were recorded) or this machine no longer has that version."""
    try:
        label = (directory / PYTHON).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return interpreters.of_version(label)


def command(spec: PackageSpec, directory: Path) -> tuple[tuple[str, ...], tuple[Path, ...]]:
    """The argv that starts the installed server, and the host directories it needs (the Python installation)."""
    lib = directory / LIB
    python = made_for(directory)
    if python is None:
        raise InstallRefused(f"{spec.key()}: no Python on this machine is of the version it was installed for")
    script, module, attribute = _entry_point(spec, lib)
    code = "\n".join(
        [
            "import importlib, site, sys",
            f"site.addsitedir({str(lib)!r})",
            f"sys.argv[0] = {script!r}",
            f"target = importlib.import_module({module!r})",
            f"for part in {attribute!r}.split('.'): target = getattr(target, part)",
            "sys.exit(target())",
        ]
    )
    argv = (str(python.executable), "-I", "-S", "-B", *spec.runtime_arguments, "-c", code, *spec.package_arguments)
    return argv, (python.prefix,)
