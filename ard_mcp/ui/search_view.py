"""The search page's state and what it shows. The URL holds the whole state (`q`, one parameter per
chosen facet value, `sort`, `page`), so a search can be shared and bookmarked; the page asks the registry
exactly what the REST routes ask it: with a task `Registry.search` (as `POST /search`: ranked by relevance),
without one `Registry.list` (as `GET /agents` with `orderBy`: by name or most recently updated), and
`Registry.explore` for the facet counts (as `POST /explore`), all over the same filter."""

from __future__ import annotations

from dataclasses import dataclass, replace
from urllib.parse import urlencode

from starlette.datastructures import QueryParams

from ard_mcp.errors import InvalidArgument
from ard_mcp.formats.catalog import CatalogEntry
from ard_mcp.formats.entry_facts import CRAWL_SOURCE_KEY, TRUST_STATUS
from ard_mcp.formats.limits import MAX_QUERY_CHARS
from ard_mcp.formats.messages import ExploreResponse, FacetRequest, Fit, MatchedExample, SearchResult, TrustFinding
from ard_mcp.registry import Registry
from ard_mcp.search.browse import listing_key, parse_selection
from ard_mcp.search.ordering import parse_order
from ard_mcp.search.paging import encode_token
from ard_mcp.search.query import SearchQuery
from ard_mcp.search.visibility import Viewer
from ard_mcp.ui.labels import type_label

PAGE_SIZE = 10
MAX_PAGE = 1000  # a page number past this is a typo, not a browse (10,000 results deep)
FACET_LIMIT = 8
FACET_ALL = 100  # the values of the one facet opened with "show all" (`all=`): a long list, still one page
# URL parameter, filter field, heading: the facets the sidebar shows, in order.
FACETS: tuple[tuple[str, str, str], ...] = (
    ("type", "type", "Type"),
    ("tag", "tags", "Tags"),
    ("publisher", "publisher", "Publisher"),
    ("trust", TRUST_STATUS, "Trust status"),
    ("source", f"metadata.{CRAWL_SOURCE_KEY}", "Crawl source"),
)
_FIELD = {param: field for param, field, _ in FACETS}
RELEVANCE = "relevance"
# `sort=`: what the link says, and the `orderBy` of `Registry.list` it maps to. Relevance is a search's own
# order (only a task has one); the others list every entry the filters select, the first being the default.
ORDERS: dict[str, tuple[str, str]] = {"name": ("Name", "displayName"), "updated": ("Recently updated", "updatedAt DESC")}


@dataclass(frozen=True)
class PageState:
    """A search page's URL, parsed: the task, the chosen facet values, the order, the page number."""

    text: str = ""
    chosen: tuple[tuple[str, str], ...] = ()  # (parameter, value), in the order they were chosen
    page: int = 1
    opened: str | None = None  # the facet whose every value is shown (`all=`)
    order: str | None = None  # a key of ORDERS, as `sort=` gave it; None: the default

    @property
    def sort(self) -> str:
        """The order the page is in: relevance with a task (a search has no other), else the listing's."""
        return RELEVANCE if self.text else self.order or next(iter(ORDERS))

    @classmethod
    def of(cls, params: QueryParams) -> PageState:
        text = params.get("q", "").strip()[:MAX_QUERY_CHARS]
        chosen = tuple(dict.fromkeys((p, v) for p, v in params.multi_items() if p in _FIELD and v))
        raw = params.get("page", "1")
        if not (raw.isdigit() and 1 <= int(raw) <= MAX_PAGE):
            raise InvalidArgument(f"page: must be a whole number from 1 to {MAX_PAGE} (got {raw[:20]!r})")
        opened = params.get("all")
        order = params.get("sort") or None
        if order is not None and order not in (RELEVANCE, *ORDERS):
            raise InvalidArgument(f"sort: must be one of {RELEVANCE}, {', '.join(ORDERS)} (got {order[:20]!r})")
        return cls(text, chosen, int(raw), opened if opened in _FIELD else None, None if order == RELEVANCE else order)

    def filter(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for param, value in self.chosen:
            out.setdefault(_FIELD[param], []).append(value)
        return out

    def url(
        self, *, add: tuple[str, str] | None = None, remove: tuple[str, str] | None = None, page: int = 1, opened: str | None = None
    ) -> str:
        """This state's URL with one facet value added or removed, at `page` (the first, unless paging), with
        the facet `opened` showing all its values."""
        chosen = [c for c in self.chosen if c != remove] + ([add] if add and add not in self.chosen else [])
        order = [("sort", self.order)] if self.order and not self.text else []
        params = ([("q", self.text)] if self.text else []) + chosen + order + ([("page", str(page))] if page > 1 else [])
        params += [("all", opened)] if opened else []
        return "/?" + urlencode(params) if params else "/"

    def sorts(self) -> list[tuple[str, str, str, bool]]:
        """(key, label, URL, current) of each order the page offers. A listing order drops the task: the registry
        ranks a task's results by relevance only, so sorting them by name would be a listing anyway."""
        out = [(RELEVANCE, "Relevance", self.url(), True)] if self.text else []
        for key, (label, _) in ORDERS.items():
            params = [*self.chosen, ("sort", key)]
            out.append((key, label, "/?" + urlencode(params), self.sort == key))
        return out


@dataclass(frozen=True)
class Bucket:
    value: str
    count: int
    url: str  # the page with this value chosen, or without it when it is
    chosen: bool
    label: str  # the value as the page shows it (a type's word: "MCP server"); the value itself is its tooltip


@dataclass(frozen=True)
class Facet:
    param: str
    label: str
    buckets: list[Bucket]
    other: int
    all_url: str | None  # where every value of it is shown, when some are not


@dataclass(frozen=True)
class Row:
    """One result as the page shows it; `score` and `evidence` are None when browsing without a task."""

    entry: CatalogEntry
    trust: TrustFinding | None
    score: int | None = None
    fit: Fit | None = None
    evidence: MatchedExample | None = None
    words: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class SearchView:
    state: PageState
    rows: list[Row]
    facets: list[Facet]
    total: int | None
    confidence: str | None
    next_url: str | None
    previous_url: str | None

    @property
    def first_number(self) -> int:
        """The number the page's first result is shown with."""
        return (self.state.page - 1) * PAGE_SIZE + 1

    @property
    def empty_registry(self) -> bool:
        """Whether the registry holds nothing this viewer may see: no task, no filter, and nothing listed."""
        return not self.state.text and not self.state.chosen and self.total == 0

    def chips(self) -> list[tuple[str, str, str, str]]:
        """(heading, value as shown, value, URL without it) of each chosen facet value: the removable filters."""
        labels = {param: label for param, _, label in FACETS}
        return [(labels[p], value_label(p, v), v, self.state.url(remove=(p, v))) for p, v in self.state.chosen]


def value_label(param: str, value: str) -> str:
    """A facet value as the page shows it: a media type in words, any other value as it is."""
    return type_label(value) if param == "type" else value


def _row(result: SearchResult) -> Row:
    evidence = result.evidence
    best = evidence.matchedExamples[0] if evidence and evidence.matchedExamples else None
    return Row(
        entry=result,
        trust=evidence.trust if evidence else None,
        score=result.score,
        fit=evidence.fit if evidence else None,
        evidence=best,
        words=tuple(evidence.matchedWords) if evidence else (),
        warnings=tuple(evidence.warnings or ()) if evidence else (),
    )


def _facets(state: PageState, found: ExploreResponse) -> list[Facet]:
    out = []
    for param, field, label in FACETS:
        result = found.facets[field]
        buckets = []
        for bucket in result.buckets:
            chosen = (param, bucket.value) in state.chosen
            url = state.url(remove=(param, bucket.value)) if chosen else state.url(add=(param, bucket.value))
            buckets.append(Bucket(bucket.value, bucket.count, url, chosen, value_label(param, bucket.value)))
        out.append(Facet(param, label, buckets, result.otherCount, state.url(opened=param) if result.otherCount else None))
    return out


@dataclass(frozen=True)
class Found:
    """What the registry answered for a page: exactly what `POST /search` (a task's page and its ARD results) or
    `GET /agents` (a listing's page), and `POST /explore` (the facet counts) get for the same query."""

    results: list[SearchResult] | None  # a task's ranked page; None when listing
    listed: list[tuple[CatalogEntry, TrustFinding | None]]  # a listing's page, each entry with the registry's trust finding
    total: int | None
    more: bool
    confident: bool
    facets: ExploreResponse


def _search(registry: Registry, state: PageState, viewer: Viewer) -> tuple[list[SearchResult], int | None, bool, bool]:
    query = SearchQuery.of(state.text, state.filter(), page_size=PAGE_SIZE)
    if state.page > 1:  # the token `POST /search` would have handed back for this page
        query = replace(query, page_token=encode_token((state.page - 1) * PAGE_SIZE, query.key()))
    page = registry.search(query, viewer=viewer)
    return page.results(), page.total, page.page_token is not None, page.confident


def _list(registry: Registry, state: PageState, viewer: Viewer) -> tuple[list[tuple[CatalogEntry, TrustFinding | None]], int, bool]:
    order_by = ORDERS[state.sort][1]
    token = None
    if state.page > 1:  # the token `GET /agents` would have handed back for this page
        key = listing_key(parse_selection(state.filter()), parse_order(order_by))
        token = encode_token((state.page - 1) * PAGE_SIZE, key)
    page = registry.list(state.filter(), order_by, PAGE_SIZE, token, viewer)
    return [(entry, registry.trust_of(entry.identifier)) for entry in page.items], page.total, page.pageToken is not None


def fetch(registry: Registry, state: PageState, viewer: Viewer) -> Found:
    """The registry's calls for one page (blocking: call from a worker thread)."""
    requests = [FacetRequest(field=field, limit=FACET_ALL if param == state.opened else FACET_LIMIT) for param, field, _ in FACETS]
    facets = registry.explore(state.text or None, state.filter(), requests, viewer)
    if state.text:
        results, total, more, confident = _search(registry, state, viewer)
        return Found(results, [], total, more, confident, facets)
    listed, count, more = _list(registry, state, viewer)
    return Found(None, listed, count, more, True, facets)


def build(state: PageState, found: Found) -> SearchView:
    """The page's view of what the registry answered: its rows, facet links and paging links."""
    rows = [Row(entry, trust) for entry, trust in found.listed] if found.results is None else [_row(r) for r in found.results]
    confidence = None if found.results is None or not rows else "high" if found.confident else "low"
    return SearchView(
        state=state,
        rows=rows,
        facets=_facets(state, found.facets),
        total=found.total,
        confidence=confidence,
        next_url=state.url(page=state.page + 1) if found.more and state.page < MAX_PAGE else None,
        previous_url=state.url(page=state.page - 1) if state.page > 1 else None,
    )


def search_view(registry: Registry, state: PageState, viewer: Viewer) -> SearchView:
    """One page of results and the facet counts over what matched (blocking: call from a worker thread)."""
    return build(state, fetch(registry, state, viewer))
