"""The registry: the one core behind the MCP tools, the CLI and the HTTP routes.

It owns a data directory (`catalog.sqlite3`, the source of truth, and `chroma/`, the derived vectors),
validates before it writes, and keeps the two stores in step. The model and Chroma load on first use so
a server answers `tools/list` at once however large its index is.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from typing import IO, Any

import numpy as np

from ard_mcp import datadir
from ard_mcp.catalog import CatalogEntry, normalize_identifier, parse_entry, parse_timestamp, publisher_of
from ard_mcp.config import Config
from ard_mcp.criteria import PREFERRED_BOOST, Candidate, Criteria
from ard_mcp.embedding import Embedder, ModelSpec, bundled_model_dir, load_embedder
from ard_mcp.errors import ArdError, InvalidArgument, ModelMismatch, NotFound, StaleEntry
from ard_mcp.examples import extract_examples
from ard_mcp.expression import Expression, normalize_order, parse_expression
from ard_mcp.facts import EXPIRES_KEY, SOURCE_ID_KEY, expiry_of
from ard_mcp.filters import METADATA_PREFIX, Filter, check_field, entry_values, parse_filter
from ard_mcp.lexical import fts_document
from ard_mcp.ranking import Ranked, Ranker, Ranking
from ard_mcp.resident import ResidentExamples
from ard_mcp.store import ORDERABLE, NewExample, StoredAgent, Store
from ard_mcp.vectors import VectorIndex
from ard_mcp.wire import (
    DeregisterResult,
    Evidence,
    ExploreResponse,
    FacetBucket,
    FacetRequest,
    FacetResult,
    Freshness,
    ListResponse,
    MatchedExample,
    RegisterResult,
    ScoreComponents,
    SearchResponse,
    SearchResult,
)

log = logging.getLogger(__name__)

MAX_QUERY_CHARS = 4000
Progress = Callable[[int, int], None]
INGEST_CHUNK = 2000  # agents planned, embedded and written together: memory stays flat, and each chunk is durable
_UNKNOWN: Any = object()  # the next expiry has not been looked up since the registry opened


@dataclass
class IngestReport:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    rejected: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"added": self.added, "updated": self.updated, "unchanged": self.unchanged, "rejected": self.rejected}


@dataclass
class _Plan:
    entry: CatalogEntry
    wire: dict[str, Any]
    content_hash: str
    stored: StoredAgent | None


def content_hash(wire: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(wire, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class _Tokens:
    """Opaque page tokens bound to the request they page through, so a token is never misapplied."""

    @staticmethod
    def _key(request: Any) -> str:
        return hashlib.sha256(json.dumps(request, sort_keys=True, default=str).encode()).hexdigest()[:16]

    @classmethod
    def encode(cls, offset: int, request: Any) -> str:
        raw = json.dumps({"o": offset, "k": cls._key(request)}).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def decode(cls, token: str | None, request: Any) -> int:
        if not token:
            return 0
        try:
            data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
            offset, key = int(data["o"]), data["k"]
        except (ValueError, KeyError, TypeError):
            raise InvalidArgument("pageToken: not a token this registry issued") from None
        if key != cls._key(request) or offset < 0:
            raise InvalidArgument("pageToken: belongs to a different query; repeat the query it came from")
        return offset


class Registry:
    def __init__(self, config: Config, *, rebuilding: bool = False, claimed: IO[str] | None = None) -> None:
        """`rebuilding` opens an index built with another model, for `reindex` to convert it; `claimed` is
        the data directory's lock (`datadir.claim`) when the caller took it already, else it is taken here."""
        self.config = config
        self._lock_file = claimed or datadir.claim(config.data_dir, shared=config.chroma_url is not None)
        self._write_lock = threading.RLock()
        self._warm_lock = threading.Lock()
        self._next_expiry: datetime | None = _UNKNOWN
        self.model_spec = ModelSpec.load(config.model_dir or bundled_model_dir())
        self.store = Store(config.data_dir / "catalog.sqlite3")
        stored_model = self.store.meta("model_id")
        if stored_model is not None and stored_model != self.model_spec.id and not rebuilding:
            raise ModelMismatch(
                f"the index in {config.data_dir} was built with model {stored_model!r}, not {self.model_spec.id!r}; "
                f"run `ard-mcp reindex` with the new model to rebuild it"
            )

    def close(self) -> None:
        """Release the data directory; safe to call more than once."""
        with self._warm_lock, self._write_lock:  # never close under a warm-up or a write
            if self._lock_file.closed:
                return
            self._drop_vectors()
            if "resident" in self.__dict__:
                self.resident.close()
            self.store.close()
            datadir.release(self._lock_file)

    # -- lazily loaded parts --------------------------------------------------------------------
    @cached_property
    def embedder(self) -> Embedder:
        return load_embedder(self.model_spec.directory)

    @cached_property
    def vectors(self) -> VectorIndex:
        index = VectorIndex(self.config.data_dir / "chroma", self.embedder, url=self.config.chroma_url)
        self._repair(index)
        return index

    @cached_property
    def resident(self) -> ResidentExamples:
        """Outlives a reindex: only the vector index is rebuilt, the store's rows stay as they are."""
        return ResidentExamples(self.store)

    @cached_property
    def ranker(self) -> Ranker:
        return Ranker(self.store, self.vectors, self.embedder, examples=self.resident)

    def _drop_vectors(self) -> None:
        self.__dict__.pop("ranker", None)
        index = self.__dict__.pop("vectors", None)
        if index is not None:
            index.close()

    def warm_up(self) -> None:
        """Load the model, the vector index and the search's in-memory copy of the store now (a server does
        this in the background at start)."""
        with self._warm_lock:
            _ = self.ranker
            if not self.resident.loaded:
                self.resident.load()

    def _repair(self, index: VectorIndex) -> None:
        """Give Chroma the vectors of agents whose write was interrupted before it finished."""
        pending = self.store.pending_agents()
        if pending:
            log.warning("restoring vectors of %d agent(s) whose last write did not finish", len(pending))
            rows = self.store.examples_of(pending)
            if rows:
                index.add([(r.id, r.agent_id) for r in rows], np.stack([r.vector for r in rows]))
            self.store.mark_vectors_done(pending)

    # -- writes ---------------------------------------------------------------------------------
    def register(self, raw: Any) -> RegisterResult:
        entry = parse_entry(raw)
        with self._write_lock:
            plan = self._plan(entry)
            if plan is None:
                return RegisterResult(status="unchanged", entry=entry)
            self._apply([plan])
        return RegisterResult(status="updated" if plan.stored else "created", entry=entry)

    def register_many(self, items: Iterable[tuple[str, Any]], progress: Progress | None = None) -> IngestReport:
        """Ingest many entries: invalid or stale ones are reported, the rest written in chunks of
        `INGEST_CHUNK` agents, so a catalog of any size needs the memory of one chunk and an interrupted
        ingest keeps every chunk written before it (re-running it skips them as unchanged)."""
        report = IngestReport()
        plans: dict[str, _Plan] = {}
        embedded = [0, 0]  # texts embedded and planned by earlier chunks, so progress counts the whole ingest

        def write_chunk() -> None:
            todo = list(plans.values())
            base_done, base_total = embedded

            def chunk_progress(done: int, total: int) -> None:
                embedded[0], embedded[1] = base_done + done, base_total + total
                if progress:
                    progress(*embedded)

            self._apply(todo, chunk_progress)
            report.added += sum(1 for p in todo if p.stored is None)
            report.updated += sum(1 for p in todo if p.stored is not None)
            plans.clear()

        with self._write_lock:
            for where, raw in items:
                try:
                    if isinstance(raw, ArdError):
                        raise raw
                    entry = parse_entry(raw, where)
                    if entry.identifier in plans:
                        del plans[entry.identifier]  # a later copy in the same chunk supersedes an earlier one
                    plan = self._plan(entry)
                except ArdError as exc:
                    report.rejected.append(exc.message if exc.message.startswith(where) else f"{where}: {exc.message}")
                    continue
                if plan is None:
                    report.unchanged += 1
                    continue
                plans[entry.identifier] = plan
                if len(plans) >= INGEST_CHUNK:
                    write_chunk()
            write_chunk()
        if progress and not embedded[1]:
            progress(0, 0)
        return report

    def _plan(self, entry: CatalogEntry) -> _Plan | None:
        """What registering `entry` would change; None when nothing would."""
        wire = entry.wire()
        digest = content_hash(wire)
        stored = self.store.get(entry.identifier)
        if stored is not None:
            if stored.content_hash == digest:
                return None
            new, old = entry.updated, CatalogEntry.model_validate(stored.entry).updated
            if new is not None and old is not None and new < old:
                raise StaleEntry(
                    f"{entry.identifier}: updatedAt {entry.updatedAt} is older than the stored {stored.entry.get('updatedAt')}; nothing was changed"
                )
        return _Plan(entry, wire, digest, stored)

    def _apply(self, plans: list[_Plan], progress: Progress | None = None) -> None:
        if not plans:
            return
        examples = {p.entry.identifier: extract_examples(p.entry) for p in plans}
        known: dict[str, np.ndarray] = {}
        for p in plans:
            if p.stored is not None:
                known.update(self.store.vectors_by_text(p.stored.id))
        missing = sorted({e.text for ex in examples.values() for e in ex} - known.keys())
        known.update(self._embed(missing, progress))
        if self.store.meta("model_id") is None:
            self.store.set_meta("model_id", self.model_spec.id)
            self.store.set_meta("dimension", str(self.model_spec.dimension))

        index = self.vectors
        batch_ids: list[tuple[int, int]] = []
        batch_vectors: list[np.ndarray] = []
        batch_agents: list[int] = []
        for p in plans:
            rows = [NewExample(e.kind, e.label, e.text, known[e.text]) for e in examples[p.entry.identifier]]
            agent_id, removed, added = self.store.write(
                p.wire,
                p.content_hash,
                publisher_of(p.entry.identifier),
                p.entry.updated.isoformat() if p.entry.updated else None,
                entry_values(p.wire),
                fts_document(p.entry, examples[p.entry.identifier]),
                rows,
            )
            if removed:
                index.delete([(e, agent_id) for e in removed])
            batch_ids += [(e, agent_id) for e in added]
            batch_vectors += [r.vector for r in rows]
            batch_agents.append(agent_id)
            self._note_expiry(p.wire)
            if len(batch_ids) >= 4000:
                self._flush(index, batch_ids, batch_vectors, batch_agents)
        self._flush(index, batch_ids, batch_vectors, batch_agents)

    def _flush(self, index: VectorIndex, ids: list[tuple[int, int]], vectors: list[np.ndarray], agents: list[int]) -> None:
        if ids:
            index.add(ids, np.stack(vectors))
        if agents:
            self.store.mark_vectors_done(agents)
        ids.clear()
        vectors.clear()
        agents.clear()

    def _embed(self, texts: list[str], progress: Progress | None) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        step = 512
        for start in range(0, len(texts), step):
            chunk = texts[start : start + step]
            out.update(zip(chunk, self.embedder.embed(chunk), strict=True))
            if progress:
                progress(min(start + step, len(texts)), len(texts))
        return out

    def deregister(self, identifier: str) -> DeregisterResult:
        identifier = normalize_identifier(identifier)
        with self._write_lock:
            deleted = self.store.delete(identifier)
            if deleted is None:
                raise NotFound(f"no agent {identifier} is registered")
            agent_id, removed = deleted
            if removed:
                self.vectors.delete([(e, agent_id) for e in removed])
        return DeregisterResult(identifier=identifier)

    def reindex(self, progress: Progress | None = None) -> int:
        """Rebuild the vector index from the store: after a crash, a Chroma upgrade or a new model."""
        with self._write_lock:
            self._drop_vectors()
            index = VectorIndex(self.config.data_dir / "chroma", self.embedder, url=self.config.chroma_url, fresh=True)
            self.store.mark_all_pending()
            if self.store.meta("model_id") not in (None, self.model_spec.id):
                self._reembed(progress)
            done = 0
            for batch in self.store.iter_examples():
                index.add([(e, a) for e, a, _ in batch], np.stack([v for _, _, v in batch]))
                done += len(batch)
                if progress:
                    progress(done, done)
            self.store.mark_vectors_done(self.store.pending_agents())
            self.__dict__["vectors"] = index
        return done

    def _reembed(self, progress: Progress | None) -> None:
        """A new model: every entry's examples are embedded again from the stored entries."""
        stored = self.store.agents_by_id(self.store.pending_agents())
        self.store.set_meta("model_id", self.model_spec.id)
        self.store.set_meta("dimension", str(self.model_spec.dimension))
        for agent in stored.values():
            entry = CatalogEntry.model_validate(agent.entry)
            examples = extract_examples(entry)
            vectors = self._embed([e.text for e in examples], None)
            rows = [NewExample(e.kind, e.label, e.text, vectors[e.text]) for e in examples]
            self.store.write(agent.entry, agent.content_hash, publisher_of(entry.identifier), agent.updated_at,
                             entry_values(agent.entry), fts_document(entry, examples), rows)
        if progress:
            progress(len(stored), len(stored))

    # -- reads ----------------------------------------------------------------------------------
    def get(self, identifier: str) -> CatalogEntry:
        self.expire_due()
        identifier = normalize_identifier(identifier)
        stored = self.store.get(identifier)
        if stored is None:
            raise NotFound(f"no agent {identifier} is registered")
        return CatalogEntry.model_validate(stored.entry)

    def _query_text(self, text: Any) -> str:
        if not isinstance(text, str) or not text.strip():
            raise InvalidArgument("text: must be a non-empty description of the task")
        if len(text) > MAX_QUERY_CHARS:
            raise InvalidArgument(f"text: must be at most {MAX_QUERY_CHARS} characters (got {len(text)})")
        return text.strip()

    def _ranked(self, text: str, filter_: dict[str, list[str]]) -> Ranking:
        """Every ranked read goes through here, so expired entries are removed here, once per query."""
        self.expire_due()
        allowed = self.store.filter_agents(filter_)
        return self.ranker.rank(text, allowed)

    def search(self, text: Any, filter: Any = None, page_size: int = 10, page_token: str | None = None) -> SearchResponse:
        query = self._query_text(text)
        check_page_size(page_size)
        flt = parse_filter(filter)
        offset = _Tokens.decode(page_token, ["search", query, flt])
        ranked = self._ranked(query, flt)
        page = ranked[offset : offset + page_size]
        agents = self.store.agents_by_id(hit.agent_id for hit in page)
        results = [self._result(agents[hit.agent_id], ranked.explain(hit, agents[hit.agent_id].entry)) for hit in page]
        more = offset + page_size < len(ranked)
        token = _Tokens.encode(offset + page_size, ["search", query, flt]) if more else None
        return SearchResponse(results=results, pageToken=token, totalResults=len(ranked))

    def _result(self, agent: StoredAgent, ranked: Ranked) -> SearchResult:
        evidence = Evidence(
            matchedExamples=[MatchedExample(kind=m.kind, label=m.label, text=m.text, similarity=m.similarity) for m in ranked.matched_examples],  # type: ignore[arg-type]
            matchedTags=ranked.matched_tags,
            matchedWords=ranked.matched_words,
            scoreComponents=ScoreComponents(**ranked.components),
            freshness=Freshness(metadataUpdatedAt=agent.entry.get("updatedAt"), indexedAt=agent.indexed_at),
        )
        return SearchResult.model_validate({**agent.entry, "score": ranked.score, "source": self.config.source, "evidence": evidence})

    def explore(self, text: Any = None, filter: Any = None, facets: list[FacetRequest] | None = None) -> ExploreResponse:
        if not facets:
            raise InvalidArgument("facets: name at least one field to aggregate, e.g. [{\"field\": \"type\"}]")
        for facet in facets:
            check_field(facet.field, "facet field")
        flt = parse_filter(filter)
        if text is None or (isinstance(text, str) and not text.strip()):
            self.expire_due()
            matched = self.store.filter_agents(flt)
        else:
            matched = {r.agent_id for r in self._ranked(self._query_text(text), flt)}
        out: dict[str, FacetResult] = {}
        for facet in facets:
            counts = [(v, n) for v, n in self.store.facet(facet.field, matched) if n >= facet.minCount]
            shown = counts[: facet.limit]
            out[facet.field] = FacetResult(
                buckets=[FacetBucket(value=v, count=n) for v, n in shown], otherCount=sum(n for _, n in counts[facet.limit :])
            )
        return ExploreResponse(facets=out)

    def list(self, filter: Any = None, order_by: str | None = None, page_size: int = 20, page_token: str | None = None) -> ListResponse:
        self.expire_due()
        check_page_size(page_size)
        flt = parse_filter(filter)
        order = parse_order(order_by)
        return self._listing(self.store.filter_agents(flt), order, ["list", flt, order], page_size, page_token)

    def _listing(self, ids: AbstractSet[int] | None, order: list[tuple[str, bool]], key: Any, page_size: int, page_token: str | None) -> ListResponse:
        """One page of a deterministic listing; `key` binds the page token to the request."""
        offset = _Tokens.decode(page_token, key)
        agents, total = self.store.list_page(ids, order, offset, page_size)
        more = offset + len(agents) < total
        return ListResponse(
            items=[CatalogEntry.model_validate(a.entry) for a in agents],
            total=total,
            pageToken=_Tokens.encode(offset + page_size, key) if more else None,
        )

    # -- expiry (Xu expires_at, stored as metadata.expiresAt) -------------------------------------
    def _note_expiry(self, wire: dict[str, Any]) -> None:
        """Keep the earliest known expiry current as entries are written, so reads need no lookup."""
        expires = expiry_of(wire)
        if expires is not None and self._next_expiry is not _UNKNOWN and (self._next_expiry is None or expires < self._next_expiry):
            self._next_expiry = expires

    def expire_due(self, now: datetime | None = None) -> Sequence[str]:
        """Remove entries whose `metadata.expiresAt` has passed and return their identifiers.

        An expiry is a lease the publisher did not renew (Xu profile §4.8: stop returning the record), so the
        entry goes the way of a deregistration and every surface stops returning it at once. Costs one
        comparison per read until an expiry is actually due."""
        now = now or datetime.now(UTC)
        if self._next_expiry is not _UNKNOWN and (self._next_expiry is None or self._next_expiry > now):
            return []
        removed: list[str] = []
        with self._write_lock:
            expiries: list[tuple[datetime, str]] = []
            for value, _ in self.store.facet(METADATA_PREFIX + EXPIRES_KEY, None):
                try:
                    expiries.append((parse_timestamp(value), value))
                except ValueError:
                    continue  # not a timestamp: never expires
            due = [value for stamp, value in expiries if stamp <= now]
            if due:
                ids = self.store.filter_agents({METADATA_PREFIX + EXPIRES_KEY: due}) or set()
                for agent in self.store.agents_by_id(ids).values():
                    self.deregister(agent.identifier)
                    removed.append(agent.identifier)
                    log.info("%s expired at %s and was removed", agent.identifier, agent.entry.get("metadata", {}).get(EXPIRES_KEY))
            self._next_expiry = min((stamp for stamp, _ in expiries if stamp > now), default=None)
        return removed

    # -- lookups by the publisher's own id (Xu and AIDIP clients) ---------------------------------
    def resolve(self, reference: str) -> CatalogEntry:
        """An entry by its identifier, or by the id its publisher used when that was not a urn:ai: URN."""
        self.expire_due()
        stored = self.store.get(normalize_identifier(reference))
        if stored is None:
            ids = self.store.filter_agents({METADATA_PREFIX + SOURCE_ID_KEY: [reference]}) or set()
            if len(ids) > 1:
                raise InvalidArgument(f"{reference!r} is the id of {len(ids)} entries; name one by its urn:ai: identifier")
            stored = next(iter(self.store.agents_by_id(ids).values()), None)
        if stored is None:
            raise NotFound(f"no agent {reference} is registered")
        return CatalogEntry.model_validate(stored.entry)

    # -- selection with Xu / AIDIP criteria -------------------------------------------------------
    def _narrowed(self, flt: Filter, criteria: Criteria) -> Filter | None:
        """The filter plus the criteria's OR narrowing in stored spellings; None when nothing can match.

        Criteria compare case-insensitively and filter values are exact, so the stored spellings are looked
        up (one index scan of the field). A key the caller already filters on keeps the caller's values."""
        out = dict(flt)
        for key, wanted in criteria.narrowing().items():
            if key in out:
                continue
            values = [v for v, _ in self.store.facet(key, None) if v.lower() in wanted]
            if not values:
                return None
            out[key] = values
        return out

    def select(self, text: Any, filter: Any = None, criteria: Criteria | None = None, now: datetime | None = None) -> Sequence[Candidate]:
        """Every relevant entry that meets the criteria, best first; preferred tags add up to
        `PREFERRED_BOOST` relevance (cutoff and floor are applied before, so a boost never admits an unrelated entry)."""
        criteria = criteria or Criteria()
        query = self._query_text(text)
        narrowed = self._narrowed(parse_filter(filter), criteria)
        if narrowed is None:
            return []
        now = now or datetime.now(UTC)
        ranking = self._ranked(query, narrowed)
        agents = self.store.agents_by_id(hit.agent_id for hit in ranking)
        chosen: list[tuple[float, Candidate]] = []
        for hit in ranking:
            agent = agents.get(hit.agent_id)
            if agent is None or not criteria.accepts(agent.entry, agent.indexed_at, now):
                continue
            preferred = criteria.preferred_in(agent.entry)
            share = len(preferred) / len(criteria.preferred_tags) if criteria.preferred_tags else 0.0
            relevance = min(1.0, hit.relevance + PREFERRED_BOOST * share)
            explain = functools.partial(ranking.explain, hit, agent.entry)
            chosen.append((relevance, Candidate(agent, round(100 * relevance), preferred, explain)))
        chosen.sort(key=lambda pair: (-pair[0], pair[1].agent.id))
        return [candidate for _, candidate in chosen]

    def search_with(
        self, text: Any, filter: Any, criteria: Criteria, page_size: int = 10, page_token: str | None = None
    ) -> SearchResponse:
        """`search` with criteria (hard tag, protocol, status filters; preferred-tag boosts), same response."""
        query = self._query_text(text)
        check_page_size(page_size)
        flt = parse_filter(filter)
        key = ["select", query, flt, criteria.key()]
        offset = _Tokens.decode(page_token, key)
        selected = self.select(query, flt, criteria)
        page = selected[offset : offset + page_size]
        results = [self._result(c.agent, c.explain()).model_copy(update={"score": c.score}) for c in page if c.explain is not None]
        more = offset + page_size < len(selected)
        return SearchResponse(results=results, pageToken=_Tokens.encode(offset + page_size, key) if more else None, totalResults=len(selected))

    def matching(self, filter: Any, criteria: Criteria, limit: int, now: datetime | None = None) -> Sequence[Candidate]:
        """Entries meeting a filter and criteria, unranked, in identifier order (AIDIP search without a query)."""
        self.expire_due()
        narrowed = self._narrowed(parse_filter(filter), criteria)
        if narrowed is None:
            return []
        ids = self.store.filter_agents(narrowed)
        now = now or datetime.now(UTC)
        found: list[Candidate] = []
        offset = 0
        while len(found) < limit:
            agents, _ = self.store.list_page(ids, [], offset, 500)
            found += [Candidate(a, None, criteria.preferred_in(a.entry)) for a in agents if criteria.accepts(a.entry, a.indexed_at, now)]
            if len(agents) < 500:
                break
            offset += len(agents)
        return found[:limit]

    # -- GET /agents: the Appendix A filter expression --------------------------------------------
    def browse(self, expression: str | None = None, order_by: str | None = None, page_size: int = 20, page_token: str | None = None) -> ListResponse:
        """`list` driven by an ARD Appendix A filter expression (`type = 'a,b' AND createdAfter > '2026-01-01'`)."""
        self.expire_due()
        check_page_size(page_size)
        parsed = parse_expression(expression)
        order = parse_order(normalize_order(order_by))
        return self._listing(self._expression_ids(parsed), order, ["browse", parsed.key(), order], page_size, page_token)

    def _expression_ids(self, parsed: Expression) -> AbstractSet[int] | None:
        ids: AbstractSet[int] | None = None
        picks: list[AbstractSet[int]] = []
        for key, values in parsed.equals:
            picks.append(self.store.filter_agents(parse_filter({key: values})) or set())
        for patterns in parsed.names:
            names = [v for v, _ in self.store.facet("displayName", None) if any(p in v.lower() for p in patterns)]
            picks.append(self.store.filter_agents({"displayName": names}) or set() if names else set())
        if parsed.created_after is not None:
            picks.append(self._changed_since("createdAt", parsed.created_after))
        if parsed.updated_after is not None:
            picks.append(self._changed_since("updatedAt", parsed.updated_after))
        for pick in picks:
            ids = pick if ids is None else ids & pick
        return ids

    def _changed_since(self, column: str, since: datetime) -> set[int]:
        """Agents whose createdAt (registration) or updatedAt (entry) is after `since`, newest first until older."""
        found: set[int] = set()
        offset = 0
        while True:
            agents, _ = self.store.list_page(None, [(column, True)], offset, 500)
            for agent in agents:
                stamp = agent.created_at if column == "createdAt" else agent.updated_at
                if stamp is None or parse_timestamp(stamp) <= since:
                    return found
                found.add(agent.id)
            if len(agents) < 500:
                return found
            offset += len(agents)


def check_page_size(page_size: int) -> None:
    if not 1 <= page_size <= 100:
        raise InvalidArgument(f"pageSize: must be between 1 and 100 (got {page_size})")


def parse_order(order_by: str | None) -> list[tuple[str, bool]]:
    """`displayName`, `updatedAt DESC, identifier`: fields of ORDERABLE, each optionally ASC or DESC."""
    if not order_by or not order_by.strip():
        return []
    order = []
    for part in order_by.split(","):
        tokens = part.split()
        if not tokens or len(tokens) > 2 or tokens[0] not in ORDERABLE or (len(tokens) == 2 and tokens[1].upper() not in ("ASC", "DESC")):
            raise InvalidArgument(f"orderBy: {part.strip()!r} is not '<field> [ASC|DESC]' with a field of {', '.join(ORDERABLE)}")
        order.append((tokens[0], len(tokens) == 2 and tokens[1].upper() == "DESC"))
    return order
