"""Whether ard-mcp runs the package servers of the snapshot it ships as well as they run without it (issue #54).

A new registry served over stdio starts with the bundled snapshot of public MCP servers, and for each entry
whose server description names an npm or PyPI stdio package (`specs.package_of` gives a `PackageSpec`), a
host attached only to ard-mcp is offered `get_agent_tools` and `call_agent`. Two servers chosen by hand
(bench/packages.py) say what one costs; they cannot say how many of the snapshot's servers actually work.
This draws a fixed random sample of those entries (`random.Random(seed)` over the entries sorted by
identifier, so a rerun on the same snapshot draws the same ones; the snapshot is read as bundled at run time,
so a rebuilt one gives new figures) and, for each:

1. Outside any sandbox, as a person would run it: installed with ard-mcp's own `Installer` (the same pinned,
   no-scripts, wheels-only install, into a cache of its own), then started directly with a plain MCP client
   (the SDK's `Client` over stdio, the `initialize` handshake that every server speaks, the SDK's default
   environment plus the defaults the entry declares, HOME and the working directory in a scratch folder),
   bounded by `--start-timeout` for the start and `tools/list` together; then one harmless call (below).
2. Through ard-mcp: one `ard-mcp serve` over stdio on a temporary data directory, which adds the bundled
   snapshot on its first open (checked: the sampled identifiers are looked up there, not registered here).
   The host declares no elicitation, so the first `get_agent_tools` is refused with the launch's
   `plan:DIGEST`; it is approved as an operator would, `ard-mcp packages allow plan:DIGEST`, with network
   access (`--no-network` to approve without: on this project's machine the network reaches only the package
   registries, for the plain run too, so it changes little), and a scratch folder (read-only) where the
   launch takes a folder or file. Then `get_agent_tools` again (install, sandbox, start, `tools/list`), and
   `call_agent` of the same harmless tool.
3. The harmless call: a tool with no required argument whose name reads as reading (`list_`, `get_`,
   `read_`, `search_`, `show_`, `describe_` ..., and nothing that writes, sends or runs), chosen from the list
   the plain client got (else from ard-mcp's); where there is none, listing the tools alone is the success
   and the table says "list only". A tool error (the server answered `isError`) counts as an answer, unless
   it answered one through ard-mcp and not outside, which is a sandbox-only failure.

Each failure is given a cause in words, ard-mcp's own message where it gives one (an install refused, a
required variable nobody set, a server that exited with the end of its stderr), sorted into a few kinds
(not on the registry, version not on the registry, no wheel for this platform, needs a newer Python,
certificate, needs NAME, start timeout, crashed at start, sandbox-only failure, ...). A required variable
without a default is never faked: the plain run goes without it, and ard-mcp refuses the launch naming it.

Printed: the table (identifier, package, outside: installs / lists tools / call, through ard-mcp: lists
tools / call, cause), the causes counted, and the totals: installed outside, started outside, works outside,
works through ard-mcp, and "works through ard-mcp / works outside" against the target (>= 80%), PASS / FAIL,
not asserted; the same ratio is given without the launches that need a value nobody set. Everything lives in
temporary directories removed at the end, and every server process started is stopped.

    python bench/package_sample.py [--size 40] [--seed 54] [--only IDENTIFIER] [--no-network] [--json FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import random
import re
import signal
import sys
import tempfile
import time
from collections import Counter
from contextlib import AsyncExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

import anyio
import mcp_types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ard_mcp.formats.entry_facts import mcp_remotes  # noqa: E402
from ard_mcp.index import snapshot  # noqa: E402
from ard_mcp.packages.grants import Grant, filled, needed  # noqa: E402
from ard_mcp.packages.install import Installed, Installer, InstallRefused  # noqa: E402
from ard_mcp.packages.specs import PackageSpec, package_of  # noqa: E402

TARGET = 0.80  # works through ard-mcp / works outside
INSTALL_S = 300.0  # the installer's own timeout (npm, pip), as ard-mcp's
CALL_S = 60.0  # one harmless call
SERVE_OPEN_S = 300.0  # `ard-mcp serve` started, the snapshot added, a search answered
FIRST_LIST_S = 120.0  # the first get_agent_tools, refused before anything is installed (an `unknown` registry asked)
LIST_S = INSTALL_S + 180.0  # the approved get_agent_tools: install, sandbox, start, tools/list
ALLOW_S = 60.0
START_S = 60.0  # default: a server's start and tools/list, outside and through ard-mcp (its `--invoke-timeout`)
CLOSE_S = 20.0  # closing a plain client (the SDK closes stdin, then terminates and kills the server)
TAIL = 300  # characters of a stderr tail or error kept in the table's cause

READING = tuple(
    "list get read search show describe find query view current info status ping health version whoami about help count lookup browse "
    "fetch".split()
)  # the first word of a tool's name that reads as reading, best first
WRITING = set(
    "create delete remove update write set send post put run exec execute kill start stop install add move rename upload drop "
    "insert push commit merge publish deploy restart reset clear save edit modify patch cancel approve transfer pay buy sell order "
    "login logout auth register subscribe unsubscribe invite reply comment like star fork close open lock unlock archive".split()
)


@dataclass(frozen=True)
class Options:
    network: bool  # approve launches with network access
    start_s: float  # a server's start and tools/list, outside and through ard-mcp (its `--invoke-timeout`)
    log: TextIO  # the servers' stderr and ard-mcp's


@dataclass
class Result:
    identifier: str
    key: str  # the entry's package as `package_of` reads it (registry `unknown` for a seed record that names none)
    needs: list[str]  # required variables the entry declares with no default
    remote: str | None = None  # a remote endpoint the entry names too: ard-mcp calls that, not the package (`invocation.targets`)
    installed: bool = False
    resolved: str | None = None  # the key the install resolved to
    install_error: str | None = None
    outside_tools: list[str] | None = None
    outside_error: str | None = None
    outside_seconds: float | None = None
    tool: str | None = None  # the harmless call, where one was found
    outside_call: str | None = None  # "ok", "tool error: ...", or why it failed
    through_tools: list[str] | None = None
    through_error: str | None = None
    through_seconds: float | None = None
    through_call: str | None = None
    approved: str | None = None  # plan:DIGEST
    cause: str = ""  # the kind, `_kind`
    detail: str = ""  # in words
    schemas: dict[str, Any] = field(default_factory=dict, repr=False)  # outside: each tool's input schema

    @property
    def started_outside(self) -> bool:
        return self.outside_tools is not None

    @property
    def works_outside(self) -> bool:
        return self.started_outside and (self.tool is None or _answered(self.outside_call))

    @property
    def works_through(self) -> bool:
        if self.through_tools is None:
            return False
        if self.tool is None:
            return True
        if not _answered(self.through_call):
            return False
        # a tool error through ard-mcp where the same call answered outside is the sandbox's
        return not (_tool_error(self.through_call) and self.outside_call == "ok")


def _answered(call: str | None) -> bool:
    return call is not None and (call == "ok" or call.startswith("tool error"))


def _tool_error(call: str | None) -> bool:
    return call is not None and call.startswith("tool error")


def _line(text: str, limit: int = TAIL) -> str:
    """`text` on one line, at most `limit` characters, the end kept (where an error says what went wrong)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else "…" + flat[-(limit - 1) :]


# ---- the sample


def runnable(path: Path) -> tuple[str, list[tuple[str, dict[str, Any], PackageSpec]]]:
    """The snapshot's id and size, and its entries with a package ard-mcp can install, sorted by identifier."""
    read = snapshot.read(path)
    found = []
    for entry in read.entries:
        spec = package_of(entry)
        if isinstance(spec, PackageSpec):
            found.append((str(entry["identifier"]), entry, spec))
    return f"{read.id} ({len(read.entries)} entries)", sorted(found, key=lambda item: item[0])


def sample(items: list[tuple[str, dict[str, Any], PackageSpec]], size: int, seed: int) -> list[tuple[str, dict[str, Any], PackageSpec]]:
    chosen = random.Random(seed).sample(items, min(size, len(items)))
    return sorted(chosen, key=lambda item: item[0])


# ---- processes


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                found.update(int(c) for c in (task / "children").read_text().split())
    return found


def _new_child(before: set[int]) -> int | None:
    new = _children(os.getpid()) - before
    return min(new) if new else None


def _stop_group(pid: int | None) -> None:
    """Kill what is left of the process group of a server this process started (the SDK starts each in a session
    of its own, so its group is its pid): a child it left behind, or the server itself where closing failed."""
    if pid is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


# ---- outside: the Installer and a plain MCP client


def _reading(name: str) -> int | None:
    """How well `name` reads as a harmless read (lower is better), or None when it does not."""
    words = [w for w in re.split(r"[^a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()) if w]
    if not words or words[0] not in READING or WRITING.intersection(words):
        return None
    return READING.index(words[0])


def _required(schema: Any) -> bool:
    return isinstance(schema, dict) and bool(schema.get("required"))


def _signature_required(arguments: str | None) -> bool:
    """Whether ard-mcp's compact signature (`city: string, days?: integer, +3 optional`) has a required argument."""
    return any(re.match(r"^[^?:+][^?:]*: ", part.strip()) for part in (arguments or "").split(", "))


def choose(tools: list[tuple[str, bool]]) -> str | None:
    """The harmless tool to call: (name, has a required argument) pairs; a reading name with none required."""
    ranked = sorted((rank, len(name), name) for name, needs in tools if not needs and (rank := _reading(name)) is not None)
    return ranked[0][2] if ranked else None


def _content_text(result: mcp_types.CallToolResult) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content).strip()


async def outside(result: Result, spec: PackageSpec, cache: Path, scratch: Path, folder: Path, options: Options) -> Installed | None:
    """Install `spec` with ard-mcp's Installer, start it unsandboxed with a plain MCP client, list its tools and
    make the harmless call; fills `result`."""
    try:
        with anyio.fail_after(INSTALL_S + 60):
            installed = await Installer(cache, timeout=INSTALL_S).install(spec)
    except InstallRefused as exc:
        result.install_error = str(exc)
        return None
    except TimeoutError:
        result.install_error = f"the install did not finish within {INSTALL_S + 60:g} s"
        return None
    result.installed, result.resolved = True, installed.spec.key()
    home = scratch / "home"
    home.mkdir(parents=True, exist_ok=True)
    environment = {v.name: v.default for v in installed.spec.environment if v.default is not None}
    environment |= {"HOME": str(home), "TMPDIR": str(home)}
    kind = needed(installed.command)
    command = filled(installed.command, Grant(str(folder / "notes.txt") if kind == "file" else str(folder), kind or "folder", False))
    params = StdioServerParameters(command=command[0], args=list(command[1:]), env=environment, cwd=home)
    stderr = scratch / "stderr.log"
    with open(stderr, "w", encoding="utf-8") as errlog:
        await _plain(result, params, errlog, options.start_s)
    print(f"--- {result.identifier} (outside) stderr:\n{_tail(stderr, 2000)}", file=options.log, flush=True)
    if result.outside_error is not None:
        result.outside_error += _said(stderr)
    return installed


async def _plain(result: Result, params: StdioServerParameters, errlog: TextIO, start_s: float) -> None:
    """Start the installed command with a plain MCP client, list its tools and make the harmless call, each
    bounded (the scope's deadline moved on at each step, so that the client is closed inside it, as anyio wants)."""
    before = _children(os.getpid())
    pid = None
    step = "start"
    started = time.perf_counter()
    try:
        with anyio.CancelScope(deadline=anyio.current_time() + start_s) as scope:
            async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
                pid = _new_child(before)
                listed: list[mcp_types.Tool] = []
                cursor = None
                for _ in range(20):
                    page = await client.list_tools(cursor=cursor)
                    listed += page.tools
                    cursor = page.next_cursor
                    if not cursor:
                        break
                result.outside_seconds = time.perf_counter() - started
                result.outside_tools = [t.name for t in listed]
                result.schemas = {t.name: t.input_schema for t in listed}
                result.tool = choose([(t.name, _required(t.input_schema)) for t in listed])
                if result.tool is not None:
                    step = "call"
                    scope.deadline = anyio.current_time() + CALL_S
                    result.outside_call = await _plain_call(client, result.tool)
                step = "close"
                scope.deadline = anyio.current_time() + CLOSE_S
        if scope.cancelled_caught:
            if step == "start":
                result.outside_error = f"start timeout: no tools/list answer within {start_s:g} s"
            elif step == "call":
                result.outside_call = f"no answer within {CALL_S:g} s"
    except Exception as exc:
        if step == "start":
            result.outside_error = f"crashed at start: {type(exc).__name__}: {exc}"
        elif step == "call":
            result.outside_call = f"failed: {type(exc).__name__}: {_line(str(exc))}"
    finally:
        for left in {pid, *(_children(os.getpid()) - before)}:
            _stop_group(left)


async def _plain_call(client: Client, tool: str) -> str:
    """The harmless call's outcome: "ok", "tool error: ...", or "failed: ..." (its bound is the caller's scope)."""
    try:
        answer = await client.call_tool(tool, {})
    except Exception as exc:  # the server crashed or the answer could not be read: said, and the run goes on
        return f"failed: {type(exc).__name__}: {_line(str(exc))}"
    return f"tool error: {_line(_content_text(answer), 200)}" if answer.is_error else "ok"


def _tail(path: Path, limit: int = TAIL) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return text[-limit:]


def _said(stderr: Path) -> str:
    """The end of a server's stderr, what it said before it failed: without stack frames and blank lines, so that
    the error itself (a node `Error: ...` above its frames, a Python exception at the end) is what is shown."""
    lines = [line.strip() for line in _tail(stderr, 8 * TAIL).splitlines()]
    kept = [line for line in lines if line and not line.startswith(("at ", "Node.js v", "^", 'File "')) and set(line) != {"^"}]
    return f"; its stderr ends: {_line(' | '.join(kept))}" if kept else ""


# ---- through ard-mcp: one `ard-mcp serve` over stdio


def _own_environment() -> dict[str, str]:
    """This process's environment (its CA and proxy settings are what the installers reach the registries with),
    with this checkout's `ard_mcp` first on the path of a `python -m ard_mcp`."""
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": str(REPO) + (os.pathsep + path if path else "")}


class Serve:
    """`ard-mcp serve` over stdio on `data`, as a host without elicitation drives it; its stderr to `log`."""

    def __init__(self, data: Path, options: Options) -> None:
        self.data = data
        self.options = options
        self.pid: int | None = None
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> Client:
        argv = ["-m", "ard_mcp", "serve", "--data-dir", str(self.data), "--invoke-timeout", str(self.options.start_s)]
        params = StdioServerParameters(command=sys.executable, args=argv, env=_own_environment())
        before = _children(os.getpid())
        client = await self._stack.enter_async_context(Client(stdio_client(params, errlog=self.options.log)))
        self.pid = _new_child(before)
        return client

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self._stack.aclose()
        finally:
            _stop_group(self.pid)


def _ard_error(answer: mcp_types.CallToolResult) -> str | None:
    """ard-mcp's own refusal or failure (a tool error without the Invocation it carries for an agent's own error)."""
    if not answer.is_error:
        return None
    structured = answer.structured_content
    if isinstance(structured, dict) and "isError" in structured:
        return None
    return _content_text(answer)


def _agent_text(answer: mcp_types.CallToolResult) -> str:
    """The text of the agent's own answer inside `call_agent`'s (`Invocation.result`: MCP content)."""
    structured = answer.structured_content
    result = structured.get("result") if isinstance(structured, dict) else None
    content = result.get("content") if isinstance(result, dict) else None
    if isinstance(content, list):
        return " ".join(str(c.get("text", "")) for c in content if isinstance(c, dict)).strip()
    return _content_text(answer)


async def _tools(client: Client, identifier: str, within: float) -> tuple[list[dict[str, Any]] | None, str | None]:
    """Every tool `get_agent_tools` lists for `identifier` (each page), or ard-mcp's error."""
    found: list[dict[str, Any]] = []
    token = None
    with anyio.fail_after(within):
        for _ in range(50):
            arguments: dict[str, Any] = {"identifier": identifier, "pageSize": 100}
            if token:
                arguments["pageToken"] = token
            answer = await client.call_tool("get_agent_tools", arguments)
            error = _ard_error(answer)
            if error is not None:
                return None, error
            structured = answer.structured_content or {}
            found += structured.get("tools") or []
            token = structured.get("nextPageToken")
            if not token:
                break
    return found, None


async def _allow(data: Path, digest: str, network: bool, grant: str | None, folder: Path) -> str | None:
    """`ard-mcp packages allow plan:DIGEST` as an operator runs it; its complaint, or None."""
    argv = [sys.executable, "-m", "ard_mcp", "packages", "allow", f"plan:{digest}", "--data-dir", str(data)]
    argv += ["--network"] if network else []
    argv += [f"--{grant}", str(folder / "notes.txt") if grant == "file" else str(folder)] if grant else []
    try:
        with anyio.fail_after(ALLOW_S):
            done = await anyio.run_process(argv, env=_own_environment(), check=False)
    except TimeoutError:
        return f"ard-mcp packages allow did not finish within {ALLOW_S:g} s"
    if done.returncode != 0:
        return f"ard-mcp packages allow failed (exit {done.returncode}): {_line(done.stderr.decode(errors='replace'))}"
    return None


async def through(client: Client, result: Result, spec: PackageSpec, data: Path, folder: Path, options: Options) -> None:
    """Approve the entry's launch, list its tools and make the harmless call through ard-mcp; fills `result`."""
    try:
        tools, error = await _tools(client, result.identifier, FIRST_LIST_S)
        if error is not None:
            digest = re.search(r"packages allow plan:([0-9a-f]{32})", error)
            if digest is None:  # refused before anything was asked: a required variable, a launch that may not run, ...
                result.through_error = error
                return
            result.approved = f"plan:{digest[1]}"
            kind = needed(spec.package_arguments)
            complaint = await _allow(data, digest[1], options.network, kind, folder)
            if complaint is not None:
                result.through_error = complaint
                return
            started = time.perf_counter()
            tools, error = await _tools(client, result.identifier, LIST_S)
            result.through_seconds = time.perf_counter() - started
        if tools is None:
            result.through_error = error
            return
        result.through_tools = [str(t.get("name")) for t in tools]
        if result.tool is None and not result.started_outside:
            result.tool = choose([(str(t.get("name")), _signature_required(t.get("arguments"))) for t in tools])
        if result.tool is None:
            return
        arguments = {"identifier": result.identifier, "tool": result.tool, "arguments": {}}
        with anyio.fail_after(CALL_S + 30):
            answer = await client.call_tool("call_agent", arguments)
        error = _ard_error(answer)
        if error is not None:
            result.through_call = f"failed: {_line(error)}"
        elif answer.is_error:
            result.through_call = f"tool error: {_line(_agent_text(answer), 200)}"
        else:
            result.through_call = "ok"
    except TimeoutError:
        what = "the call" if result.through_tools is not None else "get_agent_tools"
        if result.through_tools is not None:
            result.through_call = f"failed: {what} had no answer from ard-mcp within the bench's bound"
        else:
            result.through_error = f"{what} had no answer from ard-mcp within the bench's bound (install and start included)"


# ---- causes


KINDS: tuple[tuple[str, str], ...] = (
    (r"it needs Python|its dependency \S+ needs Python", "needs a newer Python"),
    (r"has no release on or before", "a dependency has no release by the package's date"),
    (r"its dependency \S+ (?:is not on|matches no version)", "a dependency is not on the registry"),
    (r"no longer has version", "version not on the registry (its nearest newer is offered)"),
    (r"needs [A-Z_][A-Z0-9_]*(?![A-Za-z0-9_])", "needs a variable"),
    (r"could not reach the agent", "its remote endpoint is called, not the package (unreachable here)"),
    (r"both npm and PyPI have", "both registries have the name"),
    (r"neither npm nor PyPI has|no package \S+ on ", "not on the registry"),
    (r"has no version|no release of \S+ on \S+ matches", "version not on the registry"),
    (r"does not pin one release", "no pinned version"),
    (r"from versions: none", "a dependency has no release pip may install (of the package's date)"),
    (r"no wheel", "no wheel for this platform"),
    (r"certificate", "certificate"),
    (r"not from the registry|not as a release of an allowed index|git repository|from source", "dependency outside the registry"),
    (r"names no program|several programs|console script|is not a file inside|no program", "no program to start"),
    (r"did not finish within", "install timeout"),
    (r"will not be started|cannot be approved", "launch refused by ard-mcp"),
    (r"which registry has it cannot be told|could not be asked", "registry lookup failed"),
    (r"did not answer within|start timeout|no answer within|within the bench's bound", "start timeout"),
    (r"Cannot allocate Wasm memory", "out of memory for WebAssembly (the sandbox's address-space limit)"),
    (r"stopped: .*over|MessageTooLarge", "message over the size limit"),
    (r"exited|crashed|Connection closed|BrokenResource|ClosedResource|EndOfStream", "crashed at start"),
    (r"\bNOT_FOUND\b", "not in ard-mcp's registry"),
)


def _kind(text: str) -> str:
    return next((kind for pattern, kind in KINDS if re.search(pattern, text)), "other")


def classify(result: Result) -> None:
    """The cause of the first failure, in words and as a kind; "" for a package that works both ways."""
    needs = f" (declares {', '.join(result.needs)}, required, no default)" if result.needs else ""
    if result.install_error is not None:
        result.cause, result.detail = _kind(result.install_error), result.install_error
        if result.through_tools is not None:
            result.detail += " (outside only: it worked through ard-mcp)"
        return
    if not result.works_outside:
        said = result.outside_error or f"the call of {result.tool}: {result.outside_call}"
        result.cause, result.detail = _kind(said), said + needs
        if result.needs and result.cause in ("crashed at start", "start timeout", "other"):
            result.cause = "needs a variable"
            if result.through_error and _kind(result.through_error) == "needs a variable":  # ard-mcp's words, then the server's
                result.detail = f"{result.through_error}; outside, without it: {said}"
        if result.works_through:
            result.detail += " (outside only: it worked through ard-mcp)"
        return
    if result.works_through:
        outside_names, through_names = set(result.outside_tools or ()), set(result.through_tools or ())
        if outside_names != through_names:  # ard-mcp leaves out a tool whose name a reader cannot use (`tool_lists`)
            result.detail = f"works; ard-mcp lists {len(through_names & outside_names)} of its {len(outside_names)} tools" + (
                f" and {len(through_names - outside_names)} others" if through_names - outside_names else ""
            )
        return
    said = result.through_error or f"the call of {result.tool}: {result.through_call}"
    result.detail = said
    result.cause = _kind(said)
    started_elsewhere = ("crashed at start", "start timeout", "other", "message over the size limit")
    if result.cause in started_elsewhere or result.cause.startswith("out of memory") or _tool_error(result.through_call):
        result.cause = f"sandbox-only failure ({result.cause if not _tool_error(result.through_call) else 'tool error'})"


# ---- the run


class SnapshotChanged(Exception):
    """The bundled snapshot was replaced between the sample's draw and ard-mcp's first open (it adds the file as it
    is then): the two sides would not be looking at the same entries."""


def fingerprint(path: Path) -> str:
    """The first 12 hex digits of the file's sha256: a rebuilt snapshot may keep its id."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


async def _opened(client: Client) -> None:
    """ard-mcp's registry opened (a new data directory: the bundled snapshot added), by a first search."""
    began = time.perf_counter()
    with anyio.fail_after(SERVE_OPEN_S):
        opened = await client.call_tool("search_agents", {"text": "read files in a folder"})
    if opened.is_error:
        raise RuntimeError(f"ard-mcp serve's first search failed: {_content_text(opened)}")
    print(f"ard-mcp serve: opened, first search in {time.perf_counter() - began:.1f} s", file=sys.stderr)


async def run(items: list[tuple[str, dict[str, Any], PackageSpec]], workdir: Path, options: Options, drawn_from: str) -> list[Result]:
    """Each package outside, then each through ard-mcp. The `ard-mcp serve` is started and opened first, so that
    the snapshot it adds is checked to be the one the sample was drawn from (`drawn_from`, its `fingerprint`)."""
    cache = workdir / "outside-cache"
    folder = workdir / "files"  # what a launch that takes a folder or file is given, outside and through ard-mcp
    folder.mkdir()
    (folder / "notes.txt").write_text("A file for the servers that list or read a folder.\n", encoding="utf-8")
    folder.chmod(0o755)
    (folder / "notes.txt").chmod(0o644)
    results = []
    for identifier, entry, spec in items:
        needs = [v.name for v in spec.environment if v.required and v.default is None]
        remote = next((url for url, _ in mcp_remotes(entry) if url.lower().startswith(("http://", "https://"))), None)
        results.append(Result(identifier, spec.key(), needs, remote))
    data = workdir / "data"
    index = 0
    outside_done = False
    while index < len(results):  # a `serve` that dies is started again for the packages left
        try:
            async with Serve(data, options) as client:
                await _opened(client)
                if not outside_done:
                    if fingerprint(snapshot.BUNDLED) != drawn_from:
                        raise SnapshotChanged("the bundled snapshot was replaced while the run began: run it again")
                    for number, (result, (_, _, spec)) in enumerate(zip(results, items, strict=True), 1):
                        scratch = workdir / "outside" / str(number)
                        scratch.mkdir(parents=True)
                        began = time.perf_counter()
                        await outside(result, spec, cache, scratch, folder, options)
                        _progress(number, len(items), "outside", result, began)
                    outside_done = True
                while index < len(results):
                    result, (_, _, spec) = results[index], items[index]
                    began = time.perf_counter()
                    await through(client, result, spec, data, folder, options)
                    _progress(index + 1, len(items), "through ard-mcp", result, began)
                    index += 1
        except Exception as exc:
            if not outside_done:
                raise
            if index < len(results):
                results[index].through_error = f"ard-mcp serve stopped: {type(exc).__name__}: {exc}"
                index += 1
            print(f"ard-mcp serve stopped ({type(exc).__name__}: {exc}); starting it again", file=sys.stderr)
    for result in results:
        classify(result)
    return results


def _progress(number: int, total: int, phase: str, result: Result, began: float) -> None:
    if phase == "outside":
        state = (
            f"tools {len(result.outside_tools)}"
            if result.outside_tools is not None
            else _line(result.install_error or result.outside_error or "", 160)
        )
    else:
        state = (
            f"tools {len(result.through_tools)}, call {result.through_call}"
            if result.through_tools is not None
            else _line(result.through_error or "", 160)
        )
    print(f"[{number}/{total}] {phase} {result.identifier}: {state} ({time.perf_counter() - began:.0f} s)", file=sys.stderr, flush=True)


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def _call(call: str | None, tool: str | None, listed: bool) -> str:
    if not listed:
        return "-"
    if tool is None:
        return "list only"
    return "ok" if call == "ok" else "tool error" if _tool_error(call) else "FAILED"


def report(results: list[Result], snapshot_id: str, runnable_count: int, args: argparse.Namespace) -> dict[str, Any]:
    print(
        f"snapshot {snapshot_id}: {runnable_count} entries with a package ard-mcp can install; sample of {len(results)} "
        f"(seed {args.seed}); network for approved launches: {'yes' if not args.no_network else 'no'}"
    )
    header = f"{'identifier':<52} {'package':<44} {'inst':<4} {'tools':>5} {'call':<10} | {'tools':>5} {'call':<10} cause"
    print(f"{'':<52} {'':<44} {'outside':<21} | {'through ard-mcp':<16}")
    print(header)
    for r in results:
        tools_out = str(len(r.outside_tools)) if r.outside_tools is not None else "-" if not r.installed else "no"
        tools_in = str(len(r.through_tools)) if r.through_tools is not None else "no"
        cause = f"{r.cause}: {_line(r.detail.removeprefix(r.cause + ': '), 200)}" if r.cause else r.detail
        call_out, call_in = _call(r.outside_call, r.tool, r.started_outside), _call(r.through_call, r.tool, r.through_tools is not None)
        print(
            f"{r.identifier[:52]:<52} {(r.resolved or r.key)[:44]:<44} {_yes(r.installed):<4} {tools_out:>5} {call_out:<10} | "
            f"{tools_in:>5} {call_in:<10} {cause}"
        )
        if r.tool is not None:
            print(f"{'':<52}   call: {r.tool}")
    total = len(results)
    installed = sum(r.installed for r in results)
    started = sum(r.started_outside for r in results)
    outside_ok = [r for r in results if r.works_outside]
    through_ok = [r for r in results if r.works_through]
    both = [r for r in outside_ok if r.works_through]
    list_only = sum(1 for r in outside_ok if r.tool is None)
    ratio = len(both) / len(outside_ok) if outside_ok else 0.0
    unset = [r for r in outside_ok if r.needs]
    settable = [r for r in outside_ok if not r.needs]
    ratio_set = sum(r.works_through for r in settable) / len(settable) if settable else 0.0
    missing = sum(1 for r in results if _kind(r.through_error or "") == "not in ard-mcp's registry")
    remote = sum(1 for r in results if r.remote)
    print(f"{total - missing} of the {total} sampled entries were in ard-mcp's registry (the bundled snapshot, added on its first open)")
    if remote:
        print(f"{remote} of them name a remote endpoint too, which ard-mcp calls instead of starting the package")
    print("Causes (first failure of each package):")
    for kind, count in Counter(r.cause for r in results if r.cause).most_common():
        print(f"  {count:3d}  {kind}")
    print("Totals:")
    print(f"  installed outside                  {installed:3d} / {total}")
    print(f"  started outside (listed its tools) {started:3d} / {total}")
    print(f"  works outside                      {len(outside_ok):3d} / {total}  ({list_only} of them by listing alone: no harmless tool)")
    print(f"  works through ard-mcp              {len(through_ok):3d} / {total}  ({len(both)} of those that work outside)")
    verdict = "PASS" if ratio >= TARGET else "FAIL"
    print(f"  works through ard-mcp / works outside: {len(both)} / {len(outside_ok)} = {ratio:.0%}; target >= {TARGET:.0%}: {verdict}")
    print(
        f"  the same without the {len(unset)} that need a value nobody set (ard-mcp refuses those until the operator sets it): "
        f"{sum(r.works_through for r in settable)} / {len(settable)} = {ratio_set:.0%}"
    )
    return {
        "snapshot": snapshot_id,
        "runnable": runnable_count,
        "seed": args.seed,
        "size": len(results),
        "network": not args.no_network,
        "totals": {
            "installed_outside": installed,
            "started_outside": started,
            "works_outside": len(outside_ok),
            "works_through": len(through_ok),
            "works_both": len(both),
            "ratio": ratio,
            "ratio_without_unset_variables": ratio_set,
            "target": TARGET,
            "pass": ratio >= TARGET,
        },
        "packages": [
            {k: v for k, v in asdict(r).items() if k != "schemas"} | {"works_outside": r.works_outside, "works_through": r.works_through}
            for r in results
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size", type=int, default=40, help="how many runnable snapshot entries to draw")
    parser.add_argument("--seed", type=int, default=54, help="the random sample's seed (issue #54)")
    parser.add_argument(
        "--only", metavar="IDENTIFIER", action="append", help="this entry alone, instead of a sample (repeatable; debugging)"
    )
    parser.add_argument("--no-network", action="store_true", help="approve the launches without network access")
    parser.add_argument("--start-timeout", type=float, default=START_S, help="seconds for a server's start and tools/list")
    parser.add_argument("--json", type=Path, help="write every package's result here")
    parser.add_argument("--log", type=Path, help="keep the servers' and ard-mcp's stderr here (default: removed with the rest)")
    args = parser.parse_args()
    drawn_from = fingerprint(snapshot.BUNDLED)
    snapshot_id, items = runnable(snapshot.BUNDLED)
    if args.only:
        chosen = [item for item in items if item[0] in args.only]
        missing = set(args.only) - {item[0] for item in chosen}
        if missing:
            raise SystemExit(f"{', '.join(sorted(missing))}: not an entry of {snapshot_id} with a package ard-mcp can install")
    else:
        chosen = sample(items, args.size, args.seed)
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, {len(chosen)} packages", file=sys.stderr)
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ard-bench-sample-", ignore_cleanup_errors=True) as temporary:
        workdir = Path(temporary)
        with open(args.log or workdir / "stderr.log", "w", encoding="utf-8") as log:
            results = anyio.run(run, chosen, workdir, Options(not args.no_network, args.start_timeout, log), drawn_from)
    found = report(results, f"{snapshot_id}, sha256 {drawn_from}...", len(items), args)
    print(f"took {time.perf_counter() - began:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(found, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
