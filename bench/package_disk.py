"""The disk package servers take, with identical files of different installs kept once (`shared_files`).

    python bench/package_disk.py [--cache DIR]

Installs a fixed set of real servers from PyPI and npm with ard-mcp's own installer into a fresh cache (or
`--cache`), then prints, for each install and in all: the bytes of its files as installed (what each would
take on its own) and the disk the cache takes (each inode once: what `du` says), and the share saved. Issue
#54 measured 824 MB for 11 servers, 48-110 MB for each PyPI one, most of it the same dependencies.

One run, 2026-12-07, these seven servers: 213.9 MiB as installed, 139.3 MiB on disk, 74.6 MiB (35%) saved.
The PyPI servers share less than they might: each resolves its dependencies as of its own release date, so
mcp-server-sqlite 2025.4.25 carries older releases of `mcp` and `pydantic` than the others (26.7 MiB, 25.6 new).
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
import tempfile
from pathlib import Path

import anyio

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ard_mcp.packages.install import Installer  # noqa: E402
from ard_mcp.packages.specs import PackageSpec  # noqa: E402

SERVERS = (
    ("pypi", "mcp-server-time", "2026.6.4"),
    ("pypi", "mcp-server-fetch", "2026.6.4"),
    ("pypi", "mcp-server-git", "2026.6.16"),
    ("pypi", "mcp-server-sqlite", "2025.4.25"),
    ("npm", "@modelcontextprotocol/server-memory", "2026.1.26"),
    ("npm", "@modelcontextprotocol/server-filesystem", "2026.7.4"),
    ("npm", "@modelcontextprotocol/server-sequential-thinking", "2025.12.18"),
)


def sizes(root: Path, seen: set[tuple[int, int]]) -> tuple[int, int]:
    """(bytes of every regular file, bytes of the files whose inode is not in `seen` yet), adding them to it."""
    every = new = 0
    for directory, _, names in os.walk(root):
        for name in names:
            found = os.lstat(Path(directory) / name)
            if not stat.S_ISREG(found.st_mode):
                continue
            every += found.st_size
            if (found.st_dev, found.st_ino) not in seen:
                seen.add((found.st_dev, found.st_ino))
                new += found.st_size
    return every, new


async def main(cache: Path) -> None:
    installer = Installer(cache)
    seen: set[tuple[int, int]] = set()
    total = unique = 0
    print(f"{'server':<52} {'as installed':>13} {'new on disk':>12}")
    for registry, name, version in SERVERS:
        installed = await installer.install(PackageSpec(registry, name, version, None, (), (), ()))
        every, new = sizes(installed.directory, seen)
        total, unique = total + every, unique + new
        print(f"{registry + ':' + name + '@' + version:<52} {every / 2**20:>10.1f} MiB {new / 2**20:>9.1f} MiB")
    print(f"{'all ' + str(len(SERVERS)) + ' servers':<52} {total / 2**20:>10.1f} MiB {unique / 2**20:>9.1f} MiB")
    print(f"saved by sharing identical files: {(total - unique) / 2**20:.1f} MiB ({1 - unique / total:.0%})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, help="the package cache to install into (default: a fresh temporary one)")
    args = parser.parse_args()
    if args.cache:
        anyio.run(main, args.cache)
    else:
        with tempfile.TemporaryDirectory(prefix="ard-bench-disk-") as scratch:
            anyio.run(main, Path(scratch))
