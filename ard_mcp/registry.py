"""The registry: the one core behind the MCP tools, the CLI and the HTTP routes.

It owns a data directory (`catalog.sqlite3`, the source of truth, and `chroma/`, the derived vectors),
opens its parts lazily (the model and Chroma load on first use, so a server answers `tools/list` at once
however large its index is), and answers every read through one method per concept: `search`, `list`,
`explore` and `get`. Every write goes through `indexer` (`ard_mcp.index.indexer.Indexer`).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import IO, Any

from ard_mcp.config import Config, default_model_dir, shipped_model_named
from ard_mcp.errors import InvalidArgument, ModelMismatch, NotFound
from ard_mcp.formats.catalog import CatalogEntry
from ard_mcp.formats.entry_facts import SOURCE_ID_KEY, TRUST_FIELDS
from ard_mcp.formats.identifiers import normalize_identifier, publisher_of
from ard_mcp.formats.messages import DeregisterResult, ExploreResponse, FacetBucket, FacetRequest, FacetResult, ListResponse, TrustFinding
from ard_mcp.index import datadir
from ard_mcp.index.catch_up import send_queued
from ard_mcp.index.embedding import Embedder, ModelSpec, load_embedder
from ard_mcp.index.expiry import ExpiryClock
from ard_mcp.index.filter_values import METADATA_PREFIX
from ard_mcp.index.idempotency import IdempotencyKeys
from ard_mcp.index.indexer import Indexer, MayWrite, Progress
from ard_mcp.index.resident import ResidentExamples
from ard_mcp.index.store import open_store
from ard_mcp.index.vectors import VectorIndex
from ard_mcp.monitoring import metrics, tracing
from ard_mcp.search.browse import listing_key, parse_selection, selected_ids
from ard_mcp.search.filters import check_field, parse_filter
from ard_mcp.search.ordering import parse_order
from ard_mcp.search.paging import check_page_size, decode_token, encode_token
from ard_mcp.search.query import SearchQuery, query_text
from ard_mcp.search.ranking import Ranker
from ard_mcp.search.rerank import Reranker, load_reranker
from ard_mcp.search.results import SearchPage
from ard_mcp.search.selection import Selection, narrowed, ranked_page, unranked_page, with_trust
from ard_mcp.search.tuning import DEFAULT_TUNING, Tuning, fitted_tuning
from ard_mcp.search.visibility import ANONYMOUS, Viewer, hidden_agents, visible

log = logging.getLogger(__name__)
MAX_FACETS = 20  # per explore request: 400 facets over a 100,000-tag entry once took 140 s


def _tuning(spec: ModelSpec, demoted_trust: tuple[str, ...]) -> Tuning:
    """The ranking's constants, with the model directory's own fitted parameters if its model.json has them."""
    try:
        return fitted_tuning(dataclasses.replace(DEFAULT_TUNING, demoted_trust=demoted_trust), spec.ranking)
    except ValueError as exc:
        raise ModelMismatch(f"{spec.directory / 'model.json'}: {exc}") from None


_said_kept: set[str] = set()  # the data directories whose kept model was named in the log (once per process)


def _model_dir(config: Config, stored_model: str | None, rebuilding: bool) -> Path:
    """The model to open the index with: the one named; else, for an index another shipped model built (the
    default before an upgrade), that one, said once, until `ard-mcp reindex` rebuilds it with the default;
    else the default. An upgrade never turns a working data directory into an error."""
    if config.model_dir is not None:
        return config.model_dir
    default = default_model_dir()
    kept = shipped_model_named(stored_model) if stored_model is not None and not rebuilding else None
    if kept is None or kept.resolve() == default.resolve():
        return default
    if str(config.data_dir) not in _said_kept:
        _said_kept.add(str(config.data_dir))
        log.warning(
            "the index in %s was built with %s, which it keeps; `ard-mcp reindex` rebuilds it with the default model, %s",
            config.data_dir,
            stored_model,
            ModelSpec.load(default).id,
        )
    return kept


class Registry:
    def __init__(self, config: Config, *, rebuilding: bool = False, claimed: IO[str] | None = None) -> None:
        """`rebuilding` opens an index built with another model, for `reindex` to convert it; `claimed` is
        the data directory's lock (`datadir.claim`) when the caller took it already, else it is taken here."""
        self.config = config
        self._lock_file = claimed if claimed is not None else datadir.claim_for(config)
        self._closed = False
        self._write_lock = threading.RLock()
        self._warm_lock = threading.Lock()
        self._expiry = ExpiryClock()
        try:
            self.store = open_store(config)
        except BaseException:
            datadir.release(self._lock_file)
            raise
        try:
            stored_model = self.store.meta("model_id")
            self.model_spec = ModelSpec.load(_model_dir(config, stored_model, rebuilding))
            self.tuning = _tuning(self.model_spec, config.demote_trust)
            self.reranker: Reranker | None = load_reranker(config.rerank_dir) if config.rerank_dir else None
            if stored_model is not None and stored_model != self.model_spec.id and not rebuilding:
                raise ModelMismatch(
                    f"the index in {self.store!r} was built with model {stored_model!r}, not {self.model_spec.id!r}; "
                    f"run `ard-mcp reindex` with the new model to rebuild it"
                )
        except BaseException:
            self.store.close()
            datadir.release(self._lock_file)
            raise

    def close(self) -> None:
        """Release the data directory; safe to call more than once."""
        with self._warm_lock, self._write_lock:  # never close under a warm-up or a write
            if self._closed:
                return
            self._closed = True
            self._drop_vectors()
            if "resident" in self.__dict__:
                self.resident.close()
            self.store.close()
            datadir.release(self._lock_file)

    # -- lazily opened parts ----------------------------------------------------------------------
    @cached_property
    def embedder(self) -> Embedder:
        return load_embedder(self.model_spec.directory)

    @cached_property
    def vectors(self) -> VectorIndex:
        index = self._vector_index(fresh=False)
        sent = send_queued(self.store, index)  # what a crash or an outage kept from it, this process's or another's
        if sent:
            log.warning("sent the vector index the vectors of %d agent(s) whose write it had not received", sent)
        return index

    @cached_property
    def resident(self) -> ResidentExamples:
        """Outlives a reindex: only the vector index is rebuilt, the store's rows stay as they are."""
        return ResidentExamples(self.store)

    @cached_property
    def ranker(self) -> Ranker:
        return Ranker(self.store, self.vectors, self.embedder, self.tuning, examples=self.resident, reranker=self.reranker)

    @cached_property
    def indexer(self) -> Indexer:
        """Every write: registration, ingest, deregistration, expiry, rebuilding the vector index."""
        return Indexer(self.store, self.vectors, self.embedder, self.model_spec, self._write_lock, self._expiry, self.config.limits)

    def _vector_index(self, *, fresh: bool) -> VectorIndex:
        return VectorIndex(self.config.data_dir / "chroma", self.embedder, url=self.config.chroma_url, fresh=fresh)

    @cached_property
    def idempotency(self) -> IdempotencyKeys:
        """The REST writes' `Idempotency-Key`s and the answers kept for them, in the store."""
        return IdempotencyKeys(self.store)

    def _drop_vectors(self) -> None:
        indexer = self.__dict__.get("indexer")
        if indexer is not None:
            indexer.sync.stop()
        for part in ("ranker", "indexer"):
            self.__dict__.pop(part, None)
        index = self.__dict__.pop("vectors", None)
        if index is not None:
            index.close()

    def warm_up(self) -> None:
        """Load the model, the vector index and the search's in-memory copy of the store now (a server does
        this in the background at start)."""
        with self._warm_lock:
            _ = self.ranker
            if self.reranker is not None:
                self.reranker.load()
            if not self.resident.loaded:
                self.resident.load()

    def reindex(self, progress: Progress | None = None) -> int:
        """Replace the vector index with one rebuilt from the store (after a crash, a Chroma upgrade or a new
        model); returns the number of examples indexed."""
        with self._write_lock:
            self._drop_vectors()
            self.__dict__["vectors"] = self._vector_index(fresh=True)
            return self.indexer.rebuild(progress)

    def expire_due(self, now: datetime | None = None) -> Sequence[str]:
        """Remove entries whose `metadata.expiresAt` has passed and return their identifiers. Every read
        calls this first, so no surface returns an expired entry; it costs one comparison until one is due."""
        now = now or datetime.now(UTC)
        if not self._expiry.may_be_due(now, self.store.version()):
            return []
        return self.indexer.expire(now)

    def _caught_up(self) -> None:
        """A search after an outage of the vector index sees every write saved during it: what this process
        queued is sent first (`catch_up`). While the index still does not answer, the search says so (503)."""
        indexer = self.__dict__.get("indexer")
        if indexer is not None and indexer.sync.behind:
            indexer.sync.catch_up()

    # -- reads ------------------------------------------------------------------------------------
    def resolve(self, reference: str, viewer: Viewer = ANONYMOUS) -> str:
        """The identifier of the entry `reference` names for `viewer`: its identifier (`urn:air:` or v0.5
        `urn:ai:`), or the id its publisher used when that was not such a URN (Xu and AIDIP clients). Such an
        id is the publisher's own, so two publishers may use the same one: the viewer's own entry is the one
        it names for them (another publisher reusing an id once made the owner's look-ups fail), and for
        anyone else it is ambiguous. An entry `viewer` may not see is not found. Works for rows reads cannot
        use (`readable`), so they can always be deleted."""
        self.expire_due()
        hidden = hidden_agents(self.store, viewer)
        identifier = normalize_identifier(reference)
        agent_id = self.store.id_of(identifier)
        if agent_id is not None and agent_id not in hidden:
            return identifier
        ids: AbstractSet[int] = self.store.filter_agents({METADATA_PREFIX + SOURCE_ID_KEY: [reference]}) or set()
        found = sorted(self.store.identifiers(ids - hidden).values())
        own = [i for i in found if viewer.may_write is not None and viewer.may_write(publisher_of(i))]
        if len(found) > 1 and len(own) != 1:
            named = ", ".join(found[:5]) + (", ..." if len(found) > 5 else "")
            raise InvalidArgument(f"{reference!r} is the id of {len(found)} entries ({named}); name one by its urn:air: identifier")
        if not found:
            raise NotFound(f"no agent {reference} is registered")
        return own[0] if len(found) > 1 else found[0]

    def get(self, reference: str, viewer: Viewer = ANONYMOUS) -> CatalogEntry:
        """An entry by `resolve`'s rules."""
        identifier = self.resolve(reference, viewer)
        stored = self.store.get(identifier)
        if stored is None:
            raise NotFound(f"{identifier} is stored but cannot be read (`ard-mcp check` says why); it can be deleted or registered again")
        return CatalogEntry.model_validate(stored.entry)

    def identifiers_starting(self, prefix: str, limit: int, viewer: Viewer = ANONYMOUS) -> tuple[list[str], bool]:
        """The first `limit` identifiers `viewer` may see that start with `prefix`, and whether there are more."""
        hidden = hidden_agents(self.store, viewer)
        shown = [name for agent_id, name in self.store.identifiers_starting(prefix, limit + 1 + len(hidden)) if agent_id not in hidden]
        return shown[:limit], len(shown) > limit

    def trust_of(self, identifier: str) -> TrustFinding | None:
        """What the registry's trust check found about a stored entry (None before trust checks existed)."""
        agent_id = self.store.id_of(identifier)
        found = self.store.values_of([agent_id], TRUST_FIELDS).get(agent_id, {}) if agent_id is not None else {}
        return TrustFinding.of(found)

    def deregister(self, reference: str, may_write: MayWrite | None, viewer: Viewer = ANONYMOUS) -> DeregisterResult:
        """Remove the entry `reference` names (`resolve`), readable or not."""
        return self.indexer.deregister(self.resolve(reference, viewer), may_write)

    def one_version(self) -> AbstractContextManager[None]:
        """Reads within it see the store's version as it was on entry, read once (`SqliteStore.one_version`): a search
        and the federation check before it asked for it 7 times. A surface wraps both in it."""
        return self.store.one_version()

    def search(self, query: SearchQuery, now: datetime | None = None, viewer: Viewer = ANONYMOUS) -> SearchPage:
        """One page of the entries relevant to `query.text` (or, without one, meeting its filter) that meet
        its filter and criteria, among those `viewer` may see. Expired entries are removed first, once per query.
        Timed and traced (`ard_mcp.monitoring`): the store's reads, the ranking's stages, the page's confidence."""
        started = time.perf_counter()
        with tracing.span("search") as span, self.one_version():
            self.expire_due()
            self._caught_up()
            now = now or datetime.now(UTC)
            offset = decode_token(query.page_token, query.key())
            with tracing.span("store.select"):
                flt = narrowed(self.store, query.filter, query.criteria)
                ids = visible(self.store, self.store.filter_agents(flt), hidden_agents(self.store, viewer)) if flt is not None else None
            ranking = self.ranker.rank(query.text, ids) if flt is not None and query.text is not None else None
            with tracing.span("store.page"):
                if flt is None:
                    found = Selection([], 0, False)
                elif ranking is None:
                    found = unranked_page(self.store, ids, query.criteria, now, offset, query.page_size)
                else:
                    found = ranked_page(ranking, query.criteria, now, offset, query.page_size)
                found = with_trust(self.store, found)
            token = encode_token(offset + query.page_size, query.key()) if found.more else None
            confidence = "none" if not found.candidates else "high" if found.confident else "low"  # as `search_agents` says it
            metrics.search(time.perf_counter() - started, len(found.candidates), confidence)
            tracing.ended(span, {"ard.search.results": len(found.candidates), "ard.search.confidence": confidence})
            return SearchPage(found.candidates, found.total, token, self.config.source, query.detail, found.confident)

    def explore(
        self,
        text: str | None = None,
        filter: Mapping[str, Any] | None = None,
        facets: list[FacetRequest] | None = None,
        viewer: Viewer = ANONYMOUS,
    ) -> ExploreResponse:
        """Facet counts (ARD §7.3) over every entry meeting the filter, or only the relevant ones with a text."""
        if not facets:
            raise InvalidArgument('facets: name at least one field to aggregate, e.g. [{"field": "type"}]')
        if len(facets) > MAX_FACETS:
            raise InvalidArgument(f"facets: at most {MAX_FACETS} per request (got {len(facets)})")
        for facet in facets:
            check_field(facet.field, "facet field")
        flt = parse_filter(filter)
        self.expire_due()
        self._caught_up()
        matched = visible(self.store, self.store.filter_agents(flt), hidden_agents(self.store, viewer))
        if text is not None and not (isinstance(text, str) and not text.strip()):
            ranking = self.ranker.rank(query_text(text), matched)
            matched = {hit.agent_id for hit in ranking} if ranking.confident else set()  # only what the ranking vouches for
        out: dict[str, FacetResult] = {}
        for facet in facets:
            counts = [(v, n) for v, n in self.store.facet(facet.field, matched) if n >= facet.minCount]
            out[facet.field] = FacetResult(
                buckets=[FacetBucket(value=v, count=n) for v, n in counts[: facet.limit]],
                otherCount=sum(n for _, n in counts[facet.limit :]),
            )
        return ExploreResponse(facets=out)

    def list(
        self,
        filter: Mapping[str, Any] | str | None = None,
        order_by: str | None = None,
        page_size: int = 20,
        page_token: str | None = None,
        viewer: Viewer = ANONYMOUS,
    ) -> ListResponse:
        """A deterministic listing (ARD §7.4) of the entries a §7.1 filter object or an Appendix A
        expression selects, in `order_by` order (the identifier breaks ties)."""
        self.expire_due()
        check_page_size(page_size)
        selection = parse_selection(filter)
        order = parse_order(order_by)
        key = listing_key(selection, order)
        offset = decode_token(page_token, key)
        ids = visible(self.store, selected_ids(self.store, selection), hidden_agents(self.store, viewer))
        agents, total = self.store.list_page(ids, order, offset, page_size)
        more = offset + len(agents) < total
        return ListResponse(
            items=[CatalogEntry.model_validate(a.entry) for a in agents],
            total=total,
            pageToken=encode_token(offset + page_size, key) if more else None,
        )
