"""Every write to the registry: registration, bulk ingest, deregistration, expiry, and rebuilding the vector
index (re-embedding when the model changed). The one place that keeps the store and the vector index in step.

A write lands in the store first, in one transaction that also marks the agent's vectors pending; the
vectors then go to Chroma and the mark is cleared. An agent still marked when the index opens lost its
vectors to a crash in between, and `catch_up.send_queued` gives them back without running the model. A
write the store has committed is saved, and answered so, even when Chroma does not take its vectors: they
stay queued and are sent when it answers again (`catch_up`).
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from ard_mcp.errors import ArdError, Conflict, InvalidArgument, NotFound, PermissionDenied, StaleEntry
from ard_mcp.formats.catalog import CatalogEntry
from ard_mcp.formats.entry_facts import SOURCE_ID_KEY, TOOLS_OBSERVED_KEY, TRUST_CHECKED, TRUST_FIELDS, unchecked_trust
from ard_mcp.formats.identifiers import normalize_identifier, publisher_of
from ard_mcp.formats.leniency import Notice, read_entry
from ard_mcp.formats.limits import EntryLimits
from ard_mcp.formats.messages import DeregisterResult, RegisterResult
from ard_mcp.formats.reserved_metadata import EXPIRES_KEY
from ard_mcp.index.catch_up import VectorSync
from ard_mcp.index.embedding import Embedder, ModelSpec
from ard_mcp.index.example_texts import Example, extract_examples
from ard_mcp.index.expiry import ExpiryClock
from ard_mcp.index.filter_values import entry_values
from ard_mcp.index.lexical import fts_document
from ard_mcp.index.records import AgentWrite, Mark, NewExample, StoredAgent, content_hash
from ard_mcp.index.store.base import Store
from ard_mcp.index.vectors import VectorIndex

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
MayWrite = Callable[[str], bool]  # whether the caller may write entries of a publisher domain
MAX_FUTURE = timedelta(minutes=5)  # clock skew allowed in updatedAt; 9999-12-31 once locked the owner out
INGEST_CHUNK = 2000  # agents planned, embedded and written together: memory stays flat, and each chunk is durable
_PLAN_GROUP = 500  # entries whose stored rows one read fetches: one read an entry made a PostgreSQL re-ingest 4x SQLite's
_EMBED_STEP = 512  # texts embedded between progress reports
_FLUSH_EVERY = 4000  # example vectors sent to Chroma together
MAX_OBSERVED_TOOLS = 64  # of a server's live tool list kept on its entry: an entry indexes 96 examples at most


@dataclass
class IngestReport:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    rejected: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what was accepted after normalising (see `leniency`)

    def add(self, other: IngestReport) -> None:
        self.added += other.added
        self.updated += other.updated
        self.unchanged += other.unchanged
        self.rejected += other.rejected
        self.warnings += other.warnings

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


Owned = set[tuple[str, str]]
"""Filter values the registry found about an entry (its trust finding), stored beside the entry's own."""


@dataclass
class _Plan:
    entry: CatalogEntry
    document: dict[str, Any]  # the entry as stored (`CatalogEntry.stored()`)
    content_hash: str
    stored: StoredAgent | None
    owned: Owned


@dataclass
class _VectorBatch:
    """Written agents whose vector changes have not yet gone to the vector index."""

    removed: list[tuple[int, int]] = field(default_factory=list)  # (example id, agent id) of the examples replaced
    ids: list[tuple[int, int]] = field(default_factory=list)  # ... of the examples written, with their vectors
    vectors: list[np.ndarray] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)  # the written agents' `vectors_pending` marks, cleared once sent

    def clear(self) -> None:
        for rows in (self.removed, self.ids, self.vectors, self.marks):
            rows.clear()


def _finding(owned: Owned) -> Owned:
    """A trust finding without the time it was made: the same finding made again is no change to write."""
    return {(field, value) for field, value in owned if field != TRUST_CHECKED}


def _check_scope(identifier: str, may_write: MayWrite | None) -> None:
    if may_write is not None and not may_write(publisher_of(identifier)):
        raise PermissionDenied(f"{identifier}: this credential may not write entries of the publisher {publisher_of(identifier)}")


def _check_same_source(entry: CatalogEntry, stored: dict[str, Any]) -> None:
    """Xu and AIDIP ids become URN segments, which is lossy (`Translator v2` and `Translator-v2` both give
    `...:Translator-v2`): an agent registered under another id of the same URN is refused, where it once
    silently replaced the first one."""
    new, old = (entry.metadata or {}).get(SOURCE_ID_KEY), (stored.get("metadata") or {}).get(SOURCE_ID_KEY)
    if new is not None and old is not None and new != old:
        raise Conflict(
            f"{entry.identifier}: the id {new!r} maps to the identifier the agent registered as {old!r} already has; "
            "give an id that differs in its letters or digits, or a urn:air: identifier"
        )


class Indexer:
    """Writes through one store and one vector index. `lock` serialises writes (and is what closing the
    registry waits for); `expiry` learns every expiry written, so reads know when one falls due."""

    def __init__(
        self,
        store: Store,
        vectors: VectorIndex,
        embedder: Embedder,
        model: ModelSpec,
        lock: threading.RLock,
        expiry: ExpiryClock,
        limits: EntryLimits,
    ) -> None:
        self._store = store
        self._vectors = vectors
        self._embedder = embedder
        self._model = model
        self._lock = lock
        self._expiry = expiry
        self._limits = limits
        self._model_recorded = False  # whether the store is known to name the model (a read saved on every write)
        self.sync = VectorSync(store, vectors, lock)  # the vector index's side of each write, queued through an outage

    # -- registration -------------------------------------------------------------------------------
    def register(self, raw: Any, may_write: MayWrite | None = None, owned: Owned | None = None) -> RegisterResult:
        """Register or update one entry; `may_write`, when given, must cover the entry's publisher; `owned`
        is what a verifier found about it (`ard_mcp.trust`), when one looked."""
        entry, warnings = read_entry(raw, limits=self._limits)
        _check_scope(entry.identifier, may_write)
        with self._lock:
            plan = self._plan(entry, owned, self._store.get(entry.identifier))
            if plan is not None:
                self._apply([plan])
        if plan is None:
            return RegisterResult(status="unchanged", entry=entry, warnings=warnings or None)
        return RegisterResult(status="updated" if plan.stored else "created", entry=entry, warnings=warnings or None)

    def register_many(
        self,
        items: Iterable[tuple[str, Any]],
        progress: Progress | None = None,
        owned: Mapping[str, Owned] | None = None,
        known_vectors: Mapping[str, np.ndarray] | None = None,
        meta: Mapping[str, str] | None = None,
    ) -> IngestReport:
        """Ingest many entries: invalid or stale ones are reported, the rest written in chunks of
        `INGEST_CHUNK` agents, so a catalog of any size needs the memory of one chunk and an interrupted
        ingest keeps every chunk written before it (re-running it skips them as unchanged). `known_vectors`
        are this model's vectors of example texts computed beforehand (a bundled snapshot's): a text found
        there is not embedded again, which is what lets a first start index a thousand servers in seconds.

        With `meta`, the whole ingest is one transaction that also sets those keys of the store's meta: all
        of it is saved or none (a bundled snapshot, so a first start killed while adding it leaves a new
        store, which the next start fills, instead of one that silently lacks part of it)."""
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

            self._apply(todo, chunk_progress, known_vectors, meta)
            report.added += sum(1 for p in todo if p.stored is None)
            report.updated += sum(1 for p in todo if p.stored is not None)
            plans.clear()

        def reject(where: str, exc: ArdError) -> None:
            report.rejected.append(exc.message if exc.message.startswith(where) else f"{where}: {exc.message}")

        def plan_group(group: list[tuple[str, Any]]) -> None:
            """Plan a group of items against their stored rows, read at once; written only between groups,
            so every entry of a group is compared with the store as it was before the group."""
            parsed: list[tuple[str, tuple[CatalogEntry, list[str]] | ArdError | Notice]] = []
            for where, raw in group:
                try:
                    if isinstance(raw, ArdError):
                        raise raw
                    parsed.append((where, raw if isinstance(raw, Notice) else read_entry(raw, where, self._limits)))
                except ArdError as exc:
                    parsed.append((where, exc))
            stored = self._store.get_many({item[0].identifier for _, item in parsed if isinstance(item, tuple)})
            for where, item in parsed:
                if isinstance(item, Notice):
                    report.warnings.append(f"{where}: {item.message}" if where else item.message)
                    continue
                if isinstance(item, ArdError):
                    reject(where, item)
                    continue
                entry, warnings = item
                if entry.identifier in plans:
                    del plans[entry.identifier]  # a later copy in the same chunk supersedes an earlier one
                try:
                    plan = self._plan(entry, (owned or {}).get(entry.identifier), stored.get(entry.identifier))
                except ArdError as exc:
                    reject(where, exc)
                    continue
                report.warnings += warnings
                if plan is None:
                    report.unchanged += 1
                    continue
                plans[entry.identifier] = plan

        with self._lock:
            pending = iter(items)
            while group := list(itertools.islice(pending, min(_PLAN_GROUP, INGEST_CHUNK))):
                plan_group(group)
                if len(plans) >= INGEST_CHUNK and meta is None:
                    write_chunk()
            write_chunk()
        if progress and not embedded[1]:
            progress(0, 0)
        return report

    def _plan(self, entry: CatalogEntry, owned: Owned | None, stored: StoredAgent | None) -> _Plan | None:
        """What registering `entry` over `stored` (its row in the store) would change; None when nothing
        would. A new trust finding for an unchanged entry replaces the old one in place (no embedding, no
        rewrite of the entry)."""
        if entry.updated is not None and entry.updated > datetime.now(UTC) + MAX_FUTURE:
            raise InvalidArgument(
                f"{entry.identifier}: updatedAt {entry.updatedAt} is in the future (more than {MAX_FUTURE.seconds // 60} minutes "
                "ahead of this registry's clock); it would make every later update look stale"
            )
        document = entry.stored()
        digest = content_hash(document)
        if stored is not None:
            if stored.content_hash == digest:
                if owned is not None and _finding(self._store.owned_values(stored.id, TRUST_FIELDS)) != _finding(owned):
                    self._store.replace_owned_values(stored.id, TRUST_FIELDS, owned)
                return None
            _check_same_source(entry, stored.entry)
            new, old = entry.updated, CatalogEntry.model_validate(stored.entry).updated
            if new is not None and old is not None and new < old:
                stored_at = stored.entry.get("updatedAt")
                raise StaleEntry(
                    f"{entry.identifier}: updatedAt {entry.updatedAt} is older than the stored {stored_at}; nothing was changed"
                )
        return _Plan(entry, document, digest, stored, owned if owned is not None else unchecked_trust(document))

    def _apply(
        self,
        plans: list[_Plan],
        progress: Progress | None = None,
        given: Mapping[str, np.ndarray] | None = None,
        meta: Mapping[str, str] | None = None,
    ) -> None:
        """Write `plans`: one transaction each, or with `meta` one transaction for all of them and the meta
        (`register_many`); the vector index gets each transaction's vectors once it has committed."""
        if not plans and meta is None:
            return
        self.sync.catch_up()  # what an outage queued goes first, so the vector index takes changes in order
        examples = {p.entry.identifier: extract_examples(p.entry) for p in plans}
        known: dict[str, np.ndarray] = {e.text: given[e.text] for ex in examples.values() for e in ex if given and e.text in given}
        for p in plans:
            if p.stored is not None:
                known.update(self._store.vectors_by_text(p.stored.id))
        missing = sorted({e.text for ex in examples.values() for e in ex} - known.keys())
        known.update(self._embed(missing, progress))
        recorded = self._model_recorded or self._store.meta("model_id") is not None
        first_meta = {**({} if recorded else self._model_meta()), **(meta or {})}  # the model, with the first write

        batch = _VectorBatch()
        for group in [plans] if meta is not None else [[p] for p in plans]:
            written = self._store.write_many([self._row(p, examples[p.entry.identifier], known) for p in group], first_meta)
            first_meta = {}
            self._model_recorded = True
            for p, w in zip(group, written, strict=True):
                batch.removed += [(e, w.agent) for e in w.removed]
                batch.ids += [(e, w.agent) for e in w.added]
                batch.vectors += [known[e.text] for e in examples[p.entry.identifier]]
                batch.marks.append((w.agent, w.write))
                self._expiry.note(p.document)
                if len(batch.ids) >= _FLUSH_EVERY:
                    self._flush(batch)
        self._flush(batch)

    def _row(self, plan: _Plan, examples: list[Example], vectors: Mapping[str, np.ndarray]) -> AgentWrite:
        """One agent as the store takes it: its entry, filter values (the registry's findings too), lexical document and examples."""
        entry = plan.entry
        rows = [NewExample(e.kind, e.label, e.text, vectors[e.text]) for e in examples]
        updated = entry.updated.isoformat() if entry.updated else None
        values = entry_values(plan.document) | plan.owned
        fts = fts_document(entry, examples)
        return AgentWrite(plan.document, plan.content_hash, publisher_of(entry.identifier), updated, values, fts, rows)

    def _model_meta(self) -> dict[str, str]:
        """What the store records of the model: its vectors are this model's from now on."""
        return {"model_id": self._model.id, "dimension": str(self._model.dimension)}

    def _flush(self, batch: _VectorBatch) -> None:
        """The vector index takes the written agents' changes; then the store stops calling them pending
        (or, while it does not answer, they stay queued: `VectorSync.replace`)."""
        vectors = np.stack(batch.vectors) if batch.vectors else np.zeros((0, 0), np.float32)
        self.sync.replace(batch.removed, batch.ids, vectors, batch.marks)
        batch.clear()

    def _embed(self, texts: list[str], progress: Progress | None) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for start in range(0, len(texts), _EMBED_STEP):
            chunk = texts[start : start + _EMBED_STEP]
            out.update(zip(chunk, self._embedder.embed(chunk), strict=True))
            if progress:
                progress(min(start + _EMBED_STEP, len(texts)), len(texts))
        return out

    # -- what a running server showed ------------------------------------------------------------------
    def observe_tools(self, identifier: str, tools: Sequence[Mapping[str, str]], at: str) -> bool:
        """Keep the tools a server listed when it was called (name and description each, at most
        `MAX_OBSERVED_TOOLS`) as its entry's `data.tools`, with when they were first seen, and index them as
        inline tools are: the next search finds a package server by what its tools do, where its entry
        described none. The publisher's own tools are never replaced, nor the trust finding; an unchanged
        list writes nothing. Whether anything was written."""
        with self._lock:
            stored = self._store.get(normalize_identifier(identifier))
            data = stored.entry.get("data") if stored is not None else None
            metadata = (stored.entry.get("metadata") or {}) if stored is not None else {}
            if stored is None or not isinstance(data, dict) or (data.get("tools") and TOOLS_OBSERVED_KEY not in metadata):
                return False
            observed = [{"name": t["name"], "description": t.get("description") or ""} for t in tools[:MAX_OBSERVED_TOOLS]]
            document = {**stored.entry, "data": {**data, "tools": observed}, "metadata": {**metadata, TOOLS_OBSERVED_KEY: at}}
            entry, _ = read_entry(document, limits=self._limits)
            plan = self._plan(entry, self._store.owned_values(stored.id, TRUST_FIELDS) or None, stored)
            if plan is not None:
                self._apply([plan])
        return plan is not None

    # -- removal --------------------------------------------------------------------------------------
    def deregister(self, identifier: str, may_write: MayWrite | None = None) -> DeregisterResult:
        identifier = normalize_identifier(identifier)
        _check_scope(identifier, may_write)
        with self._lock:
            self.sync.catch_up()
            deleted = self._store.delete(identifier)
            if deleted is None:
                raise NotFound(f"no agent {identifier} is registered")
            agent_id, removed = deleted
            if removed:
                self.sync.delete([(e, agent_id) for e in removed])
        return DeregisterResult(identifier=identifier)

    def expire(self, now: datetime) -> Sequence[str]:
        """Remove every entry whose expiry has passed; returns their identifiers."""
        removed: list[str] = []
        with self._lock:
            for agent in self._expiry.due(self._store, now):
                self.deregister(agent.identifier)
                removed.append(agent.identifier)
                log.info("%s expired at %s and was removed", agent.identifier, (agent.entry.get("metadata") or {}).get(EXPIRES_KEY))
        return removed

    # -- rebuilding ------------------------------------------------------------------------------------
    def rebuild(self, progress: Progress | None = None) -> int:
        """Fill an empty vector index from the store: after a crash, a Chroma upgrade or a new model (whose
        vectors are computed first from the stored entries). Returns the number of examples indexed."""
        with self._lock:
            self._store.mark_all_pending()
            if self._store.meta("model_id") not in (None, self._model.id):
                self._reembed(progress)
            marks = self._store.pending_marks()  # before reading the examples: a write after that keeps its own mark
            done = 0
            for batch in self._store.iter_examples():
                self._vectors.add([(e, a) for e, a, _ in batch], np.stack([v for _, _, v in batch]))
                done += len(batch)
                if progress:
                    progress(done, done)
            self._store.mark_vectors_done(marks)
        return done

    def _reembed(self, progress: Progress | None) -> None:
        """A new model: every entry's examples are embedded again from the stored entries."""
        stored = self._store.agents_by_id(self._store.pending_agents())
        self._store.write_many([], self._model_meta())
        for agent in stored.values():
            entry = CatalogEntry.model_validate(agent.entry)
            examples = extract_examples(entry)
            vectors = self._embed([e.text for e in examples], None)
            owned = self._store.owned_values(agent.id, TRUST_FIELDS) or unchecked_trust(agent.entry)
            self._store.write_many([self._row(_Plan(entry, agent.entry, agent.content_hash, agent, owned), examples, vectors)])
        if progress:
            progress(len(stored), len(stored))
