"""Calling a remote MCP server: tools/list and tools/call over streamable HTTP or SSE, with the mcp SDK's own
client, every connection through the network policy (`net.httpx2_bridge` hands the SDK's httpx2 requests to
the guarded transport) and every answer under the call's size cap.

In a serving registry a streamable-HTTP session is kept between the calls to one endpoint, lent to one call
at a time (`mcp_sessions`: a session per call cost a local tool call 19 ms of the client's time, a kept one
8 ms). An SSE session is opened per call: its one long stream would carry every answer of the session under
one size cap. What a modern server answered to `server/discover` is kept for `DISCOVERED_TTL` seconds and
handed to the next session it opens (`prior_discover`), one request fewer: a session per call took 37 ms
with the probe each time and 30 ms with the answer kept (`bench/invocation.py`). A legacy server (initialize
handshake) is asked the old way every time; a kept answer that fails is forgotten.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from functools import partial
from typing import Any, TypeVar

import httpx2
import mcp_types
from mcp import Client, MCPError
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.dispatcher import ProgressFnT

from ard_mcp import __version__
from ard_mcp.errors import AgentError, AgentUnreachable, ArdError
from ard_mcp.invocation.calls import Outcome, Progress, Target, ToolSummary, TransportFactory
from ard_mcp.invocation.clients.bounds import Bounded, raise_named, strings_in, text_of, within
from ard_mcp.invocation.clients.mcp_sessions import SessionPool
from ard_mcp.invocation.clients.sse_endpoint import EndpointChecked, EndpointElsewhere
from ard_mcp.net.httpx2_bridge import Httpx2Bridge
from ard_mcp.packages.relay import HOST, Relay
from ard_mcp.packages.runtime import PackageRuntime

DISCOVERED_TTL = 60.0
_RELAYS: dict[int, Relay] = {}  # each open session's link to its callers' hosts, by the id of its client
_MAX_PAGES = 20  # tools/list pages followed: a server whose cursor never ends cannot hold a call
_T = TypeVar("_T")
# What the SDK answers for a stream that broke or a body it could not parse: no answer came back.
_BROKEN = {mcp_types.CONNECTION_CLOSED, mcp_types.PARSE_ERROR}


class McpAgentClient:
    """`AgentClient` for `Target.protocol == "mcp"`; `transport_kind` "sse" or "streamable-http" (the default).
    With `sessions`, streamable-HTTP sessions are kept there; without, each call opens its own."""

    def __init__(self, sessions: SessionPool | None = None, packages: PackageRuntime | None = None) -> None:
        self._discovered: dict[tuple[str, str | None], tuple[float, str, mcp_types.DiscoverResult]] = {}
        self._sessions = sessions
        self._packages = packages

    async def tools(self, target: Target, transport: TransportFactory) -> list[ToolSummary]:
        return await self._run(target, transport, "tools/list", _list_tools)

    async def call(
        self, target: Target, transport: TransportFactory, name: str, arguments: dict[str, Any], progress: Progress | None
    ) -> Outcome:
        async def call_tool(client: Client) -> Outcome:
            result = await client.call_tool(name, arguments, progress_callback=_forward(progress) if progress else None)
            return _outcome(result)

        return await self._run(target, transport, f"tools/call {name!r}", call_tool)

    async def _run(self, target: Target, transport: TransportFactory, what: str, work: Callable[[Client], Awaitable[_T]]) -> _T:
        """`work` in a kept session or one of its own, within the call's limits; every failure named as the
        registry's errors."""
        key = (target.url, target.transport_kind)
        kept = self._discovered.get(key)
        prior = kept[1:] if kept is not None and time.monotonic() - kept[0] < DISCOVERED_TTL else None
        bounded = Bounded(transport(), target.limits.max_bytes)
        connected = False
        try:
            with within(target.limits):
                async with self._session(target, bounded, prior) as (client, bounded):
                    connected = True
                    discovered = client.session.discover_result
                    if prior is None and discovered is not None and client.session.protocol_version is not None:
                        self._discovered[key] = (time.monotonic(), client.session.protocol_version, discovered)
                    relay = _RELAYS.get(id(client))  # a package server's relay is its own (`packages.servers`)
                    with relay.serving(HOST.get()) if relay is not None else contextlib.nullcontext():
                        return await work(client)
        except Exception as exc:
            self._discovered.pop(key, None)
            if bounded.denied is not None and not isinstance(exc, ArdError):
                raise _denied(bounded.denied) from exc
            raise_named(exc, bounded, partial(_mcp_failure, url=target.url, during=what if connected else None))

    def _session(
        self, target: Target, bounded: Bounded, prior: tuple[str, mcp_types.DiscoverResult] | None
    ) -> AbstractAsyncContextManager[tuple[Client, Bounded]]:
        """The endpoint's kept session (with the `Bounded` it was opened over), else a session of this call's own;
        for a package server, its running process."""
        if target.transport_kind == "stdio":
            if self._packages is None or target.start is None:
                raise AgentUnreachable(f"{target.url} is a package server, started only through the invocation service")
            return _own(self._packages.session(target.start, target.limits.total, target.limits.max_bytes), bounded)
        if self._sessions is None or target.transport_kind == "sse":
            return _own(_opened(target, bounded, prior), bounded)
        key = (target.url, target.transport_kind, target.credential, target.limits)
        return self._sessions.session(key, bounded, lambda b: _opened(target, b, prior), target.limits.total)


@asynccontextmanager
async def _own(session: AbstractAsyncContextManager[Client], bounded: Bounded) -> AsyncIterator[tuple[Client, Bounded]]:
    async with session as client:
        yield client, bounded


def _forward(to: Progress) -> ProgressFnT:
    """The agent's progress notifications, passed on as they arrive (the SDK calls back by parameter name)."""

    async def forward(progress: float, total: float | None, message: str | None) -> None:
        await to(progress, total, message)

    return forward


async def _list_tools(client: Client) -> list[ToolSummary]:
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(_MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None or cursor in seen:
            break
        seen.add(cursor)
    return [ToolSummary(name=t.name, description=text_of(t.description), inputSchema=t.input_schema) for t in tools]


def _outcome(result: mcp_types.CallToolResult) -> Outcome:
    """The structured content where the tool gives one (its text blocks mirror it), else the content blocks."""
    texts = [block.text for block in result.content if isinstance(block, mcp_types.TextContent)]
    if result.structured_content is not None:
        texts += strings_in(result.structured_content)
        value: Any = result.structured_content
    else:
        value = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content]
    return Outcome(result=value, is_error=result.is_error, texts=list(dict.fromkeys(texts)))


@asynccontextmanager
async def _opened(target: Target, bounded: Bounded, prior: tuple[str, mcp_types.DiscoverResult] | None) -> AsyncIterator[Client]:
    """A session with the server: a probe first (`server/discover`, else the initialize handshake), or, with
    `prior`, the version and discover answer the server gave before."""
    timeout = httpx2.Timeout(target.limits.total, connect=target.limits.connect)
    info = mcp_types.Implementation(name="ard-mcp", version=__version__)

    def http_client(
        headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None, auth: httpx2.Auth | None = None
    ) -> httpx2.AsyncClient:
        bridged = Httpx2Bridge(bounded)
        transport = EndpointChecked(bridged) if target.transport_kind == "sse" else bridged
        return httpx2.AsyncClient(transport=transport, headers=headers, timeout=timeout, auth=auth)

    async with AsyncExitStack() as stack:
        if target.transport_kind == "sse":
            streams = sse_client(
                target.url,
                timeout=target.limits.connect,
                sse_read_timeout=target.limits.total,
                httpx_client_factory=http_client,
            )
        else:
            streams = streamable_http_client(target.url, http_client=await stack.enter_async_context(http_client(None, timeout)))
        known: dict[str, Any] = {"mode": prior[0], "prior_discover": prior[1]} if prior is not None else {}
        relay = Relay(target.url)
        client = await stack.enter_async_context(Client(streams, cache=None, client_info=info, **relay.client_options(), **known))
        _RELAYS[id(client)] = relay
        try:
            yield client
        finally:
            del _RELAYS[id(client)]


def _denied(status: int) -> AgentError:
    """The agent refused this registry's request (401, 403): the agent's own 4xx, passed back as it is."""
    return AgentError(f"the MCP server refused the request ({status}): check this agent's credentials", status)


def _mcp_failure(leaf: BaseException, url: str, during: str | None) -> ArdError | None:
    """An HTTP status of the SSE stream, or the MCP error itself. `during` is None while connecting: a failed
    handshake means no MCP server answered at `url`."""
    if isinstance(leaf, httpx2.HTTPStatusError):  # the SSE transport's GET, answered with an error status
        status = leaf.response.status_code
        if status in (401, 403):
            return _denied(status)
        return AgentUnreachable(f"no MCP server answered at {url}: {status}")
    if isinstance(leaf, MCPError):
        if during is None:
            return AgentUnreachable(f"no MCP server answered at {url}: {leaf.message}")
        if leaf.code in _BROKEN:
            return AgentUnreachable(f"no answer came back from the MCP server during {during}: {leaf.message}")
        if leaf.code == mcp_types.INTERNAL_ERROR:  # its own failure (a 5xx, or an internal error it answered): it was reached
            return AgentError(f"the MCP server failed during {during}: {leaf.message}", 502)
        return AgentError(f"the MCP server refused {during}: {leaf.message} (code {leaf.code})", 400)
    if isinstance(leaf, EndpointElsewhere):
        return AgentUnreachable(str(leaf))
    if isinstance(leaf, httpx2.TransportError):
        return AgentUnreachable(f"could not reach the MCP server ({type(leaf).__name__}: {leaf})")
    if type(leaf) is RuntimeError and during is not None:
        # the SDK's client raises a bare RuntimeError when an answer breaks the tool's own output schema
        return AgentUnreachable(f"the MCP server's answer to {during} does not match its output schema: {leaf}")
    return None
