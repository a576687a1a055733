"""What every store does, in the SQL both engines speak: the agents as registered, their filter values,
examples with their vectors, term counts and the change feed. The engines differ in four places only,
each a hook a subclass fills: how a connection is had (`_reading`, `transaction`, `_snapshot`), how a
change made elsewhere is noticed (`version`), the full-text index behind BM25 candidates and the term
counts kept beside it (`_index_text`, `_unindex_text`, `lexical`) and how a page is cut from a set of ids
(`_page_of`). SQL is written with `?` placeholders; the PostgreSQL store translates them.

Keeping one copy of every query is what makes both stores answer alike: `tests/test_postgres.py`
compares their answers on one catalog.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from typing import Any, ClassVar, TypeVar

import numpy as np

from ard_mcp.formats.timestamps import utc_text
from ard_mcp.index.filter_values import Filter
from ard_mcp.index.records import (
    AgentRows,
    AgentTerms,
    AgentWrite,
    CandidateExamples,
    ExampleRow,
    FtsDocument,
    Mark,
    Order,
    StoredAgent,
    Written,
    decode_blobs,
)
from ard_mcp.index.store import writes
from ard_mcp.index.store.db import Db
from ard_mcp.index.store.readable import agent_of, problem_of
from ard_mcp.index.store.side_tables import SideTables
from ard_mcp.index.store.snapshot import IN_CHUNK, read_rows

_ANSWERS_KEPT = 64  # filter and facet answers kept until the store changes
_T = TypeVar("_T")


class Store(SideTables):
    """The source of truth behind a registry; Chroma holds only a derived copy of the example vectors and can
    always be rebuilt from here (`ard-mcp reindex`) without running the model again."""

    #: The SQL of each of `records.ORDERABLE`; both engines order text bytewise, as SQLite's BINARY does.
    COLUMNS: ClassVar[dict[str, str]]

    def __init__(self) -> None:
        self._answers: dict[str, tuple[Any, Any]] = {}
        self._count: tuple[Any, int] | None = None
        self._ids: tuple[Any, frozenset[int]] | None = None

    # -- engine hooks ---------------------------------------------------------------------------
    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def _reading(self, *, plain: bool = False) -> AbstractContextManager[Db]:
        """A connection for one statement's reads (`plain`: rows as tuples, cheaper on the search path)."""

    @abstractmethod
    def transaction(self) -> AbstractContextManager[Db]:
        """All-or-nothing writes, one writer at a time, appended to the change feed: a failed registration
        leaves no half-written rows behind, and feed order is commit order."""

    @abstractmethod
    def _snapshot(self) -> AbstractContextManager[Db]:
        """Several reads that see one state of the store (plain tuple rows)."""

    @abstractmethod
    def _autocommit(self, sql: str, params: Sequence[Any] = ()) -> None:
        """One statement outside the change feed (metadata, the crawler's memory, vector bookkeeping)."""

    @abstractmethod
    def _bookkeeping(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """One statement for each of `rows`, all or nothing, outside the change feed (nothing a search reads
        changes), for state a crash may lose because the next start redoes its work (vectors marked as in Chroma)."""

    @abstractmethod
    def version(self) -> Any:
        """Changes whenever this process or another one commits, so derived answers can be kept until then."""

    def one_version(self) -> AbstractContextManager[None]:
        """Within it, this thread's reads of `version()` are one read (`SqliteStore.one_version`); nothing to save
        where the version is counters in memory (PostgreSQL's NOTIFYs)."""
        return nullcontext()

    @abstractmethod
    def _index_text(self, db: Db, agent_id: int, fts: FtsDocument) -> None:
        """Put an agent's text into the full-text index and count its terms (`term_agents`)."""

    @abstractmethod
    def _unindex_text(self, db: Db, agent_id: int, old: FtsDocument) -> None:
        """Take an agent's old text out of the full-text index and its terms out of the counts."""

    @abstractmethod
    def lexical(self, terms: Sequence[str], limit: int, weights: tuple[float, float, float, float]) -> list[tuple[int, float]]:
        """BM25 as FTS5 computes it over the four fields, ORing `terms`; (agent id, score), best first."""

    @abstractmethod
    def _page_of(self, agent_ids: AbstractSet[int], clauses: str, offset: int, limit: int) -> list[Any]: ...

    @abstractmethod
    def _read_all_rows(self) -> AgentRows:
        """Every agent's examples and terms, read off the connection requests use (~10 s at 100,000 agents)."""

    # -- reading helpers ------------------------------------------------------------------------
    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._reading() as db:
            return list(db.execute(sql, params).fetchall())

    def _tuples(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._reading(plain=True) as db:
            return list(db.execute(sql, params).fetchall())

    def _rows_in(self, sql: str, ids: Iterable[Any], *params: Any, plain: bool = False, db: Db | None = None) -> list[Any]:
        """Rows of `sql` for any number of ids (or other values): `{ids}` in it becomes an IN list, run in
        chunks because SQLite caps the parameters of one statement. `params` come before the ids. On `db`
        (a snapshot's, plain rows) when given, else on a connection of its own."""
        ids = list(ids)
        run = (lambda q, p: db.execute(q, p).fetchall()) if db is not None else self._tuples if plain else self._query
        rows: list[Any] = []
        for start in range(0, len(ids), IN_CHUNK):
            chunk = ids[start : start + IN_CHUNK]
            rows += run(sql.format(ids=",".join("?" * len(chunk))), (*params, *chunk))
        return rows

    # -- meta -----------------------------------------------------------------------------------
    def meta(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0]["value"] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        self._autocommit(writes.SET_META, (key, value))

    # -- agents ---------------------------------------------------------------------------------
    def get(self, identifier: str) -> StoredAgent | None:
        rows = self._query("SELECT * FROM agents WHERE identifier = ?", (identifier,))
        return agent_of(rows[0]) if rows else None

    def id_of(self, identifier: str) -> int | None:
        """The id of the row with this identifier, readable or not: what a delete needs (`readable`)."""
        rows = self._tuples("SELECT id FROM agents WHERE identifier = ?", (identifier,))
        return int(rows[0][0]) if rows else None

    def raw_entry(self, identifier: str) -> bytes | None:
        """The row's stored document as stored (compressed), readable or not (`ard-mcp check`)."""
        rows = self._tuples("SELECT entry FROM agents WHERE identifier = ?", (identifier,))
        return bytes(rows[0][0]) if rows else None

    def identifiers(self, ids: Iterable[int]) -> dict[int, str]:
        """The identifiers of those agents, readable or not, without reading their entries."""
        return {int(i): str(name) for i, name in self._rows_in("SELECT id, identifier FROM agents WHERE id IN ({ids})", ids, plain=True)}

    def identifiers_starting(self, prefix: str, limit: int) -> list[tuple[int, str]]:
        """Up to `limit` (id, identifier) pairs whose identifier starts with `prefix` (case as typed), in identifier
        order, without reading entries: what a host's resource picker completes (`completion/complete`)."""
        sql = "SELECT id, identifier FROM agents WHERE substr(identifier, 1, ?) = ? ORDER BY identifier LIMIT ?"
        return [(int(i), str(name)) for i, name in self._tuples(sql, (len(prefix), prefix, limit))]

    def get_many(self, identifiers: Iterable[str]) -> dict[str, StoredAgent]:
        """The stored agents of those identifiers that are registered, in one read (an ingest plans many)."""
        rows = self._rows_in("SELECT * FROM agents WHERE identifier IN ({ids})", identifiers)
        return {a.identifier: a for a in map(agent_of, rows) if a is not None}

    def agents_by_id(self, ids: Iterable[int]) -> dict[int, StoredAgent]:
        return {a.id: a for a in map(agent_of, self._rows_in("SELECT * FROM agents WHERE id IN ({ids})", ids)) if a is not None}

    def agent_ids(self) -> frozenset[int]:
        """Every agent's id: what a read starts from when some entries must be left out (`visibility`);
        kept until the store changes (reading 100,000 ids on every anonymous search would cost ~20 ms)."""
        version = self.version()
        if self._ids is None or self._ids[0] != version:
            self._ids = (version, frozenset(r[0] for r in self._tuples("SELECT id FROM agents")))
        return self._ids[1]

    def count(self) -> int:
        """The number of agents; every search needs it (IDF), and counting 100,000 rows costs milliseconds,
        so it is kept until this process or another one commits a change."""
        version = self.version()
        if self._count is None or self._count[0] != version:
            self._count = (version, int(self._tuples("SELECT count(*) FROM agents")[0][0]))
        return self._count[1]

    def example_count(self) -> int:
        """The number of examples the index embeds (the monitoring gauge, read at each scrape), kept until a change."""
        return self._kept("example count", lambda: int(self._tuples("SELECT count(*) FROM examples")[0][0]))

    def pending_count(self) -> int:
        """Agents whose vectors wait for the vector index (the monitoring gauge): each write's, for the moment
        until Chroma has them; every one written while Chroma did not answer, until it does (`catch_up`)."""
        return self._kept("pending count", lambda: int(self._tuples("SELECT count(*) FROM agents WHERE vectors_pending <> 0")[0][0]))

    def write_many(self, agents: Sequence[AgentWrite], meta: Mapping[str, str] | None = None) -> list[Written]:
        """Insert or replace agents with all their rows, and set `meta`, in one transaction: all of it is
        saved or none. Returns what it did to each agent.

        The agents are marked `vectors_pending` in the same transaction, so a crash before Chroma has the
        new vectors is repaired at the next start instead of leaving the two stores disagreeing. Many agents
        in one transaction cost far less than one each: on SQLite the bundled snapshot's 1,683 took 1.4 s
        (0.9 s of CPU) one transaction each, 0.4 s as one, on a shared 2-core machine."""
        stamp = utc_text(datetime.now(UTC), "milliseconds")
        with self.transaction() as db:
            written = [writes.put_agent(db, agent, stamp, self._index_text, self._unindex_text) for agent in agents]
            for key, value in (meta or {}).items():
                db.execute(writes.SET_META, (key, value))
        return written

    def delete(self, identifier: str) -> tuple[int, list[int]] | None:
        """Remove every trace of an agent; returns its id and example ids (for Chroma), or None if unknown."""
        with self.transaction() as db:
            row = db.execute("SELECT id FROM agents WHERE identifier = ?", (identifier,)).fetchone()
            if row is None:
                return None
            agent_id = int(row[0])
            removed = writes.delete_agent(db, agent_id, self._unindex_text)
        return agent_id, removed

    def mark_vectors_done(self, marks: Iterable[Mark]) -> None:
        """The vector index has the examples these writes left: clear each agent's mark unless a later write
        has set its own (`writes.put_agent`). Lost in a crash, the marks only make the next start send the
        same vectors again (`catch_up.send_queued`)."""
        self._bookkeeping("UPDATE agents SET vectors_pending = 0 WHERE id = ? AND vectors_pending = ?", sorted(marks))

    def pending_marks(self) -> list[Mark]:
        """Each agent whose examples the vector index may lack, with the write it waits for."""
        return [(int(a), int(w)) for a, w in self._tuples("SELECT id, vectors_pending FROM agents WHERE vectors_pending <> 0 ORDER BY id")]

    def pending_agents(self) -> list[int]:
        return [agent for agent, _ in self.pending_marks()]

    def mark_all_pending(self) -> None:
        self._autocommit("UPDATE agents SET vectors_pending = 1")

    # -- the change feed and bulk reads (for the search's in-memory copy) -------------------------
    def changes_since(self, seq: int) -> tuple[int, list[int]] | None:
        """The agents written or deleted after change `seq`, and the newest change; None when the feed no
        longer reaches back to `seq` (it keeps the last `writes.CHANGES_KEPT`), so the reader must read everything."""
        rows = self._tuples("SELECT seq, agent_id FROM changes WHERE seq > ? ORDER BY seq", (seq,))
        if rows and rows[0][0] != seq + 1:
            return None
        return (int(rows[-1][0]) if rows else seq), sorted({int(agent) for _, agent in rows})

    def read_rows(self, agent_ids: Sequence[int] | None = None) -> AgentRows:
        """The examples and distinct terms of some agents, or of all of them, read consistently."""
        if agent_ids is None:
            return self._read_all_rows()
        with self._snapshot() as db:
            return read_rows(db, list(agent_ids))

    # -- examples -------------------------------------------------------------------------------
    def examples_of(self, agent_ids: Iterable[int]) -> list[ExampleRow]:
        rows = self._rows_in("SELECT * FROM examples WHERE agent_id IN ({ids}) ORDER BY id", agent_ids)
        if not rows:
            return []
        vectors = decode_blobs([r["vector"] for r in rows])
        return [ExampleRow(r["id"], r["agent_id"], r["kind"], r["label"], r["text"], v) for r, v in zip(rows, vectors, strict=True)]

    def candidate_examples(self, agent_ids: Sequence[int], db: Db | None = None) -> CandidateExamples:
        """All examples of the given agents, ordered by agent then example, vectors decoded in one go
        (ordered in numpy: an ORDER BY and `sqlite3.Row`s tripled the cost of this, the search's largest read)."""
        sql = "SELECT id, agent_id, kind = 'description', vector FROM examples WHERE agent_id IN ({ids})"
        rows = self._rows_in(sql, agent_ids, plain=True, db=db)
        if not rows:
            return CandidateExamples.empty()
        ids, agents, descriptions, blobs = zip(*rows, strict=True)
        order = np.lexsort((np.array(ids, np.int64), np.array(agents, np.int64)))
        return CandidateExamples(
            ids=np.array(ids, np.int64)[order],
            agent_ids=np.array(agents, np.int64)[order],
            is_description=np.array(descriptions, bool)[order],
            vectors=decode_blobs([blobs[i] for i in order]),
        )

    def examples_and_terms(self, agent_ids: Sequence[int]) -> tuple[CandidateExamples, dict[int, AgentTerms]]:
        """`candidate_examples` and `agent_terms` read in one transaction, so a write cannot land between
        them (an agent deleted in between had examples and no terms: a KeyError under concurrent writes)."""
        with self._snapshot() as db:
            return self.candidate_examples(agent_ids, db), self.agent_terms(agent_ids, db)

    def example_texts(self, example_ids: Sequence[int]) -> dict[int, tuple[str, str, str]]:
        """(kind, label, text) of some examples: what evidence shows for the page being returned."""
        rows = self._rows_in("SELECT id, kind, label, text FROM examples WHERE id IN ({ids})", example_ids)
        return {r["id"]: (r["kind"], r["label"], r["text"]) for r in rows}

    def vectors_by_text(self, agent_id: int) -> dict[str, np.ndarray]:
        """An agent's current vectors by text, so re-registering re-embeds only the texts that changed."""
        rows = self._query("SELECT text, vector FROM examples WHERE agent_id = ? ORDER BY id", (agent_id,))
        return dict(zip([r["text"] for r in rows], decode_blobs([r["vector"] for r in rows]), strict=True)) if rows else {}

    def iter_examples(self, batch: int = 2000) -> Iterator[list[tuple[int, int, np.ndarray]]]:
        """Every (example id, agent id, vector) in id order, in batches: what a rebuilt vector index needs."""
        last = 0
        while True:
            rows = self._query("SELECT id, agent_id, vector FROM examples WHERE id > ? ORDER BY id LIMIT ?", (last, batch))
            if not rows:
                return
            yield [(r["id"], r["agent_id"], v) for r, v in zip(rows, decode_blobs([r["vector"] for r in rows]), strict=True)]
            last = rows[-1]["id"]

    # -- filters, facets, listing ---------------------------------------------------------------
    def filter_agents(self, flt: Filter) -> frozenset[int] | None:
        """Agents matching every key (OR within a key); None means no filter, i.e. everyone.

        A broad filter matches tens of thousands of agents at 100,000, and clients repeat the same few
        filters, so each answer is kept until the store changes (`_kept`)."""
        if not flt:
            return None
        return self._kept("filter " + json.dumps(flt, sort_keys=True), lambda: self._filtered(flt))

    def _kept(self, key: str, compute: Callable[[], _T]) -> _T:
        """`compute()`, kept for the last `_ANSWERS_KEPT` keys until this process or another one writes."""
        version = self.version()
        kept = self._answers.pop(key, None)
        if kept is None or kept[0] != version:
            kept = (version, compute())
        self._answers[key] = kept  # most recently used last
        while len(self._answers) > _ANSWERS_KEPT:
            del self._answers[next(iter(self._answers))]
        answer: _T = kept[1]  # the key names what was computed, so the kept value is compute()'s type
        return answer

    def _filtered(self, flt: Filter) -> frozenset[int]:
        matched: frozenset[int] | None = None
        for field, values in flt.items():
            sql = "SELECT agent_id FROM agent_values WHERE field = ? AND value IN ({ids})"
            ids = frozenset(int(r[0]) for r in self._rows_in(sql, values, field, plain=True))
            matched = ids if matched is None else matched & ids
            if not matched:
                return frozenset()
        return matched or frozenset()

    def facet(self, field: str, agent_ids: AbstractSet[int] | None) -> list[tuple[str, int]]:
        """Value counts of one field, over everyone or over the given agents, largest first (ties by value).
        Over everyone the answer is kept until the store changes (`_kept`): searches read the registry's own
        fields this way on every call (visibility, flags), and at 100,000 agents on PostgreSQL counting the
        tags of everyone took 55 ms an `explore_facets` call."""
        if agent_ids is None:
            return self._kept("facet " + field, lambda: self._counted(field, None))
        return self._counted(field, agent_ids)

    def _counted(self, field: str, agent_ids: AbstractSet[int] | None) -> list[tuple[str, int]]:
        counts: dict[str, int] = {}
        if agent_ids is None:
            rows = self._tuples("SELECT value, count(*) FROM agent_values WHERE field = ? GROUP BY value", (field,))
        else:
            sql = "SELECT value, count(*) FROM agent_values WHERE field = ? AND agent_id IN ({ids}) GROUP BY value"
            rows = self._rows_in(sql, agent_ids, field, plain=True)
        for value, n in rows:
            counts[value] = counts.get(value, 0) + int(n)
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))  # code point order is UTF-8 byte order

    def list_page(self, agent_ids: AbstractSet[int] | None, order: Order, offset: int, limit: int) -> tuple[list[StoredAgent], int]:
        """One page in a total order (the identifier breaks ties; no date sorts first, then oldest), and the
        number of matches."""
        clauses = ", ".join(
            [f"{self.COLUMNS[f]} {'DESC NULLS LAST' if desc else 'ASC NULLS FIRST'}" for f, desc in order]
            + [f"{self.COLUMNS['identifier']} ASC"]
        )
        if agent_ids is None:
            rows = self._query(f"SELECT * FROM agents ORDER BY {clauses} LIMIT ? OFFSET ?", (limit, offset))
            return _readable(rows), self.count()
        return _readable(self._page_of(agent_ids, clauses, offset, limit)), len(agent_ids)

    def unreadable(self, batch: int = 500) -> Iterator[tuple[str, str]]:
        """Every stored row a read cannot use, and why (`ard-mcp check`), in id order."""
        last = 0
        while rows := self._query("SELECT id, identifier, entry FROM agents WHERE id > ? ORDER BY id LIMIT ?", (last, batch)):
            for row in rows:
                problem = problem_of(row["entry"])[1]
                if problem is not None:
                    yield row["identifier"], problem
            last = rows[-1]["id"]

    # -- lexical --------------------------------------------------------------------------------
    def document_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        return {str(t): int(n) for t, n in self._rows_in("SELECT term, agents FROM term_agents WHERE term IN ({ids})", terms, plain=True)}

    def agent_terms(self, agent_ids: Sequence[int], db: Db | None = None) -> dict[int, AgentTerms]:
        """Each agent's lexical terms, and the terms of each of its tags and capabilities."""
        sql = "SELECT id, fts FROM agents WHERE id IN ({ids})"
        return {int(i): FtsDocument.packed(blob).terms() for i, blob in self._rows_in(sql, agent_ids, plain=True, db=db)}


def _readable(rows: Iterable[Any]) -> list[StoredAgent]:
    return [a for a in map(agent_of, rows) if a is not None]
