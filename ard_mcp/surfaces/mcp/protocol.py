"""What the MCP server says of itself beyond its tools' answers: the tool list as hosts receive it, completion
of the `ard://agents/{identifier}` resource's argument, and the logging level a client sets.

- `tools/list` advertises compact schemas (`tool_schemas`): what a host validates and what its model reads,
  without pydantic's titles, per-field descriptions of results and repeated `$defs` (56,993 characters for the
  10 tools before, 11,652 after: `bench/tool_surface.py`).
- `completion/complete` completes the identifier of `ard://agents/{identifier}` from the catalog: the
  identifiers the caller may see that start with what was typed, in order, at most `MAX_COMPLETIONS` (the
  spec's cap on one answer). A host's resource picker offers them; anything else completes to nothing.
- `logging/setLevel` is accepted. ard-mcp sends no log notifications (its log goes to stderr, or the
  operator's log over HTTP, where a host's model would pay for every line), so every level is honoured by
  sending nothing. Both methods were `Method not found` to the MCP conformance suite's scenarios
  (`tests/test_mcp_conformance.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

import anyio
from mcp.server.context import ServerRequestContext
from mcp.types import (
    CompleteRequestParams,
    CompleteResult,
    Completion,
    EmptyResult,
    ResourceTemplateReference,
    SetLevelRequestParams,
)
from mcp.types import Tool as MCPTool

from ard_mcp.formats.messages import AGENT_RESOURCE
from ard_mcp.search.visibility import EVERYONE, Viewer
from ard_mcp.surfaces.mcp.refusals import RegistryServer
from ard_mcp.surfaces.mcp.tool_schemas import advertised_input, advertised_output

if TYPE_CHECKING:
    from ard_mcp.registry import Registry

MAX_COMPLETIONS = 100
"""Values in one completion answer: the spec's maximum; `hasMore` says when the catalog holds more."""


class ArdMcpServer(RegistryServer):
    """The registry's MCP server: `RegistryServer`'s refusals, compact tool schemas, identifier completion and
    a logging level. `viewer_of` says what a request's headers may see (None on stdio: everything)."""

    def __init__(self, *args: Any, viewer_of: Callable[[Mapping[str, str] | None], Viewer] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._viewer_of = viewer_of or (lambda _: EVERYONE)
        # The SDK's route for spec methods MCPServer has no decorator for (its `completion()` hands the
        # handler no request, so no registry and no caller): the low-level server's handlers, which also
        # make `initialize` declare the `completions` and `logging` capabilities.
        self._lowlevel_server.add_request_handler("completion/complete", CompleteRequestParams, self._complete)
        self._lowlevel_server.add_request_handler("logging/setLevel", SetLevelRequestParams, _set_level)

    async def list_tools(self) -> list[MCPTool]:
        """The tools with the schemas a host is sent (`tool_schemas`): rewriting them costs 0.16 ms a list, so none is kept."""
        return [
            tool.model_copy(
                update={
                    "input_schema": advertised_input(tool.input_schema),
                    "output_schema": advertised_output(tool.output_schema) if tool.output_schema is not None else None,
                }
            )
            for tool in await super().list_tools()
        ]

    async def _complete(self, ctx: ServerRequestContext[Any, Any], params: CompleteRequestParams) -> CompleteResult:
        ref, argument = params.ref, params.argument
        if not (isinstance(ref, ResourceTemplateReference) and ref.uri == AGENT_RESOURCE and argument.name == "identifier"):
            return CompleteResult(completion=Completion(values=[]))
        opened = cast("Callable[[], Registry]", ctx.lifespan_context)  # what `build_server`'s lifespan yields
        viewer = self._viewer_of(getattr(ctx.request, "headers", None))

        def complete() -> tuple[list[str], bool]:
            return opened().identifiers_starting(argument.value, MAX_COMPLETIONS, viewer)

        values, more = await anyio.to_thread.run_sync(complete)
        return CompleteResult(completion=Completion(values=values, has_more=more, total=None if more else len(values)))


async def _set_level(ctx: ServerRequestContext[Any, Any], params: SetLevelRequestParams) -> EmptyResult:
    """Accepted: ard-mcp sends no log notifications at any level, so there is nothing to filter."""
    return EmptyResult()
