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
import time
from pathlib import Path
from typing import IO

from ard_mcp.config import Config
from ard_mcp.errors import DataDirInUse


def exclusive(config: Config) -> bool:
    """Whether one process alone may use the directory `config` uses (embedded Chroma)."""
    return config.chroma_url is None


def claim_for(config: Config, wait_s: float = 0.0) -> IO[str] | None:
    """Claim the directory `config` uses, if it uses one (see the module's docstring); where another process
    holds it, try again for up to `wait_s` seconds (one about to exit: a host's `serve` that the other hosts'
    front-ends had joined hands over to the back-end they start, `sharing.backend`)."""
    if config.store_url is not None and config.chroma_url is not None:
        return None
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return claim(config.data_dir, shared=not exclusive(config), url=config.source_url)
        except DataDirInUse:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.1)


def claim(data_dir: Path, *, shared: bool, url: str | None = None) -> IO[str]:
    """Lock `data_dir` for this process (`shared`: alongside others on the same Chroma server, excluding an
    embedded one); the returned handle holds the lock until `release`. `url`, a server's address, is noted
    in the lock file, so a command refused the directory can say where to send its entries instead."""
    data_dir.mkdir(parents=True, exist_ok=True)
    handle = open(data_dir / "ard-mcp.lock", "a+")  # noqa: SIM115 - held until release()
    try:
        fcntl.flock(handle, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        noted = handle.read().split()
        handle.close()
        raise DataDirInUse(_in_use(data_dir, shared, noted)) from None
    if not shared:
        handle.seek(0)
        handle.truncate()
    handle.write(f"{os.getpid()} {url + ' ' if url else ''}")
    handle.flush()
    return handle


def _in_use(data_dir: Path, shared: bool, noted: list[str]) -> str:
    """Why the directory cannot be had, and what would work: a server that holds it takes new entries itself."""
    pids = " ".join(n for n in noted if n.isdigit()) or "unknown"
    urls = [n for n in noted if n.startswith(("http://", "https://"))]
    message = f"data directory {data_dir} is in use by another ard-mcp process (pid {pids})"
    if shared:
        return f"{message}; processes sharing it must all use the same --chroma-url"
    server = urls[0].rstrip("/") if urls else "the server's address"
    return (
        f"{message}; stop it, or give this one its own --data-dir. If it is a running `ard-mcp serve`, add entries through "
        f"it instead: POST {server}/agents with one entry (the register_agent tool over MCP), or POST {server}/crawl with "
        '{"targets": [URL]} for a whole catalog served at a URL (the crawl_catalogs tool). Several MCP hosts share one '
        "registry when each starts `ard-mcp serve --shared` (what `ard-mcp host-config` writes)"
    )


def release(handle: IO[str] | None) -> None:
    if handle is not None and not handle.closed:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()
