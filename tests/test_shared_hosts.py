"""Every host at once (issue #55): four hosts attached from the configurations `ard-mcp host-config` prints, all
on the one default data directory of a fresh HOME, register and search at the same time through the back-end
their `serve --shared` front-ends share; a write through one is seen by the others; the back-end killed with
SIGKILL is started again by the next request, with every acknowledged write kept; it stops once the last host
has left. Real `ard-mcp` processes, real MCP clients over stdio."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters

from tests.processes import quiet_env

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

HOSTS = ("claude-desktop", "claude-code", "cursor", "vscode")
IDLE_S = 2


def _entry(home: Path, host: str) -> dict[str, Any]:
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local" / "share")}
    printed = subprocess.run(
        [sys.executable, "-m", "ard_mcp", "host-config", host], env=env, cwd=home, capture_output=True, text=True, timeout=60
    )
    assert printed.returncode == 0, printed.stderr
    servers = json.loads(printed.stdout)
    entry: dict[str, Any] = next(iter(servers.values()))["ard"]
    return entry


def _backends(data: Path) -> list[int]:
    """The back-ends serving `data` (the configurations name it in the environment, a hand-written one on the
    command line)."""
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            line, environ = Path(f"/proc/{pid}/cmdline").read_bytes(), Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        named = f"ARD_MCP_DATA_DIR={data}".encode() in environ.split(b"\0") or str(data).encode() in line.split(b"\0")
        if b"--backend" in line.split(b"\0") and named:
            found.append(int(pid))
    return found


def _weather(i: int) -> dict[str, Any]:
    return {
        "identifier": f"urn:air:host{i}.example:agents:weather",
        "displayName": f"Weather of host {i}",
        "type": "application/a2a-agent-card+json",
        "url": f"https://host{i}.example/card.json",
        "description": "Forecasts the weather for a city, hour by hour.",
    }


async def test_four_hosts_share_one_data_directory_and_survive_a_killed_back_end(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    entries = {host: _entry(home, host) for host in HOSTS}
    data = Path(entries["cursor"]["env"]["ARD_MCP_DATA_DIR"])
    assert all(entry["args"][-2:] == ["serve", "--shared"] for entry in entries.values())
    assert {entry["env"]["ARD_MCP_DATA_DIR"] for entry in entries.values()} == {str(data)}  # one default directory
    base = {**quiet_env(data), "HOME": str(home), "ARD_MCP_NO_SNAPSHOT": "1", "ARD_MCP_BACKEND_IDLE": str(IDLE_S)}
    registered, seen_by, after_kill, failures = anyio.Event(), {}, {}, []
    counted: list[str] = []

    async def host(i: int, name: str) -> None:
        entry = entries[name]
        params = StdioServerParameters(command=entry["command"], args=entry["args"], env={**base, **entry["env"]}, cwd=str(home))
        async with Client(params) as client:

            async def found() -> set[str]:
                result = await client.call_tool("search_agents", {"text": "hourly weather forecast for a city"})
                if result.is_error:
                    failures.append(f"{name}: {result.content}")
                return {r["identifier"] for r in (result.structured_content or {}).get("results", [])}

            result = await client.call_tool("register_agent", {"entry": _weather(i)})
            if result.is_error:
                failures.append(f"{name}: {result.content}")
            counted.append(name)
            if len(counted) == len(HOSTS):
                registered.set()
            await registered.wait()
            began = time.monotonic()
            seen_by[name] = (await found(), time.monotonic() - began)
            await killed.wait()
            try:
                after_kill[name] = await found()
            except MCPError as exc:  # in flight as the back-end died: said so, and the next request is served
                assert "back-end stopped while this request was in flight" in exc.message, exc.message
                after_kill[name] = await found()

    killed = anyio.Event()
    with anyio.fail_after(240):
        async with anyio.create_task_group() as group:
            for i, name in enumerate(HOSTS):
                group.start_soon(host, i, name)
            while len(seen_by) < len(HOSTS) and not failures:
                await anyio.sleep(0.1)
            (backend,) = _backends(data)
            os.kill(backend, signal.SIGKILL)
            killed.set()
        deadline = time.monotonic() + IDLE_S + 15
        while _backends(data):
            assert time.monotonic() < deadline, f"a back-end still runs after the last host left: {_backends(data)}"
            await anyio.sleep(0.2)
    everyone = {_weather(i)["identifier"] for i in range(len(HOSTS))}
    assert failures == []
    assert all(found >= everyone for found, _ in seen_by.values()), seen_by  # each host's write seen by every host
    assert all(found >= everyone for found in after_kill.values()), after_kill  # nothing acknowledged was lost
    print(f"\nsearch right after the others' writes: {max(took for _, took in seen_by.values()):.2f} s at most")


@pytest.mark.parametrize(
    "argv",
    [
        ["serve"],  # with nothing on stdin (as here), the command line says so
        ["serve", "--no-invocation"],
        ["serve", "--shared", "--help"],
        ["serve", "--shared", "--transport", "sse"],
        ["serve", "--shared", "--no-invocation"],
        ["serve", "--shared", "--data-dir"],
        ["search", "--shared"],
        ["serve", "--shared", "--backend"],
        ["--version"],
    ],
)
def test_only_a_hosts_plain_serve_skips_the_command_lines_parser(argv: list[str]) -> None:
    """Anything else is the parser's to read (and to refuse or explain), as before."""
    from ard_mcp.surfaces.sharing.frontend import quick

    def never(argv: Sequence[str], connection: socket.socket) -> threading.Thread | None:
        raise AssertionError("no back-end is started for a command the parser reads")

    assert quick(argv, never) is None


def test_a_data_directory_named_either_way_is_one_back_ends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ard_mcp.surfaces.sharing.frontend import settings_of, socket_path

    monkeypatch.delenv("ARD_MCP_DATA_DIR", raising=False)
    by_flag = socket_path(tmp_path, settings_of(["serve", "--shared", "--data-dir", str(tmp_path)]))
    assert socket_path(tmp_path, settings_of(["serve", "--backend", f"--data-dir={tmp_path}"])) == by_flag
    monkeypatch.setenv("ARD_MCP_DATA_DIR", str(tmp_path))
    assert socket_path(tmp_path, settings_of(["serve", "--shared"])) == by_flag
    assert socket_path(tmp_path, settings_of(["serve", "--shared", "--no-invocation"])) != by_flag  # other settings, another


@pytest.mark.sqlite_only  # the back-end is found by the data directory it was given
async def test_a_host_starting_plain_serve_joins_the_hosts_sharing_the_directory(tmp_path: Path) -> None:
    """A host configured by hand with plain `serve` beside hosts `host-config` configured (`serve --shared`): it
    joins their back-end as one more front-end, where it was refused "in use"; alone, plain `serve` is as before."""
    data = tmp_path / "data"
    env = {**quiet_env(data), "ARD_MCP_DATA_DIR": str(data), "ARD_MCP_BACKEND_IDLE": str(IDLE_S), "ARD_MCP_NO_SNAPSHOT": "1"}
    shared = StdioServerParameters(command=sys.executable, args=["-m", "ard_mcp", "serve", "--shared"], env=env)
    plain = StdioServerParameters(command=sys.executable, args=["-m", "ard_mcp", "serve"], env=env)
    with anyio.fail_after(180):
        async with Client(shared) as first:
            registered = await first.call_tool("register_agent", {"entry": _weather(7)})
            assert not registered.is_error, registered.content
            (backend,) = _backends(data)
            async with Client(plain) as second:
                found = await second.call_tool("search_agents", {"text": "hourly weather forecast for a city"})
                assert not found.is_error, found.content
                assert _weather(7)["identifier"] in {r["identifier"] for r in found.structured_content["results"]}
                again = await second.call_tool("register_agent", {"entry": _weather(8)})
                assert not again.is_error, again.content
            seen = await first.call_tool("search_agents", {"text": "hourly weather forecast for a city"})
            assert _weather(8)["identifier"] in {r["identifier"] for r in seen.structured_content["results"]}
            assert _backends(data) == [backend]  # one back-end served both
        deadline = time.monotonic() + 30
        while _backends(data):
            assert time.monotonic() < deadline, "the back-end still runs after its last host left"
            await anyio.sleep(0.2)
        async with Client(plain) as alone:  # no back-end: plain `serve` holds the directory itself, as before
            listed = await alone.call_tool("search_agents", {"text": "hourly weather forecast for a city"})
            assert not listed.is_error and _backends(data) == []


def _plain_serves(data: Path) -> list[int]:
    """The plain `serve` processes (no `--shared`, no `--backend`) on `data`."""
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"serve" in words and str(data).encode() in words and not {b"--shared", b"--backend"} & set(words):
            found.append(int(pid))
    return found


@pytest.mark.sqlite_only  # the hosts find each other by the data directory
async def test_hosts_join_the_plain_serve_that_started_first_and_outlive_it(tmp_path: Path) -> None:
    """Two hosts configured by hand with plain `serve` and one with `serve --shared`, one data directory: the
    first `serve` holds it and the others join it (they were refused "in use"). Its host leaving stops it, and
    the ones left start a back-end of their own with nothing lost; the last process exits once the last host
    has left."""
    data = tmp_path / "data"
    env = {**quiet_env(data), "ARD_MCP_BACKEND_IDLE": str(IDLE_S), "ARD_MCP_NO_SNAPSHOT": "1"}
    plain = StdioServerParameters(command=sys.executable, args=["-m", "ard_mcp", "serve", "--data-dir", str(data)], env=env)
    shared = StdioServerParameters(command=sys.executable, args=["-m", "ard_mcp", "serve", "--shared", "--data-dir", str(data)], env=env)
    task = "hourly weather forecast for a city"

    async def found(client: Client) -> set[str]:
        result = await client.call_tool("search_agents", {"text": task})
        assert not result.is_error, result.content
        return {r["identifier"] for r in result.structured_content["results"]}

    first_in, first_gone, leave = anyio.Event(), anyio.Event(), anyio.Event()
    firsts: list[set[str]] = []

    async def first_host() -> None:
        async with Client(plain) as first:
            assert not (await first.call_tool("register_agent", {"entry": _weather(1)})).is_error
            first_in.set()
            await leave.wait()
            firsts.append(await found(first))
        first_gone.set()

    everyone = {_weather(i)["identifier"] for i in (1, 2, 3)}
    with anyio.fail_after(240):
        async with anyio.create_task_group() as group:
            group.start_soon(first_host)
            await first_in.wait()
            (holder,) = _plain_serves(data)
            async with Client(plain) as second, Client(shared) as third:
                assert not (await second.call_tool("register_agent", {"entry": _weather(2)})).is_error
                assert not (await third.call_tool("register_agent", {"entry": _weather(3)})).is_error
                assert _backends(data) == []  # they joined the first `serve`: no back-end was started
                leave.set()
                await first_gone.wait()  # the first host saw the others' writes, and left
                assert firsts[0] >= everyone
                assert holder not in _plain_serves(data)  # it stopped with its host: the others carry on
                for client in (second, third):
                    try:
                        seen = await found(client)
                    except MCPError as exc:  # in flight as it stopped: said so, and the next one is served
                        assert "back-end stopped while this request was in flight" in exc.message, exc.message
                        seen = await found(client)
                    assert seen >= everyone  # nothing acknowledged was lost
                assert len(_backends(data)) == 1
        deadline = time.monotonic() + IDLE_S + 15
        while _backends(data) or _plain_serves(data):
            assert time.monotonic() < deadline, "an ard-mcp process still runs after the last host left"
            await anyio.sleep(0.2)


@pytest.mark.sqlite_only  # the kept answers are beside the data directory's socket
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_hosts_first_answers_come_from_the_last_back_ends_while_the_next_starts(tmp_path: Path, mode: str) -> None:
    """A front-end keeps the back-end's answers to the handshake (`initialize`, or the 2026 protocol's
    `server/discover`) and to a first `tools/list` beside the socket, and gives them at once on the next start,
    while the back-end starts: the host's session then goes on through it (the handshake replayed). A kept tool
    list that is no longer the back-end's is replaced, and the host told the list changed."""
    data = tmp_path / "data"
    env = {**quiet_env(data), "ARD_MCP_BACKEND_IDLE": "0.5", "ARD_MCP_NO_SNAPSHOT": "1"}
    shared = StdioServerParameters(command=sys.executable, args=["-m", "ard_mcp", "serve", "--shared", "--data-dir", str(data)], env=env)
    notified: list[str] = []

    async def noted(message: Any) -> None:
        notified.append(getattr(getattr(message, "root", message), "method", "") or type(message).__name__)

    async def session() -> tuple[list[str], bool, list[str]]:
        async with Client(shared, mode=mode, message_handler=noted) as host:  # type: ignore[arg-type]
            names = [t.name for t in (await host.list_tools()).tools]
            found = await host.call_tool("search_agents", {"text": "hourly weather forecast for a city"})
            return names, not found.is_error, [t.name for t in (await host.list_tools()).tools]

    async def gone() -> None:
        deadline = time.monotonic() + 30
        while _backends(data):
            assert time.monotonic() < deadline
            await anyio.sleep(0.1)

    with anyio.fail_after(180):
        first, searched, _ = await session()
        (kept,) = data.glob("ard-mcp-*.hello.json")
        assert searched and "search_agents" in first
        await gone()
        second, searched, again = await session()  # answered from what was kept, the search through the back-end it started
        assert second == first == again and searched and notified == []
        stale = json.loads(kept.read_text())
        for answer in stale.values():
            if "tools" in answer:
                answer["tools"] = [t for t in answer["tools"] if t["name"] != "search_agents"]
        kept.write_text(json.dumps(stale))
        await gone()
        third, searched, again = await session()  # a stale list given, then replaced and said to have changed
        assert "search_agents" not in third and searched and again == first
        assert notified == ["notifications/tools/list_changed"], notified
        assert "search_agents" in json.dumps(json.loads(kept.read_text()))


@pytest.mark.sqlite_only  # the kept answers are beside the data directory's socket
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_new_data_directorys_first_answers_come_from_the_machines_last_back_end(tmp_path: Path, mode: str) -> None:
    """A host's first start on a new data directory is answered at once from what a back-end of the same
    install and settings answered for another directory of the user's (`link.Hello`'s machine file): its
    handshake and first `tools/list` come while no back-end can start (the test holds the lock a front-end
    takes to start one), exactly as the back-end then answers them; the session then goes on through it."""
    env = {**quiet_env(), "ARD_MCP_BACKEND_IDLE": "0.5", "ARD_MCP_NO_SNAPSHOT": "1", "XDG_CACHE_HOME": str(tmp_path / "cache")}

    def host(data: Path) -> Client:
        argv = ["-m", "ard_mcp", "serve", "--shared", "--data-dir", str(data)]
        return Client(StdioServerParameters(command=sys.executable, args=argv, env=env), mode=mode)

    with anyio.fail_after(180):
        async with host(tmp_path / "first") as first:
            tools = [t.model_dump() for t in (await first.list_tools()).tools]
        (kept,) = (tmp_path / "first").glob("ard-mcp-*.hello.json")
        (tmp_path / "new").mkdir()
        with open(tmp_path / "new" / kept.name.replace(".hello.json", ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # no front-end starts a back-end for the new directory meanwhile
            with anyio.fail_after(60):  # on the old code, the front-end waited for the back-end: nothing came
                async with host(tmp_path / "new") as new:
                    early = [t.model_dump() for t in (await new.list_tools()).tools]
                    assert not _backends(tmp_path / "new")
                    fcntl.flock(lock, fcntl.LOCK_UN)
                    found = await new.call_tool("search_agents", {"text": "hourly weather forecast for a city"})
                    late = [t.model_dump() for t in (await new.list_tools()).tools]
        assert early == tools == late and not found.is_error
