"""The search page's state and what it shows. The URL holds the whole state (`q`, one parameter per
chosen facet value, `page`), so a search can be shared and bookmarked; the page asks the registry exactly
what `POST /search` and `POST /explore` ask it: `Registry.search` for the results, `Registry.explore` for
the facet counts, both over the same filter."""

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
from ard_mcp.search.paging import encode_token
from ard_mcp.search.query import SearchQuery
from ard_mcp.search.results import SearchPage
from ard_mcp.search.visibility import Viewer

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


@dataclass(frozen=True)
class PageState:
    """A search page's URL, parsed: the task, the chosen facet values, the page number."""

    text: str = ""
    chosen: tuple[tuple[str, str], ...] = ()  # (parameter, value), in the order they were chosen
    page: int = 1
    opened: str | None = None  # the facet whose every value is shown (`all=`)

    @classmethod
    def of(cls, params: QueryParams) -> PageState:
        text = params.get("q", "").strip()[:MAX_QUERY_CHARS]
        chosen = tuple(dict.fromkeys((p, v) for p, v in params.multi_items() if p in _FIELD and v))
        raw = params.get("page", "1")
        if not (raw.isdigit() and 1 <= int(raw) <= MAX_PAGE):
            raise InvalidArgument(f"page: must be a whole number from 1 to {MAX_PAGE} (got {raw[:20]!r})")
        opened = params.get("all")
        return cls(text, chosen, int(raw), opened if opened in _FIELD else None)

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
        params = ([("q", self.text)] if self.text else []) + chosen + ([("page", str(page))] if page > 1 else [])
        params += [("all", opened)] if opened else []
        return "/?" + urlencode(params) if params else "/"


@dataclass(frozen=True)
class Bucket:
    value: str
    count: int
    url: str  # the page with this value chosen, or without it when it is
    chosen: bool


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

    def chips(self) -> list[tuple[str, str, str]]:
        """(heading, value, URL without it) of each chosen facet value: the removable filters."""
        labels = {param: label for param, _, label in FACETS}
        return [(labels[p], v, self.state.url(remove=(p, v))) for p, v in self.state.chosen]


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
            buckets.append(Bucket(bucket.value, bucket.count, url, chosen))
        out.append(Facet(param, label, buckets, result.otherCount, state.url(opened=param) if result.otherCount else None))
    return out


@dataclass(frozen=True)
class Found:
    """What the registry answered for a page: exactly what `POST /search` (its page and ARD results) and
    `POST /explore` (the facet counts) get for the same query."""

    page: SearchPage
    results: list[SearchResult] | None  # None when browsing: an unranked page has candidates, no scores
    facets: ExploreResponse


def fetch(registry: Registry, state: PageState, viewer: Viewer) -> Found:
    """The registry's calls for one page (blocking: call from a worker thread)."""
    query = SearchQuery.of(state.text or None, state.filter(), page_size=PAGE_SIZE)
    if state.page > 1:  # the token `POST /search` would have handed back for this page
        query = replace(query, page_token=encode_token((state.page - 1) * PAGE_SIZE, query.key()))
    page = registry.search(query, viewer=viewer)
    requests = [FacetRequest(field=field, limit=FACET_ALL if param == state.opened else FACET_LIMIT) for param, field, _ in FACETS]
    facets = registry.explore(query.text, state.filter(), requests, viewer)
    return Found(page, page.results() if query.text else None, facets)


def build(state: PageState, found: Found) -> SearchView:
    """The page's view of what the registry answered: its rows, facet links and paging links."""
    if found.results is None:
        rows = [Row(CatalogEntry.model_validate(c.agent.entry), TrustFinding.of(c.trust)) for c in found.page.candidates]
    else:
        rows = [_row(result) for result in found.results]
    return SearchView(
        state=state,
        rows=rows,
        facets=_facets(state, found.facets),
        total=found.page.total,
        confidence=found.page.confidence if found.results is not None else None,
        next_url=state.url(page=state.page + 1) if found.page.page_token and state.page < MAX_PAGE else None,
        previous_url=state.url(page=state.page - 1) if state.page > 1 else None,
    )


def search_view(registry: Registry, state: PageState, viewer: Viewer) -> SearchView:
    """One page of results and the facet counts over what matched (blocking: call from a worker thread)."""
    return build(state, fetch(registry, state, viewer))
