"""One client per protocol, each an `AgentClient` (`invocation.calls`): `mcp_agent` (tools/list and tools/call
over streamable HTTP or SSE), `a2a_agent` (the card's skills, message/send), `http_agent` (AIDIP §5: POST the
input JSON), sharing `bounds` (the call's time and size limits, the names of failures)."""

from __future__ import annotations

import functools

from ard_mcp.invocation.calls import AgentClient, Protocol_


@functools.cache
def client_for(protocol: Protocol_) -> AgentClient:
    """The client of `protocol`, one per process (the MCP client keeps what servers answered to discovery), its
    module imported on first use (the a2a SDK only once an A2A agent is called)."""
    if protocol == "mcp":
        from ard_mcp.invocation.clients.mcp_agent import McpAgentClient

        return McpAgentClient()
    if protocol == "a2a":
        from ard_mcp.invocation.clients.a2a_agent import A2aAgentClient

        return A2aAgentClient()
    from ard_mcp.invocation.clients.http_agent import HttpAgentClient

    return HttpAgentClient()
