"""A hostile package server, end to end: an MCP host attached to `ard-mcp serve` over stdio and to nothing else
registers an entry whose only way in is a PyPI package, consents, and calls it. The package
(`hostile_package_server.py`, a wheel on a loopback index the test starts) tries what a malicious one would:
the operator's home, credential and token files, the registry's data directory, writes outside its state
directory, a loopback listener of the host, ard-mcp's environment and processes, a fork bomb, gigabytes of
memory. Each attempt must fail while its positive control in the same call succeeds, and ard-mcp must keep
serving. Then what a server can do to the lifecycle: crash (reported with its stderr, started again), flood
its stdout with one endless line (stopped, ard-mcp's memory bounded); and consent: a declined question leaves
no trace, a host without elicitation is told the command that approves the package, which then works.

Real parts throughout: `ard-mcp serve` processes, pip installing from a loopback index, bwrap, sockets."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from ard_mcp.packages.plans import LaunchPlan
from ard_mcp.packages.sandbox import Confinement, SandboxUnavailable, check_available
from ard_mcp.redaction import REDACTED
from tests.package_support import loopback_listener, running_with, serving_index, wheel
from tests.processes import quiet_env

NAME, VERSION = "ard-hostile-probe", "1.0.0"
KEY = f"pypi:{NAME}@{VERSION}"
IDENTIFIER = "urn:air:hostile.example:mcp:probe"
SERVER_SOURCE = Path(__file__).with_name("hostile_package_server.py")
SECRET = f"ard-mcp-secret-{uuid.uuid4().hex}"
DECLARED = f"declared-{uuid.uuid4().hex}"  # the value of the one variable it declares, from --package-secrets
SCRATCH = f"/tmp/ard-hostile-{uuid.uuid4().hex}"  # in its private /tmp: written there, never here
GIB, MIB = 1 << 30, 1 << 20
TEST_S = 240  # the most one test may take, every start, install and call included
INVOKE_S = 60  # --invoke-timeout: a call that hangs fails here, well within TEST_S

ENTRY: dict[str, Any] = {
    "identifier": IDENTIFIER,
    "displayName": "Hostile probe",
    "type": "application/mcp-server-card+json",
    "description": "A package server that tries to escape its sandbox.",
    "data": {
        "name": "example.hostile/probe",
        "description": "Probes its confinement.",
        "version": VERSION,
        "packages": [
            {
                "registryType": "pypi",
                "identifier": NAME,
                "version": VERSION,
                "transport": {"type": "stdio"},
                "environmentVariables": [{"name": "HOSTILE_DECLARED", "isSecret": True}],
            }
        ],
    },
}


def _why_not() -> str | None:
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
    try:
        check_available()
    except SandboxUnavailable as exc:
        return str(exc)
    return None


WHY_NOT = _why_not()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")]


@dataclass
class World:
    """The host the package must not reach: ard-mcp's HOME with a secret in it, the operator's credential and
    token files, a host directory, the data directory (a secret planted there too), and the loopback index."""

    root: Path
    data: Path
    home: Path
    credentials: Path
    token_file: Path
    package_secrets: Path
    outside: Path
    index: str
    asked: list[str] = field(default_factory=list)

    @property
    def planted(self) -> dict[str, Path]:
        return {
            "home": self.home / ".secret",
            "credentials": self.credentials,
            "token_file": self.token_file,
            "data": self.data / "planted.txt",
            "approvals": self.data / "packages" / "approved.json",
        }

    @property
    def package_dir(self) -> Path:
        return self.data / "packages" / "cache" / "pypi" / NAME

    @property
    def plan(self) -> LaunchPlan:
        """The launch ENTRY declares, as ard-mcp reads it."""
        return LaunchPlan("pypi", NAME, VERSION, self.index, None, (), (), (("HOSTILE_DECLARED", None),))

    @property
    def server_dir(self) -> Path:
        """Where ard-mcp keeps the server's state directory and, beside it, the log of its stderr."""
        return self.data / "packages" / "servers" / f"pypi_3a{NAME}@{VERSION}" / self.plan.digest


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    files = tmp_path / "index"
    files.mkdir()
    wheel(files, NAME, VERSION, {NAME: "ard_hostile_probe:main"}, module=SERVER_SOURCE.read_text())
    home, secrets, outside, data = tmp_path / "home", tmp_path / "secrets", tmp_path / "outside", tmp_path / "data"
    for directory in (home, secrets, outside, data):
        directory.mkdir()
    (home / ".secret").write_text(SECRET)
    (data / "planted.txt").write_text(SECRET)
    credentials, token_file, package_secrets = secrets / "agents.txt", secrets / "tokens.txt", secrets / "packages.env"
    credentials.write_text(f"hostile.example bearer {SECRET}\n")
    token_file.write_text(f"operator {SECRET} *\n")
    package_secrets.write_text(f"pypi:{NAME} HOSTILE_DECLARED={DECLARED}\n")
    for path in (credentials, token_file, package_secrets):
        path.chmod(0o600)
    asked: list[str] = []
    with serving_index(files, asked) as index:
        yield World(tmp_path, data, home, credentials, token_file, package_secrets, outside, index, asked)


@pytest.fixture
def listener() -> Iterator[int]:
    """A loopback listener on the host that nothing may reach."""
    with loopback_listener() as (port, reached):
        yield port
    assert reached == [], "something reached the host's loopback listener"


def _status(pid: int, field_name: str) -> int:
    """A `kB` line of /proc/PID/status, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field_name}:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field_name} in /proc/{pid}/status")


@dataclass
class Host:
    """The MCP host: its session with `ard-mcp serve`, the questions it was asked, and the server's pid."""

    client: Client
    pid: int
    questions: list[str]

    async def call(self, tool: str, arguments: dict[str, Any] | None = None) -> types.CallToolResult:
        return await self.client.call_tool("call_agent", {"identifier": IDENTIFIER, "tool": tool, "arguments": arguments or {}})

    async def probe(self, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await self.call("probe", {"secret": SECRET, **arguments})
        assert not result.is_error, _text(result)
        assert result.structured_content is not None
        report: dict[str, Any] = json.loads(result.structured_content["result"][0]["text"])
        return report

    async def search(self) -> list[str]:
        result = await self.client.call_tool("search_agents", {"text": "a package server that probes its sandbox"})
        assert not result.is_error, _text(result)
        assert result.structured_content is not None
        return [item["identifier"] for item in result.structured_content["results"]]


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _text(result: types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


def _serve_args(world: World) -> list[str]:
    return [
        *("-m", "ard_mcp", "serve", "--data-dir", str(world.data)),
        *("--package-registry", f"pypi={world.index}", "--no-public-package-registries"),
        *("--agent-credentials", str(world.credentials), "--token-file", str(world.token_file)),
        *("--package-secrets", str(world.package_secrets), "--invoke-timeout", str(INVOKE_S)),
    ]


@asynccontextmanager
async def attached(
    world: World,
    answer: str | None = "accept",
    mode: str | None = None,
    while_asked: Callable[[Client], Awaitable[object]] | None = None,
) -> AsyncIterator[Host]:
    """A host attached to `ard-mcp serve` over stdio (answering the consent question with `answer`, or
    declaring no elicitation at all when None; `mode` "legacy" speaks 2025-11-25; `while_asked` runs on the
    host's session while the person reads the question), the entry registered. The server process gets the
    test's environment (the CA and proxy settings pip needs), a HOME of the test's, and a secret variable. When
    the host detaches, the server stops, and every process it started must stop with it."""
    questions: list[str] = []
    session: list[Client] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        questions.append(params.message)
        if while_asked is not None:
            await while_asked(session[0])
        if answer == "accept":
            return types.ElicitResult(action="accept", content={"network": False})
        return types.ElicitResult(action="decline")

    env = {**quiet_env(world.data), "HOME": str(world.home), "ARD_HOSTILE_SECRET": SECRET}
    server = StdioServerParameters(command=sys.executable, args=_serve_args(world), env=env)
    callback = elicit if answer is not None else None
    async with Client(server, elicitation_callback=callback, **({"mode": mode} if mode else {})) as client:
        session.append(client)
        pids = [pid for pid in running_with(str(world.data)) if b"serve" in Path(f"/proc/{pid}/cmdline").read_bytes()]
        assert len(pids) == 1, pids
        host = Host(client, pids[0], questions)
        registered = await client.call_tool("register_agent", {"entry": ENTRY})
        assert not registered.is_error, _text(registered)
        yield host
    deadline = time.monotonic() + 15
    while running_with(str(world.data)):
        assert time.monotonic() < deadline, f"still running after ard-mcp stopped: {running_with(str(world.data))}"
        await anyio.sleep(0.1)


def _probe_arguments(world: World, port: int, pid: int) -> dict[str, Any]:
    planted = [str(path) for path in world.planted.values()]
    return {
        "read": [*planted, str(world.data / "catalog.sqlite3"), str(world.server_dir / "stderr.log"), "/etc/shadow"],
        "write": [
            SCRATCH,
            str(world.package_dir / VERSION / "lib" / "ard_hostile_probe" / "evil.py"),
            str(world.package_dir / VERSION / "lib" / "ard_hostile_probe" / "__init__.py"),
            str(world.data / "evil.txt"),
            str(world.server_dir / "evil.txt"),
            str(world.outside / "evil.txt"),
            str(world.home / "evil.txt"),
        ],
        "listdir": [str(world.root), str(world.data), str(world.home), str(world.outside)],
        "port": port,
        "host_pid": pid,
    }


@pytest.mark.anyio
async def test_a_hostile_package_reaches_nothing_outside_its_sandbox(world: World, listener: int) -> None:
    with anyio.fail_after(TEST_S):
        async with attached(world) as host:
            assert IDENTIFIER in await host.search()
            arguments = _probe_arguments(world, listener, host.pid)
            began = time.monotonic()
            found = await host.probe({**arguments, "fork": 300, "allocate": [2 * GIB, 16 * MIB]})
            first_call_s = time.monotonic() - began
            again = await host.probe(arguments)
            assert IDENTIFIER in await host.search()
    print(f"\nfirst call (install, start, probe): {first_call_s:.1f} s")

    # consent: asked once, naming the package and version; the approval is kept without network
    assert len(host.questions) == 1 and f"Package: pypi {NAME}, version {VERSION}, from {world.index}." in host.questions[0]
    assert host.questions[0].endswith(f"This answer covers exactly this launch: {world.plan.digest}.")
    approvals = json.loads(world.planted["approvals"].read_text())["approved"]
    assert [(a["key"], a["network"]) for a in approvals] == [(KEY, False)]

    # files: every planted secret, the catalog, its own stderr log and /etc/shadow are not there to read ...
    assert {path: outcome for path, outcome in found["read"].items() if outcome != "FileNotFoundError"} == {}
    # ... while its own package is, and what it writes in its state directory comes back
    assert (found["own_file"], found["mine_back"]) == ("ok", "ok")
    state = world.server_dir / "state"
    assert found["home"] == str(state) and (state / "mine.txt").read_text() == "written by the hostile package"
    # writes: its state directory and private /tmp, nothing else
    assert found["write"].pop(str(state / "mine.txt")) == "ok" and found["write"].pop(SCRATCH) == "ok"
    # beside its own code, into its own view of the package: the install other launches share is left as it was
    beside = str(world.package_dir / VERSION / "lib" / "ard_hostile_probe" / "evil.py")
    assert found["write"].pop(beside) == "ok" and (world.server_dir / "package" / "lib" / "ard_hostile_probe" / "evil.py").is_file()
    own_code = str(world.package_dir / VERSION / "lib" / "ard_hostile_probe" / "__init__.py")
    assert found["write"].pop(own_code) == "PermissionError"  # its view's files are links to the install's: not its to change
    assert [path for path, outcome in found["write"].items() if outcome == "ok"] == []
    assert [path for path in [SCRATCH, beside, *found["write"]] if Path(path).exists()] == []
    # what it sees of the host's directories: the way to its own package, nothing beside it
    assert found["listdir"][str(world.root)] == ["data"] and found["listdir"][str(world.data)] == ["packages"]
    assert found["listdir"][str(world.home)] == "FileNotFoundError" and found["listdir"][str(world.outside)] == "FileNotFoundError"

    # the network: its own loopback works, the host's listener is not there
    assert (found["own_listener"], found["connect"]) == ("ok", "ConnectionRefusedError")

    # environment: the variable it declares, with the operator's value, and nothing of ard-mcp's
    assert found["environ_sha256"]["HOSTILE_DECLARED"] == _sha256(DECLARED) and found["environ"]["HOME"] == str(state)
    assert found["environ"]["HOSTILE_DECLARED"] == REDACTED  # it has its secret; what it says of it reaches no host
    assert set(found["environ"]) <= {
        "HOSTILE_DECLARED",
        "HOME",
        "TMPDIR",
        "LANG",
        "PATH",
        "PWD",
        "NODE_OPTIONS",
    }  # NODE_OPTIONS: the sandbox's own
    assert found["environ_holds_secret"] is False
    # another process's environment: its own is readable (no secret), the namespace's init (bwrap: root's where ard-mcp
    # runs as root) holds none, ard-mcp is not there
    init = "PermissionError" if os.geteuid() == 0 else "no"
    assert found["proc_environ"] == {"self": "no", "1": init, str(host.pid): "FileNotFoundError"}

    # processes: its own only; ard-mcp is neither listed nor signalled
    assert str(found["pid"]) in found["processes"] and str(host.pid) not in found["processes"]
    assert len(found["processes"]) < 8 and [c for c in found["processes"].values() if "--data-dir" in c] == []
    assert found["signal_host"] == "ProcessLookupError"
    if os.geteuid() == 0:
        assert found["uid"] == Confinement().uid

    # resources: the fork bomb stops at its process limit, gigabytes fail where megabytes do not
    assert 0 < found["fork"]["made"] < Confinement().processes and found["fork"]["failed"] > 200
    assert found["allocate"] == {str(2 * GIB): "MemoryError", str(16 * MIB): "ok"}

    # it survived its own attacks (the limits refuse, they do not kill): the second call reached the same process
    assert (again["pid"], again["started"], again["calls"]) == (found["pid"], found["started"], 2)
    assert again["read"] == found["read"] and again["connect"] == "ConnectionRefusedError"


@pytest.mark.anyio
async def test_a_crashed_server_is_reported_with_its_stderr_and_started_again(world: World) -> None:
    said = uuid.uuid4().hex
    with anyio.fail_after(TEST_S):
        async with attached(world) as host:
            before = await host.probe({})
            crashed = await host.call("crash", {"said": said})
            log = world.server_dir / "stderr.log"
            logged, mode = log.read_text(), log.stat().st_mode & 0o777
            after = await host.probe({})
            assert IDENTIFIER in await host.search()
    assert crashed.is_error
    text = _text(crashed)
    assert KEY in text and f"hostile: crashing on purpose ({said}); my key is {REDACTED}" in text, text
    assert after["started"] != before["started"]
    assert after["calls"] == 1 and len(host.questions) == 1
    # its secret reached no surface: not the host (above), not the audit log, not its stderr file, which only the operator reads
    audit = (world.data / "invocations.jsonl").read_text()
    assert said in audit and DECLARED not in audit
    assert f"({said}); my key is {REDACTED}" in logged and DECLARED not in logged and mode == 0o600


@pytest.mark.anyio
async def test_a_declined_question_installs_nothing_and_asks_the_index_nothing(world: World) -> None:
    with anyio.fail_after(TEST_S):
        async with attached(world, answer="decline") as host:
            refused = await host.call("probe", {"secret": SECRET})
            assert IDENTIFIER in await host.search()
    assert refused.is_error and "not approved" in _text(refused), _text(refused)
    assert len(host.questions) == 1
    assert not world.package_dir.exists()
    assert not world.planted["approvals"].exists() or KEY not in world.planted["approvals"].read_text()
    assert not (world.data / "packages" / "servers").exists()
    assert [path for path in world.asked if NAME in path or "ard_hostile_probe" in path] == []


@pytest.mark.anyio
async def test_a_host_without_elicitation_is_told_the_command_that_approves_it(world: World) -> None:
    with anyio.fail_after(TEST_S):
        async with attached(world, answer=None) as host:
            refused = await host.call("probe", {"secret": SECRET})
            command = re.search(r"ard-mcp packages allow (plan:[0-9a-f]{32})", _text(refused))
            assert refused.is_error and command is not None, _text(refused)
            assert not world.package_dir.exists()
            allowed = subprocess.run(
                [sys.executable, "-m", "ard_mcp", "packages", "allow", command[1], "--data-dir", str(world.data)],
                env=quiet_env(world.data),
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert allowed.returncode == 0, allowed.stderr
            found = await host.probe({})
    assert found["calls"] == 1 and found["environ_sha256"]["HOSTILE_DECLARED"] == _sha256(DECLARED)
    approvals = json.loads(world.planted["approvals"].read_text())["approved"]
    assert [(a["key"], a["network"], a["by"]) for a in approvals] == [(KEY, False, "the command line")]


@pytest.mark.anyio
async def test_an_endless_line_is_stopped_and_ard_mcps_memory_stays_bounded(world: World) -> None:
    """The flood is checked as soon as the call returns: without the bound the call would wait out its timeout
    while ard-mcp's peak RSS grew by the whole flood, and the server would hang every later call."""
    flood = 256 * MIB  # past the call's cap (2 MiB) a hundred times over
    with anyio.fail_after(TEST_S):
        async with attached(world) as host:
            before = await host.probe({})
            Path(f"/proc/{host.pid}/clear_refs").write_text("5")  # the peak RSS (VmHWM) starts again from the current RSS
            rss = _status(host.pid, "VmRSS")
            began = time.monotonic()
            flooded = await host.call("flood", {"bytes": flood})
            stopped_s = time.monotonic() - began
            grew = _status(host.pid, "VmHWM") - rss
            print(f"\nflood stopped after {stopped_s:.2f} s; ard-mcp's peak RSS grew {grew / MIB:.1f} MiB")
            assert grew < 64 * MIB
            assert flooded.is_error and KEY in _text(flooded) and "over the limit of 2097152 bytes" in _text(flooded), _text(flooded)
            assert stopped_s < INVOKE_S / 2  # stopped by the cap, not by the call's timeout
            after = await host.probe({})
            assert IDENTIFIER in await host.search()
    assert after["started"] != before["started"] and after["calls"] == 1  # started again by the next call
