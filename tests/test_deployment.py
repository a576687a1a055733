"""The deployment of deploy/, end to end on this machine: PostgreSQL 15 (password auth), a Chroma server and
two `ard-mcp serve` processes started from the systemd units' own ExecStart lines and environment file, with
Debian's nginx in front running deploy/nginx/ard-mcp.conf (TLS included). systemd itself does not run here
(no systemd as PID 1): the units are checked with `systemd-analyze verify` and `security --offline`, and
their command lines are what the processes run, so the test and the units cannot drift apart.

Checked through the proxy: the same answers as from a process directly; a write visible on both processes;
MCP over streamable HTTP; the client's address reaching the process; the Host check and the body limit
answered by ard-mcp in the API's error object; and, with the process holding the MCP session stopped, the
proxy answering from the other one, a new MCP session included."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests import postgres_server
from tests.certificates import self_signed
from tests.conftest import REPO, WEATHER
from tests.deployment_support import until_status
from tests.processes import free_port, wait_for

DEPLOY = REPO / "deploy"
UNIT = DEPLOY / "systemd" / "ard-mcp@.service"
CHROMA_UNIT = DEPLOY / "systemd" / "ard-mcp-chroma.service"
ENVIRONMENT = DEPLOY / "systemd" / "ard-mcp.env"
NGINX = DEPLOY / "nginx" / "ard-mcp.conf"
PUBLIC_NAME = "registry.example.com"  # the name the deploy files use (RFC 2606: never resolved here)
TOKEN = "deploy-token-0123456789abcdef"
PASSWORD = "deploy0pg0secret0a1b2c3"
BINARIES = Path(sys.executable).parent  # the venv's ard-mcp and chroma stand for /opt/ard-mcp/bin's
NGINX_BINARY = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None)  # sbin: off a user's PATH

pytestmark = [pytest.mark.slow]


# -- reading the units as systemd does -------------------------------------------------------------------------
def unit_setting(unit: Path, key: str) -> str:
    """The value of `key=` in a unit file, continuation lines joined (the units set each key once)."""
    text = re.sub(r"\\\n\s*", " ", unit.read_text())
    values = [line.split("=", 1)[1].strip() for line in text.splitlines() if line.startswith(f"{key}=")]
    assert len(values) == 1, f"{unit.name}: {key}= set {len(values)} times"
    return values[0]


def environment_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines as systemd's EnvironmentFile= reads them (the shipped file uses no quotes)."""
    found: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith(("#", ";")):
            key, _, value = line.partition("=")
            assert '"' not in value and "'" not in value, f"{path.name}: {key} is quoted; systemd would keep the quotes"
            found[key.strip()] = value.strip()
    return found


def command_line(unit: Path, instance: str, environment: dict[str, str], replaced: dict[str, str]) -> list[str]:
    """ExecStart= as systemd runs it: %i is the instance, each ${VAR} one word from the environment; then the
    binary (under /opt/ard-mcp/bin) and the paths in `replaced` become this machine's. Each replacement
    must be used, so a change to the unit that the test would no longer follow fails here."""
    words = shlex.split(unit_setting(unit, "ExecStart"))
    binary = Path(words[0])
    assert binary.parent == Path("/opt/ard-mcp/bin"), words[0]
    out = [str(BINARIES / binary.name)]
    unused = set(replaced)
    for written in words[1:]:
        word = written.replace("%i", instance).replace("%%", "%")
        variable = re.fullmatch(r"\$\{(\w+)\}", word)
        if variable:
            word = environment[variable.group(1)]
        else:
            assert "$" not in word and "%" not in word, f"{unit.name}: {word!r} is expanded in a way this test does not follow"
        if word in replaced:
            unused.discard(word)
        out.append(replaced.get(word, word))
    assert not unused, f"{unit.name} no longer names {sorted(unused)}"
    return out


def reindex_command(settings: Path, state: Path) -> list[str]:
    """The command docs/deploying.md gives for rebuilding the index after a model change (between its
    reindex-command markers), with this machine's paths; the sandbox takes the place of `sudo -u ard-mcp`."""
    page = (REPO / "docs" / "deploying.md").read_text()
    block = page.split("<!-- reindex-command -->", 1)[1].split("<!-- /reindex-command -->", 1)[0]
    lines = [line for line in block.splitlines() if line.strip() and not line.startswith("```")]
    assert len(lines) == 1 and lines[0].startswith("sudo -u ard-mcp "), lines
    words = shlex.split(lines[0].removeprefix("sudo -u ard-mcp "))
    assert words[:2] == ["sh", "-c"] and len(words) == 3, words
    script = words[2]
    for shipped, here in (
        ("/etc/ard-mcp/ard-mcp.env", str(settings)),
        ("/opt/ard-mcp/bin/", f"{BINARIES}/"),
        ("/var/lib/ard-mcp", str(state)),
    ):
        assert shipped in script, f"the documented reindex command no longer names {shipped}"
        script = script.replace(shipped, here)
    return ["sh", "-c", script]


HIDDEN = ("/tmp", "/home", "/root")  # PrivateTmp=, ProtectHome=


def as_the_unit_runs(argv: list[str], state: Path, readable: tuple[Path, ...] = ()) -> list[str]:
    """`argv` in the units' sandbox, approximated with bubblewrap: everything read-only but the state directory
    (ProtectSystem=strict, StateDirectory=), an empty /tmp, /home and /root (PrivateTmp=, ProtectHome=), a
    minimal /dev (PrivateDevices=), no new privileges (bubblewrap sets it); and, when the test runs as root,
    an unprivileged user with no capabilities (User=, CapabilityBoundingSet=). The interpreter and the
    checkout are bound back where they live under a hidden directory (installed under /opt they would not
    be), so are the test's own files the units would find under /etc."""
    wrap = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for hidden in HIDDEN:
        wrap += ["--perms", "1777" if hidden == "/tmp" else "0755", "--tmpfs", hidden]  # PrivateTmp's /tmp: anyone's, sticky
    wrap += ["--perms", "1777", "--tmpfs", "/var/tmp"]
    made: set[Path] = set()
    read_only = [Path(sys.base_prefix), Path(sys.prefix), REPO, *readable]
    binds = [*(("--ro-bind", path) for path in read_only), ("--bind", state)]
    for flag, path in binds:
        under = next((Path(h) for h in HIDDEN if path.is_relative_to(h)), None)
        if under is None:
            continue
        for parent in reversed(path.parents):  # the way in, traversable by the service's user
            if parent.is_relative_to(under) and parent != under and parent not in made:
                made.add(parent)
                wrap += ["--perms", "0755", "--dir", str(parent)]
        wrap += [flag, str(path), str(path)]
    wrap += ["--die-with-parent", "--"]
    if os.geteuid() == 0:
        wrap += ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--"]
    return wrap + argv


def owned_by_the_service(*paths: Path) -> None:
    """What the units' user owns (StateDirectory=, the token file): nobody's, when the test runs as root."""
    for path in paths:
        if os.geteuid() == 0:
            shutil.chown(path, "nobody", "nogroup")


def test_units_verify_and_name_only_what_the_environment_file_sets(tmp_path: Path) -> None:
    variables = set(re.findall(r"\$\{(\w+)\}", unit_setting(UNIT, "ExecStart")))
    assert variables <= set(environment_file(ENVIRONMENT)), "ExecStart names a variable the shipped environment file does not set"
    assert unit_setting(UNIT, "EnvironmentFile") == "/etc/ard-mcp/ard-mcp.env"
    if shutil.which("systemd-analyze") is None:
        pytest.skip("no systemd-analyze on this machine (Debian package systemd)")
    for unit, limit in ((UNIT, 4.0), (CHROMA_UNIT, 3.0)):
        copy = tmp_path / unit.name  # the binaries as installed here: verify checks that ExecStart's exists
        copy.write_text(unit.read_text().replace("/opt/ard-mcp/bin/", f"{BINARIES}/"))
        name = copy.name.replace("@.", "@8001.")
        verified = subprocess.run(["systemd-analyze", "verify", "--man=no", name], cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert verified.returncode == 0 and not verified.stdout + verified.stderr, verified.stdout + verified.stderr
        security = subprocess.run(
            ["systemd-analyze", "security", "--offline=true", name], cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
        exposure = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", security.stdout)
        assert exposure, security.stdout[-500:] + security.stderr
        assert float(exposure.group(1)) <= limit, f"{unit.name}: exposure {exposure.group(1)} > {limit}; hardening was lost"


# -- the parts -------------------------------------------------------------------------------------------------
def nginx_config(directory: Path, ports: dict[str, int], listen: int, redirect: int, cert: Path, key: Path) -> Path:
    """deploy/nginx/ard-mcp.conf with the test's process ports, listen addresses and certificate, inside a
    main configuration that keeps nginx in the foreground with its pid, logs and buffers in `directory`."""
    conf = NGINX.read_text()
    replacements = {
        **{f"server 127.0.0.1:{shipped} ": f"server 127.0.0.1:{port} " for shipped, port in ports.items()},
        "listen 443 ssl;": f"listen 127.0.0.1:{listen} ssl;",
        "listen [::]:443 ssl;": "",
        "listen 80;": f"listen 127.0.0.1:{redirect};",
        "listen [::]:80;": "",
        f"/etc/letsencrypt/live/{PUBLIC_NAME}/fullchain.pem": str(cert),
        f"/etc/letsencrypt/live/{PUBLIC_NAME}/privkey.pem": str(key),
    }
    for shipped, test in replacements.items():
        assert shipped in conf, f"deploy/nginx/ard-mcp.conf no longer has {shipped!r}"
        conf = conf.replace(shipped, test)
    (directory / "ard-mcp.conf").write_text(conf)
    temp = " ".join(f"{kind}_temp_path {directory / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    main = directory / "nginx.conf"
    main.write_text(
        f"daemon off;\nworker_processes 1;\npid {directory / 'nginx.pid'};\nerror_log {directory / 'error.log'} info;\n"
        f"events {{ worker_connections 256; }}\n"
        f"http {{\n  access_log {directory / 'access.log'};\n  {temp}\n  include {directory / 'ard-mcp.conf'};\n}}\n"
    )
    return main


@contextmanager
def running(command: list[str], log: Path, environment: dict[str, str], ready: str, what: str) -> Iterator[subprocess.Popen[str]]:
    """A process, its output in `log`, until `ready` answers 200 (60 s at most); stopped as systemd stops a
    service (SIGTERM, then SIGKILL after 30 s)."""
    with log.open("w") as output:
        process = subprocess.Popen(command, env=environment, stdout=output, stderr=subprocess.STDOUT, text=True, cwd="/")
    try:
        try:
            wait_for(ready, process, what)
        except BaseException:
            print(f"{what}: {log.read_text()[-3000:]}")
            raise
        yield process
    finally:
        stop(process)


def stop(process: subprocess.Popen[Any]) -> None:
    """SIGTERM, as systemd stops a service; to the sandboxed program itself (bubblewrap passes no signal on,
    and its child would be killed outright when it exits)."""
    if process.poll() is None:
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
        inner = children.read_text().split() if isinstance(process.args, list) and process.args[0] == "bwrap" else []
        if inner:
            os.kill(int(inner[0]), signal.SIGTERM)
        else:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def _listening(port: int, process: subprocess.Popen[Any], log: Path) -> None:
    deadline = time.monotonic() + 20
    while True:
        assert process.poll() is None, f"nginx exited: {log.read_text()[-2000:] if log.exists() else ''}"
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        assert time.monotonic() < deadline, "nginx is not listening after 20 s"
        time.sleep(0.1)


# -- end to end ------------------------------------------------------------------------------------------------
@pytest.mark.postgres  # servers of its own, so it runs once, not again in the --store postgres pass
@pytest.mark.skipif(not postgres_server.AVAILABLE, reason="no PostgreSQL binaries on this machine")
@pytest.mark.skipif(NGINX_BINARY is None, reason="no nginx on this machine (apt-get install nginx)")
@pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="no bubblewrap on this machine, for the units' sandbox (apt-get install bubblewrap)"
)
@pytest.mark.anyio
async def test_two_processes_behind_nginx(tmp_path: Path) -> None:
    root = Path(tempfile.mkdtemp(prefix="ard-mcp-deploy-"))  # nginx's workers (nobody when run as root) reach it
    root.chmod(0o755)
    with ExitStack() as stack:
        stack.callback(shutil.rmtree, root, True)
        database = postgres_server.PostgresServer(password=PASSWORD)
        stack.callback(database.stop)

        chroma_port = free_port()
        chroma_state = tmp_path / "chroma-state"
        chroma_state.mkdir()
        owned_by_the_service(chroma_state)
        chroma = command_line(CHROMA_UNIT, "", {}, {"/var/lib/ard-mcp-chroma": str(chroma_state), "8000": str(chroma_port)})
        plain = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8"}  # systemd starts from a clean environment
        chroma_url = f"http://127.0.0.1:{chroma_port}"
        stack.enter_context(
            running(
                as_the_unit_runs(chroma, chroma_state),
                tmp_path / "chroma.log",
                {**plain, "HOME": str(chroma_state)},
                f"{chroma_url}/api/v2/heartbeat",
                "chroma run",
            )
        )

        shipped = environment_file(ENVIRONMENT)
        assert "@" in shipped["ARD_MCP_STORE_URL"] and ":" not in shipped["ARD_MCP_STORE_URL"].split("//")[1].split("@")[0]
        state = tmp_path / "state"  # the data directory: StateDirectory=, the service user's home
        state.mkdir()
        tokens = tmp_path / "tokens"
        tokens.write_text(f"deployer {TOKEN} *\n")
        tokens.chmod(0o600)
        owned_by_the_service(state, tokens)
        settings = {  # the test's /etc/ard-mcp/ard-mcp.env: the shipped one with this machine's servers
            **shipped,
            "ARD_MCP_STORE_URL": f"postgresql://postgres@127.0.0.1:{database.port}/postgres",  # no password, as shipped
            "PGPASSWORD": PASSWORD,
            "ARD_MCP_CHROMA_URL": chroma_url,
        }
        environment = {**plain, "HOME": str(state), **settings}
        ports = {"8001": free_port(), "8002": free_port()}
        bases: dict[str, str] = {}
        processes: dict[str, subprocess.Popen[str]] = {}
        for shipped_port, port in ports.items():
            argv = command_line(UNIT, str(port), environment, {"/etc/ard-mcp/tokens": str(tokens), "/var/lib/ard-mcp": str(state)})
            bases[shipped_port] = f"http://127.0.0.1:{port}"
            processes[shipped_port] = stack.enter_context(
                running(
                    as_the_unit_runs(argv, state, readable=(tokens,)),
                    tmp_path / f"ard-mcp@{port}.log",
                    environment,
                    f"{bases[shipped_port]}/healthz",
                    f"ard-mcp@{port}",
                )
            )
        for base in bases.values():
            ready = until_status(f"{base}/readyz", 200, within=60)  # warm-up: the model and the index load in the background
            assert ready.status_code == 200, ready.text
        for process in processes.values():  # the database's password reached them through the environment only
            command = Path(f"/proc/{process.pid}/cmdline").read_bytes().decode()
            assert PASSWORD not in command and f"127.0.0.1:{database.port}/postgres" in command

        cert, key = self_signed(root, PUBLIC_NAME)
        listen, redirect = free_port(), free_port()
        config = nginx_config(root, ports, listen, redirect, cert, key)
        nginx_log = root / "error.log"
        nginx = subprocess.Popen(
            [str(NGINX_BINARY), "-p", str(root), "-c", str(config), "-e", str(nginx_log)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        stack.callback(stop, nginx)
        _listening(listen, nginx, nginx_log)

        trust = ssl.create_default_context(cafile=str(cert))
        public = {"Host": PUBLIC_NAME}
        proxy = f"https://127.0.0.1:{listen}"
        await _through_the_proxy(proxy, bases, trust, public, redirect, tmp_path)
        await _failover(proxy, bases, processes, trust, public, tmp_path)

        # a new model, by the procedure docs/deploying.md gives: every process stopped, the index rebuilt, started again
        for process in processes.values():
            stop(process)
        settings["ARD_MCP_MODEL_DIR"] = "minilm"  # the general model the default one was trained from
        settings_file = tmp_path / "ard-mcp.env"
        settings_file.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
        owned_by_the_service(settings_file)
        assert environment_file(settings_file) == settings
        environment = {**plain, "HOME": str(state), **settings}
        argv = command_line(UNIT, str(ports["8001"]), environment, {"/etc/ard-mcp/tokens": str(tokens), "/var/lib/ard-mcp": str(state)})
        refused = subprocess.run(
            as_the_unit_runs(argv, state, readable=(tokens,)), env=environment, cwd="/", capture_output=True, text=True, timeout=120
        )
        assert refused.returncode != 0 and "ard-mcp reindex" in refused.stderr, refused.stderr[-2000:]
        reindex = reindex_command(settings_file, state)
        rebuilt = subprocess.run(
            as_the_unit_runs(reindex, state, readable=(settings_file,)),
            env={**plain, "HOME": str(state)},  # sudo's: the settings come from the file the command reads
            cwd="/",
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert rebuilt.returncode == 0 and "reindexed" in rebuilt.stdout, rebuilt.stdout[-1000:] + rebuilt.stderr[-2000:]
        with running(
            as_the_unit_runs(argv, state, readable=(tokens,)),
            tmp_path / "upgraded.log",
            environment,
            f"{bases['8001']}/healthz",
            "upgraded",
        ):
            ready = until_status(f"{bases['8001']}/readyz", 200, within=60)
            assert ready.status_code == 200, ready.text
            found = httpx.post(
                f"{bases['8001']}/search", json={"query": {"text": "will it rain in Lisbon tomorrow?"}}, headers=public, timeout=30
            )
            assert found.status_code == 200 and found.json()["results"][0]["identifier"] == WEATHER["identifier"], found.text


async def _through_the_proxy(
    proxy: str, bases: dict[str, str], trust: ssl.SSLContext, public: dict[str, str], redirect: int, logs: Path
) -> None:
    async with httpx.AsyncClient(base_url=proxy, verify=trust, headers=public, timeout=30) as client:
        # the same answers as a process gives directly
        for path in ("/healthz", "/openapi.json", "/.well-known/ai-catalog.json", "/agents"):
            through = await client.get(path)
            for base in bases.values():
                direct = httpx.get(f"{base}{path}", headers=public, timeout=30)
                assert through.status_code == direct.status_code == 200 and through.json() == direct.json(), path
        ready = await client.get("/readyz")
        assert ready.status_code == 200 and set(ready.json()["checks"]) == {"store", "vectorIndex"}

        # a write through the proxy, seen by both processes
        assert (await client.post("/agents", json=WEATHER)).status_code == 401
        created = await client.post("/agents", json=WEATHER, headers={"Authorization": f"Bearer {TOKEN}"})
        assert created.status_code == 201, created.text
        for base in bases.values():
            got = until_status(f"{base}/agents/{WEATHER['identifier']}", 200, within=5, headers=public)
            assert got.status_code == 200 and got.json()["description"] == WEATHER["description"], got.text
        found = await client.post("/search", json={"query": {"text": "will it rain in Lisbon tomorrow?"}})
        first = found.json()["results"][0]
        assert first["identifier"] == WEATHER["identifier"] and first["source"].startswith(f"https://{PUBLIC_NAME}"), first

        # ard-mcp's own refusals pass through in the API's error object
        foreign = await client.get("/healthz", headers={"Host": "evil.example"})
        assert foreign.status_code == 421 and foreign.json()["errorCode"], foreign.text
        big = await client.post(
            "/search", content=b'{"query": {"text": "' + b"x" * (4_500_000) + b'"}}', headers={"Content-Type": "application/json"}
        )
        assert big.status_code == 413 and big.json()["errorCode"], big.text[:300]

    # plain HTTP is sent to HTTPS
    moved = httpx.get(f"http://127.0.0.1:{redirect}/search?x=1", headers=public, timeout=10)
    assert moved.status_code == 301 and moved.headers["location"] == f"https://{PUBLIC_NAME}/search?x=1"

    # the process sees the client's address, not the proxy's (X-Forwarded-For, trusted from 127.0.0.1)
    elsewhere = httpx.HTTPTransport(local_address="127.0.0.2", verify=trust)
    with httpx.Client(transport=elsewhere, headers=public, timeout=30) as client:
        for _ in range(2):  # one request to each process (least_conn on an idle pair)
            assert client.get(f"{proxy}/agents?pageSize=1").status_code == 200
    time.sleep(0.5)
    assert any("127.0.0.2" in log.read_text() for log in logs.glob("ard-mcp@*.log")), "no process logged the client's address"

    # MCP over streamable HTTP, through the proxy
    async with (
        httpx2.AsyncClient(verify=trust, headers=public, timeout=30) as http,
        Client(streamable_http_client(f"{proxy}/mcp", http_client=http)) as mcp,
    ):
        result = await mcp.call_tool("search_agents", {"text": "weather forecast for tomorrow"})
        assert not result.is_error and result.structured_content
        assert result.structured_content["results"][0]["identifier"] == WEATHER["identifier"]


def _mcp_requests(log: Path) -> int:
    return sum(1 for line in log.read_text().splitlines() if "POST" in line and "/mcp" in line)


async def _failover(
    proxy: str,
    bases: dict[str, str],
    processes: dict[str, subprocess.Popen[str]],
    trust: ssl.SSLContext,
    public: dict[str, str],
    logs: Path,
) -> None:
    """Stop the process that held the MCP session; the proxy answers from the other, MCP included."""
    served = {name: _mcp_requests(logs / f"ard-mcp@{bases[name].rsplit(':', 1)[1]}.log") for name in bases}  # the access log's lines
    holder = max(served, key=lambda name: served[name])
    assert served[holder] > 0, served
    stop(processes[holder])
    async with httpx.AsyncClient(base_url=proxy, verify=trust, headers=public, timeout=30) as client:
        for _ in range(6):
            assert (await client.get("/healthz")).status_code == 200
            found = await client.post("/search", json={"query": {"text": "will it rain in Lisbon tomorrow?"}})
            assert found.status_code == 200 and found.json()["results"][0]["identifier"] == WEATHER["identifier"]
    async with (
        httpx2.AsyncClient(verify=trust, headers=public, timeout=30) as http,
        Client(streamable_http_client(f"{proxy}/mcp", http_client=http)) as mcp,
    ):
        result = await mcp.call_tool("search_agents", {"text": "weather forecast for tomorrow"})
        assert not result.is_error and result.structured_content
        assert result.structured_content["results"][0]["identifier"] == WEATHER["identifier"]
