"""The `crawl_catalogs` MCP tool: the crawler (`ard_mcp.web`) with its progress as MCP progress notifications.

A crawl writes entries of any publisher, so over HTTP it needs a credential for every publisher (`*`);
over stdio the caller is the local user. Progress messages (one per document fetched) go through a small
buffer: a client that reads them slowly misses some, and the crawl never waits for it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Annotated, Any, cast

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from ard_mcp.errors import ArdError
from ard_mcp.surfaces.auth import Principal
from ard_mcp.surfaces.mcp.tool_results import compact_result
from ard_mcp.web.report import MAX_TARGETS, CrawlReport, CrawlRequest
from ard_mcp.web.settings import CrawlSettings

if TYPE_CHECKING:
    from ard_mcp.registry import Registry


DESCRIPTION = (
    "Fill the registry from the web (ARD §6): catalogs by well-known URI, robots.txt, HTML links and DNS, nested catalogs, "
    "A2A cards, MCP servers and registries; public addresses only unless the server allows private ones. Entries gone from "
    "their document are removed."
)


async def _numbered(items: AsyncIterator[str]) -> AsyncIterator[tuple[int, str]]:
    count = 0
    async for item in items:
        count += 1
        yield count, item


def add_crawl_tool(
    server: MCPServer[Any], writer: Callable[[Context], Principal], registry_of: Callable[[Context], Registry], crawl: CrawlSettings | None
) -> None:
    @server.tool(
        title="Crawl catalogs",
        description=DESCRIPTION,
        annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=True, open_world_hint=True),
    )
    async def crawl_catalogs(
        ctx: Context,
        targets: Annotated[  # a list default is safe: the SDK validates arguments into new objects each call
            list[str], Field(description=CrawlRequest.model_fields["targets"].description, max_length=MAX_TARGETS)
        ] = [],  # noqa: B006
        mcpRegistries: Annotated[  # noqa: N803
            list[str], Field(description=CrawlRequest.model_fields["mcpRegistries"].description, max_length=MAX_TARGETS)
        ] = [],  # noqa: B006
        refresh: Annotated[bool, Field(description=CrawlRequest.model_fields["refresh"].description)] = False,
        force: Annotated[bool, Field(description=CrawlRequest.model_fields["force"].description)] = False,
    ) -> CrawlReport:
        if not writer(ctx).may_write("*"):
            raise ToolError("crawl_catalogs writes entries of any publisher: it needs a credential that may write every publisher (*)")
        request = CrawlRequest(targets=targets, mcpRegistries=mcpRegistries, refresh=refresh, force=force)
        send, receive = anyio.create_memory_object_stream[str](64)

        def say(message: str) -> None:
            with contextlib.suppress(anyio.WouldBlock):  # a slow client misses progress messages, never the crawl
                send.send_nowait(message)

        async def forward() -> None:
            async with receive:
                async for done, message in _numbered(receive):
                    await ctx.report_progress(done, None, message)

        from ard_mcp.web.service import run_crawl

        registry = await anyio.to_thread.run_sync(registry_of, ctx)
        report: CrawlReport | None = None
        error: str | None = None
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(forward)
            try:
                report = await run_crawl(registry, crawl or CrawlSettings(), request, None, say)
            except ArdError as exc:  # raised after the task group: inside it, the SDK would see an exception group
                error = exc.message
            finally:
                send.close()
        if report is None:
            raise ToolError(error or "the crawl did not finish")
        return cast("CrawlReport", compact_result(report))
