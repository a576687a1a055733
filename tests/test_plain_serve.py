"""Plain `ard-mcp serve`, as a host configured by hand (or the README) starts it: its handshake and first
`tools/list` come from what a back-end of the same install and settings answered before, while its own server is
imported and built in the background (1.1 s to the first `tools/list` before), and it exits only once its
registry is closed. Real processes driven by JSON-RPC lines on their stdio, as a host drives them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import WEATHER
from tests.processes import quiet_env, serving

pytestmark = pytest.mark.slow

VERSION, HOST = "2025-06-18", {"name": "a host", "version": "1"}
HANDSHAKE: list[dict[str, Any]] = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": HOST},
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
]


def _env(tmp_path: Path, data: Path) -> dict[str, str]:
    return {**quiet_env(data), "XDG_CACHE_HOME": str(tmp_path / "cache"), "ARD_MCP_NO_SNAPSHOT": "1"}


def _plain(data: Path, env: dict[str, str], asked: list[dict[str, Any]]) -> tuple[dict[object, Any], str, int]:
    """Plain `serve` on `data`, asked `asked` at once, its stdin closed once every request is answered (or its
    output ends), as a host leaves: (its answers by id, its stderr, its exit status)."""
    command = [sys.executable, "-m", "ard_mcp", "serve", "--data-dir", str(data)]
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    process.stdin.write("".join(json.dumps(m) + "\n" for m in asked).encode())
    process.stdin.flush()
    awaited, answers = {m["id"] for m in asked if "id" in m}, dict[object, Any]()
    while not awaited <= answers.keys():
        line = process.stdout.readline()  # bounded: the process exits (EOF) where it cannot serve
        if not line:
            break
        message = json.loads(line)
        if "id" in message:
            answers[message["id"]] = message
    process.stdin.close()
    status = process.wait(timeout=120)
    return answers, process.stderr.read().decode(), status


@pytest.mark.sqlite_only  # the directory is held by its claim, which a PostgreSQL store with a Chroma server has none of
def test_a_plain_serve_answers_the_handshake_from_what_was_kept_before_its_server_is_there(tmp_path: Path) -> None:
    """On a directory another kind of server holds (HTTP, which no host can join), its own server can never
    start: the handshake and first `tools/list` are still answered, exactly as a back-end of these settings
    answered them on another directory, and the process then exits saying why, with the command line's status."""
    first, held = tmp_path / "first", tmp_path / "held"
    answered, _, status = _plain(first, _env(tmp_path, first), HANDSHAKE)
    assert status == 0 and "search_agents" in json.dumps(answered[2]["result"])
    with serving(held, "--transport", "streamable-http"):
        early, said, status = _plain(held, _env(tmp_path, held), HANDSHAKE)
    assert early[2]["result"] == answered[2]["result"] and early[1]["result"] == answered[1]["result"]
    assert status == 2 and "is in use by another ard-mcp process" in said and "Traceback" not in said


def test_a_plain_serve_closes_its_registry_before_it_exits(tmp_path: Path) -> None:
    """The process waits for its server's thread to close the registry: an exit that began first stopped the
    thread pools under it ("cannot schedule new futures after interpreter shutdown"), and the next start had to
    send the vector index the writes it missed."""
    data = tmp_path / "data"
    env = _env(tmp_path, data)
    register = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "register_agent", "arguments": {"entry": WEATHER}}}
    answered, said, status = _plain(data, env, [*HANDSHAKE, register])
    assert status == 0 and not answered[3]["result"].get("isError"), answered
    search = {"name": "search_agents", "arguments": {"text": "forecast for Tokyo tomorrow"}}
    found, again, status = _plain(data, env, [*HANDSHAKE, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": search}])
    assert status == 0 and found[3]["result"]["structuredContent"]["results"][0]["identifier"] == WEATHER["identifier"]
    assert "ERROR" not in said + again and "whose write it had not received" not in again, said + again


def test_a_plain_serve_that_cannot_start_says_why_and_exits(tmp_path: Path) -> None:
    """Its server starts in a thread of the front-end: a setting refused there (as `cli.main` refuses it) ends the
    process with the command line's message and status, where the host would otherwise wait for ever."""
    env = {**_env(tmp_path, tmp_path / "data"), "ARD_MCP_UPSTREAMS": "ftp://registry.example"}
    answered, said, status = _plain(tmp_path / "data", env, HANDSHAKE)
    assert status == 2 and "--upstream 'ftp://registry.example': must be an http or https URL" in said, said
    assert "Traceback" not in said and 2 not in answered


def test_a_warm_up_after_the_server_closed_opens_nothing_and_says_nothing(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A host that leaves within the warm-up's delay closes the registry first: the warm-up then neither opens
    it again in an exiting process (claiming the data directory anew) nor logs an error (a PostgreSQL store's
    closed pool read as the store being down)."""
    from ard_mcp.config import Config
    from ard_mcp.index import datadir
    from ard_mcp.surfaces.mcp.lazy_registry import Opening

    config = Config(data_dir=tmp_path / "data")
    opening = Opening(config)
    opening.close()
    opening.warm_up()
    assert opening.ready is None and not [r for r in caplog.records if r.levelname == "ERROR"]
    datadir.release(datadir.claim_for(config))  # let go: another process may have the directory


@pytest.mark.anyio
@pytest.mark.sqlite_only  # the hosts find each other by the data directory
async def test_hosts_started_together_plain_and_shared_all_get_the_one_registry(tmp_path: Path) -> None:
    """A desktop app starts its servers at once: two hand-written plain `serve`s and two `serve --shared` on one new
    directory. Each claim is now held from the first try to the server's own (it was let go in between, and a
    back-end starting meanwhile took the directory), and a plain `serve` that finds it held waits for the holder
    to take hosts: all four served, each seeing every write; before, one or two exited "in use"."""
    data = tmp_path / "data"
    env = {**_env(tmp_path, data), "ARD_MCP_BACKEND_IDLE": "1"}
    task = "hourly weather forecast for a city"

    def weather(i: int) -> dict[str, Any]:
        return {**WEATHER, "identifier": f"urn:air:host{i}.example:agents:weather"}

    registered, searched, found = anyio.Event(), anyio.Event(), dict[int, set[str]]()
    done = [0]

    async def host(i: int) -> None:
        flags = ["--shared"] if i % 2 else []
        server = StdioServerParameters(command=sys.executable, args=["-m", "ard_mcp", "serve", *flags, "--data-dir", str(data)], env=env)
        async with Client(server) as client:
            result = await client.call_tool("register_agent", {"entry": weather(i)})
            assert not result.is_error, result.content
            done[0] += 1
            if done[0] == 4:
                registered.set()
            await registered.wait()
            page = await client.call_tool("search_agents", {"text": task, "pageSize": 20})
            assert page.structured_content is not None
            found[i] = {r["identifier"] for r in page.structured_content["results"]}
            if len(found) == 4:
                searched.set()
            await searched.wait()  # a plain `serve` leaving stops the back-end the others joined (their request in flight lost)

    with anyio.fail_after(240):
        async with anyio.create_task_group() as group:
            for i in range(4):
                group.start_soon(host, i)
    assert all(seen >= {weather(i)["identifier"] for i in range(4)} for seen in found.values()) and len(found) == 4, found
