"""One crawl request, as the CLI, the MCP tool and the REST route all run it."""

from __future__ import annotations

from ard_mcp.errors import InvalidArgument
from ard_mcp.index.indexer import Progress
from ard_mcp.registry import Registry
from ard_mcp.web.crawler import Say, open_crawler
from ard_mcp.web.mcp_registry import import_registry
from ard_mcp.web.report import CrawlReport, CrawlRequest
from ard_mcp.web.settings import CrawlSettings


async def run_crawl(
    registry: Registry, settings: CrawlSettings, request: CrawlRequest, progress: Progress | None = None, say: Say | None = None
) -> CrawlReport:
    if not (request.targets or request.mcpRegistries or request.refresh):
        raise InvalidArgument("give at least one target, an MCP registry URL, or refresh")
    async with open_crawler(registry, settings, progress, say) as crawler:
        if request.refresh:
            await crawler.refresh(force=request.force)
        await crawler.crawl(request.targets)
        for url in request.mcpRegistries:
            await import_registry(crawler, url)
        return crawler.report
