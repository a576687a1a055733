"""What a package server (an npm or PyPI package ard-mcp installs and starts in its sandbox) costs a host,
against the same server driven by a plain MCP client.

Two real servers: `mcp-server-time` 2026.10.19 from PyPI (`get_current_time`) and
`@modelcontextprotocol/server-memory` 2026.8.31 from npm (`read_graph` on its empty graph, with
`MEMORY_FILE_PATH` given by the entry, since its default is inside its read-only package directory). Both are
approved first with `ard-mcp packages allow` (as an operator would), so nothing is asked during a call, and
the host declares form elicitation, as a host that could be asked does (each `call_agent` then looks for a
question to ask). Everything lives in a temporary data directory, removed at the end.

1. Cold start: an `ard-mcp serve` over stdio with an empty package cache, the entries registered, the model
   loaded; then the first `call_agent` of each server, measured at the host: resolving, install, sandbox
   start, handshake, the call. The install is split off by the cache's own files (the version's lock file is
   made when the install begins, `installed.json` written when it ends), so the figures are: before the
   install, the install, and from the end of the install to the answer.
2. Warm cache, server not running: a fresh `ard-mcp serve` on the same data directory (`--starts` of them,
   the servers' order swapped each time, so neither is always the process's first), the registry opened by a
   search first; the first `call_agent` of each.
3. Warm calls: in the last of those processes, `--calls` sequential `call_agent` calls, taking turns with as
   many calls of the same tool by a plain MCP client (the SDK's `Client(StdioServerParameters(...))`) to the
   same installed command, unsandboxed (the baseline), so a busy moment of the shared machine falls on both
   alike. p50 / p90 of each, their ratio, and the target: through ard-mcp at most 1.3 x baseline + 5 ms at
   p50 (PASS / FAIL, not asserted). Also the CPU time each process spent per call over those calls (from
   /proc: ard-mcp serve, the sandboxed server, the baseline server).
4. The sandbox's own start cost, in this process: the installed command started directly, through
   `sandbox.unsandboxed` (env -i and prlimit only) and through `sandbox.sandboxed` (bwrap, setpriv, the
   inner bwrap, prlimit), `--sandbox-starts` times each in turn: time to the handshake and to the first answer;
   and the sandbox alone, `true` over each server's view started and waited for, sandboxed and directly.

    python bench/packages.py [--calls 200] [--starts 5] [--sandbox-starts 15] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TextIO

import anyio
import mcp_types
import numpy as np
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ard_mcp.packages.environment import PackageSecrets, server_environment  # noqa: E402
from ard_mcp.packages.install import Installed, Installer  # noqa: E402
from ard_mcp.packages.names import path_safe  # noqa: E402
from ard_mcp.packages.sandbox import Confinement, Launch, check_available, sandboxed, unsandboxed  # noqa: E402
from ard_mcp.packages.specs import PackageSpec, package_of  # noqa: E402
from ard_mcp.packages.stdio import BoundedStdio  # noqa: E402
from ard_mcp.redaction import Redactor  # noqa: E402

WARM_UP = 10  # calls of each kind before the measured ones: sessions, the registry's first look-ups, caches
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Package:
    label: str
    key: str  # what `ard-mcp packages allow` takes
    entry: dict[str, Any]
    tool: str
    arguments: dict[str, Any]

    @property
    def identifier(self) -> str:
        return str(self.entry["identifier"])

    @property
    def spec(self) -> PackageSpec:
        found = package_of(self.entry)
        assert isinstance(found, PackageSpec), found
        return found


def _entry(identifier: str, name: str, description: str, package: dict[str, Any]) -> dict[str, Any]:
    return {
        "identifier": identifier,
        "displayName": name,
        "type": "application/mcp-server-card+json",
        "description": description,
        "data": {"name": identifier, "description": description, "version": package["version"], "packages": [package]},
    }


TIME = Package(
    "mcp-server-time (PyPI)",
    "pypi:mcp-server-time@2026.10.19",
    _entry(
        "urn:air:modelcontextprotocol.io:mcp:server-time",
        "Time",
        "Tells the current time in any time zone and converts times between zones.",
        {"registryType": "pypi", "identifier": "mcp-server-time", "version": "2026.10.19", "transport": {"type": "stdio"}},
    ),
    "get_current_time",
    {"timezone": "Europe/Oslo"},
)
MEMORY = Package(
    "server-memory (npm)",
    "npm:@modelcontextprotocol/server-memory@2026.8.31",
    _entry(
        "urn:air:modelcontextprotocol.io:mcp:server-memory",
        "Knowledge graph memory",
        "Remembers entities, relations and observations about the user across chats, as a local knowledge graph.",
        {
            "registryType": "npm",
            "identifier": "@modelcontextprotocol/server-memory",
            "version": "2026.8.31",
            "transport": {"type": "stdio"},
            "environmentVariables": [{"name": "MEMORY_FILE_PATH", "default": "/tmp/memory.jsonl"}],
        },
    ),
    "read_graph",
    {},
)
PACKAGES = (TIME, MEMORY)


def _p(samples: list[float], q: float) -> float:
    return float(np.percentile(samples, q))


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def _tree(pid: int) -> list[int]:
    """`pid` and every process under it (a sandboxed server is env, bwrap, setpriv, bwrap, prlimit, then it)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            todo += _children(current)
        except OSError:
            continue
    return found


def _cpu_s(pids: list[int]) -> float:
    """User and system CPU time the live processes `pids` have used, in seconds."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat(5))
    return total / TICKS


def _new_child(before: set[int]) -> int:
    """The one child process of this one that was not there `before` (the server a client just started)."""
    new = set(_children(os.getpid())) - before
    assert len(new) == 1, new
    return new.pop()


async def _answered(client: Client, tool: str, arguments: dict[str, Any]) -> None:
    """The call, answered without an error: a failure stops the bench rather than being timed as an answer."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content


async def _through(client: Client, package: Package) -> None:
    await _answered(client, "call_agent", {"identifier": package.identifier, "tool": package.tool, "arguments": package.arguments})


async def _elicited(context: Any, params: Any) -> mcp_types.ElicitResult:
    """Declares form elicitation, as a host that can ask the person does; never asked, the keys being approved."""
    raise AssertionError(f"asked, though every package was approved beforehand: {params}")


class Serve:
    """`ard-mcp serve` over stdio on `data`, driven by an MCP client as a host drives it; its stderr to `log`."""

    def __init__(self, data: Path, log: TextIO) -> None:
        self.data = data
        self.log = log
        self.pid = 0

    async def __aenter__(self) -> Client:
        self._stack = AsyncExitStack()
        before = set(_children(os.getpid()))
        argv = ["-m", "ard_mcp", "serve", "--data-dir", str(self.data)]
        # the whole environment (its CA and proxy settings are what the installers reach the registries with), and
        # this checkout's ard_mcp first, wherever the bench is run from
        params = StdioServerParameters(command=sys.executable, args=argv, env=_own_environment())
        client = await self._stack.enter_async_context(Client(stdio_client(params, errlog=self.log), elicitation_callback=_elicited))
        self.pid = _new_child(before)
        return client

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()


async def _opened(client: Client) -> None:
    """The registry opened, its model and index loaded (they load in the background after start, which would
    otherwise share the CPUs with what is measured), before anything is timed."""
    await _answered(client, "search_agents", {"text": "current time in another time zone"})
    await anyio.sleep(1.0)


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


async def cold(data: Path, log: TextIO) -> dict[str, dict[str, float]]:
    """The first `call_agent` of each server with an empty cache, in s: total, and split at the install."""
    found: dict[str, dict[str, float]] = {}
    async with Serve(data, log) as client:
        for package in PACKAGES:
            await _answered(client, "register_agent", {"entry": package.entry})
        await _opened(client)
        for package in PACKAGES:
            spec = package.spec
            version = data / "packages" / "cache" / spec.registry / path_safe(spec.name) / str(spec.version)
            asked = time.time()
            await _through(client, package)
            answered = time.time()
            began, ended = _mtime(version.parent / f"{version.name}.lock"), _mtime(version / "installed.json")
            split = {"total": answered - asked}
            if began is not None and ended is not None and asked <= began + 0.01 and ended <= answered:
                split |= {"before install": max(0.0, began - asked), "install": ended - began, "install to answer": answered - ended}
            found[package.label] = split
    return found


async def warm_cache(data: Path, log: TextIO, starts: int, calls: int) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """The first `call_agent` of each server in `starts` fresh `ard-mcp serve` processes (cache warm, server not
    running), in s; then, in the last process, the warm calls against the baseline (`_alternated`)."""
    firsts: dict[str, list[float]] = {p.label: [] for p in PACKAGES}
    for round_ in range(starts):
        serve = Serve(data, log)
        async with serve as client:
            await _opened(client)
            for package in PACKAGES if round_ % 2 == 0 else PACKAGES[::-1]:
                asked = time.perf_counter()
                await _through(client, package)
                firsts[package.label].append(time.perf_counter() - asked)
            if round_ == starts - 1:
                return firsts, await _alternated(client, serve.pid, data, log, calls)
    raise AssertionError("no start")


async def _cached(data: Path, package: Package) -> Installed:
    """The install ard-mcp made, found in its cache (`installed.json` there: nothing is fetched)."""
    return await Installer(data / "packages" / "cache").install(package.spec)


def _plain(installed: Installed, scratch: Path) -> StdioServerParameters:
    """The baseline: the installed command as a host would run it, with the SDK's default environment and the
    declared variables (the memory file in a scratch directory: unsandboxed, /tmp is the host's)."""
    environment = server_environment(installed.spec, PackageSecrets(), {})
    if "MEMORY_FILE_PATH" in environment:
        environment["MEMORY_FILE_PATH"] = str(scratch / "memory.jsonl")
    return StdioServerParameters(command=installed.command[0], args=list(installed.command[1:]), env=environment, cwd=scratch)


async def _alternated(through: Client, serve_pid: int, data: Path, log: TextIO, calls: int) -> dict[str, Any]:
    """For each server: `calls` `call_agent` calls and as many baseline calls, one of each in turn, in ms; and
    the CPU time per call of ard-mcp serve, the sandboxed server (everything under serve) and the baseline."""
    found: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="ard-bench-plain-") as scratch:
        for package in PACKAGES:
            installed = await _cached(data, package)
            before = set(_children(os.getpid()))
            async with Client(stdio_client(_plain(installed, Path(scratch)), errlog=log)) as direct:
                baseline_pid = _new_child(before)
                plain: list[float] = []
                proxied: list[float] = []
                for _ in range(WARM_UP):
                    await _answered(direct, package.tool, package.arguments)
                    await _through(through, package)
                serve_tree = [p for p in _tree(serve_pid) if p != serve_pid]
                cpu_before = (_cpu_s([serve_pid]), _cpu_s(serve_tree), _cpu_s(_tree(baseline_pid)))
                for _ in range(calls):
                    started = time.perf_counter()
                    await _answered(direct, package.tool, package.arguments)
                    plain.append((time.perf_counter() - started) * 1000)
                    started = time.perf_counter()
                    await _through(through, package)
                    proxied.append((time.perf_counter() - started) * 1000)
                cpu_after = (_cpu_s([serve_pid]), _cpu_s(serve_tree), _cpu_s(_tree(baseline_pid)))
            cpu = [(b - a) * 1000 / calls for a, b in zip(cpu_before, cpu_after, strict=True)]
            found[package.label] = {"baseline": plain, "through": proxied, "cpu": cpu}
    return found


Transport = Callable[[], Any]  # a fresh stdio transport to one server, for `mcp.Client`


async def _first_answer(transport: Transport, package: Package) -> tuple[float, float]:
    """From spawning the server to the end of the handshake, and to the first answer, in s."""
    started = time.perf_counter()
    async with Client(transport()) as client:
        shaken = time.perf_counter()
        await _answered(client, package.tool, package.arguments)
        answered = time.perf_counter()
    return shaken - started, answered - started


Starts = dict[str, dict[str, list[tuple[float, float]]]]


async def sandbox_cost(data: Path, log: TextIO, starts: int) -> tuple[float, Starts, dict[str, list[tuple[float, float]]]]:
    """The trial sandbox `sandboxed` runs once per process before its first argv (`check_available`), in s;
    for each server, (handshake, first answer) in s of `starts` starts each of the plain command, the command
    through `sandbox.unsandboxed` and through `sandbox.sandboxed`, taking turns; and `_bare`'s pairs."""
    started = time.perf_counter()
    check_available()
    trial = time.perf_counter() - started
    found: Starts = {}
    bare: dict[str, list[tuple[float, float]]] = {}
    confinement = Confinement()
    with tempfile.TemporaryDirectory(prefix="ard-bench-sandbox-") as scratch:
        for package in PACKAGES:
            installed = await _cached(data, package)
            state = Path(scratch) / path_safe(package.key) / "state"
            state.mkdir(parents=True)
            plain = _plain(installed, Path(scratch))
            inside = server_environment(installed.spec, PackageSecrets(), {})  # the memory file in the sandbox's own /tmp
            outside = {name: plain.env[name] for name in inside} if plain.env else {}  # unsandboxed: the scratch directory's
            bare_env = unsandboxed(Launch(installed.command, installed.directory, state, installed.runtime_dirs, outside), confinement)
            unconfined = StdioServerParameters(command=bare_env.argv[0], args=bare_env.argv[1:], env=bare_env.environment)
            launch = Launch(installed.command, installed.directory, state, installed.runtime_dirs, inside)
            variants: dict[str, Transport] = {
                "plain command": partial(stdio_client, plain, errlog=log),
                "unsandboxed (env -i, prlimit)": partial(stdio_client, unconfined, errlog=log),
                # ard-mcp's own transport: the variables reach the sandbox on a descriptor, which the SDK's cannot pass
                "sandboxed": partial(_sandboxed, launch, confinement, Path(scratch) / "stderr.log"),
            }
            times: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
            for _ in range(starts):
                for name, transport in variants.items():
                    times[name].append(await _first_answer(transport, package))
            found[package.label] = times
            bare[package.label] = _bare(installed, state, confinement, 2 * starts)
    return trial, found, bare


def _sandboxed(launch: Launch, confinement: Confinement, stderr: Path) -> BoundedStdio:
    return BoundedStdio(sandboxed(launch, confinement), stderr, 2 << 20, Redactor())


def _bare(installed: Installed, state: Path, confinement: Confinement, starts: int) -> list[tuple[float, float]]:
    """The sandbox alone, without a server's own start (hundreds of ms, and noisy on a shared machine) to hide
    it: `true` started and waited for, sandboxed over the server's own view and directly, taking turns; each
    pair (sandboxed, direct) in s."""
    launch = Launch((shutil.which("true", path="/usr/bin:/bin") or "/usr/bin/true",), installed.directory, state, installed.runtime_dirs)
    argv = sandboxed(launch, confinement).argv  # no variables, so no descriptor to pass
    found = []
    for _ in range(starts):
        timed = []
        for command in (argv, list(launch.command)):
            started = time.perf_counter()
            subprocess.run(command, env={}, stdin=subprocess.DEVNULL, capture_output=True, check=True)
            timed.append(time.perf_counter() - started)
        found.append((timed[0], timed[1]))
    return found


def _own_environment() -> dict[str, str]:
    """This process's environment, with this checkout's `ard_mcp` first on the path of a `python -m ard_mcp`."""
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": str(REPO) + (os.pathsep + path if path else "")}


def _allow(data: Path) -> None:
    """Approve each package's launch as its entry declares it (an approval is for exactly what runs)."""
    for package in PACKAGES:
        spec = package.spec
        launch = [*(f"--runtime-arg={a}" for a in spec.runtime_arguments), *(f"--arg={a}" for a in spec.package_arguments)]
        launch += [f"--variable={v.name}" + (f"={v.default}" if v.default is not None else "") for v in spec.environment]
        allow = [sys.executable, "-m", "ard_mcp", "packages", "allow", package.key, *launch, "--data-dir", str(data)]
        subprocess.run(allow, check=True, capture_output=True, env=_own_environment())


@contextmanager
def _logged(path: Path) -> Iterator[TextIO]:
    """The servers' stderr, kept in a file; its tail printed if the run fails."""
    with open(path, "w", encoding="utf-8") as log:
        try:
            yield log
        except BaseException:
            log.flush()
            print(path.read_text(encoding="utf-8")[-4000:], file=sys.stderr)
            raise


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--starts", type=int, default=5, help="fresh ard-mcp serve processes for the warm-cache first call")
    parser.add_argument("--sandbox-starts", type=int, default=15, help="starts of each server with and without the sandbox")
    parser.add_argument("--json", type=Path, help="also write every sample here")
    args = parser.parse_args()
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    print(f"commit {commit or '?'}, {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, load average {_load()} at start")
    with tempfile.TemporaryDirectory(prefix="ard-bench-packages-") as temporary, _logged(Path(temporary) / "stderr.log") as log:
        data = Path(temporary) / "data"
        _allow(data)
        first = anyio.run(cold, data, log)
        firsts, warm = anyio.run(warm_cache, data, log, args.starts, args.calls)
        trial, starts, bare = anyio.run(sandbox_cost, data, log, args.sandbox_starts)
    print(f"load average {_load()} at the end")
    print("Cold start: first call_agent with an empty package cache (s)")
    for label, split in first.items():
        print(f"  {label:<24} " + ", ".join(f"{part} {seconds:6.2f}" for part, seconds in split.items()))
    print(f"Warm cache, server not running: first call_agent in a fresh ard-mcp serve, median of {args.starts} (s)")
    for label, samples in firsts.items():
        print(f"  {label:<24} {np.median(samples):6.2f}  (each: {', '.join(f'{s:.2f}' for s in samples)})")
    for label, found in warm.items():
        plain, proxied = found["baseline"], found["through"]
        b50, b90, t50, t90 = _p(plain, 50), _p(plain, 90), _p(proxied, 50), _p(proxied, 90)
        target = 1.3 * b50 + 5
        print(f"{label}: {args.calls} calls each, taking turns (ms)")
        print(f"  baseline (plain MCP client, unsandboxed)   p50 {b50:7.2f}  p90 {b90:7.2f}")
        print(f"  call_agent through ard-mcp serve           p50 {t50:7.2f}  p90 {t90:7.2f}")
        print(
            f"  ratio p50 {t50 / b50:.2f}x, p90 {t90 / b90:.2f}x; target p50 <= 1.3 x baseline + 5 ms = {target:.2f} ms: "
            + ("PASS" if t50 <= target else f"FAIL (by {t50 - target:.2f} ms)")
        )
        serve_cpu, server_cpu, baseline_cpu = found["cpu"]
        print(f"  CPU per call (ms): ard-mcp serve {serve_cpu:.2f}, sandboxed server {server_cpu:.2f}, baseline server {baseline_cpu:.2f}")
    print(f"The trial sandbox run once per process before the first start (check_available): {trial * 1000:.1f} ms")
    print(f"Start to handshake / to first answer, same command, median of {args.sandbox_starts} (ms)")
    for label, variants in starts.items():
        print(f"  {label}")
        plain_answer = np.median([a for _, a in variants["plain command"]]) * 1000
        for name, timed in variants.items():
            shaken, answer = np.median([s for s, _ in timed]) * 1000, np.median([a for _, a in timed]) * 1000
            print(f"    {name:<30} handshake {shaken:7.1f}  first answer {answer:7.1f}  ({answer - plain_answer:+6.1f} against plain)")
    print(f"The sandbox alone: /usr/bin/true over each server's view, start to exit, median of {2 * args.sandbox_starts} (ms)")
    for label, pairs in bare.items():
        inside, outside = (np.median([pair[i] for pair in pairs]) * 1000 for i in (0, 1))
        added = np.median([a - b for a, b in pairs]) * 1000
        print(f"  {label:<24} sandboxed {inside:6.1f}, direct {outside:6.1f}, added (median of the pairs' differences) {added:6.1f}")
    if args.json:
        everything = {"cold": first, "warm_cache": firsts, "warm": warm, "trial": trial, "starts": starts, "bare": bare}
        args.json.write_text(json.dumps(everything, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
