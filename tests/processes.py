"""Real server processes for the tests: `ard-mcp serve` on a free loopback port, and waiting for a server."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest


def quiet_env() -> dict[str, str]:
    """The environment of a server process: quiet logs, and the test session's DNS server (`conftest.offline_dns`)."""
    return {**os.environ, "ARD_MCP_LOG_LEVEL": "WARNING"}


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
        env=quiet_env(),
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
