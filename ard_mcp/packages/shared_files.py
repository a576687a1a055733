"""Identical files of different package installs kept once on disk.

Every package version is installed into a directory of its own (`cache`), each with its whole dependency
tree: 11 servers took 824 MB, 48-110 MB per PyPI server, most of it the same `pydantic`, `mcp`, `httpx` and
friends again (issue #54). Once an install is complete, each of its regular files is hard-linked to the one
copy of its content in `<cache>/.objects` (added there by the first install that has it), so the same bytes
take disk once however many servers carry them. The key is the content's sha256 and the file's mode (a link
shares one mode: an executable and a plain file with the same bytes stay apart).

Why links are safe here: installs are read-only to the servers (root's files, mode 0644 or 0755, read by the
sandbox uid), the per-launch writable views link to them the same way (`views`), and where files could be
written through a link (a registry not run as root) views copy them instead. A file is replaced by a link
with `rename`, so a reader sees the old file or the same bytes, never a partial one. Where links cannot be
made (another file system) files stay as they are. The store's copies stay when every install that had
them is removed; `shared` says how much each install gave back.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)
OBJECTS = ".objects"
MIN_BYTES = 1024  # smaller files: hashing them and an inode each would cost more than they save
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Shared:
    files: int  # files now links to a copy another install had already
    bytes: int  # the disk that gave back


def _digest(path: Path) -> str:
    hashed = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(_CHUNK):
            hashed.update(chunk)
    return hashed.hexdigest()


def share(install: Path, cache: Path) -> Shared:
    """Link each regular file of `install` to the store's copy of its content, adding it there when it is the
    first; never raises for a file it cannot link (it stays as it is)."""
    objects = cache / OBJECTS
    files = saved = 0
    for directory, _, names in os.walk(install):  # links to directories are not followed
        for name in names:
            path = Path(directory) / name
            try:
                found = os.lstat(path)
                if not stat.S_ISREG(found.st_mode) or found.st_size < MIN_BYTES or found.st_nlink > 1:
                    continue
                digest = _digest(path)
                kept = objects / digest[:2] / f"{digest}-{stat.S_IMODE(found.st_mode):o}"
                kept.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
                try:
                    os.link(path, kept)  # the first install with these bytes: its file is the store's copy
                    continue
                except FileExistsError:
                    pass
                if os.lstat(kept).st_size != found.st_size:
                    continue  # not what its name says (a store written by hand): leave the file alone
                staged = path.with_name(f".{name}.shared")
                os.link(kept, staged)
                os.replace(staged, path)
                files, saved = files + 1, saved + found.st_size
            except OSError as exc:  # another file system, a vanished file: this one stays as it is
                log.debug("not shared: %s: %s", path, exc)
    return Shared(files, saved)
