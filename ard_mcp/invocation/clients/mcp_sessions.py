"""Kept MCP sessions: one open session per agent endpoint and credentials, shared by every call to it.

Why: a session per call cost a local tool call through the registry 19 ms of the client's time (the session's
setup, and the `tools/list` the SDK sends on a session's first call of a tool to check its result against the
tool's output schema), where the tool call itself takes one request; on a kept session the client's part fell
to 8 ms (`bench/invocation.py`, the loopback agent, a shared 2-core machine). MCP matches answers to requests
by id, so concurrent calls share one session safely.

An MCP client session runs task groups that must end in the task that began them, so each kept session lives
in a task of its own (`_keep`), started in the serving registry's background task group. A session is closed
when it has been idle `IDLE_S` seconds, when the pool is full and it is the least recently used idle one, at
shutdown (the group's cancellation), and as soon as a call on it fails for any reason but the agent's own
refusal of that call (a broken stream, a timeout, an answer over the size cap, a refused address): the next
call opens a fresh one, through the same guarded transport, so every connection is still checked. The pool
holds `MAX_SESSIONS` at most, unless more endpoints than that are being called at once (a session in use is
never closed under its caller): the invocation rate limit bounds those.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import AsyncIterator, Callable, Hashable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field

import anyio
import mcp_types
from anyio.abc import TaskGroup
from mcp import Client, MCPError

from ard_mcp.errors import AgentTimeout
from ard_mcp.invocation.clients.bounds import Bounded

log = logging.getLogger(__name__)
MAX_SESSIONS = 32
IDLE_S = 120.0

Opener = Callable[[Bounded], AbstractAsyncContextManager[Client]]


@dataclass(eq=False)
class _Kept:
    bounded: Bounded
    ready: anyio.Event = field(default_factory=anyio.Event)
    closing: anyio.Event = field(default_factory=anyio.Event)
    client: Client | None = None
    error: Exception | None = None
    users: int = 0
    last_used: float = field(default_factory=time.monotonic)


def refused_only(exc: BaseException) -> bool:
    """Whether the agent refused this one call, its session still sound: invalid arguments, or an error code of
    the agent's own (outside the range JSON-RPC and MCP reserve, -32768 to -32000). Any other error closes the
    session, a legacy server's "Session terminated" (it restarted and forgot the session) among them."""
    return isinstance(exc, MCPError) and (exc.code == mcp_types.INVALID_PARAMS or not -32768 <= exc.code <= -32000)


class SessionPool:
    def __init__(self, group: TaskGroup, max_sessions: int = MAX_SESSIONS, idle_s: float = IDLE_S) -> None:
        self._group = group
        self._max = max_sessions
        self._idle_s = idle_s
        self._sessions: dict[Hashable, _Kept] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    @asynccontextmanager
    async def session(self, key: Hashable, bounded: Bounded, opener: Opener, open_within: float) -> AsyncIterator[tuple[Client, Bounded]]:
        """The kept session for `key` and the `Bounded` it runs over; where there is none, one opened by
        `opener` over `bounded` (this call's: a failure to open is found there), within `open_within` seconds.
        A failure inside the block closes the session unless the agent only refused the call (`refused_only`)."""
        kept = self._sessions.get(key)
        if kept is None or kept.closing.is_set():
            kept = self._start(key, bounded, opener, open_within)
        kept.users += 1
        try:
            await kept.ready.wait()
            if kept.error is not None:
                bounded.learn(kept.bounded)
                raise kept.error
            assert kept.client is not None
            yield kept.client, kept.bounded
        except BaseException as exc:
            if not refused_only(exc):
                self._close(key, kept)
            raise
        finally:
            kept.users -= 1
            kept.last_used = time.monotonic()

    def close_all(self) -> None:
        for key, kept in list(self._sessions.items()):
            self._close(key, kept)

    def _close(self, key: Hashable, kept: _Kept) -> None:
        kept.closing.set()
        if self._sessions.get(key) is kept:
            del self._sessions[key]

    def _start(self, key: Hashable, bounded: Bounded, opener: Opener, open_within: float) -> _Kept:
        if len(self._sessions) >= self._max:
            idle = [(k, s) for k, s in self._sessions.items() if s.users == 0]
            if idle:
                self._close(*min(idle, key=lambda pair: pair[1].last_used))
        kept = _Kept(bounded)
        self._sessions[key] = kept
        self._group.start_soon(self._keep, key, kept, opener, open_within)
        return kept

    async def _keep(self, key: Hashable, kept: _Kept, opener: Opener, open_within: float) -> None:
        """Open the session, hold it until it is closed or idle, then close it; never raise (a failure here
        must not end the registry's background task group, whose tasks serve the registry)."""
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + open_within) as scope:
                async with opener(kept.bounded) as client:
                    scope.deadline = math.inf
                    kept.client = client
                    kept.ready.set()
                    await self._held(kept)
            if kept.client is None:
                kept.error = AgentTimeout(f"the MCP server did not open a session within {open_within:g} s")
        except Exception as exc:  # the callers waiting for it get the failure; a session that broke later is closed
            if kept.client is None:
                kept.error = exc
            else:
                log.debug("a kept MCP session ended: %r", exc)  # not `key`: it holds the operator's credentials
        finally:
            self._close(key, kept)
            kept.ready.set()

    async def _held(self, kept: _Kept) -> None:
        while not kept.closing.is_set():
            with anyio.move_on_after(self._idle_s):
                await kept.closing.wait()
            if kept.users == 0 and time.monotonic() - kept.last_used >= self._idle_s:
                return
