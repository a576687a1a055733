"""A serving registry keeps its crawled documents fresh by itself.

Every `tick` seconds the loop looks for remembered documents that are due (`sources.Source.due`: the
publisher's max-age or the registry's interval, with jitter, doubled after each failure) and refreshes
them with their validators. Nothing due costs one read of the crawl-source table. The loop never ends the
server: a failing refresh is logged and tried again at the next tick.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio

from ard_mcp.web.report import FAILURES
from ard_mcp.web.settings import CrawlSettings
from ard_mcp.web.sources import Source, utcnow

if TYPE_CHECKING:
    from ard_mcp.registry import Registry

log = logging.getLogger(__name__)

TICK = 30.0


def due_sources(registry: Registry) -> int:
    now = utcnow()
    sources = [Source.from_dict(s) for s in registry.store.crawl_sources().values()]
    return sum(1 for s in sources if s.kind == "document" and s.due(now))


async def refresh_forever(opened: Callable[[], Registry], settings: CrawlSettings, tick: float = TICK) -> None:
    """Run until cancelled; `opened` gives the registry (opening it on first use, as the server does). The
    crawler is imported at the first tick, not with the server: the first `tools/list` must not wait for it."""
    while True:
        await anyio.sleep(tick)
        try:
            registry = await anyio.to_thread.run_sync(opened)
            if not due_sources(registry):
                continue
            from ard_mcp.web.crawler import open_crawler

            async with open_crawler(registry, settings) as crawler:
                report = await crawler.refresh()
            changed = report.added + report.updated + len(report.removed)
            failed = [s.url for s in report.sources if s.status in FAILURES]
            log.info("refreshed %d crawled document(s): %d entries changed, %d failed", len(report.sources), changed, len(failed))
        except Exception:
            log.exception("background refresh failed; trying again in %g s", tick)
