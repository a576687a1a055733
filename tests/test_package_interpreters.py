"""PyPI servers whose release needs another Python than ard-mcp's own (issue #54): the interpreters this machine
has, found and run for real (`interpreters`); a wheel needing Python >= 3.12 from a loopback index, installed
for such an interpreter and run by it in the sandbox; `think-mcp` 0.1.9 from PyPI (Requires-Python >= 3.13)
answering over stdio through the sandbox; and the refusal naming the version needed where no Python fits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from packaging.tags import platform_tags

from ard_mcp.packages import interpreters, lookup, pypi
from ard_mcp.packages.install import Installed, Installer, InstallRefused, Registries
from ard_mcp.packages.sandbox import Confinement, Launch, sandboxed
from ard_mcp.packages.specs import PackageSpec
from tests.package_support import serving_index, wheel, why_not_confined

pytestmark = pytest.mark.slow

OWN = (sys.version_info.major, sys.version_info.minor)
NEWER = [i for i in interpreters.for_pip() if i.version > OWN]
ONE_PYTHON = "this machine has no Python newer than ard-mcp's own that pip can run on"
PYENV = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
VERSION_PROBE = """import json, sys
def main():
    print(json.dumps({"version": list(sys.version_info[:2]), "executable": sys.executable, "base_prefix": sys.base_prefix}))
    return 0
"""


NO_SANDBOX = why_not_confined()


def _spec(name: str, version: str) -> PackageSpec:
    return PackageSpec("pypi", name, version, None, (), (), ())


# -- finding the interpreters ---------------------------------------------------------------------------------


def test_ard_mcps_own_interpreter_comes_first_and_each_installation_once() -> None:
    found = interpreters.found()
    assert found[0] == interpreters.own() and found[0].prefix == Path(sys.base_prefix)
    assert found[0].version == OWN and found[0].full == ".".join(map(str, sys.version_info[:3]))
    assert len({i.prefix.resolve() for i in found}) == len(found)
    for python in found:  # each one runs, and is the version it says, from inside its own prefix
        said = subprocess.run(
            [str(python.executable), "-I", "-S", "-c", "import sys; print(sys.base_prefix, *sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert said.stdout.split() == [str(python.prefix), *map(str, python.version)]


def test_pyenvs_versions_are_found() -> None:
    listed = [p for p in sorted(PYENV.glob("*/bin/python3.*")) if p.name.removeprefix("python3.").isdigit()] if PYENV.is_dir() else []
    runnable = [p for p in listed if subprocess.run([str(p), "-I", "-S", "-c", ""], capture_output=True).returncode == 0]
    if len(runnable) < 2:
        pytest.skip(f"pyenv has fewer than two Pythons in {PYENV}: nothing beside ard-mcp's own to find")
    prefixes = {i.prefix.resolve() for i in interpreters.found()}
    assert {p.parent.parent.resolve() for p in runnable} <= prefixes
    for wanted in ("3.12", "3.13"):
        if any(p.name == f"python{wanted}" for p in runnable):
            assert wanted in interpreters.versions().split(", ")


def test_broken_lying_and_virtual_environment_interpreters_are_left_out(tmp_path: Path) -> None:
    if not NEWER:
        pytest.skip(ONE_PYTHON)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    broken = bin_dir / "python3.12"
    broken.write_text("#!/bin/sh\nexit 1\n")
    lying = bin_dir / "python3.99"  # runs a real Python of another version than its name says
    lying.write_text(f'#!/bin/sh\nexec {NEWER[0].executable} "$@"\n')
    for script in (broken, lying):
        script.chmod(0o755)
    environment = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(environment)
    found = interpreters._found(  # noqa: SLF001  # a PATH of its own, not the machine's
        f"{bin_dir}{os.pathsep}{environment / 'bin'}", str(tmp_path / "no-pyenv"), str(tmp_path)
    )
    paths = {i.executable for i in found}
    assert broken not in paths and lying not in paths and not any(p.is_relative_to(environment) for p in paths)
    assert found[0] == interpreters.own()


def test_the_interpreter_chosen_is_ard_mcps_own_where_it_fits_else_the_newest_that_does() -> None:
    own = interpreters.own()
    assert interpreters.fitting([None]) == own
    assert interpreters.fitting([f">={own.label}"]) == own
    assert interpreters.fitting(["not a specifier"]) == own  # pip ignores one it cannot read
    assert interpreters.fitting([">=3.99"]) is None
    if not NEWER:
        pytest.skip(ONE_PYTHON)
    newest = max(NEWER, key=lambda i: i.version)
    assert interpreters.fitting([f">{own.label}.{sys.version_info.micro}"], interpreters.for_pip()) == newest
    older = min(NEWER, key=lambda i: i.version)
    assert interpreters.fitting([f"=={older.label}.*"], interpreters.for_pip()) == older
    assert interpreters.fitting([">=3.99", f"=={older.label}.*"], interpreters.for_pip()) == older  # one file that fits is enough


# -- installing for another interpreter ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def newer_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not NEWER:
        pytest.skip(ONE_PYTHON)
    files = tmp_path_factory.mktemp("newer-index")
    needs = f">={min(NEWER, key=lambda i: i.version).label}"
    wheel(files, "ard-probe-newer", "1.0.0", {"ard-probe-newer": "ard_probe_newer:main"}, module=VERSION_PROBE, python=needs)
    wheel(files, "ard-probe-beyond", "1.0.0", {"ard-probe-beyond": "ard_probe_beyond:main"}, python=">=3.99")
    # built for one newer CPython only, with no Requires-Python: its wheel's tags are all that says so
    older = min(NEWER, key=lambda i: i.version)
    built = wheel(files, "ard-probe-built", "1.0.0", {"ard-probe-built": "ard_probe_built:main"}, module=VERSION_PROBE)
    tag = f"cp{older.version[0]}{older.version[1]}"
    built.rename(built.with_name(built.name.replace("py3-none-any", f"{tag}-{tag}-{next(iter(platform_tags()))}")))
    with serving_index(files) as url:
        yield url


def _sandboxed(installed: Installed, state: Path) -> list[str]:
    launch = Launch(installed.command, installed.directory, state, installed.runtime_dirs)
    return sandboxed(launch, Confinement()).argv


def test_a_release_needing_a_newer_python_is_installed_for_it_and_runs_with_it_in_the_sandbox(newer_index: str, tmp_path: Path) -> None:
    installer = Installer(tmp_path / "cache", Registries(pypi=(newer_index,)))
    installed = anyio.run(installer.install, _spec("ard-probe-newer", "1.0.0"))
    chosen = max(NEWER, key=lambda i: i.version)
    assert installed.command[0] == str(chosen.executable) and installed.runtime_dirs == (chosen.prefix,)
    assert (installed.directory / pypi.PYTHON).read_text().strip() == chosen.label
    if NO_SANDBOX:
        pytest.skip(NO_SANDBOX)
    state = tmp_path / "state"
    state.mkdir()
    done = subprocess.run(_sandboxed(installed, state), capture_output=True, text=True, timeout=60, env={})
    assert done.returncode == 0, done.stderr
    ran = json.loads(done.stdout)
    assert tuple(ran["version"]) == chosen.version and ran["base_prefix"] == str(chosen.prefix)
    # the cache is reused only with a Python of the version it was made for
    (installed.directory / pypi.PYTHON).write_text("3.98\n")
    again = anyio.run(Installer(tmp_path / "cache", Registries(pypi=(newer_index,))).install, _spec("ard-probe-newer", "1.0.0"))
    assert again.command[0] == str(chosen.executable) and (installed.directory / pypi.PYTHON).read_text().strip() == chosen.label


def test_a_release_built_for_another_python_only_is_installed_for_it(newer_index: str, tmp_path: Path) -> None:
    """A wheel tagged for one CPython (`cp312-cp312-manylinux...`) and no Requires-Python: installed for, and
    run with, that version, where ard-mcp's own pip refused it as "no wheel fits this platform"."""
    installer = Installer(tmp_path / "cache", Registries(pypi=(newer_index,)))
    installed = anyio.run(installer.install, _spec("ard-probe-built", "1.0.0"))
    older = min(NEWER, key=lambda i: i.version)
    assert (installed.directory / pypi.PYTHON).read_text().strip() == older.label
    assert installed.command[0] == str(next(i for i in interpreters.for_pip() if i.version == older.version).executable)
    assert lookup.tags_fit(f"x-1-cp{older.version[0]}{older.version[1]}-abi3-{next(iter(platform_tags()))}.whl", older.version)
    assert not lookup.tags_fit(f"x-1-cp{older.version[0]}{older.version[1]}-abi3-{next(iter(platform_tags()))}.whl", (3, 9))


def test_a_release_no_python_here_fits_is_refused_naming_the_version_needed(newer_index: str, tmp_path: Path) -> None:
    installer = Installer(tmp_path / "cache", Registries(pypi=(newer_index,)))
    with pytest.raises(InstallRefused) as refused:
        anyio.run(installer.install, _spec("ard-probe-beyond", "1.0.0"))
    labels = ", ".join(dict.fromkeys(i.label for i in sorted(interpreters.for_pip())))
    assert str(refused.value) == f"pypi:ard-probe-beyond@1.0.0: it needs Python >=3.99; this machine has {labels}"
    assert not (tmp_path / "cache" / "pypi" / "ard-probe-beyond" / "1.0.0").exists()


# -- a real server from PyPI ----------------------------------------------------------------------------------


def test_think_mcp_needing_python_3_13_runs_with_it_through_the_sandbox(tmp_path: Path) -> None:
    """think-mcp 0.1.9 declares Requires-Python >=3.13 (with pydantic-core, a compiled dependency, for its tags)."""
    chosen = interpreters.fitting([">=3.13"], interpreters.for_pip())
    if chosen is None:
        pytest.skip(f"this machine has no Python 3.13 or newer that pip can run on ({interpreters.versions()})")
    if NO_SANDBOX:
        pytest.skip(NO_SANDBOX)
    installed = anyio.run(Installer(tmp_path / "cache").install, _spec("think-mcp", "0.1.9"))
    assert installed.command[0] == str(chosen.executable) and installed.runtime_dirs == (chosen.prefix,)
    assert list((installed.directory / pypi.LIB).glob(f"pydantic_core/*cpython-{chosen.version[0]}{chosen.version[1]}*.so"))
    state = tmp_path / "state"
    state.mkdir()
    argv = _sandboxed(installed, state)

    async def tools() -> set[str]:
        # the `initialize` handshake, as ard-mcp speaks to package servers (`servers`): think-mcp is on mcp 1.x
        async with Client(StdioServerParameters(command=argv[0], args=argv[1:], env={}), mode="legacy") as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    assert "think" in anyio.run(tools)
