"""What a host reads when a tool call is refused before the tool runs: arguments that do not fit the tool's
input schema, in one sentence, and a rate limit, with the time to wait.

The SDK answers a bad argument with pydantic's own report ("1 validation error for call_agentArguments\\n
tool\\n  Field required [type=missing, input_value={...}, input_type=dict]\\n  For further information visit
..."), which repeats the caller's input and is written for a Python programmer. A rate limit over HTTP was a
429 on the transport, which clients report as a failed request (`-32603`), not as the limit. Here both are
tool errors: `call_agent: identifier is required; arguments must be an object`, and `RATE_LIMIT_EXCEEDED:
too many reads from this client: at most 600 a minute; retry after 3 s`. The invocation tools answer their
own rate limit (`invoke`), so the refusal is audited as every refused call is.
"""

from __future__ import annotations

import time
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, InputRequiredResult
from pydantic import ValidationError

from ard_mcp.errors import RateLimited
from ard_mcp.monitoring import metrics, tracing
from ard_mcp.surfaces import over_limit
from ard_mcp.surfaces.mcp.invoke import INVOKE_TOOLS

_SAID = {
    "missing": "is required",
    "dict_type": "must be an object",
    "list_type": "must be a list",
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "extra_forbidden": "is not an argument of this tool",
}


def argument_errors(tool: str, error: ValidationError) -> str:
    """`tool: a is required; b must be an object` (at most five, never the values given)."""
    said = []
    for found in error.errors()[:5]:
        where = ".".join(str(part) for part in found["loc"]) or "arguments"
        said.append(f"{where} {_SAID.get(found['type'], found['msg'][0].lower() + found['msg'][1:])}")
    more = len(error.errors()) - len(said)
    return f"{tool}: " + "; ".join(said) + (f"; and {more} more" if more > 0 else "")


class RegistryServer(MCPServer[Any]):
    """The SDK's server, with argument errors and rate limits answered as `ToolError`s a host can act on."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """Each call timed by tool and outcome, and a span of the HTTP request that carried it (`monitoring.requests`
        put that request's span in its `traceparent`); a name the server has no tool of is `unknown`."""
        headers = context.headers if context is not None else None
        tool = name if self._tool_manager.get_tool(name) is not None else "unknown"
        failed, started = True, time.perf_counter()
        with tracing.span(f"tools/call {tool}", {"mcp.method.name": "tools/call", "gen_ai.tool.name": tool}, parent=headers) as span:
            try:
                result = await self._called(name, arguments, context, over_limit.refusal(headers))
                failed = isinstance(result, CallToolResult) and result.is_error
                return result
            finally:
                metrics.tool_call(tool, "error" if failed else "ok", time.perf_counter() - started)
                tracing.ended(span, {}, failed=failed)

    async def _called(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None, refused: RateLimited | None
    ) -> CallToolResult | InputRequiredResult:
        if refused is not None and name not in INVOKE_TOOLS:
            raise ToolError(f"{refused.code}: {refused.message}")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(argument_errors(name, exc.__cause__)) from exc.__cause__
            raise
