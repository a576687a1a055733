"""A folder or file the person gives a package server: checked, mounted into its sandbox, passed to it.

A server that works on the person's files (a file system, a vault, a SQLite database) takes a path, and the
sandbox shows it none of the host's files: "list the files in my project folder" listed an empty state
directory (issue #54). Where a launch's arguments hold a slot (`inputs.FOLDER`, `inputs.FILE`: a current
server.json argument that takes a path), the person is asked for one when asked to approve it; the path is
mounted at the same path inside the sandbox (a file's folder with it, where a database keeps its journal),
read-only unless they allowed writing, the slot filled with it, and the server's roots requests answered
with it. A launch with no slot may be given a folder all the same, optionally (`asked_for`): mounted alike
and answered to its roots requests. The grant is kept with the approval, so later calls use the same folder.

What no grant may be, whatever the person typed (a host may answer forms for them): the root, a system
directory (`/etc`, `/usr`, `/proc`, ...), ard-mcp's data directory or a folder holding it (a writable grant
there would let the server approve itself), a home directory or a folder holding one, and a hidden folder
at the top of a home (`~/.ssh`, `~/.aws`). The path is resolved first, so a link cannot lead elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import pwd
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ard_mcp.errors import InvalidArgument
from ard_mcp.packages.inputs import FILE, FOLDER

ROOT = "root"  # `asked_for`: an optional folder, answered to the server's roots requests
SYSTEM = ("/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/dev", "/proc", "/sys", "/run", "/var", "/opt")


@dataclass(frozen=True)
class Grant:
    path: str  # resolved, absolute: a folder, or a file (`kind`)
    kind: str  # "folder" | "file"
    writable: bool

    @property
    def mounted(self) -> Path:
        """What is bound into the sandbox: the folder, or the file's folder."""
        return Path(self.path) if self.kind == "folder" else Path(self.path).parent

    def as_json(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "writable": self.writable}

    @classmethod
    def from_json(cls, raw: Any) -> Grant:
        if not isinstance(raw, dict) or not isinstance(raw.get("path"), str) or raw.get("kind") not in ("folder", "file"):
            raise ValueError("a grant is {path, kind: folder|file, writable}")
        return cls(raw["path"], raw["kind"], raw.get("writable") is True)


def needed(arguments: Iterable[str]) -> str | None:
    """ "folder" or "file" where `arguments` hold a slot for one, else None."""
    found = set(arguments)
    return "folder" if FOLDER in found else "file" if FILE in found else None


def asked_for(arguments: Iterable[str]) -> str:
    """What the person is asked to give a launch: the folder or file its slot takes, else (`ROOT`) a folder
    they may give or not, which the server gets as its root. Why: a server may take its folders from roots
    requests alone (the reference file system server does, started with no argument, as a catalog that lists
    only its package starts it), and the host's roots are paths its sandbox does not have."""
    return needed(arguments) or ROOT


def filled(command: Iterable[str], grant: Grant | None) -> tuple[str, ...]:
    """`command` with each slot filled with the granted path."""
    return tuple(grant.path if grant is not None and item in (FOLDER, FILE) else item for item in command)


def _homes() -> set[Path]:
    found = {Path("/root"), Path("/home"), Path.home()}
    with contextlib.suppress(OSError):
        found.update(Path(entry.pw_dir) for entry in pwd.getpwall() if entry.pw_dir not in ("", "/"))
    return {home.resolve() for home in found if home.is_absolute()}


def _within(path: Path, other: Path) -> bool:
    return path == other or other in path.parents


def _hidden(path: Path, home: Path) -> bool:
    """Whether `path` is in a folder of `home` whose name starts with a dot."""
    return home in path.parents and path.relative_to(home).parts[0].startswith(".")


def checked(text: str, kind: str, writable: bool, data_dir: Path) -> Grant:
    """The grant of `text` (a path the person typed) as a `kind`; InvalidArgument saying why it cannot be one."""
    typed = text.strip()
    if not typed or "\0" in typed or not os.path.isabs(os.path.expanduser(typed)):
        raise InvalidArgument(f"{kind}: give the full path of a {kind} on this machine (such as /home/me/project), not {typed!r}")
    path = Path(os.path.expanduser(typed)).resolve()
    if not (path.is_dir() if kind == "folder" else path.is_file()):
        raise InvalidArgument(f"{kind}: {path} is not a {kind} on this machine")
    mounted = path if kind == "folder" else path.parent
    data, homes = data_dir.resolve(), _homes()
    refusals = [
        (mounted == Path("/"), "the whole file system"),
        (any(_within(mounted, Path(system)) for system in SYSTEM), "a system directory"),
        (_within(mounted, data) or _within(data, mounted), "ard-mcp's own data directory, or a folder holding it"),
        (any(_within(home, mounted) for home in homes), "a home directory, or a folder holding one"),
        (any(_hidden(mounted, home) for home in homes), "a hidden folder of a home directory (keys and settings live there)"),
    ]
    why = next((what for refused, what in refusals if refused), None)
    if why is not None:
        raise InvalidArgument(f"{kind}: {path} is {why}, which no package server is given; choose a folder of your own work")
    return Grant(str(path), kind, writable)
