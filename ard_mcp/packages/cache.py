"""The package cache on disk: one directory a package version, complete only when its marker is there, and
one installer at a time for each.

Layout, under the cache directory the operator gives:

    <cache>/npm/@scope+name/1.2.3/           node_modules/, package.json, package-lock.json, installed.json
    <cache>/pypi/mcp-server-time/2026.10.19/ lib/ (pip --target), pip-report.json, installed.json
    <cache>/npm/@scope+name/1.2.3.lock       held while that version is installed or checked
    <cache>/.npm/, <cache>/.pip/             the installers' download caches (theirs alone, never ~/.npm or ~/.cache/pip)
    <cache>/.home/                           HOME of the installers: empty, so no dotfile of the user's is read
    <cache>/.bin/                            the installers' PATH: a link to node, nothing else (no git, hg or svn)
    <cache>/.objects/                        one copy of each file content installs share, hard-linked (`shared_files`)

`installed.json` is written last, to a temporary file renamed into place: a directory without it is a
half-done install (a crash, a kill, a timeout) and is removed and done again, never used. The lock is
`flock` on the `.lock` file beside the directory, so two installs of one version, in one process or two,
never write into the same directory; it is released when its holder exits, however that happens.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio

from ard_mcp.formats.bounded_json import UnreadableJson, read_json
from ard_mcp.packages.names import path_safe

MARKER = "installed.json"
_MARKER_BYTES = 64 * 1024
_POLL_S = 0.1


def version_dir(cache: Path, registry: str, name: str, version: str) -> Path:
    """Where one version of a package is installed; ValueError if the names would lead outside the cache."""
    root = (cache / registry).resolve()
    directory = (root / path_safe(name) / version).resolve()
    if directory.parent.parent != root or version in ("", ".", ".."):
        raise ValueError(f"{registry}:{name}@{version} does not make a directory inside the package cache")
    return directory


@contextlib.asynccontextmanager
async def locked(directory: Path, timeout: float) -> AsyncIterator[None]:
    """Hold the lock of `directory` (TimeoutError after `timeout` seconds of waiting for another holder)."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory.parent / f"{directory.name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        with anyio.fail_after(timeout):
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    await anyio.sleep(_POLL_S)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def completed(directory: Path) -> dict[str, Any] | None:
    """The marker of a complete install, or None: then whatever is in the directory is removed."""
    try:
        marker = read_json((directory / MARKER).read_bytes(), max_bytes=_MARKER_BYTES)
    except (OSError, UnreadableJson):  # none yet, or one cut short
        marker = None
    if isinstance(marker, dict):
        return marker
    if directory.exists():
        shutil.rmtree(directory)
    return None


def fresh(directory: Path) -> None:
    """An empty directory for an install (a half-done one removed)."""
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)


def mark_complete(directory: Path, marker: dict[str, Any]) -> None:
    temporary = directory / f".{MARKER}.tmp"
    temporary.write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
    os.replace(temporary, directory / MARKER)


def private_dirs(cache: Path) -> tuple[Path, Path, Path]:
    """HOME, npm's cache and pip's cache for the installers (created)."""
    found = (cache / ".home", cache / ".npm", cache / ".pip")
    for directory in found:
        directory.mkdir(parents=True, exist_ok=True)
    return found
