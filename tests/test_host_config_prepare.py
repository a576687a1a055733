"""`ard-mcp host-config --write` prepares the configured server's first start (`sharing.warm`): afterwards a host's
very first start on a new data directory gets its handshake and first `tools/list` at once, whatever protocol
version and capabilities the host asks with, while no back-end could have started yet (issue #55)."""

from __future__ import annotations

import fcntl
import json
import os
import selectors
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.sqlite_only  # nothing here reads a catalog


def _answer(process: subprocess.Popen[bytes], request: int, deadline: float) -> dict[str, Any]:
    """The JSON-RPC answer to request `request` from the process's output, within the deadline."""
    assert process.stdout is not None
    waiting = selectors.DefaultSelector()
    waiting.register(process.stdout, selectors.EVENT_READ)
    while time.monotonic() < deadline and waiting.select(deadline - time.monotonic()):
        line = process.stdout.readline()
        if not line:
            break
        message = json.loads(line)
        if message.get("id") == request:
            return dict(message)
    raise AssertionError(f"no answer to request {request} in time")


def test_a_hosts_first_start_ever_is_answered_at_once_after_host_config_write(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / ".config"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env = {k: v for k, v in env.items() if not k.startswith("ARD_MCP_")}
    written = subprocess.run(
        [sys.executable, "-m", "ard_mcp", "host-config", "cursor", "--write", "--data-dir", str(tmp_path / "mine")],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert written.returncode == 0 and "prepared: the host's first start is answered at once" in written.stderr, written.stderr
    assert not (tmp_path / "mine").exists()  # prepared on a scratch directory: the person's own is their host's to start
    entry = json.loads((tmp_path / ".cursor" / "mcp.json").read_text(encoding="utf-8"))["mcpServers"]["ard"]
    (kept,) = (tmp_path / "cache" / "ard-mcp").glob("hello-*.json")
    digest = kept.stem.rsplit("-", 1)[1]

    new = tmp_path / "new"  # a host's first start on a data directory nothing ever served
    new.mkdir()
    host_env = {**env, **entry["env"], "ARD_MCP_DATA_DIR": str(new)}
    with open(new / f"ard-mcp-{digest}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # no back-end can start meanwhile: only kept answers can come
        host = subprocess.Popen([entry["command"], *entry["args"]], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=host_env)
        assert host.stdin is not None
        try:
            asked = {"protocolVersion": "2025-06-18", "capabilities": {"roots": {"listChanged": True}}, "clientInfo": {"name": "other"}}
            deadline = time.monotonic() + 30  # on the old code nothing came while the lock was held
            host.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": asked}).encode() + b"\n")
            host.stdin.flush()
            handshake = _answer(host, 1, deadline)
            host.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n')
            host.stdin.flush()
            tools = _answer(host, 2, deadline)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            host.stdin.close()
            host.wait(timeout=60)
    assert handshake["result"]["protocolVersion"] == "2025-06-18"
    assert "search_agents" in {tool["name"] for tool in tools["result"]["tools"]}


def test_printing_the_entry_prepares_the_first_start_in_the_background(tmp_path: Path) -> None:
    """A person who copies the printed entry rather than `--write` gets the same: printing returns at once, and a
    process of its own keeps the first answers for every protocol version within seconds."""
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / ".config"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env = {k: v for k, v in env.items() if not k.startswith("ARD_MCP_")}
    printed = subprocess.run(
        [sys.executable, "-m", "ard_mcp", "host-config", "claude-code", "--data-dir", str(tmp_path / "mine")],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert printed.returncode == 0 and "preparing its first start in the background" in printed.stderr
    assert json.loads(printed.stdout)  # the entry itself, as before
    deadline = time.monotonic() + 120
    kept: dict[str, Any] = {}
    while len(kept) < 7 and time.monotonic() < deadline:  # 4 handshakes, 1 discovery, 2 tool lists
        time.sleep(0.5)
        for path in (tmp_path / "cache" / "ard-mcp").glob("hello-*.json"):
            kept = json.loads(path.read_text(encoding="utf-8"))
    assert len(kept) == 7
    assert not (tmp_path / "mine").exists()
