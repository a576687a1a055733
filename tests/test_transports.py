"""The real server process over each transport, driven by the SDK's own client, plus restart and ownership."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client

from tests.conftest import INVOICES, WEATHER
from tests.processes import quiet_env, serving

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


def stdio(data_dir: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "ard_mcp", "serve", "--data-dir", str(data_dir)], env=quiet_env(data_dir)
    )


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
    with serving(data_dir, "--transport", "streamable-http") as base:
        async with Client(f"{base}/mcp") as client:
            found = await register_and_search(client)
    assert found["results"][0]["identifier"] == WEATHER["identifier"]


async def test_sse_subprocess(data_dir: Path) -> None:
    with serving(data_dir, "--transport", "sse") as base:
        async with Client(sse_client(f"{base}/sse")) as client:
            found = await register_and_search(client)
    assert found["results"][0]["identifier"] == WEATHER["identifier"]


@pytest.mark.parametrize("command", [["search", "weather"], ["serve"], ["ingest", "catalog.json"]])
def test_second_process_on_the_same_data_dir_gets_a_clear_error(data_dir: Path, command: list[str]) -> None:
    """... which says how to add entries through the server that holds it (ingest once only said "in use")."""
    with serving(data_dir, "--transport", "streamable-http") as base:
        result = subprocess.run(
            [sys.executable, "-m", "ard_mcp", *command, "--data-dir", str(data_dir)],
            env=quiet_env(data_dir),
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    assert result.returncode == 2
    assert "is in use by another ard-mcp process" in result.stderr
    assert f"POST {base}/agents with one entry (the register_agent tool over MCP)" in result.stderr
    assert f"POST {base}/crawl" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_the_stdio_server_answers_tools_list_without_loading_the_index() -> None:
    """What the server imports before the handshake bounds its start-up; numpy (with everything that
    searches) waits for the first request or the warm-up a second later."""
    probe = (
        "import sys, ard_mcp.assembly.cli, ard_mcp.surfaces.mcp.server; "
        "print(sorted(m for m in ('numpy', 'ard_mcp.registry', 'sqlite3') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", probe], env=quiet_env(), capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "[]", result.stderr


def test_serve_with_nothing_on_stdin_says_so(data_dir: Path) -> None:
    """Started by a script or a service manager with stdin closed, it said nothing and exited 0 (issue #55)."""
    result = subprocess.run(
        [sys.executable, "-m", "ard_mcp", "serve", "--data-dir", str(data_dir)],
        env=quiet_env(data_dir),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0 and result.stdout == ""
    assert "standard input is closed or empty, so no MCP host can talk to this server" in result.stderr


def test_the_wrong_method_is_told_the_right_one(data_dir: Path) -> None:
    """The terminal's hint pointed people at /search, which answered a bare 405 to their GET (issue #55)."""
    with serving(data_dir, "--transport", "streamable-http") as base:
        wrong = httpx.get(f"{base}/search", timeout=30)
    assert wrong.status_code == 405 and wrong.headers["allow"] == "POST"
    assert "GET is not allowed on /search; it answers POST with a JSON body (see /openapi.json)" in wrong.text
