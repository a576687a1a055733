"""The source of truth: SQLite (WAL) holding entries as registered, their freshness, filterable values,
examples with their vectors, an FTS5 index for the lexical signal, term counts and a change feed. The
tables and their migrations are `schema`.

Chroma holds only a derived copy of the example vectors for approximate nearest-neighbour search; it can
always be rebuilt from here (`ard-mcp reindex`) without running the model again.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import zlib
from collections.abc import Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from ard_mcp.formats.media_types import canonical_type
from ard_mcp.index.filter_values import Filter
from ard_mcp.index.records import (
    AgentRows,
    AgentTerms,
    CandidateExamples,
    ExampleRow,
    FtsDocument,
    NewExample,
    Order,
    StoredAgent,
    decode_blobs,
    encode_vector,
)
from ard_mcp.index.store import schema, writes
from ard_mcp.index.store.side_tables import SideTables
from ard_mcp.index.store.snapshot import IN_CHUNK, read_rows

_FILTERS_KEPT = 32
_COLUMNS = {
    "displayName": "display_name COLLATE NOCASE",
    "identifier": "identifier",
    "updatedAt": "updated_at",
    "createdAt": "created_at",
    "type": "type",
    "publisher": "publisher",
}  # the SQL of each of `records.ORDERABLE`


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _agent(row: sqlite3.Row) -> StoredAgent:
    entry = json.loads(zlib.decompress(row["entry"]))
    return StoredAgent(row["id"], row["identifier"], entry, row["content_hash"], row["updated_at"], row["created_at"], row["indexed_at"])


class Store(SideTables):
    """All SQL lives here. One connection guarded by a lock: SQLite is fast enough that a pool would only
    add contention on two cores, and one writer is what WAL wants anyway."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._filters: dict[str, tuple[tuple[int, int], frozenset[int]]] = {}
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        self._writes = 0  # commits through this connection (data_version counts only other connections')
        self._count: tuple[tuple[int, int], int] | None = None
        self._ids: tuple[tuple[int, int], frozenset[int]] | None = None
        with self._lock:
            self._conn.execute("PRAGMA busy_timeout=10000")  # processes sharing the store wait their turn to write
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            schema.prepare(self._conn)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """All-or-nothing writes: a failed registration leaves no half-written rows behind."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
            self._writes += 1

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def _tuples(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows as plain tuples: on the search path, building `sqlite3.Row`s cost more than SQLite's work."""
        with self._lock:
            cursor = self._conn.cursor()
            cursor.row_factory = None
            return cursor.execute(sql, params).fetchall()

    def _rows_in(self, sql: str, ids: Iterable[Any], *params: Any, plain: bool = False) -> list[Any]:
        """Rows of `sql` for any number of ids (or other values): `{ids}` in it becomes an IN list, run in
        chunks because SQLite caps the parameters of one statement. `params` come before the ids."""
        ids = list(ids)
        run = self._tuples if plain else self._query
        rows: list[Any] = []
        for start in range(0, len(ids), IN_CHUNK):
            chunk = ids[start : start + IN_CHUNK]
            rows += run(sql.format(ids=",".join("?" * len(chunk))), (*params, *chunk))
        return rows

    def version(self) -> tuple[int, int]:
        """Changes whenever this process or another one commits, so derived answers can be kept until then."""
        with self._lock:
            return (self._conn.execute("PRAGMA data_version").fetchone()[0], self._writes)

    # -- meta -----------------------------------------------------------------------------------
    def meta(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0]["value"] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        with self._lock:
            self._conn.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value)
            )

    # -- agents ---------------------------------------------------------------------------------
    def get(self, identifier: str) -> StoredAgent | None:
        rows = self._query("SELECT * FROM agents WHERE identifier = ?", (identifier,))
        return _agent(rows[0]) if rows else None

    def agents_by_id(self, ids: Iterable[int]) -> dict[int, StoredAgent]:
        return {row["id"]: _agent(row) for row in self._rows_in("SELECT * FROM agents WHERE id IN ({ids})", ids)}

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
        with self._lock:
            version = self.version()
            if self._count is None or self._count[0] != version:
                self._count = (version, int(self._conn.execute("SELECT count(*) FROM agents").fetchone()[0]))
            return self._count[1]

    def write(
        self,
        entry: dict[str, Any],
        content_hash: str,
        publisher: str,
        updated_at: str | None,
        values: set[tuple[str, str]],
        fts: FtsDocument,
        examples: list[NewExample],
    ) -> tuple[int, list[int], list[int]]:
        """Insert or replace one agent with all its rows; returns (agent id, removed and added example ids).

        The agent is marked `vectors_pending` in the same transaction, so a crash before Chroma has the
        new vectors is repaired at the next start instead of leaving the two stores disagreeing."""
        stamp = now_iso()
        fields: dict[str, Any] = {
            "entry": zlib.compress(json.dumps(entry).encode()),
            "content_hash": content_hash,
            "display_name": entry["displayName"],
            "type": canonical_type(entry["type"]),  # listings order equivalent spellings as one type
            "publisher": publisher,
            "updated_at": updated_at,
            "indexed_at": stamp,
            "vectors_pending": 1,
            "fts": fts.pack(),
        }
        with self.transaction() as db:
            row = db.execute("SELECT id FROM agents WHERE identifier = ?", (entry["identifier"],)).fetchone()
            if row is None:
                fields.update(identifier=entry["identifier"], created_at=stamp)
                agent_id = db.execute(
                    f"INSERT INTO agents({', '.join(fields)}) VALUES ({', '.join('?' * len(fields))})", list(fields.values())
                ).lastrowid
                assert agent_id is not None
                removed: list[int] = []
            else:
                agent_id = row["id"]
                removed = writes.delete_dependents(db, agent_id)  # first: a contentless FTS index is told the old text to remove
                db.execute(f"UPDATE agents SET {', '.join(f'{k} = ?' for k in fields)} WHERE id = ?", [*fields.values(), agent_id])
            db.executemany("INSERT INTO agent_values(field, value, agent_id) VALUES (?, ?, ?)", [(f, v, agent_id) for f, v in values])
            db.execute(
                "INSERT INTO agents_fts(rowid, name, keywords, description, examples) VALUES (?, ?, ?, ?, ?)", (agent_id, *fts.columns())
            )
            writes.count_change(db, fts.vocabulary(), +1)
            writes.note_change(db, agent_id)
            added = []
            for example in examples:
                cursor = db.execute(
                    "INSERT INTO examples(agent_id, kind, label, text, vector) VALUES (?, ?, ?, ?, ?)",
                    (agent_id, example.kind, example.label, example.text, encode_vector(example.vector)),
                )
                assert cursor.lastrowid is not None
                added.append(cursor.lastrowid)
        return agent_id, removed, added

    def delete(self, identifier: str) -> tuple[int, list[int]] | None:
        """Remove every trace of an agent; returns its id and example ids (for Chroma), or None if unknown."""
        with self.transaction() as db:
            row = db.execute("SELECT id FROM agents WHERE identifier = ?", (identifier,)).fetchone()
            if row is None:
                return None
            removed = writes.delete_agent(db, row["id"])
        return row["id"], removed

    def mark_vectors_done(self, agent_ids: Iterable[int]) -> None:
        with self.transaction() as db:
            db.executemany("UPDATE agents SET vectors_pending = 0 WHERE id = ?", [(i,) for i in agent_ids])

    def pending_agents(self) -> list[int]:
        return [r["id"] for r in self._query("SELECT id FROM agents WHERE vectors_pending = 1")]

    def mark_all_pending(self) -> None:
        with self._lock:
            self._conn.execute("UPDATE agents SET vectors_pending = 1")

    # -- the change feed and bulk reads (for the search's in-memory copy) -------------------------
    def changes_since(self, seq: int) -> tuple[int, list[int]] | None:
        """The agents written or deleted after change `seq`, and the newest change; None when the feed no
        longer reaches back to `seq` (it keeps the last `writes.CHANGES_KEPT`), so the reader must read everything."""
        rows = self._tuples("SELECT seq, agent_id FROM changes WHERE seq > ? ORDER BY seq", (seq,))
        if rows and rows[0][0] != seq + 1:
            return None
        return (rows[-1][0] if rows else seq), sorted({agent for _, agent in rows})

    def read_rows(self, agent_ids: Sequence[int] | None = None) -> AgentRows:
        """The examples and distinct terms of some agents, or of all of them, read consistently. Reading
        all of them (~10 s at 100,000 agents, most of it collecting each agent's distinct terms) uses a
        connection of its own, so requests are not held up by the lock."""
        if agent_ids is not None:
            with self._lock:
                return read_rows(self._conn, list(agent_ids))
        reader = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False, isolation_level=None)
        try:
            return read_rows(reader, None)
        finally:
            reader.close()

    # -- examples -------------------------------------------------------------------------------
    def examples_of(self, agent_ids: Iterable[int]) -> list[ExampleRow]:
        rows = self._rows_in("SELECT * FROM examples WHERE agent_id IN ({ids})", agent_ids)
        if not rows:
            return []
        vectors = decode_blobs([r["vector"] for r in rows])
        return [ExampleRow(r["id"], r["agent_id"], r["kind"], r["label"], r["text"], v) for r, v in zip(rows, vectors, strict=True)]

    def candidate_examples(self, agent_ids: Sequence[int]) -> CandidateExamples:
        """All examples of the given agents, ordered by agent then example, vectors decoded in one go
        (ordered in numpy: an ORDER BY and `sqlite3.Row`s tripled the cost of this, the search's largest read)."""
        rows = self._rows_in(
            "SELECT id, agent_id, kind = 'description', vector FROM examples WHERE agent_id IN ({ids})", agent_ids, plain=True
        )
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
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                return self.candidate_examples(agent_ids), self.agent_terms(agent_ids)
            finally:
                self._conn.execute("COMMIT")

    def example_texts(self, example_ids: Sequence[int]) -> dict[int, tuple[str, str, str]]:
        """(kind, label, text) of some examples: what evidence shows for the page being returned."""
        rows = self._rows_in("SELECT id, kind, label, text FROM examples WHERE id IN ({ids})", example_ids)
        return {r["id"]: (r["kind"], r["label"], r["text"]) for r in rows}

    def vectors_by_text(self, agent_id: int) -> dict[str, np.ndarray]:
        """An agent's current vectors by text, so re-registering re-embeds only the texts that changed."""
        rows = self._query("SELECT text, vector FROM examples WHERE agent_id = ?", (agent_id,))
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
        filters, so each answer is kept (for the last `_FILTERS_KEPT` filters) until the store changes."""
        if not flt:
            return None
        key = json.dumps(flt, sort_keys=True)
        version = self.version()
        kept = self._filters.pop(key, None)
        if kept is None or kept[0] != version:
            kept = (version, self._filtered(flt))
        self._filters[key] = kept  # most recently used last
        while len(self._filters) > _FILTERS_KEPT:
            del self._filters[next(iter(self._filters))]
        return kept[1]

    def _filtered(self, flt: Filter) -> frozenset[int]:
        matched: frozenset[int] | None = None
        for field, values in flt.items():
            sql = "SELECT agent_id FROM agent_values WHERE field = ? AND value IN ({ids})"
            ids = frozenset(r[0] for r in self._rows_in(sql, values, field, plain=True))
            matched = ids if matched is None else matched & ids
            if not matched:
                return frozenset()
        return matched or frozenset()

    def facet(self, field: str, agent_ids: AbstractSet[int] | None) -> list[tuple[str, int]]:
        """Value counts of one field, over everyone or over the given agents, largest first."""
        if agent_ids is None:
            rows = self._query(
                "SELECT value, count(*) AS n FROM agent_values WHERE field = ? GROUP BY value ORDER BY n DESC, value", (field,)
            )
            return [(r["value"], r["n"]) for r in rows]
        counts: dict[str, int] = {}
        sql = "SELECT value, count(*) AS n FROM agent_values WHERE field = ? AND agent_id IN ({ids}) GROUP BY value"
        for r in self._rows_in(sql, agent_ids, field):
            counts[r["value"]] = counts.get(r["value"], 0) + r["n"]
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))

    def list_page(self, agent_ids: AbstractSet[int] | None, order: Order, offset: int, limit: int) -> tuple[list[StoredAgent], int]:
        """One page in a total order (the identifier breaks ties), and the number of matches."""
        clauses = [f"{_COLUMNS[f]} {'DESC' if desc else 'ASC'}" for f, desc in order] + ["identifier ASC"]
        if agent_ids is None:
            total = self.count()
            rows = self._query(f"SELECT * FROM agents ORDER BY {', '.join(clauses)} LIMIT ? OFFSET ?", (limit, offset))
            return [_agent(r) for r in rows], total
        with self._lock:
            self._conn.execute("CREATE TEMP TABLE IF NOT EXISTS picked(id INTEGER PRIMARY KEY)")
            self._conn.execute("DELETE FROM picked")
            self._conn.executemany("INSERT INTO picked(id) VALUES (?)", [(i,) for i in agent_ids])
            rows = self._conn.execute(
                f"SELECT agents.* FROM agents JOIN picked ON picked.id = agents.id ORDER BY {', '.join(clauses)} LIMIT ? OFFSET ?",
                (limit, offset),
            ).fetchall()
        return [_agent(r) for r in rows], len(agent_ids)

    # -- lexical --------------------------------------------------------------------------------
    def document_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        return dict(self._rows_in("SELECT term, agents FROM term_agents WHERE term IN ({ids})", terms, plain=True))

    def agent_terms(self, agent_ids: Sequence[int]) -> dict[int, AgentTerms]:
        """Each agent's lexical terms, and the terms of each of its tags and capabilities."""
        return {
            i: FtsDocument.packed(blob).terms()
            for i, blob in self._rows_in("SELECT id, fts FROM agents WHERE id IN ({ids})", agent_ids, plain=True)
        }

    def lexical(self, match: str, limit: int, weights: tuple[float, float, float, float]) -> list[tuple[int, float]]:
        """FTS5 BM25 over the four fields; returns (agent id, score) with higher meaning better."""
        rows = self._query(
            "SELECT rowid, -bm25(agents_fts, ?, ?, ?, ?) AS score FROM agents_fts WHERE agents_fts MATCH ? ORDER BY score DESC LIMIT ?",
            (*weights, match, limit),
        )
        return [(r["rowid"], float(r["score"])) for r in rows]
