"""Adding a catalog with the crawl's progress shown as it happens, without JavaScript: the page is sent in
pieces, its head at once, then one line per document the crawler reports (the same messages the MCP tool
sends as progress notifications), then the crawl's report and the rest of the page. A browser shows each
piece as it arrives."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

import anyio
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Send

from ard_mcp.errors import ArdError
from ard_mcp.registry import Registry
from ard_mcp.ui.operator_view import LastCrawl
from ard_mcp.ui.render import NO_STORE, render
from ard_mcp.ui.security import secured
from ard_mcp.ui.text import shown
from ard_mcp.web.crawler import Say
from ard_mcp.web.report import CrawlReport, CrawlRequest
from ard_mcp.web.settings import CrawlSettings

MARKER = "<!-- progress -->"  # where the lines go; entry text cannot forge it (its `<` is escaped)
Crawl = Callable[[Say], Awaitable[str]]  # runs the crawl, saying its progress; returns the rest of the page


class _Streamed(StreamingResponse):
    def __init__(self, head: str, crawl: Crawl) -> None:
        super().__init__(iter(()), media_type="text/html; charset=utf-8", headers=NO_STORE)
        self.head, self.crawl = head, crawl

    async def stream_response(self, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        await send({"type": "http.response.body", "body": self.head.encode(), "more_body": True})
        lines, received = anyio.create_memory_object_stream[str](256)
        tail = ""

        def say(message: str) -> None:
            with contextlib.suppress(anyio.WouldBlock):  # a slow browser misses progress lines, never the crawl
                lines.send_nowait(message)

        async def crawl() -> None:
            nonlocal tail
            try:
                tail = await self.crawl(say)
            finally:
                lines.close()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(crawl)
            async with received:
                async for line in received:
                    await send({"type": "http.response.body", "body": f"<li>{shown(line)}</li>\n".encode(), "more_body": True})
        await send({"type": "http.response.body", "body": tail.encode(), "more_body": False})


def crawl_page(
    request: Request, registry: Registry, settings: CrawlSettings, target: str, signed_in: bool, keep: Callable[[LastCrawl], None]
) -> Response:
    """The page of a crawl of `target`, streamed while the crawl runs; `keep` is handed how it ended, for the
    operator's page to show after."""
    from ard_mcp.web.service import run_crawl

    def part(index: int, report: CrawlReport | None = None, error: str | None = None) -> str:
        html = render(request, "crawl.html", target=target, report=report, error=error, signed_in=signed_in)
        return html.split(MARKER, 1)[index]

    async def crawl(say: Say) -> str:
        try:
            report = await run_crawl(registry, settings, CrawlRequest(targets=[target], refresh=False, force=False), None, say)
        except ArdError as exc:
            keep(LastCrawl.of(target, error=exc.message))
            return part(1, error=exc.message)
        keep(LastCrawl.of(target, report))
        return part(1, report=report)

    return secured(request, _Streamed(part(0), crawl))
