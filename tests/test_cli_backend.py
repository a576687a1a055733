"""`ard-mcp search` through the back-end that `serve --shared` hosts share (issue #55): the same output, exit
status and errors as the search in its own process; a back-end started by the first search serves the next
ones; an entry a host registers is in the next command-line search while that host holds the directory; and
a command that must claim the directory stops a back-end no host uses. Real `ard-mcp` processes, a real
back-end on its real socket, a real MCP client over stdio."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import PDF, SAMPLE
from tests.processes import quiet_env
from tests.test_shared_hosts import _backends, _weather

pytestmark = pytest.mark.slow

QUERY = "merge several pdf files into one"
CASES = [  # each as a user types it; the last four are refused
    [QUERY],
    [QUERY, "--page-size", "2", "--detail", "full"],
    [QUERY, "--detail=minimal", "--filter", '{"type": ["application/mcp-server-card+json"]}'],
    ["translate a contract", "--detail", "summary", "--page-size", "1"],
    ["   "],
    [QUERY, "--page-size", "0"],
    [QUERY, "--page-token", "not-a-token"],
    [QUERY, "--filter", '{"colour": ["red"]}'],
]


def _ard(*args: str, data: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`ard-mcp ARGS` on `data` (named in the environment, as a host's configuration names it)."""
    environment = {**quiet_env(data), "ARD_MCP_DATA_DIR": str(data), "ARD_MCP_BACKEND_IDLE": "60", **env}
    return subprocess.run([sys.executable, "-m", "ard_mcp", *args], env=environment, capture_output=True, text=True, timeout=180)


def _filled(tmp_path: Path) -> Path:
    data, catalog = tmp_path / "data", tmp_path / "ai-catalog.json"
    catalog.write_text(json.dumps({"specVersion": "1.0", "host": {"displayName": "Test"}, "entries": SAMPLE}))
    ingested = _ard("ingest", str(catalog), data=data)
    assert ingested.returncode == 0, ingested.stderr
    return data


def _said(done: subprocess.CompletedProcess[str]) -> tuple[int, str, str]:
    """What a search says: its status, stdout, and stderr where it failed (a success's stderr holds logs only)."""
    return done.returncode, done.stdout, done.stderr if done.returncode else ""


@pytest.mark.sqlite_only  # the back-end's processes are found by the data directory they were given
def test_a_search_through_the_back_end_prints_what_the_search_in_process_prints(tmp_path: Path) -> None:
    data = _filled(tmp_path)
    # A trust policy is a setting of `serve` alone, so a back-end would rank by it and the command line does
    # not: with one set, the command line searches in its own process, as every search did before.
    in_process = [_said(_ard("search", *case, data=data, ARD_MCP_TRUST_POLICY="demote")) for case in CASES]
    assert not list(data.glob("*.sock")) and _backends(data) == []
    assert [status for status, _, _ in in_process] == [0, 0, 0, 0, 2, 2, 2, 2]
    assert json.loads(in_process[0][1])["results"][0]["identifier"] == PDF["identifier"]

    cold = time.monotonic()
    first = _said(_ard("search", *CASES[0], data=data))  # no back-end yet: this one starts it
    cold = time.monotonic() - cold
    (backend,) = _backends(data)
    warm = []
    for _ in range(3):
        began = time.monotonic()
        assert _said(_ard("search", *CASES[0], data=data)) == in_process[0]
        warm.append(time.monotonic() - began)
    through = [_said(_ard("search", *case, data=data)) for case in CASES]
    assert first == in_process[0]
    assert through == in_process  # results, errors and exit statuses alike
    assert _backends(data) == [backend]  # every one served by the back-end the first started
    print(f"\nsearch starting the back-end {cold:.2f} s, through it {sorted(warm)[1]:.2f} s (median of 3)")

    # A command that claims the directory asks the idle back-end to stop, rather than being refused for a minute.
    catalog = tmp_path / "more.json"
    catalog.write_text(json.dumps({"specVersion": "1.0", "host": {"displayName": "More"}, "entries": [_weather(1)]}))
    ingested = _ard("ingest", str(catalog), data=data)
    assert ingested.returncode == 0, ingested.stderr
    assert _backends(data) == []
    found = _ard("search", "hourly weather forecast for a city", data=data)
    assert found.returncode == 0, found.stderr
    assert _weather(1)["identifier"] in {r["identifier"] for r in json.loads(found.stdout)["results"]}
    assert _ard("check", data=data).returncode == 0  # and again, with the back-end that search started
    assert _backends(data) == []
    # `snapshot show` too (it printed the bundled snapshot before it claimed the directory, and so was refused).
    assert _ard("search", QUERY, data=data).returncode == 0 and len(_backends(data)) == 1
    shown = _ard("snapshot", "show", data=data)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.count("this registry (") == 1 and _backends(data) == []


@pytest.mark.anyio
@pytest.mark.sqlite_only
async def test_a_search_sees_what_a_host_registered_while_the_host_holds_the_directory(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {**quiet_env(data), "ARD_MCP_DATA_DIR": str(data), "ARD_MCP_BACKEND_IDLE": "2", "ARD_MCP_NO_SNAPSHOT": "1"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "ard_mcp", "serve", "--shared"], env=env)

    def ard(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "ard_mcp", *args], env=env, capture_output=True, text=True, timeout=180)

    with anyio.fail_after(180):
        async with Client(params) as host:
            registered = await host.call_tool("register_agent", {"entry": _weather(0)})
            assert not registered.is_error, registered.content
            found = await anyio.to_thread.run_sync(ard, "search", "hourly weather forecast for a city", "--page-size", "3")
            assert found.returncode == 0, found.stderr
            assert _weather(0)["identifier"] in {r["identifier"] for r in json.loads(found.stdout)["results"]}
            refused = await anyio.to_thread.run_sync(ard, "search", "   ")
            assert (refused.returncode, refused.stderr.strip()) == (2, "ard-mcp: text: must be a non-empty description of the task")
            (backend,) = _backends(data)  # the host's, which the searches used
            # A back-end a host uses is left alone: a command that must claim the directory is refused, as before.
            held = await anyio.to_thread.run_sync(ard, "check")
            assert held.returncode == 2 and "is in use by another ard-mcp process" in held.stderr
            assert _backends(data) == [backend]
            again = await host.call_tool("search_agents", {"text": "hourly weather forecast for a city"})
            assert not again.is_error  # the host's session went on undisturbed
        deadline = time.monotonic() + 30
        while _backends(data):
            assert time.monotonic() < deadline, "the back-end still runs after its last host left"
            await anyio.sleep(0.2)
