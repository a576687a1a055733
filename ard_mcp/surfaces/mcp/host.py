"""The host of an MCP tool call, as a called server's requests reach it (`packages.relay.HostChannel`).

A request is passed on only where the host can take it: it declared the capability (sampling, form
elicitation, roots), and its protocol lets a server send a request in the middle of a call (2025-11-25 and
before; under 2026-07-28 there is no such channel, a question rides the tool's result instead). Otherwise
the called server gets an error saying which, never a hang.
"""

from __future__ import annotations

from typing import Any, TypeVar

import mcp_types
from mcp.server.mcpserver import Context
from mcp.shared.message import ServerMessageMetadata
from pydantic import BaseModel

from ard_mcp.packages.relay import refusal

R = TypeVar("R", bound=BaseModel)


class McpHost:
    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    def _missing(self, capability: str) -> mcp_types.ErrorData | None:
        capabilities = self._ctx.client_capabilities
        if capabilities is None or getattr(capabilities, capability) is None:
            return refusal(f"the host did not declare {capability}")
        if not self._ctx.session.can_send_request:
            return refusal("the host's protocol gives a server no channel for a request in the middle of a call")
        return None

    async def _ask(self, capability: str, request: Any, answer: type[R]) -> R | mcp_types.ErrorData:
        missing = self._missing(capability)
        if missing is not None:
            return missing
        metadata = ServerMessageMetadata(related_request_id=self._ctx.request_id)
        try:
            answered: R = await self._ctx.session.send_request(request, answer, metadata=metadata)
            return answered
        except Exception as exc:  # the host's own error: passed back as the server would have had it
            return mcp_types.ErrorData(code=getattr(exc, "code", mcp_types.INTERNAL_ERROR), message=str(exc))

    async def sample(self, params: mcp_types.CreateMessageRequestParams) -> mcp_types.CreateMessageResult | mcp_types.ErrorData:
        return await self._ask("sampling", mcp_types.CreateMessageRequest(params=params), mcp_types.CreateMessageResult)

    async def elicit(self, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult | mcp_types.ErrorData:
        return await self._ask("elicitation", mcp_types.ElicitRequest(params=params), mcp_types.ElicitResult)

    async def roots(self) -> mcp_types.ListRootsResult | mcp_types.ErrorData:
        return await self._ask("roots", mcp_types.ListRootsRequest(), mcp_types.ListRootsResult)
