"""Reading a data directory's store without owning the directory, and `ard-mcp backup`: a copy of it taken
with SQLite's online backup API while a server keeps serving and writing.

Neither this nor `export` claims the data directory (`datadir`): the claim keeps a second writer away from
embedded Chroma, and they never open Chroma. SQLite coordinates its own readers and writers: the store is
in WAL mode, so a read-only connection reads one consistent snapshot, including what is still in the
write-ahead log, while writers carry on. Opening it read-only also means a mistyped `--data-dir` is an
error here, not a new empty catalog.

Only `catalog.sqlite3` is copied: `chroma/` is derived from it, and `ard-mcp reindex` rebuilds it from
the store's own vectors without running the model.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from ard_mcp.errors import InvalidArgument, NotFound
from ard_mcp.index.store import CATALOG_FILE

_BUSY_MS = 10_000  # the same patience as the store's own connections


def connect_read_only(data_dir: Path) -> sqlite3.Connection:
    """A read-only connection to the store of `data_dir` (autocommit: the caller opens its own read
    transaction when it needs one snapshot across several statements)."""
    path = data_dir / CATALOG_FILE
    if not path.is_file():
        raise NotFound(f"no catalog in {data_dir} (no {CATALOG_FILE}); is --data-dir right?")
    # A URI, so that `mode=ro` applies; `as_uri` escapes what a path may hold (`?`, `#`, `%`, spaces).
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
    db.execute(f"PRAGMA busy_timeout={_BUSY_MS}")
    return db


def temporary_beside(target: Path) -> Path:
    """A fresh name in `target`'s directory, so the finished file can be renamed over `target` in one step:
    a reader of `target` sees the old file or the whole new one, never half of it."""
    if target.is_dir():
        raise InvalidArgument(f"{target} is a directory")
    if not target.parent.is_dir():
        raise InvalidArgument(f"{target.parent}: no such directory")
    return target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")


@dataclass(frozen=True)
class Backup:
    path: Path
    agents: int
    size: int  # bytes


def backup(data_dir: Path, dest: Path) -> Backup:
    """Copy the store of `data_dir` to `dest` (a file, or a directory to hold `catalog.sqlite3`).

    The copy is one snapshot taken in a single backup step: in WAL mode that holds only a read
    transaction, which writers do not wait for (a stepwise copy would restart whenever another process
    wrote). It is written beside `dest` and renamed over it when complete, and left in rollback-journal
    mode, so the backup is one self-contained file; the store puts it back in WAL mode when it opens it."""
    source = connect_read_only(data_dir)
    try:
        target = dest / CATALOG_FILE if dest.is_dir() else dest
        if target.exists() and target.samefile(data_dir / CATALOG_FILE):
            raise InvalidArgument(f"{target} is the store being backed up; give another file or directory")
        partial = temporary_beside(target)
        try:
            copy = sqlite3.connect(partial, isolation_level=None)
            try:
                source.backup(copy)
                copy.execute("PRAGMA journal_mode=DELETE")
                agents = int(copy.execute("SELECT count(*) FROM agents").fetchone()[0])
            except sqlite3.DatabaseError as exc:  # not a store, or the destination's disk is full: say which file
                raise InvalidArgument(f"backing up {data_dir / CATALOG_FILE} to {target} failed: {exc}") from None
            finally:
                copy.close()
            os.replace(partial, target)
        except BaseException:
            for leftover in (partial, *(partial.with_name(partial.name + s) for s in ("-journal", "-wal", "-shm"))):
                leftover.unlink(missing_ok=True)
            raise
    finally:
        source.close()
    return Backup(target, agents, target.stat().st_size)
