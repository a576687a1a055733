"""Importing an MCP registry's REST API (the official registry and its mirrors): every server, latest version.

`GET {base}/v0.1/servers` (falling back to `/v0/servers`, the older version) is read page by page with its
cursor; each record maps to one entry (`ard_mcp.formats.mcp_server`). The registry is remembered as a source,
so the next run asks only for what changed since the last one began (`updated_since`) and adds it to what
the source already holds; a record the registry marks `deleted` removes its entry. A first run is
complete, and an entry that was imported from this registry but is no longer in it is removed then.
"""

from __future__ import annotations

from urllib.parse import urlencode, urlsplit

from ard_mcp.errors import ArdError
from ard_mcp.formats import mcp_server
from ard_mcp.formats.identifiers import normalize_identifier
from ard_mcp.net.fetcher import JSON, FetchError
from ard_mcp.web.crawler import Crawler
from ard_mcp.web.documents import Document, parse_json
from ard_mcp.web.report import SourceOutcome
from ard_mcp.web.sources import Source, utcnow

API_PATHS = ("/v0.1/servers", "/v0/servers")
PAGE_SIZE = 100
MAX_PAGES = 2000  # 200,000 servers: a bound on a registry that keeps sending cursors


async def import_registry(crawler: Crawler, base: str) -> Source:
    """Import (or update from) the registry at `base`; the outcome is added to `crawler.report`."""
    url = base.rstrip("/")
    known = crawler.registry.store.crawl_source(url)
    source = Source.from_dict(known) if known else Source(url, "mcp-registry", kind="mcp-registry")
    started = utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")
    since = source.cursor_since
    try:
        endpoint = await _endpoint(crawler, url)
        document = Document("mcp-registry")
        deleted: list[str] = []
        cursor: str | None = None
        pages = 0
        while pages < MAX_PAGES:
            query = {"limit": str(PAGE_SIZE), **({"cursor": cursor} if cursor else {}), **({"updated_since": since} if since else {})}
            page = await crawler.fetcher.get(f"{endpoint}?{urlencode(query)}", JSON)
            records, next_cursor = mcp_server.registry_records(parse_json(page.body, page.url, crawler.fetcher.limits.max_bytes))
            pages += 1
            for server, meta in records:
                where = f"{url}: {server.get('name', 'server')}"
                try:
                    entry = mcp_server.to_entry(server, registry_meta=meta)
                except ArdError as exc:
                    document.entries.append((where, exc))
                    continue
                if entry["metadata"].get(mcp_server.REGISTRY_STATUS_KEY) == "deleted":
                    deleted.append(normalize_identifier(entry["identifier"]))
                else:
                    document.entries.append((where, entry))
            crawler.say(f"{url}: page {pages}, {len(document.entries)} servers")
            if next_cursor is None or next_cursor == cursor:
                break
            cursor = next_cursor
    except (FetchError, ArdError) as exc:
        reason = str(exc) if isinstance(exc, FetchError) else exc.message
        crawler.report.sources.append(SourceOutcome(url=url, via="mcp-registry", status="failed", error=reason))
        return source
    crawler.report.removed += await crawler.remove(deleted, url)
    source.fetched_at = utcnow().isoformat()
    count = await crawler.ingest(source, document, None, complete=since is None)
    source.cursor_since = started
    crawler.registry.store.set_crawl_source(url, source.as_dict())
    crawler.report.sources.append(SourceOutcome(url=url, via="mcp-registry", status="ingested", entries=count))
    return source


async def _endpoint(crawler: Crawler, url: str) -> str:
    """The servers endpoint: the URL itself when it names one, else the newest API version the registry answers."""
    if urlsplit(url).path.endswith("/servers"):
        return url
    for path in API_PATHS:
        try:
            await crawler.fetcher.get(f"{url}{path}?limit=1", JSON)
            return url + path
        except FetchError as exc:
            if exc.status != 404:
                raise
    raise FetchError(url, f"no MCP registry API here (tried {', '.join(API_PATHS)})", 404)
