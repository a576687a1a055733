"""A package server's own writable view of its installed package: what it writes next to its code lasts.

Servers write where they expect to, and many expect their own directory: `@modelcontextprotocol/server-memory`
keeps its graph in `memory.jsonl` beside `dist/index.js` unless told otherwise, and failed with `EROFS` on the
read-only install (issue #54). bubblewrap 0.8 (Debian 12) has no overlay mounts, so the view is built once
per launch, beside its state directory, as a mirror of the install: every directory made anew and handed to
the sandbox uid (so the server may add, rename and remove entries), every file a hard link to the cached one,
which stays root's and read-only to the server (so it cannot change the install other launches share; a
file it replaces becomes its own). Hard links cost an inode, no data: the 18 MB install of server-memory
took 3,000 links and no disk. Where links cannot be made (another file system, or a registry not run as
root, whose server runs as the same user and could write through a link), files are copied.

The view is bound at the install's own path inside the sandbox, so the paths the command names are the
same. It is made once (`made` holds its marker beside it, where the server cannot write) and never walked
again by ard-mcp: the server owns what is inside, and could have put links there.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

MARKER = "view.done"


def made(package_dir: Path, view: Path, uid: int | None) -> Path:
    """The view of `package_dir` at `view`, made if it is not there yet; `uid`: the sandbox uid to hand its
    directories to (None: ard-mcp's own user, and files are copied)."""
    marker = view.parent / f"{view.name}.{MARKER}"
    if marker.is_file():
        return view
    if view.exists() or view.is_symlink():
        shutil.rmtree(view)  # a view left half-made by a crash: ard-mcp made all of it, before any server ran
    for directory, directories, files in os.walk(package_dir):  # links to directories are listed, not followed
        source = Path(directory)
        target = view / source.relative_to(package_dir)
        target.mkdir(mode=0o755)
        for name in files + [d for d in directories if (source / d).is_symlink()]:
            _mirror(source / name, target / name, uid is not None)
        if uid is not None:
            os.chown(target, uid, uid)
    marker.write_text("made\n", encoding="utf-8")
    return view


def _mirror(source: Path, target: Path, link: bool) -> None:
    found = os.lstat(source)
    if stat.S_ISLNK(found.st_mode):
        os.symlink(os.readlink(source), target)
    elif stat.S_ISREG(found.st_mode):
        if link:
            try:
                os.link(source, target)
                return
            except OSError:  # another file system
                pass
        shutil.copy2(source, target)
