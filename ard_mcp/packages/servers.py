"""Running package servers: started when first called, shared by the calls to them, stopped when idle, when
too many run, and when the registry stops; a crashed one is reported with the tail of its stderr and started
afresh by the next call.

A package server is one process speaking MCP over stdio, so unlike a remote server's sessions it is not
lent to one call at a time: its calls share it, matched to their answers by id, and one call's timeout
cancels that request alone (the SDK sends `notifications/cancelled`) without stopping the server. Each runs
in a task of its own (`_keep`) in the serving registry's background task group, because an MCP client
session's task groups must end in the task that began them.

Nothing is started that the person has not approved (`consent`): the check is made here as well as by the
caller, for the launch's digest (`plans`). Running servers are kept per launch, not per package, and each
launch has a state directory of its own (`servers/<package>/<digest>/state`, the package written so that no
two names share one: `npm:@s/n~x` and `npm:@s~n/x` did). Its environment holds only the variables it
declares, from the operator's secrets file or the registry's own environment (`environment`), and it runs
in the sandbox (`sandbox`) unless the operator allowed unsandboxed servers.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import mcp_types
from anyio.abc import TaskGroup
from mcp import Client

from ard_mcp import __version__
from ard_mcp.errors import AgentTimeout, AgentUnreachable, PermissionDenied, leaves
from ard_mcp.monitoring import metrics
from ard_mcp.packages import grants, views
from ard_mcp.packages.consent import Approvals
from ard_mcp.packages.grants import Grant
from ard_mcp.packages.install import Installed
from ard_mcp.packages.plans import LaunchPlan
from ard_mcp.packages.relay import HOST, Relay
from ard_mcp.packages.sandbox import Command, Confinement, Launch, SandboxUnavailable, sandboxed, unsandboxed
from ard_mcp.packages.stdio import BoundedStdio, MessageTooLarge, stderr_tail
from ard_mcp.redaction import Redactor

log = logging.getLogger(__name__)
MAX_RUNNING = 8
IDLE_S = 300.0
ROOTS_WAIT_S = 3.0  # the most a server given a folder as its root alone is waited for to ask for its roots
ROOTS_SETTLE_S = 0.5  # then, for it to take the answer in


@dataclass(frozen=True)
class Start:
    """What one server is started from: the approved launch, the package installed for it, whether it may reach
    the network, its environment."""

    plan: LaunchPlan
    installed: Installed
    network: bool
    web_pages: bool  # it may ask the person to open a page it names (`relay`)
    environment: tuple[tuple[str, str], ...]  # name, value: what it declares, and only that
    grant: Grant | None = None  # the person's folder or file it works on, where its launch takes one

    @property
    def key(self) -> str:
        return self.plan.key


@dataclass(eq=False)
class _Running:
    start: Start
    state_dir: Path
    relay: Relay  # what it asks mid-call, passed to the host of the call it serves
    ready: anyio.Event = field(default_factory=anyio.Event)
    closing: anyio.Event = field(default_factory=anyio.Event)
    client: Client | None = None
    exited: anyio.Event | None = None  # set when its output ended: it exited or crashed
    transport: BoundedStdio | None = None
    ended: str | None = None  # why it stopped, once it has
    users: int = 0
    last_used: float = field(default_factory=time.monotonic)

    @property
    def stderr(self) -> Path:
        """Beside its state directory, never in it: the server owns that directory and could put a link where
        this process, writing the log, would follow it."""
        return self.state_dir.parent / "stderr.log"


class PackageServers:
    def __init__(
        self,
        group: TaskGroup,
        state_root: Path,
        approvals: Approvals,
        confinement: Confinement,
        allow_unsandboxed: bool = False,
        redactor: Redactor | None = None,
        max_running: int = MAX_RUNNING,
        idle_s: float = IDLE_S,
    ) -> None:
        """`state_root`: where each server gets its private writable directory (`<package>/<digest>/state`);
        `redactor`: the operator's secrets, kept out of its stderr file."""
        self._group = group
        self._state_root = state_root
        self._redactor = redactor or Redactor()
        self._approvals = approvals
        self._confinement = confinement
        self._allow_unsandboxed = allow_unsandboxed
        self._max = max_running
        self._idle_s = idle_s
        self._running: dict[Start, _Running] = {}

    def __len__(self) -> int:
        return len(self._running)

    def command(self, start: Start, state_dir: Path) -> Command:
        """How `start` is run: in the sandbox, with its own writable view of its package (`views`, made on its
        first start: run in a worker thread), or without one where the operator allowed that and none can be had."""
        launch = Launch(
            command=grants.filled(start.installed.command, start.grant),
            package_dir=start.installed.directory,
            state_dir=state_dir,
            runtime_dirs=start.installed.runtime_dirs,
            environment=dict(start.environment),
            network=start.network,
            folders=((start.grant.mounted, start.grant.writable),) if start.grant is not None else (),
        )
        try:
            uid = self._confinement.uid if os.geteuid() == 0 else None
            view = views.made(start.installed.directory, state_dir.parent / "package", uid)
            return sandboxed(dataclasses.replace(launch, package_view=view), self._confinement)
        except SandboxUnavailable as exc:
            if not self._allow_unsandboxed:
                raise PermissionDenied(f"package servers run only in a sandbox, and none can be had here: {exc}") from None
            log.warning("starting %s without a sandbox (--allow-unsandboxed-packages): %s", start.key, exc)
            return unsandboxed(launch, self._confinement)

    @asynccontextmanager
    async def session(self, start: Start, open_within: float, max_message_bytes: int) -> AsyncIterator[Client]:
        """The running server for `start`, started (within `open_within` seconds) where none runs. A server
        that ended during the block is reported with the tail of its stderr."""
        approval = self._approvals.get(start.plan.digest)
        if approval is None or (start.network and not approval.network) or approval.integrity != start.installed.integrity:
            raise PermissionDenied(
                f"{start.key} is not approved to run with this launch{' and network access' if start.network else ''} on this registry"
            )
        running = self._running.get(start)
        if running is None or running.closing.is_set():
            running = self._start(start, open_within, max_message_bytes)
        running.users += 1
        try:
            await running.ready.wait()
            if running.client is None:
                raise AgentUnreachable(f"the package server {start.key} did not start: {running.ended}")
            with running.relay.serving(HOST.get()):
                yield running.client
        except Exception as exc:
            if running.exited is not None and running.exited.is_set() and not isinstance(exc, AgentUnreachable):
                raise AgentUnreachable(f"the package server {start.key} {_how_it_ended(running)}") from exc
            raise
        finally:
            running.users -= 1
            running.last_used = time.monotonic()

    def close_all(self) -> None:
        for running in list(self._running.values()):
            running.closing.set()

    def _start(self, start: Start, open_within: float, max_message_bytes: int) -> _Running:
        if len(self._running) >= self._max:
            idle = [r for r in self._running.values() if r.users == 0]
            if idle:
                min(idle, key=lambda r: r.last_used).closing.set()
        self._state_root.mkdir(mode=0o700, parents=True, exist_ok=True)
        state_dir = self._state_root / directory_name(start.key) / start.plan.digest / "state"
        state_dir.mkdir(parents=True, exist_ok=True)
        roots = [start.grant.mounted] if start.grant is not None else []
        running = _Running(start, state_dir, Relay(start.key, allow_url=start.web_pages, roots=roots))
        self._running[start] = running
        self._group.start_soon(self._keep, running, open_within, max_message_bytes)
        return running

    async def _keep(self, running: _Running, open_within: float, max_message_bytes: int) -> None:
        """Start the server, hold it until it is closed, idle or ends; never raise (this task's failure must not
        end the registry's background task group)."""
        start = running.start
        transport: BoundedStdio | None = None
        try:
            command = await anyio.to_thread.run_sync(self.command, start, running.state_dir)
            with anyio.CancelScope(deadline=anyio.current_time() + open_within) as scope:
                transport = BoundedStdio(command, running.stderr, max_message_bytes, self._redactor)
                info = mcp_types.Implementation(name="ard-mcp", version=__version__)
                # the initialize handshake, which every MCP server speaks: a server on an older SDK (mcp 1.x, as a release
                # installed with its dependencies of its date has) crashed on the `server/discover` probe
                async with Client(transport, client_info=info, mode="legacy", **running.relay.client_options()) as client:
                    if start.grant is not None and grants.needed(start.plan.package_arguments) is None:
                        # a folder given as its root alone: a server that takes its folders from roots asks for them just
                        # after the handshake and takes the answer in a moment later (the file system server checks each
                        # folder on disk), and a call sent before then found none: its first call was refused so. One
                        # that never asks costs ROOTS_WAIT_S on its start.
                        with anyio.move_on_after(ROOTS_WAIT_S):
                            await running.relay.roots_asked.wait()
                            await anyio.sleep(ROOTS_SETTLE_S)
                    scope.deadline = math.inf
                    running.client, running.exited, running.transport = client, transport.ended, transport
                    running.ready.set()
                    metrics.package_servers(+1)
                    await self._held(running, transport.ended)
                    if transport.ended.is_set():
                        running.ended = "it " + _how_it_ended(running)
            if running.client is None:
                running.ended = f"it did not answer within {open_within:g} s" + _said(running)
        except (PermissionDenied, AgentTimeout) as exc:
            running.ended = exc.message
        except Exception as exc:  # a crash, a refused start, a message over the limit: said to the callers
            if isinstance(exc, MessageTooLarge):
                reason = str(exc)
            elif transport is not None and transport.ended.is_set() and running.client is None:
                # the SDK's client says only "unhandled errors in a TaskGroup" around "Connection closed"
                reason = "it exited before answering the MCP handshake"
            else:
                reason = _innermost(exc)
            running.ended = reason + _said(running)
            log.info("package server %s ended: %s", start.key, running.ended)
        finally:
            if running.client is not None:
                metrics.package_servers(-1)
            if self._running.get(start) is running:
                del self._running[start]
            running.ended = running.ended or "it was stopped"
            running.ready.set()

    async def _held(self, running: _Running, exited: anyio.Event) -> None:
        """Until it is closed, has been idle `idle_s` seconds, or has exited (which closes it)."""
        async with anyio.create_task_group() as watch:
            watch.start_soon(_close_on, exited, running.closing)
            while not running.closing.is_set():
                with anyio.move_on_after(self._idle_s):
                    await running.closing.wait()
                if running.users == 0 and time.monotonic() - running.last_used >= self._idle_s:
                    break
            watch.cancel_scope.cancel()


async def _close_on(exited: anyio.Event, closing: anyio.Event) -> None:
    await exited.wait()
    closing.set()


def _how_it_ended(running: _Running) -> str:
    """ "exited" with the tail of its stderr, or why the transport stopped it. A server stopped for a message over
    the limit looks to the waiting call like one that exited (its output closed); saying only "exited" would send
    the operator to an empty stderr for a crash that never happened."""
    too_large = running.transport.too_large if running.transport is not None else None
    return f"was stopped: {too_large}" if too_large else "exited" + _said(running)


def _innermost(exc: BaseException) -> str:
    """What went wrong, out of the exception groups a task group wraps one failure in (`errors.leaves`)."""
    found = list(leaves(exc))
    named = found[0] if len(found) == 1 else exc
    return f"{type(named).__name__}: {named}" if str(named) else type(named).__name__


def _said(running: _Running) -> str:
    tail = stderr_tail(running.stderr)
    return f"; its stderr ends: {tail}" if tail else ""


def directory_name(key: str) -> str:
    """`key` as one directory name, written so that two keys never share one: every character but ASCII letters,
    digits, `-`, `.` and `@` as `_XX` (its UTF-8 bytes in hex), `_` itself included."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "-.@") else "".join(f"_{b:02x}" for b in c.encode()) for c in key)
