"""Who may use a data directory: one process with embedded Chroma (two writers corrupt its files), or any
number of processes that all use one Chroma server. A process with a PostgreSQL store and a Chroma server
keeps nothing in a directory, so it claims none.

Kept apart from the registry, which imports numpy, SQLite and the ranking, so a stdio server can claim its
directory (and fail at once if another process has it) before it answers the handshake, and open the rest
after.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO

from ard_mcp.config import Config
from ard_mcp.errors import DataDirInUse


def claim_for(config: Config) -> IO[str] | None:
    """Claim the directory `config` uses, if it uses one (see the module's docstring)."""
    if config.store_url is not None and config.chroma_url is not None:
        return None
    return claim(config.data_dir, shared=config.chroma_url is not None)


def claim(data_dir: Path, *, shared: bool) -> IO[str]:
    """Lock `data_dir` for this process (`shared`: alongside others on the same Chroma server, excluding an
    embedded one); the returned handle holds the lock until `release`."""
    data_dir.mkdir(parents=True, exist_ok=True)
    handle = open(data_dir / "ard-mcp.lock", "a+")  # noqa: SIM115 - held until release()
    try:
        fcntl.flock(handle, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        owner = handle.read().strip() or "unknown"
        handle.close()
        hint = "processes sharing it must all use the same --chroma-url" if shared else "stop it, or give this one its own --data-dir"
        raise DataDirInUse(f"data directory {data_dir} is in use by another ard-mcp process (pid {owner}); {hint}") from None
    if not shared:
        handle.seek(0)
        handle.truncate()
    handle.write(f"{os.getpid()} ")
    handle.flush()
    return handle


def release(handle: IO[str] | None) -> None:
    if handle is not None and not handle.closed:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()
