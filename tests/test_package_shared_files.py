"""Identical files of different package installs take disk once (`packages.shared_files`, issue #54: 11 servers
took 824 MB, each with its own copy of the same dependencies). Real pip installs from a loopback index."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio

from ard_mcp.packages.install import Installer, Registries
from ard_mcp.packages.shared_files import OBJECTS, share
from ard_mcp.packages.specs import PackageSpec
from tests.package_support import serving_index, wheel

COMMON = "VALUE = 1\n" + "# the bytes two servers share\n" * 200  # over MIN_BYTES


def _spec(name: str) -> PackageSpec:
    return PackageSpec("pypi", name, "1.0.0", None, (), (), ())


def test_two_servers_installed_with_one_dependency_share_its_files(tmp_path: Path) -> None:
    files = tmp_path / "index"
    files.mkdir()
    wheel(files, "ard-probe-common", "1.0.0", {}, module=COMMON)
    for name in ("ard-probe-first", "ard-probe-second"):
        wheel(files, name, "1.0.0", {name: f"{name.replace('-', '_')}:main"}, requires=["ard-probe-common==1.0.0"])
    with serving_index(files, []) as url:
        installer = Installer(tmp_path / "cache", Registries(pypi=(url,)))
        first, second = (anyio.run(installer.install, _spec(name)) for name in ("ard-probe-first", "ard-probe-second"))
    one, other = (install.directory / "lib" / "ard_probe_common" / "__init__.py" for install in (first, second))
    assert one.read_text() == other.read_text() == COMMON
    assert os.stat(one).st_ino == os.stat(other).st_ino and os.stat(one).st_nlink == 3  # two installs and the store
    for installed in (first, second):  # each still starts as installed
        ran = subprocess.run(installed.command, capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
        assert ran.returncode == 0, ran.stderr


def test_only_the_same_bytes_and_mode_are_linked_and_small_files_are_left(tmp_path: Path) -> None:
    cache, one, other = tmp_path / "cache", tmp_path / "one", tmp_path / "other"
    for folder in (one, other):
        folder.mkdir(parents=True)
        (folder / "same.py").write_text(COMMON)
        (folder / "small.txt").write_text("tiny")
        (folder / "tool").write_text(COMMON)
    (other / "tool").chmod(0o755)  # the same bytes, executable: a link would make both alike
    (other / "differs.py").write_text(COMMON + "# one more line\n")
    assert share(one, cache).files == 1  # the first: its files become the store's copies (its tool is same.py's bytes)
    shared = share(other, cache)
    assert (shared.files, shared.bytes) == (1, len(COMMON))
    assert os.stat(one / "same.py").st_ino == os.stat(other / "same.py").st_ino == os.stat(one / "tool").st_ino
    assert os.stat(one / "tool").st_ino != os.stat(other / "tool").st_ino and os.access(other / "tool", os.X_OK)
    assert os.stat(one / "small.txt").st_nlink == 1 and not list(other.glob(".*.shared"))
    assert len(list((cache / OBJECTS).rglob("*-*"))) == 3  # same.py's bytes in two modes, differs.py
