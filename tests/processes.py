"""Real server processes for the tests: `ard-mcp serve` on a free loopback port, and waiting for a server."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

#: Set by `conftest` under `--store postgres`: the PostgreSQL database that keeps a data directory's catalog.
database_of: Callable[[Path], str] | None = None


def quiet_env(data_dir: Path | None = None) -> dict[str, str]:
    """The environment of a server or CLI process: quiet logs, the test session's DNS server
    (`conftest.offline_dns`), and under `--store postgres` the database of the data directory it is given,
    through `ARD_MCP_STORE_URL` as an operator would set it (the same one for every process on that directory)."""
    env = {**os.environ, "ARD_MCP_LOG_LEVEL": "WARNING", "ARD_MCP_DRAIN_SECONDS": "0"}  # stopped at once (test_rolling_restart drains)
    if data_dir is not None and database_of is not None:
        env["ARD_MCP_STORE_URL"] = database_of(data_dir)
    return env


def data_dir_of(args: tuple[str, ...] | list[str]) -> Path | None:
    """The `--data-dir` of a command line, if it has one."""
    return Path(args[args.index("--data-dir") + 1]) if "--data-dir" in args else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(url: str, process: subprocess.Popen[str], what: str) -> None:
    """Until `url` answers 200; fails at once if the process exits, after 60 s if it never answers."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read() if process.stderr else f"{what} exited"
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    pytest.fail(f"{what} did not answer at {url}")


@contextmanager
def serving(data_dir: Path, *args: str) -> Iterator[str]:
    """`ard-mcp serve ARGS` on a free loopback port; yields its base URL, stops it, and checks it wrote
    nothing to stdout (logs, uvicorn's included, belong on stderr)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "ard_mcp", "serve", "--port", str(port), "--data-dir", str(data_dir), *args],
        env=quiet_env(data_dir),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(f"{base}/healthz", process, "ard-mcp serve")
        yield base
    finally:
        process.terminate()
        stdout, _ = process.communicate(timeout=30)
    assert stdout == "", f"the server wrote to stdout: {stdout[:300]}"
