"""Scale past one process: two ard-mcp servers share a real `chroma run` server and one data directory."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from mcp import Client

from tests.conftest import INVOICES, PDF, WEATHER
from tests.processes import free_port, quiet_env, serving, wait_for
from tests.test_transports import register_and_search

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


@contextmanager
def chroma_server(path: Path) -> Iterator[str]:
    chroma = shutil.which("chroma") or str(Path(sys.executable).with_name("chroma"))
    port = free_port()
    process = subprocess.Popen(
        [chroma, "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(f"{url}/api/v2/heartbeat", process, "chroma run")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


async def test_two_processes_share_a_chroma_server(tmp_path: Path) -> None:
    data_dir = tmp_path / "shared-data"
    with chroma_server(tmp_path / "chroma") as url:
        args = ("--transport", "streamable-http", "--chroma-url", url)
        with serving(data_dir, *args) as base_a, serving(data_dir, *args) as base_b:
            async with Client(f"{base_a}/mcp") as a, Client(f"{base_b}/mcp") as b:
                found = await register_and_search(a)  # registers WEATHER and INVOICES through A
                assert found["results"][0]["identifier"] == WEATHER["identifier"]
                through_b = await b.call_tool("search_agents", {"text": "bill a client for consulting hours"})
                assert through_b.structured_content["results"][0]["identifier"] == INVOICES["identifier"]  # type: ignore[index]

                assert not (await b.call_tool("register_agent", {"entry": PDF})).is_error
                through_a = await a.call_tool("search_agents", {"text": "merge several pdf files"})
                assert through_a.structured_content["results"][0]["identifier"] == PDF["identifier"]  # type: ignore[index]

                assert not (await a.call_tool("deregister_agent", {"identifier": PDF["identifier"]})).is_error
                gone = await b.call_tool("search_agents", {"text": "merge several pdf files"})
                assert PDF["identifier"] not in [r["identifier"] for r in gone.structured_content["results"]]  # type: ignore[index]


@pytest.mark.sqlite_only  # with a --store-url as well, a process uses no directory (test_postgres: it is never created)
def test_embedded_chroma_may_not_join_a_directory_server_mode_processes_use(tmp_path: Path) -> None:
    data_dir = tmp_path / "shared-data"
    with chroma_server(tmp_path / "chroma") as url, serving(data_dir, "--transport", "streamable-http", "--chroma-url", url):
        refused = subprocess.run(
            [sys.executable, "-m", "ard_mcp", "search", "weather", "--data-dir", str(data_dir)],
            env=quiet_env(data_dir),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert refused.returncode == 2 and "in use by another ard-mcp process" in refused.stderr
