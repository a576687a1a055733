"""Filling the registry from the web (ARD §6): targets → discovery → fetch → entries → the ingest path.

A target is a domain (or an origin URL such as `http://example.test:8080/`), or the URL of one document:
a manifest, an HTML page, an A2A agent card, an MCP server description. For a domain every ARD §6.1
mechanism is tried: the well-known URIs, robots.txt `Agentmap:` lines, `<link rel="ai-catalog">` on the
home page, and SVCB / TXT records (`dns_discovery`). Nested catalogs given by URL are followed breadth
first, with a depth and a document count limit. `--mcp-registry URL` imports an MCP registry's REST API
instead (`mcp_registry`).

Entries go through `Indexer.register_many`, the path `ard-mcp ingest` takes (same validation, warnings,
progress), with their provenance in `metadata` (`entry_facts.CRAWL_*`). A crawl never replaces an entry
another source holds (registered through the API, ingested from a file, or crawled from another URL),
and removes only entries that vanished from the document they came from. Each document is remembered
(`sources`), so a refresh sends its validators, costs a 304 when nothing changed, and embeds only
entries whose content changed (unchanged ones are "unchanged" for the indexer, provenance times aside).
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.to_thread

from ard_mcp.errors import ArdError, InvalidArgument, NotFound
from ard_mcp.formats import entry_facts
from ard_mcp.formats.identifiers import is_identifier, normalize_identifier, publisher_of
from ard_mcp.formats.leniency import Notice
from ard_mcp.formats.media_types import AI_REGISTRY
from ard_mcp.index.indexer import Progress
from ard_mcp.monitoring import metrics
from ard_mcp.net.fetcher import HTML, JSON, Expect, Fetched, Fetcher, FetchError
from ard_mcp.net.guard import NetworkPolicy, SystemResolver
from ard_mcp.registry import Registry
from ard_mcp.trust.origin import bound, host_of
from ard_mcp.trust.policy import TrustPolicy
from ard_mcp.trust.service import TrustChecks
from ard_mcp.web.dns_discovery import REGISTRY_LABEL, DnsDiscovery, Found
from ard_mcp.web.documents import Document, parse_json, read_document
from ard_mcp.web.holdings import Holdings
from ard_mcp.web.html_links import catalog_links
from ard_mcp.web.report import FAILURES, CrawlReport, SourceOutcome, Status
from ard_mcp.web.settings import CrawlLimits, CrawlSettings
from ard_mcp.web.sources import Schedule, Source, utcnow

log = logging.getLogger(__name__)

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_DOMAIN = re.compile(rf"^{_LABEL}(?:\.{_LABEL})*(?::\d{{1,5}})?$")  # a host name or IPv4 address, with a port
WELL_KNOWN = (
    "/.well-known/ai-catalog.json",  # ARD §4.1
    "/.well-known/ard.json",  # the name ARD v0.9 also gives the manifest
    "/.well-known/agent-card.json",  # A2A v0.3 and later
    "/.well-known/agent.json",  # A2A before v0.3
    "/.well-known/mcp/server-card.json",  # MCP server cards (SEP-1649 / SEP-2127; both paths are served in the wild)
    "/.well-known/mcp.json",
)
GONE = (404, 410)
# A URL the user names may be a catalog or a web page that links one (`<link rel="ai-catalog">`, read by
# `_document`); the catalogs found from it are JSON only (a site's HTML fallback at a well-known path is no catalog)
_DIRECT = Expect(f"{JSON.accept}, text/html;q=0.4", JSON.types + HTML.types)

Say = Callable[[str], None]  # progress messages (stderr for the CLI, MCP progress notifications for the tool)


@dataclass(frozen=True)
class _Candidate:
    url: str
    via: str
    found_from: str | None
    depth: int
    quiet: bool = False  # a probe (well-known URI): not finding it is normal, not an error


class Crawler:
    """One crawl or refresh run over a registry; `fetcher` is closed by its owner."""

    def __init__(
        self,
        registry: Registry,
        fetcher: Fetcher,
        dns: DnsDiscovery | None = None,
        limits: CrawlLimits | None = None,
        schedule: Schedule | None = None,
        progress: Progress | None = None,
        say: Say | None = None,
        trust: TrustChecks | None = None,
        trust_policy: TrustPolicy = "show",
    ) -> None:
        self.registry = registry
        self.trust = trust
        self.trust_policy = trust_policy
        self.fetcher = fetcher
        self.dns = dns or DnsDiscovery()
        self.limits = limits or CrawlLimits()
        self.schedule = schedule or Schedule()
        self.progress = progress
        self.say = say or (lambda message: log.info("%s", message))
        self.report = CrawlReport()
        self._seen: set[str] = set()
        self._refresh_all = False
        self._fetched = 0
        self._lock = anyio.Lock()
        self.holdings = Holdings(registry.store, self.say)

    # -- entry points -------------------------------------------------------------------------------
    async def crawl(self, targets: Sequence[str]) -> CrawlReport:
        for target in targets:
            try:
                level = await self._discover(target)
            except (InvalidArgument, FetchError) as exc:
                self.report.errors.append(str(exc) if isinstance(exc, FetchError) else exc.message)
                continue
            before = len(self.report.sources)
            await self._walk(level)
            if all(s.status == "not-found" for s in self.report.sources[before:]):
                self.report.errors.append(f"{target}: no catalog found (tried {', '.join(_tried(level))})")
        return self.report

    async def refresh(self, force: bool = False) -> CrawlReport:
        """Fetch again every remembered document that is due (all of them with `force`). A document is
        fetched after the one that points to it, which decides whether it still does: a catalog that is
        gone takes its nested catalogs with it, one that did not change (304) hands on its remembered ones."""
        self._refresh_all = force
        remembered = {url: Source.from_dict(s) for url, s in self.registry.store.crawl_sources().items()}
        documents = {url: s for url, s in remembered.items() if s.kind == "document"}
        now = utcnow()
        due = [s for s in documents.values() if (force or s.due(now))]
        first = [s for s in due if s.found_from not in documents or not (force or documents[s.found_from].due(now))]
        await self._walk([_Candidate(s.url, s.via, s.found_from, s.depth) for s in first])
        return self.report

    # -- discovery ------------------------------------------------------------------------------------
    async def _discover(self, target: str) -> list[_Candidate]:
        target = target.strip()
        if "://" not in target:
            if not _DOMAIN.match(target):
                raise InvalidArgument(f"{target!r}: give a domain (example.com, optionally with :port) or an http(s) URL")
            return await self._domain("https", target, target)
        try:
            parts = urlsplit(target)
            hostname = parts.hostname
        except ValueError as exc:
            raise InvalidArgument(f"{target!r}: not a URL ({exc})") from None
        if parts.scheme.lower() not in ("http", "https") or not hostname:
            raise InvalidArgument(f"{target}: only http and https URLs are crawled")
        if parts.path in ("", "/") and not parts.query:
            return await self._domain(parts.scheme.lower(), parts.netloc, target)
        return [_Candidate(target, "direct", None, 0)]

    async def _domain(self, scheme: str, netloc: str, target: str) -> list[_Candidate]:
        """Every catalog a domain advertises, by each §6.1 mechanism."""
        origin = f"{scheme}://{netloc}"
        found = [_Candidate(origin + path, "well-known", target, 0, quiet=True) for path in WELL_KNOWN]
        robots = await self.fetcher.robots(origin + "/")
        found += [_Candidate(url, "robots", origin + "/robots.txt", 0) for url in robots.agentmaps]
        try:
            page = await self.fetcher.get(origin + "/", HTML)
            found += [_Candidate(url, "link", page.url, 0) for url in catalog_links(page.body.decode("utf-8", "replace"), page.url)]
        except FetchError as exc:
            log.info("%s: no home page to read links from (%s)", origin, exc.reason)
        host = urlsplit(origin).hostname or netloc
        for record in await self.dns.discover(host, origin):
            if record.via == "dns-registry":
                await self._registry_from_dns(host, record)
            else:
                found.append(_Candidate(record.url, record.via, f"dns:{host}", 0))
        return found

    async def _registry_from_dns(self, domain: str, record: Found) -> None:
        """A registry search endpoint in DNS becomes an `ai-registry` entry (what federation will query)."""
        target = urlsplit(record.url).hostname or domain
        entry = {
            "identifier": f"urn:air:{domain}:registry:{target.replace('.', '-')}",
            "displayName": f"{domain} agent registry",
            "type": AI_REGISTRY,
            "url": record.url,
            "description": f"Agent registry search endpoint that {domain} publishes in DNS ({REGISTRY_LABEL}.{domain} SVCB).",
        }
        source = Source(f"dns:{REGISTRY_LABEL}.{domain}", "dns-registry", kind="dns-registry", found_from=domain)
        count = await self.ingest(source, Document("dns-registry", [(source.url, entry)], registries=[record.url]), None)
        self._outcome(_Candidate(source.url, source.via, domain, 0), "ingested", entries=count)

    # -- fetching ---------------------------------------------------------------------------------------
    async def _walk(self, level: list[_Candidate]) -> None:
        """Breadth first: each level's documents concurrently, then the catalogs they point to. Outcomes and
        nested catalogs are kept in the order the documents were found, whichever finished first (a slower
        store once reordered a report)."""
        limiter = anyio.CapacityLimiter(self.limits.concurrency)

        async def visit(candidate: _Candidate, found: list[_Candidate]) -> None:
            async with limiter:
                found.extend(await self._visit(candidate))

        while level:
            todo = [c for c in level if c.url not in self._seen]
            self._seen.update(c.url for c in todo)
            nested: list[list[_Candidate]] = [[] for _ in todo]
            first = len(self.report.sources)
            async with anyio.create_task_group() as group:
                for candidate, found in zip(todo, nested, strict=True):
                    group.start_soon(visit, candidate, found)
            position = {c.url: i for i, c in enumerate(todo)}
            self.report.sources[first:] = sorted(self.report.sources[first:], key=lambda s: position.get(s.url, len(todo)))
            level = [c for found in nested for c in found]

    async def _visit(self, candidate: _Candidate) -> list[_Candidate]:
        """Fetch one document and ingest it; returns the nested catalogs it points to."""
        if self._fetched >= self.limits.max_documents and not candidate.quiet:
            self._outcome(candidate, "failed", error=f"not fetched: the crawl's limit of {self.limits.max_documents} documents")
            return []
        known = self.holdings.remembered(candidate.url)
        source = known or Source(candidate.url, candidate.via, found_from=candidate.found_from)
        source.depth = candidate.depth
        validators = (source.etag, source.last_modified) if known is not None else (None, None)
        try:
            fetched = await self._fetch(candidate, *validators)
        except FetchError as exc:
            return await self._failed(candidate, source, exc, known is not None)
        if fetched.not_modified:
            source.max_age = fetched.max_age
            source.schedule(utcnow(), self.schedule, failed=False)
            self.registry.store.set_crawl_source(source.url, source.as_dict())
            self._outcome(candidate, "not-modified", entries=len(source.identifiers))
            return self._due_children(source, candidate.depth + 1)
        try:
            document = await self._document(fetched)
        except ArdError as exc:
            reason = exc.message.removeprefix(f"{fetched.url}: ")  # the error names the URL once
            return await self._failed(candidate, source, FetchError(fetched.url, reason), known is not None)
        source.etag, source.last_modified, source.max_age = fetched.etag, fetched.last_modified, fetched.max_age
        source.fetched_at = utcnow().isoformat()
        count = await self.ingest(source, document, fetched)
        self._outcome(candidate, "ingested", entries=count)
        if candidate.depth >= self.limits.max_depth:
            for url in document.nested:
                self.report.warnings.append(f"{url}: nested catalog not followed (depth limit {self.limits.max_depth})")
            return []
        return [_Candidate(url, "nested", source.url, candidate.depth + 1) for url in document.nested]

    def _due_children(self, source: Source, depth: int) -> list[_Candidate]:
        """The remembered nested catalogs of an unchanged document that are due themselves."""
        now = utcnow()
        children = [c for c in map(self.holdings.remembered, source.children) if c is not None]
        return [_Candidate(c.url, c.via, source.url, depth) for c in children if self._refresh_all or c.due(now)]

    async def _fetch(self, candidate: _Candidate, etag: str | None, last_modified: str | None) -> Fetched:
        self._fetched += 0 if candidate.quiet else 1
        self.say(f"fetching {candidate.url} ({candidate.via})")
        return await self.fetcher.get(candidate.url, _DIRECT if candidate.via == "direct" else JSON, etag, last_modified)

    async def _document(self, fetched: Fetched) -> Document:
        """JSON documents are read as they are; an HTML page is read for its catalog links."""
        if fetched.content_type in HTML.types:
            links = catalog_links(fetched.body.decode("utf-8", "replace"), fetched.url)
            if not links:
                raise InvalidArgument(f'{fetched.url}: an HTML page without <link rel="ai-catalog">')
            return Document("html", nested=links)
        return read_document(parse_json(fetched.body, fetched.url, self.fetcher.limits.max_bytes), fetched.url)

    async def _failed(self, candidate: _Candidate, source: Source, exc: FetchError, known: bool) -> list[_Candidate]:
        if candidate.quiet and not known and not exc.server_error:  # a probe that found nothing usable: normal for most domains
            self._outcome(candidate, "not-found", error=exc.reason)
            return []
        if known and exc.status in GONE:  # the publisher took it down: so do we
            await self._forget(source)
            self._outcome(candidate, "removed", error=exc.reason)
            return []
        self._outcome(candidate, "server-error" if exc.server_error else "failed", error=str(exc))  # a 500 is not "not there"
        if known:
            source.last_error = exc.reason
            source.schedule(utcnow(), self.schedule, failed=True)
            self.registry.store.set_crawl_source(source.url, source.as_dict())
        return []

    def _outcome(self, candidate: _Candidate, status: Status, entries: int = 0, error: str | None = None) -> None:
        self.report.sources.append(SourceOutcome(url=candidate.url, via=candidate.via, status=status, entries=entries, error=error))
        if status in FAILURES:
            self.say(f"{status} {candidate.url}: {error}")

    # -- ingesting ----------------------------------------------------------------------------------------
    async def ingest(self, source: Source, document: Document, fetched: Fetched | None, complete: bool = True) -> int:
        """Hand the document's entries to the indexer with their provenance. A `complete` document lists
        everything its source holds, so what vanished from it is removed; an incremental one (an MCP
        registry's changes since the last run) adds to what the source holds."""
        provenance = _provenance(source, fetched)
        host = host_of(fetched.url if fetched is not None else source.url) or source.url
        authorities = self.holdings.authorities(source, host)
        items: list[tuple[str, Any]] = []
        identifiers: list[str] = []
        claims: dict[str, str] = {}  # third-party claims (`trust.origin`): identifier → the host that served it
        for where, raw in document.entries:
            if isinstance(raw, dict) and not isinstance(raw, Notice):
                named = raw.get("identifier")
                identifier = normalize_identifier(named) if isinstance(named, str) and is_identifier(named) else None
                claimed = identifier is not None and authorities is not None and not bound(publisher_of(identifier), authorities)
                if claimed and identifier is not None:
                    claims[identifier] = host
                held = self.holdings.held_elsewhere(raw, source.url, replaces_claims=not claimed)
                if held:
                    self.report.rejected.append(f"{where}: {held}")
                    continue
                if identifier is not None:
                    identifiers.append(identifier)
                items.append((where, {**raw, "metadata": {**(raw.get("metadata") or {}), **provenance}}))
            else:
                items.append((where, raw))
        owned: dict[str, set[tuple[str, str]]] = {}
        if self.trust is not None:
            owned, refused = await self.trust.batch(items, self.trust_policy, claims)
            self.report.rejected += refused
        async with self._lock:  # one ingest at a time: the indexer serialises writes anyway, this keeps reports in order
            report = await anyio.to_thread.run_sync(self.registry.indexer.register_many, items, self.progress, owned)
            self.report.add_ingest(report)
            self.report.warnings += document.warnings
            self.report.registries += [r for r in document.registries if r not in self.report.registries]
            if complete:
                vanished = [i for i in source.identifiers if i not in set(identifiers)]
                self.report.removed += await self.remove(vanished, source.url)
            else:
                identifiers = list(dict.fromkeys([*source.identifiers, *identifiers]))
            gone_children = [c for c in source.children if c not in document.nested]
            source.identifiers = [i for i in identifiers if self.holdings.holds(i, source.url)]
            self._report_claims([i for i in claims if i in source.identifiers], source.url, host)
            source.children = list(document.nested)
            source.last_error = None
            source.schedule(utcnow(), self.schedule, failed=False)
            self.registry.store.set_crawl_source(source.url, source.as_dict())
        for child in gone_children:
            await self._forget_url(child)
        return len(source.identifiers)

    def _report_claims(self, kept: list[str], url: str, host: str) -> None:
        """Warn of the third-party claims the document's source now holds; those refused (held elsewhere, invalid,
        refused by the trust policy) are in `rejected` already, and the warning once counted them as kept too."""
        if kept:
            publishers = sorted({publisher_of(i) for i in kept})
            self.report.warnings.append(
                f"{url}: claims {len(kept)} identifier(s) of other publishers ({', '.join(publishers)}), which did not "
                f"delegate to {host}; kept as third-party claims (trust.status third-party)"
            )

    async def remove(self, identifiers: Iterable[str], url: str) -> list[str]:
        removed = []
        for identifier in identifiers:
            if self.holdings.holds(identifier, url):
                try:
                    await anyio.to_thread.run_sync(self.registry.indexer.deregister, identifier)
                    removed.append(identifier)
                except NotFound:
                    pass
        return removed

    async def _forget(self, source: Source) -> None:
        """A document that is gone: its entries and its nested catalogs' entries go too."""
        self.report.removed += await self.remove(source.identifiers, source.url)
        self.registry.store.delete_crawl_source(source.url)
        for child in source.children:
            await self._forget_url(child)

    async def _forget_url(self, url: str) -> None:
        known = self.holdings.remembered(url)
        if known is not None:
            await self._forget(known)


def _provenance(source: Source, fetched: Fetched | None) -> dict[str, str]:
    found = {
        entry_facts.CRAWL_SOURCE_KEY: source.url,
        entry_facts.CRAWL_VIA_KEY: source.via,
        entry_facts.CRAWL_FETCHED_KEY: source.fetched_at or utcnow().isoformat(),
    }
    if fetched is not None and fetched.etag:
        found[entry_facts.CRAWL_ETAG_KEY] = fetched.etag
    if fetched is not None and fetched.last_modified:
        found[entry_facts.CRAWL_MODIFIED_KEY] = fetched.last_modified
    return found


def _tried(level: list[_Candidate]) -> list[str]:
    return sorted({c.via for c in level} | {"well-known", "robots", "link", "dns"})


@asynccontextmanager
async def open_crawler(
    registry: Registry, settings: CrawlSettings, progress: Progress | None = None, say: Say | None = None, trust: TrustChecks | None = None
) -> AsyncIterator[Crawler]:
    """A crawler with its own connection pool and trust checks (or `trust`, kept open), closed on exit. With
    a DNS server given, host names are resolved through it too, so discovery and connections see one DNS view.
    Every crawl and refresh runs in one: the documents it looked at are counted on exit (`monitoring.metrics`)."""
    dns = DnsDiscovery(settings.dns_server)
    resolver = dns if settings.dns_server else SystemResolver()
    checks = trust or TrustChecks(settings.allow_private_networks, resolver)
    async with Fetcher(NetworkPolicy(settings.allow_private_networks), settings.fetch, resolver) as fetcher:
        crawler = Crawler(registry, fetcher, dns, settings.limits, settings.schedule, progress, say, checks, settings.trust_policy)
        try:
            yield crawler
        finally:
            for source in crawler.report.sources:
                metrics.crawled(source.status, source.via)
            if trust is None:
                await checks.aclose()
