"""What a called MCP server asks mid-call (sampling, elicitation, its roots), passed on to the host of the
call it is serving, or refused saying why.

A server reached through ard-mcp is a server of the host's, one hop further: one that asks the host's model
to sample, or the person a question, must reach them, as it would attached directly. The request goes to
the host of the one call in flight on that server's session (a remote server's session is lent to one call
at a time; a package server may serve several at once, and a request then cannot be told apart: refused).
A host that did not declare the capability, a caller with no host (REST), or a host whose protocol gives
the server no channel for a request in mid-call (2026-07-28: an elicitation rides the tool result instead),
gets the server a clear error in place of an answer. Used by remote sessions (`invocation.clients`) and
package servers (`servers`) alike, so it lives in the lower of the two rooms.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

import mcp_types
from mcp.client.session import ClientRequestContext


class HostChannel(Protocol):
    """The host of one call, as a server's requests reach it (`surfaces.mcp_host` over MCP)."""

    async def sample(self, params: mcp_types.CreateMessageRequestParams) -> mcp_types.CreateMessageResult | mcp_types.ErrorData: ...

    async def elicit(self, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult | mcp_types.ErrorData: ...

    async def roots(self) -> mcp_types.ListRootsResult | mcp_types.ErrorData: ...


HOST: ContextVar[HostChannel | None] = ContextVar("ard_mcp_host", default=None)
"""The host of the call being made (set by the invocation service, read where a session is taken for it)."""


def refusal(message: str) -> mcp_types.ErrorData:
    return mcp_types.ErrorData(code=mcp_types.INVALID_REQUEST, message=f"ard-mcp did not pass this on: {message}")


class Relay:
    """One session's link to the hosts of the calls it serves."""

    def __init__(self) -> None:
        self._hosts: list[HostChannel | None] = []

    @contextmanager
    def serving(self, host: HostChannel | None) -> Iterator[None]:
        """While a call for `host` runs on the session."""
        self._hosts.append(host)
        try:
            yield
        finally:
            self._hosts.remove(host)

    def _host(self) -> HostChannel | mcp_types.ErrorData:
        if len(self._hosts) > 1:
            return refusal("several calls are in flight on this server, and whose host to ask cannot be told")
        host = self._hosts[0] if self._hosts else None
        return host if host is not None else refusal("the call it serves has no host to ask (it came over REST, or none is running)")

    async def _sample(self, context: ClientRequestContext, params: mcp_types.CreateMessageRequestParams) -> Any:
        host = self._host()
        return host if isinstance(host, mcp_types.ErrorData) else await host.sample(params)

    async def _elicit(self, context: ClientRequestContext, params: mcp_types.ElicitRequestParams) -> Any:
        host = self._host()
        return host if isinstance(host, mcp_types.ErrorData) else await host.elicit(params)

    async def _roots(self, context: ClientRequestContext) -> Any:
        host = self._host()
        return host if isinstance(host, mcp_types.ErrorData) else await host.roots()

    def client_options(self) -> dict[str, Any]:
        """`mcp.Client` keyword arguments declaring the three capabilities and passing each request on."""
        return {
            "sampling_callback": self._sample,
            "sampling_capabilities": mcp_types.SamplingCapability(),
            "elicitation_callback": self._elicit,
            "list_roots_callback": self._roots,
        }
