"""Installing a PyPI package into its cache directory without running any of its code, and the command that
starts it.

pip runs a package's code when it builds one from source (`setup.py`, or any PEP 517 backend the sdist names),
so only wheels are taken (`--only-binary=:all:`): a package or dependency with no wheel for this platform is
refused, not built. pip's settings come from pip.conf files and `PIP_*` variables; `--isolated` drops the
variables and the user's file, and `PIP_CONFIG_FILE=/dev/null` the rest (pip reads that one variable even
isolated), so the index is the one given (`--index-url`) and nothing of the user's applies. pip itself is
ard-mcp's own (`sys.executable -m pip`), which installs for this very interpreter version.

What is installed goes to `lib/` (`--target`); pip's `--report` says which wheel it took and its sha256, the
integrity the install records (the index's hash, which pip checked the download against).

The server is started by the base interpreter (`sys.base_prefix`, never a virtual environment's, whose path
is inside someone's project) as `python -I -S -B -c CODE ARGS`: `-I` ignores `PYTHON*` variables and the user's
site directory, `-S` leaves out the interpreter's own site-packages (whatever is installed there would
shadow the package's dependencies), `-B` writes no bytecode into the read-only cache (pip compiled it at
install time). CODE puts `lib/` on the path with `site.addsitedir` (so `.pth` files of namespace packages
work) and calls the console-script entry point as pip's generated script would.
"""

from __future__ import annotations

import configparser
import os
import re
import sys
from pathlib import Path
from typing import Any

import httpx

from ard_mcp.formats.bounded_json import UnreadableJson, read_json
from ard_mcp.packages import lookup, processes
from ard_mcp.packages.cache import private_dirs
from ard_mcp.packages.names import canonical_pypi, pinned_version, requirement
from ard_mcp.packages.refusal import InstallRefused
from ard_mcp.packages.specs import PackageSpec

LIB = "lib"
REPORT = "pip-report.json"
_MAX_REPORT = 64 * 1024 * 1024
_ENTRY = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*:\s*([A-Za-z_][\w.]*)\s*(?:\[[^\]]*\])?\s*$")


def _settings(cache: Path, index: str) -> list[str]:
    _, _, pip_cache = private_dirs(cache)
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
    ]


def _environment(cache: Path) -> dict[str, str]:
    return processes.clean_environment(cache / ".home", {"PIP_CONFIG_FILE": os.devnull, "PYTHONNOUSERSITE": "1"})


def _requested(report_file: Path, spec: PackageSpec) -> dict[str, Any]:
    """pip's report of the package asked for."""
    try:
        report = read_json(report_file.read_bytes(), max_bytes=_MAX_REPORT)
    except (OSError, UnreadableJson) as exc:
        raise InstallRefused(f"{spec.key()}: pip's report cannot be read: {exc}") from None
    for item in report.get("install", []) if isinstance(report, dict) else []:
        metadata = item.get("metadata") if isinstance(item, dict) else None
        if isinstance(metadata, dict) and canonical_pypi(str(metadata.get("name"))) == spec.name:
            return dict(item)
    raise InstallRefused(f"{spec.key()}: pip's report does not list {spec.name}")


async def newest(spec: PackageSpec, index: str, cache: Path, timeout: float) -> str:
    """The release pip would install for an unpinned version: the newest with a wheel for this platform."""
    try:
        wanted = requirement("pypi", spec.name, spec.version)
    except ValueError as exc:
        raise InstallRefused(f"{spec.key()}: {exc}") from None
    report = cache / ".home" / f"newest-{os.getpid()}-{id(spec)}.json"
    argv = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps", *_settings(cache, index)]
    try:
        finished = await processes.run(
            "pip install --dry-run", [*argv, "--report", str(report), wanted], _environment(cache), cache, timeout
        )
        if finished.returncode != 0:
            raise InstallRefused(
                f"{spec.key()}: no release of {spec.name} on {index} has a wheel for this platform: {finished.tail[-1500:]}"
            )
        version = pinned_version("pypi", str(_requested(report, spec)["metadata"].get("version")))
    finally:
        report.unlink(missing_ok=True)
    if version is None:
        raise InstallRefused(f"{spec.key()}: pip chose a release whose version cannot be read")
    return version


async def _failure(spec: PackageSpec, index: str, finished: processes.Finished, client: httpx.AsyncClient) -> InstallRefused:
    """Why pip found nothing to install, told from the index's own list of files where it can be."""
    said = finished.tail[-1500:]
    try:
        files = await lookup.pypi_files(client, index, spec.name)
    except lookup.LookupFailed:
        return InstallRefused(f"{spec.key()}: pip could not install it (exit {finished.returncode}): {said}")
    if files is None:
        return InstallRefused(f"{spec.key()}: no package {spec.name} on {index}")
    wanted = (spec.version or "").lower()
    releases = [r for r in map(lookup.release_of, files) if r is not None and r[0] == spec.name and r[1] == wanted]
    if not releases:
        return InstallRefused(f"{spec.key()}: {index} has no version {spec.version} of {spec.name}")
    if not any(is_wheel for _, _, is_wheel in releases):
        return InstallRefused(
            f"{spec.key()}: no wheel, only a source distribution, and building one runs the publisher's code (not done here)"
        )
    return InstallRefused(
        f"{spec.key()}: no wheel of it or of a dependency fits this platform, and source builds are not done here: {said}"
    )


async def install(spec: PackageSpec, directory: Path, index: str, cache: Path, timeout: float, client: httpx.AsyncClient) -> str:
    """Install `spec` (pinned) into `directory/lib`; the sha256 of its wheel."""
    argv = [sys.executable, "-m", "pip", "install", *_settings(cache, index), "--no-warn-script-location"]
    argv += ["--target", str(directory / LIB), "--report", str(directory / REPORT), f"{spec.name}=={spec.version}"]
    finished = await processes.run("pip install", argv, _environment(cache), directory, timeout)
    if finished.returncode != 0:
        raise await _failure(spec, index, finished, client)
    download = _requested(directory / REPORT, spec).get("download_info")
    archive = download.get("archive_info") if isinstance(download, dict) else None
    hashes = archive.get("hashes") if isinstance(archive, dict) else None
    sha256 = hashes.get("sha256") if isinstance(hashes, dict) else None
    if not isinstance(sha256, str) or not re.fullmatch(r"[0-9a-f]{64}", sha256):
        raise InstallRefused(f"{spec.key()}: {index} gave no sha256 for its wheel, so what was installed cannot be told")
    return f"sha256={sha256}"


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


def _interpreter() -> Path:
    """The base interpreter of the one running ard-mcp (the same version, which the wheels were chosen for)."""
    bin_dir = Path(sys.base_prefix) / "bin"
    for name in (f"python{sys.version_info.major}.{sys.version_info.minor}", f"python{sys.version_info.major}"):
        if (bin_dir / name).is_file():
            return bin_dir / name
    raise InstallRefused(f"no Python interpreter in {bin_dir} to run PyPI package servers with")


def command(spec: PackageSpec, directory: Path) -> tuple[tuple[str, ...], tuple[Path, ...]]:
    """The argv that starts the installed server, and the host directories it needs (the Python installation)."""
    lib = directory / LIB
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
    argv = (str(_interpreter()), "-I", "-S", "-B", *spec.runtime_arguments, "-c", code, *spec.package_arguments)
    return argv, (Path(sys.base_prefix),)
