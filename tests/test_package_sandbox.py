"""The package sandbox (`ard_mcp.packages.sandbox`) against a hostile server: `sandbox_probe.py`, run confined
by the base interpreter, tries what a malicious package would, and each attempt must fail while the test
process (standing for ard-mcp) is unaffected. Each has its positive control, the same probe succeeding where
the sandbox allows it, so a failure is the sandbox's doing and not a broken probe. Real bwrap, real
processes, real sockets; the probe is started with the test's whole environment, a secret in it, which is
the worst a caller could pass."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp
import pytest
from mcp import Client, StdioServerParameters

from ard_mcp.packages.sandbox import (
    ETC,
    SYSTEM_DIRS,
    Command,
    Confinement,
    Launch,
    SandboxUnavailable,
    check_available,
    sandboxed,
    unsandboxed,
)
from tests.package_support import loopback_listener, running_with, why_not_confined

pytestmark = pytest.mark.slow

BASE = Path(sys.base_prefix)  # a venv's python is a link into it: bound as a runtime directory, it runs inside
PYTHON = BASE / "bin" / "python3"
PROBE = Path(__file__).with_name("sandbox_probe.py")
SECRET = f"ard-mcp-secret-{uuid.uuid4().hex}"
MIB, GIB = 1 << 20, 1 << 30
LIMITS = tuple(getattr(resource, f"RLIMIT_{name}") for name in "NPROC AS DATA CPU NOFILE FSIZE".split())


WHY_NOT = why_not_confined()
confined = pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")


@dataclass(frozen=True)
class World:
    package: Path
    state: Path
    planted: tuple[Path, ...]  # a secret in the home directory, a credentials file, a registry data file


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    package = tmp_path / "package"
    package.mkdir(mode=0o755)
    for name, text in (("probe.py", PROBE.read_text()), ("readme.txt", "the package's own file")):
        (package / name).write_text(text)
        (package / name).chmod(0o644)  # as the installer leaves a package: readable by the sandbox uid
    state = tmp_path / "state"
    state.mkdir()
    planted = (tmp_path / "home" / ".secret", tmp_path / "credentials" / "token", tmp_path / "data" / "registry.sqlite")
    for path in planted:
        path.parent.mkdir()
        path.write_text(SECRET)
    monkeypatch.setenv("HOME", str(planted[0].parent))
    monkeypatch.setenv("ARD_MCP_TEST_SECRET", SECRET)
    return World(package, state, planted)


@pytest.fixture(autouse=True)
def host_unaffected() -> Iterator[None]:
    """Whatever the probe did, the test process keeps its limits and can still start processes."""
    before = [resource.getrlimit(limit) for limit in LIMITS]
    yield
    assert [resource.getrlimit(limit) for limit in LIMITS] == before
    assert subprocess.run(["true"]).returncode == 0


def launch(world: World, *args: str, network: bool = False, environment: dict[str, str] | None = None) -> Launch:
    return Launch(
        command=(str(PYTHON), str(world.package / "probe.py"), *args),
        package_dir=world.package,
        state_dir=world.state,
        runtime_dirs=(BASE,),
        environment=environment or {},
        network=network,
    )


def run(command: Command | list[str]) -> subprocess.CompletedProcess[str]:
    """Start what the sandbox gives with the test's whole environment besides (a secret in it): the worst a caller could pass."""
    if isinstance(command, list):
        return subprocess.run(command, env=dict(os.environ), capture_output=True, text=True, timeout=90)
    try:
        environment = {**os.environ, **command.environment}
        return subprocess.run(command.argv, env=environment, pass_fds=command.pass_fds, capture_output=True, text=True, timeout=90)
    finally:
        command.close()


def probe(world: World, *args: str, confinement: Confinement | None = None, **options: Any) -> Any:
    started = launch(world, *args, **options)
    done = run(sandboxed(started, confinement or Confinement()))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@confined
def test_files_outside_its_directories_are_not_there(world: World) -> None:
    own = str(world.package / "readme.txt")
    others = [*map(str, world.planted), "/etc/shadow", "/etc/gshadow", "/etc/passwd"]
    found = probe(world, "read", own, *others)
    assert found[own] == "ok"
    assert {path: found[path].split()[0] for path in others} == dict.fromkeys(others, "FileNotFoundError")


@confined
def test_only_the_bound_directories_are_there(world: World) -> None:
    """The system directories, a few /etc files, and the paths to its own directories: the real /root shows
    only the way to the interpreter, the planted files' directories are not there."""
    here = str(world.package.parent)
    found = probe(world, "listdir", "/", "/root", "/etc", here)
    system = {Path(d).name for d in SYSTEM_DIRS if os.path.lexists(d)}
    assert set(found["/"]) == system | {"etc", "proc", "dev", "tmp"} | {p.parts[1] for p in (BASE, world.package, world.state)}
    assert found["/root"] == ([BASE.parts[2]] if BASE.parts[1] == "root" else "FileNotFoundError")
    assert set(found["/etc"]) <= {name.split("/")[0] for name in ETC} and "resolv.conf" in found["/etc"]
    assert found[here] == ["package", "state"]


@confined
def test_it_writes_its_state_and_its_own_tmp_and_nothing_else(world: World) -> None:
    mine, scratch = str(world.state / "mine"), f"/tmp/ard-mcp-sandbox-{uuid.uuid4().hex}"
    elsewhere = [str(world.package / "new"), "/usr/new", "/etc/hosts", "/new", "/proc/sys/kernel/hostname"]
    found = probe(world, "write", mine, scratch, *elsewhere)
    assert (found[mine], found[scratch]) == ("ok", "ok")
    assert [path for path in elsewhere if found[path] == "ok"] == []
    assert (world.state / "mine").read_text() == "written by the sandbox"
    assert not Path(scratch).exists() and not (world.package / "new").exists()  # its /tmp was its own


@pytest.fixture
def listener() -> Iterator[int]:
    """A loopback listener on the host that says hello to whoever connects."""
    with loopback_listener() as (port, _):
        yield port


@confined
def test_the_network_is_the_hosts_only_when_granted(world: World, listener: int) -> None:
    assert probe(world, "connect", str(listener)).startswith("ConnectionRefusedError")  # its own loopback: nothing listens
    assert probe(world, "connect", str(listener), network=True) == "ok"


@confined
def test_it_gets_the_declared_environment_and_nothing_of_ard_mcps(world: World) -> None:
    declared = {"DECLARED_TOKEN": "a b'c\"$d ${HOME} \\ end\nsecond line", "EMPTY": ""}
    state = str(world.state)
    path = f"{BASE}/bin:/usr/local/bin:/usr/bin:/bin"
    found = probe(world, "environ", environment=declared)
    node = {"NODE_OPTIONS": "--disable-wasm-trap-handler"} if shutil.which("node", path=path) else {}  # the sandbox's own
    assert found == {**declared, "HOME": state, "TMPDIR": "/tmp", "LANG": "C.UTF-8", "PATH": path, "PWD": state, **node}
    command = sandboxed(launch(world, "environ", environment=declared), Confinement())
    command.close()
    assert [arg for arg in command.argv if declared["DECLARED_TOKEN"] in arg] == []  # values stay off command lines, which ps shows
    assert command.environment == {}  # and out of the environment of every process on the host side
    seen = probe(world, "peek", environment=declared)
    assert [where for where, text in seen.items() if SECRET in text] == []
    assert seen["/proc/1/environ"] == "PermissionError"  # the namespace's init is root's


@confined
def test_node_parses_http_and_the_machines_tls_roots_are_named_given_the_network(world: World, listener: int) -> None:
    """node's `fetch` parses HTTP with WebAssembly, whose address-space reservation is over the sandbox's RLIMIT_AS:
    every `fetch()` of a server crashed (mcp-server-fetch's markdown mode with it). And a server given the network
    is told where the machine's TLS roots are, which node and Python's certifi do not read unasked."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("no node on this machine")
    script = f"fetch('http://127.0.0.1:{listener}/').then(() => console.log('answered'), (e) => console.log('refused', e.message))"
    started = Launch(command=(node, "-e", script), package_dir=world.package, state_dir=world.state, network=True)
    done = run(sandboxed(started, Confinement()))
    assert done.returncode == 0 and "Out of memory" not in done.stderr, done.stderr
    assert done.stdout.startswith(("answered", "refused"))  # the listener's hello is no HTTP: refused, but parsed
    if Path("/etc/ssl/certs/ca-certificates.crt").is_file():
        given = probe(world, "environ", network=True)
        assert given["NODE_EXTRA_CA_CERTS"] == given["SSL_CERT_FILE"] == given["REQUESTS_CA_BUNDLE"] == "/etc/ssl/certs/ca-certificates.crt"
        assert "SSL_CERT_FILE" not in probe(world, "environ")  # no network, nothing to trust


@confined
def test_it_sees_only_its_own_processes(world: World) -> None:
    found = probe(world, "processes", str(os.getpid()))
    ours = Path("/proc/self/cmdline").read_bytes().replace(b"\0", b" ").decode()
    assert len(found["pids"]) <= 4 and ours not in found["cmdlines"].values()
    assert found["signal_host"].startswith("ProcessLookupError")
    assert found["session"] != 0  # its session leader is in its namespace (--new-session): no terminal of ard-mcp's to type into


@confined
def test_it_runs_as_the_sandbox_uid_without_capabilities_or_user_namespaces(world: World) -> None:
    uid = Confinement().uid
    found = probe(world, "identity")
    assert (found["uid"], found["gid"]) == (uid, uid)
    assert {found[k] for k in ("CapPrm", "CapEff", "CapBnd", "CapAmb")} == {"0000000000000000"}
    assert found["NoNewPrivs"] == "1"
    assert found["userns"] == "No space left on device"  # --disable-userns
    assert world.state.stat().st_uid == uid and world.state.stat().st_mode & 0o777 == 0o700


@confined
def test_a_fork_bomb_is_bounded(world: World) -> None:
    found = probe(world, "fork", "500", confinement=Confinement(processes=64))
    assert 0 < found["made"] < 64 and found["failed"] > 400


@confined
@pytest.mark.parametrize(
    ("kind", "size", "bound_by"),
    [
        ("private", 2 * GIB, "memory_bytes, RLIMIT_DATA"),
        ("shared", 4 * GIB, "address_space_bytes, RLIMIT_AS"),
        ("memfd", 512 * MIB, "file_bytes, RLIMIT_FSIZE"),
        ("tmp", 128 * MIB, "tmp_bytes, the size of its /tmp"),
    ],
)
def test_memory_is_bounded(world: World, kind: str, size: int, bound_by: str) -> None:
    """Under the default confinement: gigabytes fail, and the same allocation, small, succeeds."""
    assert probe(world, "allocate", kind, str(size)) != "ok", bound_by
    assert probe(world, "allocate", kind, str(16 * MIB)) == "ok"


@confined
def test_cpu_past_the_limit_is_killed(world: World) -> None:
    began = time.monotonic()
    done = run(sandboxed(launch(world, "burn"), Confinement(cpu_seconds=1)))
    assert done.returncode != 0 and "survived" not in done.stdout
    assert time.monotonic() - began < 20  # the probe would spin for 30 s


@confined
def test_open_files_are_bounded(world: World) -> None:
    found = probe(world, "files", "1000", confinement=Confinement(open_files=256))
    assert 200 < found["opened"] < 256 and found["failed"] > 700


@confined
def test_it_dies_with_its_parent(world: World) -> None:
    token = uuid.uuid4().hex
    argv = sandboxed(launch(world, "wait", token), Confinement()).argv
    spawn = "import subprocess, sys, time; subprocess.Popen(sys.argv[1:]); time.sleep(60)"
    parent = subprocess.Popen([sys.executable, "-c", spawn, *argv])
    try:
        deadline = time.monotonic() + 30
        while not (world.state / "started").exists():
            assert time.monotonic() < deadline, "the probe did not start"
            time.sleep(0.05)
        assert len(running_with(token)) >= 3  # the parent, bwrap, the probe
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 10
    while running_with(token):
        assert time.monotonic() < deadline, f"still running: {running_with(token)}"
        time.sleep(0.05)


SERVER = """
from mcp.server.mcpserver import MCPServer

app = MCPServer("sandboxed")


@app.tool()
def add(a: int, b: int) -> int:
    return a + b


app.run()
"""


@confined
@pytest.mark.anyio
async def test_an_mcp_server_speaks_stdio_through_the_sandbox(world: World) -> None:
    """The SDK's own stdio client speaks MCP with a server through the sandbox's view and limits."""
    site = Path(mcp.__file__).resolve().parents[1]  # the venv's site-packages, read-only, for this test's server alone
    (world.package / "server.py").write_text(f"import sys\nsys.path.insert(0, {str(site)!r})\n{SERVER}")
    started = Launch(
        command=(str(PYTHON), str(world.package / "server.py")),
        package_dir=world.package,
        state_dir=world.state,
        runtime_dirs=(BASE, site),
    )
    argv = sandboxed(started, Confinement()).argv  # no variables, so no descriptor (the SDK's stdio client passes none)
    async with Client(StdioServerParameters(command=argv[0], args=argv[1:], env={})) as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == ["add"]
        result = await client.call_tool("add", {"a": 2, "b": 3})
    assert not result.is_error and result.content[0].text == "5"  # type: ignore[union-attr]


NON_ROOT_PROBE = r"""
echo uid=$(id -u)
echo processes=$(ls /proc | grep -c '^[0-9]')
if unshare -U true 2>/dev/null; then echo userns=made; else echo userns=refused; fi
if echo x > mine 2>/dev/null; then echo state=written; else echo state=refused; fi
if echo x > /usr/new 2>/dev/null; then echo usr=written; else echo usr=refused; fi
made=0; i=0
while [ $i -lt 100 ]; do i=$((i+1)); if (sleep 3 &) 2>/dev/null; then made=$((made+1)); fi; done
echo made=$made
"""


@confined
def test_a_registry_not_run_as_root_confines_its_servers_as_its_own_user() -> None:
    """The argv a registry run by another user builds (one bwrap, in a user namespace), run by that user."""
    uid = 64001
    package, state = Path(tempfile.mkdtemp(prefix="ard-mcp-package-")), Path(tempfile.mkdtemp(prefix="ard-mcp-state-"))
    try:
        package.chmod(0o755)
        os.chown(state, uid, uid)
        started = Launch(command=("/bin/sh", "-c", NON_ROOT_PROBE), package_dir=package, state_dir=state)
        argv = sandboxed(started, Confinement(processes=32), as_root=False).argv
        done = run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--", *argv])
        assert done.returncode == 0, done.stderr
        said = dict(line.split("=", 1) for line in done.stdout.split())
        assert (said["uid"], said["userns"], said["state"], said["usr"]) == (str(uid), "refused", "written", "refused")
        assert int(said["processes"]) < 8 and 0 < int(said["made"]) < 32
    finally:
        shutil.rmtree(package)
        shutil.rmtree(state)


@confined
def test_unsandboxed_keeps_the_environment_and_limits_but_not_the_files(world: World) -> None:
    """For an operator who allowed it: no isolation (the planted secret is read), the rest as in the sandbox."""
    declared = {"DECLARED_TOKEN": "value"}
    for args, check in (
        (
            ("environ",),
            lambda found: (
                set(found) == {"DECLARED_TOKEN", "HOME", "TMPDIR", "LANG", "PATH", *(["NODE_OPTIONS"] if shutil.which("node") else [])}
            ),
        ),
        (("read", str(world.planted[0])), lambda found: found[str(world.planted[0])] == "ok"),
        (("allocate", "private", str(2 * GIB)), lambda found: found != "ok"),
    ):
        done = run(unsandboxed(launch(world, *args, environment=declared), Confinement()))
        assert done.returncode == 0 and check(json.loads(done.stdout)), (args, done.stdout, done.stderr)


def test_without_bwrap_it_says_what_to_install(tmp_path: Path) -> None:
    missing = str(tmp_path / "bwrap")
    with pytest.raises(SandboxUnavailable) as raised:
        check_available(missing)
    assert raised.value.hint == "apt-get install bubblewrap" and "is not installed" in raised.value.reason
    started = Launch(command=("/bin/true",), package_dir=tmp_path, state_dir=tmp_path)
    with pytest.raises(SandboxUnavailable, match="apt-get install bubblewrap"):
        sandboxed(started, Confinement(), bwrap=missing)


@pytest.mark.parametrize(
    "wrong",
    [
        {"command": ("python3", "server.py")},
        {"environment": {"NOT A NAME": "x"}},
        {"environment": {"X}; rm -rf /": "x"}},
        {"environment": {"LD_PRELOAD": "/tmp/evil.so"}},
        {"environment": {"ld_audit": "/tmp/evil.so"}},
        {"environment": {"GCONV_PATH": "/tmp"}},
        {"environment": {"GLIBC_TUNABLES": "glibc.malloc.check=3"}},
        {"environment": {"PYTHONSTARTUP": "/tmp/evil.py"}},
        {"environment": {"NODE_OPTIONS": "--require /tmp/evil.js"}},
        {"environment": {"npm_config_script_shell": "/tmp/evil"}},
        {"environment": {"BASH_ENV": "/tmp/evil.sh"}},
        {"environment": {"PERL5OPT": "-Mevil"}},
        {"environment": {"JAVA_TOOL_OPTIONS": "-javaagent:evil.jar"}},
        {"environment": {"OK_NAME": "a\0b"}},
        {"runtime_dirs": (Path("relative"),)},
    ],
)
def test_a_launch_it_cannot_confine_is_refused(tmp_path: Path, wrong: dict[str, Any]) -> None:
    started = Launch(**{"command": ("/bin/true",), "package_dir": tmp_path, "state_dir": tmp_path, **wrong})
    with pytest.raises(ValueError):
        sandboxed(started, Confinement())
    with pytest.raises(ValueError):
        unsandboxed(started, Confinement())


@confined
def test_declared_values_reach_no_process_on_the_host_side(world: World) -> None:
    """The processes that build the sandbox run as root outside it: a declared value in their environment let an
    entry's LD_PRELOAD run code as root on the host (issue #53). Only the server, as the sandbox uid, holds it."""
    token, value = uuid.uuid4().hex, f"declared-{uuid.uuid4().hex}"
    command = sandboxed(launch(world, "wait", token, environment={"DECLARED": value}), Confinement())
    server = subprocess.Popen(command.argv, env={**os.environ, **command.environment}, pass_fds=command.pass_fds)
    command.close()
    try:
        deadline = time.monotonic() + 30
        while not (world.state / "started").exists():
            assert time.monotonic() < deadline, "the probe did not start"
            time.sleep(0.05)
        holders = {}
        for pid in running_with(token):
            status = Path(f"/proc/{pid}/status").read_text()
            uid = int(next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1])
            holders[pid] = (uid, value.encode() in Path(f"/proc/{pid}/environ").read_bytes())
    finally:
        server.kill()
        server.wait()
    assert len(holders) >= 3, holders  # bwrap, the inner bwrap, the probe
    assert {uid for uid, holds in holders.values() if holds} == {Confinement().uid}
    assert [pid for pid, (uid, holds) in holders.items() if uid == 0 and holds] == []
