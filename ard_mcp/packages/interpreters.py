"""The Python interpreters on this machine, and which one a PyPI package server is installed for and run with.

A release declares the Pythons it supports (`Requires-Python`); ard-mcp's own may not be one of them (issue
#54: four servers of 40 needed 3.12 or 3.13 while ard-mcp ran on 3.11), while the machine often has another
that is: a distribution's `/usr/bin/python3.N`, pyenv's versions, uv's managed Pythons. Those are found here:
ard-mcp's own base interpreter first (`sys.base_prefix`, never a virtual environment's), then `python3.N` on
PATH and in /usr/bin and /usr/local/bin, pyenv's (`$PYENV_ROOT` or ~/.pyenv, `versions/*/bin/python3.N`) and
uv's (`~/.local/share/uv/python/*/bin/python3.N`). pyenv's shims are passed over: each is a script that runs
one of the versions found directly, or fails where pyenv's global setting leaves it out.

Each is run once (`-I -S -c`, cached for the process) to learn its version and base prefix: a file's name is
not trusted to say either, and one that does not run, or runs a virtual environment, is left out. Two paths
to one installation (a link, the same prefix) count once. `fitting` picks ard-mcp's own where it meets the
specifier, so nothing changes for a release that supports it, else the newest that does.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from ard_mcp.packages import lookup
from ard_mcp.packages.names import same_release
from ard_mcp.packages.refusal import InstallRefused
from ard_mcp.packages.specs import PackageSpec

PROBE_TIMEOUT_S = 10.0
# pip started through this, not as `python -m pip`: an audit hook refuses every program pip would start. pip
# starts one to build a source distribution (a direct-URL or path dependency, which `--only-binary` does not
# cover: measured, pip 23 and 26 both set up a build) and to check out a repository (git, hg, svn); the
# programs a plain wheel install starts (lsb_release, uname, rustc for its User-Agent) it does without.
NO_PROGRAM = "ard-mcp: pip may start no program here"
_NO_PROGRAMS = f"""import runpy, sys
def refuse(event, args):
    if event in ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty"):
        raise PermissionError({NO_PROGRAM!r} + " (" + repr(args)[:300] + ")")
sys.addaudithook(refuse)
sys.argv[0] = "pip"
{{load}}runpy.run_module("pip", run_name="__main__", alter_sys=True)
"""
# another interpreter runs ard-mcp's own pip: the package alone is loaded from where it lies (`-I -S`: nothing else
# of ard-mcp's environment, or of that interpreter's site-packages, is on its path)
_LOAD_PIP = """import importlib.machinery, importlib.util
spec = importlib.machinery.PathFinder.find_spec("pip", [{where!r}])
sys.modules["pip"] = module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
"""
_NAME = re.compile(r"^python3\.(\d+)$")
# runs on any Python 3; prints its version, whether it is a virtual environment's, and its base prefix
_PROBE = "import sys; print('%d.%d.%d' % sys.version_info[:3]); print(int(sys.prefix != sys.base_prefix)); print(sys.base_prefix)"


@dataclass(frozen=True, order=True)
class Interpreter:
    """One Python installation: its version (3, 12) and full version ("3.12.1"), an executable of it, its base
    prefix (what a sandbox mounts)."""

    version: tuple[int, int]
    full: str
    executable: Path
    prefix: Path

    @property
    def label(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"

    def fits(self, requires: str | None) -> bool:
        """Whether this version meets `requires` (a Requires-Python), as pip checks it (`lookup.python_fits`)."""
        return lookup.python_fits(requires, self.full)


def own() -> Interpreter:
    """ard-mcp's own base interpreter (the one its pip and wheels were made for)."""
    return _own()


@functools.cache
def _own() -> Interpreter:
    version = (sys.version_info.major, sys.version_info.minor)
    bin_dir = Path(sys.base_prefix) / "bin"
    for name in (f"python{version[0]}.{version[1]}", f"python{version[0]}"):
        if (bin_dir / name).is_file():
            full = f"{version[0]}.{version[1]}.{sys.version_info.micro}"
            return Interpreter(version, full, bin_dir / name, Path(sys.base_prefix))
    raise ValueError(f"no Python interpreter in {bin_dir} to run PyPI package servers with")


def found() -> tuple[Interpreter, ...]:
    """Every interpreter on this machine, ard-mcp's own first, then by version, newest first; each installation once."""
    return _found(os.environ.get("PATH", ""), os.environ.get("PYENV_ROOT", ""), str(Path.home()))


@functools.cache
def _found(path: str, pyenv_root: str, home: str) -> tuple[Interpreter, ...]:
    mine = own()
    seen_files: set[Path] = {mine.executable.resolve()}
    seen_prefixes = {mine.prefix.resolve()}
    others: list[Interpreter] = []
    for candidate in _candidates(path, pyenv_root, home):
        try:
            real = candidate.resolve()
        except OSError:
            continue
        if real in seen_files:
            continue
        seen_files.add(real)
        probed = _probe(candidate)
        if probed is not None and probed.prefix.resolve() not in seen_prefixes:
            seen_prefixes.add(probed.prefix.resolve())
            others.append(probed)
    return (mine, *sorted(others, key=lambda i: i.version, reverse=True))


def _candidates(path: str, pyenv_root: str, home: str) -> Iterator[Path]:
    pyenv = Path(pyenv_root) if pyenv_root else Path(home, ".pyenv")
    shims = (pyenv / "shims").resolve() if (pyenv / "shims").exists() else None
    directories = [Path(p) for p in path.split(os.pathsep) if p and os.path.isabs(p)]
    directories += [Path("/usr/local/bin"), Path("/usr/bin")]
    for directory in dict.fromkeys(directories):
        if shims is None or not directory.exists() or directory.resolve() != shims:
            yield from _named(directory)
    for root in (pyenv / "versions", Path(home, ".local", "share", "uv", "python")):
        yield from (file for installation in _listed(root) for file in _named(installation / "bin"))


def _listed(directory: Path) -> Iterable[Path]:
    try:
        return sorted(directory.iterdir())
    except OSError:
        return ()


def _named(directory: Path) -> Iterator[Path]:
    for file in _listed(directory):
        if _NAME.match(file.name) and file.is_file() and os.access(file, os.X_OK):
            yield file


def _probe(executable: Path) -> Interpreter | None:
    """What running `executable` says it is; None where it does not run, is a virtual environment's, or says
    another version than its name."""
    try:
        out = subprocess.run(
            [str(executable), "-I", "-S", "-c", _PROBE], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, env={}, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = out.stdout.splitlines()
    named = _NAME.match(executable.name)
    if out.returncode != 0 or len(lines) != 3 or lines[1] != "0" or named is None or not lines[0].startswith(f"3.{named[1]}."):
        return None
    prefix = Path(lines[2])
    if not prefix.is_absolute() or not prefix.is_dir():
        return None
    # run from its own installation, so the sandbox's mount of the prefix holds it (a /usr/local/bin link into
    # an /opt installation runs as the /opt one)
    inside = prefix / "bin" / executable.name
    return Interpreter((3, int(named[1])), lines[0], inside if inside.is_file() else executable, prefix)


def fitting(requires: Collection[str | None], among: tuple[Interpreter, ...] | None = None) -> Interpreter | None:
    """The interpreter to install and run a release with whose files need `requires` (each file's Requires-Python;
    one met is enough): ard-mcp's own where it fits, else the newest that does; None where none does."""
    candidates = found() if among is None else among
    fit = [i for i in candidates if any(i.fits(r) for r in requires)]
    mine = own()
    return mine if mine in fit else max(fit, key=lambda i: i.version, default=None)


def for_pip() -> tuple[Interpreter, ...]:
    """The interpreters ard-mcp's pip can run on (its own Requires-Python: pip 26 needs 3.10), ard-mcp's own first."""
    try:
        needs = (importlib.metadata.metadata("pip").get_all("Requires-Python") or [None])[0]
    except importlib.metadata.PackageNotFoundError:
        needs = None
    mine, *others = found()
    return (mine, *(i for i in others if i.fits(needs)))


def pip_command(python: Interpreter) -> list[str]:
    """The argv that runs ard-mcp's own pip, under the audit hook, to install for `python`."""
    if python == own():
        return [sys.executable, "-c", _NO_PROGRAMS.format(load="")]
    spec = importlib.util.find_spec("pip")
    if spec is None or spec.origin is None:
        raise ValueError("ard-mcp's environment has no pip")
    where = str(Path(spec.origin).parent.parent)
    return [str(python.executable), "-I", "-S", "-c", _NO_PROGRAMS.format(load=_LOAD_PIP.format(where=where))]


def of_version(label: str) -> Interpreter | None:
    """An interpreter of version `label` ("3.12"), ard-mcp's own first: what an install made for it runs with."""
    return next((i for i in found() if i.label == label), None)


def versions(among: tuple[Interpreter, ...] | None = None) -> str:
    """The versions found (or those `among`), oldest first, in words: "3.10, 3.11, 3.12"."""
    return ", ".join(dict.fromkeys(i.label for i in sorted(found() if among is None else among, key=lambda i: i.version))) or "none"


async def for_release(spec: PackageSpec, index: str, client: httpx.AsyncClient) -> Interpreter:
    """The interpreter to install `spec` for: one its wheels are built for (their tags: a release with wheels
    for `cp312` and `cp313` only, and no Requires-Python, failed on ard-mcp's 3.11 as "no wheel fits this
    platform"), among those what their Requires-Python allows (`fitting`); ard-mcp's own where the index does
    not say, or no wheel's tags fit any Python here (pip then says what it needs). InstallRefused where no Python
    pip can run on fits, naming the version needed and those found."""
    try:
        files = await lookup.pypi_listing(client, index, spec.name)
    except lookup.LookupFailed:
        files = None
    wheels = [f for f in files or [] if f.is_wheel and same_release(f.version, str(spec.version))]
    if not wheels:
        return own()
    needs = {f.requires_python for f in wheels}
    runs_pip = for_pip()
    built_for = tuple(i for i in runs_pip if any(lookup.tags_fit(f.filename, i.version) for f in wheels))
    chosen = fitting(needs, built_for or runs_pip)
    if chosen is None:
        needed = " or ".join(sorted(str(n) for n in needs))
        raise InstallRefused(f"{spec.key()}: it needs Python {needed}; this machine has {versions(for_pip())}")
    return chosen
