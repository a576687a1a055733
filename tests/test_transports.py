"""The real server process over each transport, driven by the SDK's own client, plus restart and ownership."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client

from tests.conftest import INVOICES, WEATHER

pytestmark = pytest.mark.anyio


def _env() -> dict[str, str]:
    return {**os.environ, "ARD_MCP_LOG_LEVEL": "WARNING"}


def stdio(data_dir: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "ard_mcp", "serve", "--data-dir", str(data_dir)], env=_env())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def http_server(data_dir: Path, transport: str, extra: list[str] | None = None) -> Iterator[int]:
    """`ard-mcp serve` as a subprocess on a free loopback port, stopped afterwards."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "ard_mcp", "serve", "--transport", transport, "--port", str(port), "--data-dir", str(data_dir), *(extra or [])],
        env=_env(),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert process.poll() is None, process.stderr.read() if process.stderr else "server exited"
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        else:
            pytest.fail(f"{transport} server did not listen on {port}")
        yield port
    finally:
        process.terminate()
        process.wait(timeout=30)


async def register_and_search(client: Client) -> dict[str, Any]:
    for item in (WEATHER, INVOICES):
        result = await client.call_tool("register_agent", {"entry": item})
        assert not result.is_error, result.content
    found = await client.call_tool("search_agents", {"text": "forecast for Tokyo tomorrow"})
    assert not found.is_error and found.structured_content
    return found.structured_content


async def test_stdio_subprocess_and_restart(data_dir: Path) -> None:
    async with Client(stdio(data_dir)) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert "search_agents" in tools
        found = await register_and_search(client)
        assert found["results"][0]["identifier"] == WEATHER["identifier"]
    # a new process on the same data directory still finds what the first one registered
    async with Client(stdio(data_dir)) as client:
        again = await client.call_tool("search_agents", {"text": "send an invoice to a customer"})
        assert not again.is_error and again.structured_content
        assert again.structured_content["results"][0]["identifier"] == INVOICES["identifier"]


async def test_streamable_http_subprocess(data_dir: Path) -> None:
    with http_server(data_dir, "streamable-http") as port:
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            found = await register_and_search(client)
    assert found["results"][0]["identifier"] == WEATHER["identifier"]


async def test_sse_subprocess(data_dir: Path) -> None:
    with http_server(data_dir, "sse") as port:
        async with Client(sse_client(f"http://127.0.0.1:{port}/sse")) as client:
            found = await register_and_search(client)
    assert found["results"][0]["identifier"] == WEATHER["identifier"]


def test_second_process_on_the_same_data_dir_gets_a_clear_error(data_dir: Path) -> None:
    with http_server(data_dir, "streamable-http"):
        result = subprocess.run(
            [sys.executable, "-m", "ard_mcp", "search", "weather", "--data-dir", str(data_dir)],
            env=_env(), capture_output=True, text=True, timeout=60,
        )
    assert result.returncode == 2
    assert "is in use by another ard-mcp process" in result.stderr
    assert result.stdout == ""
