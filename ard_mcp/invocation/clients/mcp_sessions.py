"""Kept MCP sessions: open sessions to each agent endpoint, kept between calls and lent to one call at a time.

Why keep them: a session per call cost a local tool call through the registry 19 ms of the client's time (the
session's setup, and the `tools/list` the SDK sends on a session's first call of a tool to check its result
against the tool's output schema), where the tool call itself takes one request; on a kept session the
client's part fell to 8 ms (`bench/invocation.py`, the loopback agent, a shared 2-core machine).

Why one call at a time: a session is one set of streams and tasks, and what goes wrong on it goes wrong for
everyone on it. Shared by concurrent callers, one caller's timeout closed the session under the others
("Connection closed" 1-6 ms later, a slow call's 504 turned into a 502), and one answer over the size cap
broke the SDK's stream for every request on it, each failure then named after the first caller's. A session
lent to one call at a time cannot carry another call's failure: concurrent calls to one endpoint each get a
session of their own (an idle one, else a new one), sequential calls reuse one.

An MCP client session runs task groups that must end in the task that began them, so each kept session lives
in a task of its own (`_keep`), started in the serving registry's background task group. A session is closed
when it has been idle `IDLE_S` seconds, when more than `MAX_IDLE_PER_ENDPOINT` to one endpoint or more than
`MAX_SESSIONS` in all are idle (the least recently used first), at shutdown (the group's cancellation), and
when the call it is lent to fails for any reason but the agent's own refusal of that call (a broken stream, a
timeout, an answer over the size cap, a refused address), since what state that left it in is unknown.
Sessions in use are bounded by the invocation rate limit, not here: a call never waits for another's session.
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
MAX_IDLE_PER_ENDPOINT = 4  # what a burst of concurrent calls leaves open to one agent (and held by it) afterwards
IDLE_S = 120.0

Opener = Callable[[Bounded], AbstractAsyncContextManager[Client]]


@dataclass(eq=False)
class _Kept:
    key: Hashable
    bounded: Bounded
    ready: anyio.Event = field(default_factory=anyio.Event)
    closing: anyio.Event = field(default_factory=anyio.Event)
    client: Client | None = None
    error: Exception | None = None
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
        self._idle: dict[Hashable, list[_Kept]] = {}  # per key, the most recently used last
        self._lent: set[_Kept] = set()

    def __len__(self) -> int:
        """Open sessions: idle ones and those lent to a call."""
        return sum(map(len, self._idle.values())) + len(self._lent)

    @asynccontextmanager
    async def session(self, key: Hashable, bounded: Bounded, opener: Opener, open_within: float) -> AsyncIterator[tuple[Client, Bounded]]:
        """A session for `key`, this call's alone while the block runs, and the `Bounded` it runs over: an idle
        one, else one opened by `opener` over `bounded` (this call's) within `open_within` seconds. It goes back
        to the pool after the block, unless the block failed for another reason than the agent's refusal of
        the call (`refused_only`): then it is closed."""
        kept = self._idle_one(key) or self._start(key, bounded, opener, open_within)
        self._lent.add(kept)
        try:
            await kept.ready.wait()
            if kept.error is not None:
                raise kept.error
            assert kept.client is not None
            kept.bounded.reset()  # what the session's previous call saw is not this call's
            yield kept.client, kept.bounded
        except BaseException as exc:
            if not refused_only(exc):
                kept.closing.set()
            raise
        finally:
            self._lent.discard(kept)
            self._returned(kept)

    def close_all(self) -> None:
        for kept in [*self._lent, *(k for idle in self._idle.values() for k in idle)]:
            kept.closing.set()
        self._idle.clear()

    def _idle_one(self, key: Hashable) -> _Kept | None:
        idle = self._idle.get(key)
        while idle:
            kept = idle.pop()
            if not kept.closing.is_set():
                return kept
        return None

    def _returned(self, kept: _Kept) -> None:
        """Back among the idle, unless it is closing; the least recently used idle one closed past the bound."""
        kept.last_used = time.monotonic()
        if kept.closing.is_set():
            return
        same = self._idle.setdefault(kept.key, [])
        same.append(kept)
        if len(same) > MAX_IDLE_PER_ENDPOINT:
            self._forget(same[0])
        idle = [k for sessions in self._idle.values() for k in sessions]
        if len(idle) > self._max:
            self._forget(min(idle, key=lambda k: k.last_used))

    def _forget(self, kept: _Kept) -> None:
        kept.closing.set()
        idle = self._idle.get(kept.key, [])
        if kept in idle:
            idle.remove(kept)
        if not idle:
            self._idle.pop(kept.key, None)

    def _start(self, key: Hashable, bounded: Bounded, opener: Opener, open_within: float) -> _Kept:
        kept = _Kept(key, bounded)
        self._group.start_soon(self._keep, kept, opener, open_within)
        return kept

    async def _keep(self, kept: _Kept, opener: Opener, open_within: float) -> None:
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
        except Exception as exc:  # the call waiting for it gets the failure; a session that broke later is closed
            if kept.client is None:
                kept.error = exc
            else:
                log.debug("a kept MCP session ended: %r", exc)  # not the key: it holds the operator's credential
        finally:
            self._forget(kept)
            kept.ready.set()

    async def _held(self, kept: _Kept) -> None:
        while not kept.closing.is_set():
            with anyio.move_on_after(self._idle_s):
                await kept.closing.wait()
            if kept not in self._lent and time.monotonic() - kept.last_used >= self._idle_s:
                return
