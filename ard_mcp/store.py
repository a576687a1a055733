"""The source of truth: SQLite (WAL) holding entries as registered, their freshness, filterable values,
examples with their vectors, and an FTS5 index for the lexical signal.

Chroma holds only a derived copy of the example vectors for approximate nearest-neighbour search; it can
always be rebuilt from here (`ard-mcp reindex`) without running the model again.

Layout 2 (new stores) is sized for 100,000 agents: entries are zlib-compressed JSON, vectors are int8
with one float32 scale each (cosine 0.9999 to the model's), and the FTS index keeps no copy of its text
(its four columns are kept compressed beside the entry, which FTS5 needs to delete a document). A store
made with layout 1 (JSON text, float16 vectors, FTS with content) is read and written in its own layout.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import zlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from ard_mcp.filters import Filter

SCHEMA_VERSION = "2"
_SEPARATOR = "\x1f"  # between the FTS columns in `agents.fts`: never produced by the lexical terms
_IN_CHUNK = 900  # ids per IN list: under SQLite's limit on the parameters of one statement

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS agents(
    id INTEGER PRIMARY KEY,
    identifier TEXT NOT NULL UNIQUE,
    entry TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    display_name TEXT NOT NULL,
    type TEXT NOT NULL,
    publisher TEXT NOT NULL,
    updated_at TEXT,
    created_at TEXT NOT NULL,
    indexed_at TEXT NOT NULL,
    vectors_pending INTEGER NOT NULL DEFAULT 1,
    terms TEXT NOT NULL DEFAULT '',
    keyword_terms TEXT NOT NULL DEFAULT '',
    fts BLOB
);
CREATE TABLE IF NOT EXISTS agent_values(
    field TEXT NOT NULL, value TEXT NOT NULL, agent_id INTEGER NOT NULL,
    PRIMARY KEY(field, value, agent_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS agent_values_by_agent ON agent_values(agent_id);
CREATE TABLE IF NOT EXISTS examples(
    id INTEGER PRIMARY KEY,
    agent_id INTEGER NOT NULL,
    kind TEXT NOT NULL,
    label TEXT NOT NULL,
    text TEXT NOT NULL,
    vector BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS examples_by_agent ON examples(agent_id);
CREATE VIRTUAL TABLE IF NOT EXISTS agents_fts USING fts5(
    name, keywords, description, examples, content = '', tokenize = 'unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE IF NOT EXISTS agents_vocab USING fts5vocab(agents_fts, 'row');
"""

ORDERABLE = {"displayName": "display_name COLLATE NOCASE", "identifier": "identifier", "updatedAt": "updated_at", "createdAt": "created_at", "type": "type", "publisher": "publisher"}


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class StoredAgent:
    id: int
    identifier: str
    entry: dict[str, Any]
    content_hash: str
    updated_at: str | None
    created_at: str
    indexed_at: str


@dataclass(frozen=True)
class ExampleRow:
    id: int
    agent_id: int
    kind: str
    label: str
    text: str
    vector: np.ndarray


@dataclass(frozen=True)
class NewExample:
    kind: str
    label: str
    text: str
    vector: np.ndarray


@dataclass(frozen=True)
class FtsDocument:
    """An agent's lexical fields, each already a space-separated list of terms."""

    name: str
    keywords: str
    description: str
    examples: str

    def vocabulary(self) -> str:
        return " ".join(sorted(set(f"{self.name} {self.keywords} {self.description} {self.examples}".split()) - {"|"}))

    def keyword_vocabulary(self) -> str:
        """One group of terms per tag or capability, `|`-separated: the tag signal counts groups."""
        return self.keywords


class TermText:
    """A space-separated list of terms, asked `term in it` by substring search: ranking asks a dozen
    query terms of a hundred candidates, and building a set of each one's thousand terms cost more."""

    __slots__ = ("_text",)

    def __init__(self, terms: str) -> None:
        self._text = f" {terms} "

    def __contains__(self, term: object) -> bool:
        return f" {term} " in self._text

    def any_of(self, terms: Iterable[str]) -> bool:
        return any(f" {t} " in self._text for t in terms)


class AgentTerms:
    """An agent's whole vocabulary, and the terms of each of its tags / capabilities (in the entry's order)."""

    __slots__ = ("_groups", "_keyword_text", "_keywords", "vocabulary")

    def __init__(self, vocabulary: str, keyword_groups: str) -> None:
        self.vocabulary = TermText(vocabulary)
        self._groups = keyword_groups
        self._keyword_text = TermText(keyword_groups)
        self._keywords: list[TermText] | None = None

    @property
    def keywords(self) -> list[TermText]:
        if self._keywords is None:
            self._keywords = [TermText(g.strip()) for g in self._groups.split("|")] if self._groups else []
        return self._keywords

    def keywords_named(self, query: Iterable[str]) -> list[TermText]:
        """The keyword groups sharing a term with the query; most agents share none, found in one pass."""
        terms = list(query)
        return [k for k in self.keywords if k.any_of(terms)] if self._keyword_text.any_of(terms) else []


@dataclass(frozen=True)
class CandidateExamples:
    """The examples of a set of agents as arrays, grouped by agent (ascending), for scoring in one go."""

    ids: np.ndarray  # (m,) example ids
    agent_ids: np.ndarray  # (m,) non-decreasing
    is_description: np.ndarray  # (m,) the name + description example of its agent
    vectors: np.ndarray  # (m, dimension) float32


def _agent(row: sqlite3.Row) -> StoredAgent:
    raw = row["entry"]
    entry = json.loads(zlib.decompress(raw) if isinstance(raw, bytes) else raw)
    return StoredAgent(row["id"], row["identifier"], entry, row["content_hash"], row["updated_at"], row["created_at"], row["indexed_at"])


class _VectorCodec:
    """Layout 2: int8 components after one float32 scale (max |component| / 127). Layout 1: float16."""

    def __init__(self, compact: bool) -> None:
        self.compact = compact

    def encode(self, vector: np.ndarray) -> bytes:
        if not self.compact:
            return vector.astype(np.float16).tobytes()
        scale = np.float32(max(float(np.abs(vector).max()), 1e-12) / 127.0)
        return scale.tobytes() + np.round(vector / scale).astype(np.int8).tobytes()

    def decode_many(self, blobs: Sequence[bytes]) -> np.ndarray:
        """(n, dimension) float32 from n blobs, in one pass over their joined bytes."""
        joined = b"".join(blobs)
        if not self.compact:
            return np.frombuffer(joined, dtype=np.float16).reshape(len(blobs), -1).astype(np.float32)
        raw = np.frombuffer(joined, dtype=np.uint8).reshape(len(blobs), -1)
        scales = np.ascontiguousarray(raw[:, :4]).view(np.float32)
        return raw[:, 4:].view(np.int8).astype(np.float32) * scales

    def decode(self, blob: bytes) -> np.ndarray:
        return self.decode_many([blob])[0]


class Store:
    """All SQL lives here. One connection guarded by a lock: SQLite is fast enough that a pool would only
    add contention on two cores, and one writer is what WAL wants anyway."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        self._writes = 0  # commits through this connection (data_version counts only other connections')
        self._count: tuple[tuple[int, int], int] | None = None
        with self._lock:
            self._conn.execute("PRAGMA busy_timeout=10000")  # processes sharing the store wait their turn to write
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_SCHEMA)  # IF NOT EXISTS throughout: a layout 1 store keeps its tables
            if self.meta("schema_version") is None:
                self.set_meta("schema_version", SCHEMA_VERSION)
        self._compact = self.meta("schema_version") != "1"
        self._vectors = _VectorCodec(self._compact)

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

    def _rows_in(self, sql: str, ids: Iterable[Any], *params: Any) -> list[sqlite3.Row]:
        """Rows of `sql` for any number of ids (or other values): `{ids}` in it becomes an IN list, run in
        chunks because SQLite caps the parameters of one statement. `params` come before the ids."""
        ids = list(ids)
        rows: list[sqlite3.Row] = []
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start : start + _IN_CHUNK]
            rows += self._query(sql.format(ids=",".join("?" * len(chunk))), (*params, *chunk))
        return rows

    # -- meta -----------------------------------------------------------------------------------
    def meta(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0]["value"] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        with self._lock:
            self._conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))

    # -- agents ---------------------------------------------------------------------------------
    def get(self, identifier: str) -> StoredAgent | None:
        rows = self._query("SELECT * FROM agents WHERE identifier = ?", (identifier,))
        return _agent(rows[0]) if rows else None

    def agents_by_id(self, ids: Iterable[int]) -> dict[int, StoredAgent]:
        return {row["id"]: _agent(row) for row in self._rows_in("SELECT * FROM agents WHERE id IN ({ids})", ids)}

    def count(self) -> int:
        """The number of agents; every search needs it (IDF), and counting 100,000 rows costs milliseconds,
        so it is kept until this process or another one commits a change."""
        with self._lock:
            version = (self._conn.execute("PRAGMA data_version").fetchone()[0], self._writes)
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
        columns = (fts.name, fts.keywords, fts.description, fts.examples)
        document = json.dumps(entry)
        stored_entry: str | bytes = zlib.compress(document.encode()) if self._compact else document
        fields = {
            "entry": stored_entry, "content_hash": content_hash, "display_name": entry["displayName"], "type": entry["type"],
            "publisher": publisher, "updated_at": updated_at, "indexed_at": stamp, "vectors_pending": 1,
            "terms": fts.vocabulary(), "keyword_terms": fts.keyword_vocabulary(),
        }
        if self._compact:
            fields["fts"] = zlib.compress(_SEPARATOR.join(columns).encode())
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
                removed = [r["id"] for r in db.execute("SELECT id FROM examples WHERE agent_id = ?", (agent_id,))]
                self._delete_rows(db, agent_id)  # first: a contentless FTS index is told the old text to remove
                db.execute(f"UPDATE agents SET {', '.join(f'{k} = ?' for k in fields)} WHERE id = ?", [*fields.values(), agent_id])
            db.executemany("INSERT INTO agent_values(field, value, agent_id) VALUES (?, ?, ?)", [(f, v, agent_id) for f, v in values])
            db.execute("INSERT INTO agents_fts(rowid, name, keywords, description, examples) VALUES (?, ?, ?, ?, ?)", (agent_id, *columns))
            added = []
            for example in examples:
                cursor = db.execute(
                    "INSERT INTO examples(agent_id, kind, label, text, vector) VALUES (?, ?, ?, ?, ?)",
                    (agent_id, example.kind, example.label, example.text, self._vectors.encode(example.vector)),
                )
                assert cursor.lastrowid is not None
                added.append(cursor.lastrowid)
        return agent_id, removed, added

    def _delete_rows(self, db: sqlite3.Connection, agent_id: int) -> None:
        db.execute("DELETE FROM agent_values WHERE agent_id = ?", (agent_id,))
        if self._compact:
            stored = db.execute("SELECT fts FROM agents WHERE id = ?", (agent_id,)).fetchone()["fts"]
            columns = zlib.decompress(stored).decode().split(_SEPARATOR)
            db.execute("INSERT INTO agents_fts(agents_fts, rowid, name, keywords, description, examples) VALUES ('delete', ?, ?, ?, ?, ?)",
                       (agent_id, *columns))
        else:
            db.execute("DELETE FROM agents_fts WHERE rowid = ?", (agent_id,))
        db.execute("DELETE FROM examples WHERE agent_id = ?", (agent_id,))

    def delete(self, identifier: str) -> tuple[int, list[int]] | None:
        """Remove every trace of an agent; returns its id and example ids (for Chroma), or None if unknown."""
        with self.transaction() as db:
            row = db.execute("SELECT id FROM agents WHERE identifier = ?", (identifier,)).fetchone()
            if row is None:
                return None
            removed = [r["id"] for r in db.execute("SELECT id FROM examples WHERE agent_id = ?", (row["id"],))]
            self._delete_rows(db, row["id"])
            db.execute("DELETE FROM agents WHERE id = ?", (row["id"],))
        return row["id"], removed

    def mark_vectors_done(self, agent_ids: Iterable[int]) -> None:
        with self.transaction() as db:
            db.executemany("UPDATE agents SET vectors_pending = 0 WHERE id = ?", [(i,) for i in agent_ids])

    def pending_agents(self) -> list[int]:
        return [r["id"] for r in self._query("SELECT id FROM agents WHERE vectors_pending = 1")]

    def mark_all_pending(self) -> None:
        with self._lock:
            self._conn.execute("UPDATE agents SET vectors_pending = 1")

    # -- examples -------------------------------------------------------------------------------
    def examples_of(self, agent_ids: Iterable[int]) -> list[ExampleRow]:
        rows = self._rows_in("SELECT * FROM examples WHERE agent_id IN ({ids})", agent_ids)
        vectors = self._vectors.decode_many([r["vector"] for r in rows]) if rows else []
        return [ExampleRow(r["id"], r["agent_id"], r["kind"], r["label"], r["text"], v) for r, v in zip(rows, vectors, strict=True)]

    def candidate_examples(self, agent_ids: Sequence[int]) -> CandidateExamples:
        """All examples of the given agents (ascending ids), ordered by agent then example, vectors decoded in one go."""
        rows = self._rows_in(
            "SELECT id, agent_id, kind = 'description' AS d, vector FROM examples WHERE agent_id IN ({ids}) ORDER BY agent_id, id", agent_ids
        )
        if not rows:
            return CandidateExamples(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, bool), np.zeros((0, 0), np.float32))
        vectors = self._vectors.decode_many([r["vector"] for r in rows])
        return CandidateExamples(
            ids=np.fromiter((r["id"] for r in rows), np.int64, len(rows)),
            agent_ids=np.fromiter((r["agent_id"] for r in rows), np.int64, len(rows)),
            is_description=np.fromiter((r["d"] for r in rows), bool, len(rows)),
            vectors=vectors,
        )

    def example_texts(self, example_ids: Sequence[int]) -> dict[int, tuple[str, str, str]]:
        """(kind, label, text) of some examples: what evidence shows for the page being returned."""
        if not example_ids:
            return {}
        rows = self._query(f"SELECT id, kind, label, text FROM examples WHERE id IN ({','.join('?' * len(example_ids))})", list(example_ids))
        return {r["id"]: (r["kind"], r["label"], r["text"]) for r in rows}

    def vectors_by_text(self, agent_id: int) -> dict[str, np.ndarray]:
        """An agent's current vectors by text, so re-registering re-embeds only the texts that changed."""
        return {r["text"]: self._vectors.decode(r["vector"]) for r in self._query("SELECT text, vector FROM examples WHERE agent_id = ?", (agent_id,))}

    # -- filters, facets, listing ---------------------------------------------------------------
    def filter_agents(self, flt: Filter) -> set[int] | None:
        """Agents matching every key (OR within a key); None means no filter, i.e. everyone."""
        if not flt:
            return None
        matched: set[int] | None = None
        for field, values in flt.items():
            rows = self._rows_in("SELECT agent_id FROM agent_values WHERE field = ? AND value IN ({ids})", values, field)
            ids = {r["agent_id"] for r in rows}
            matched = ids if matched is None else matched & ids
            if not matched:
                return set()
        return matched

    def facet(self, field: str, agent_ids: set[int] | None) -> list[tuple[str, int]]:
        """Value counts of one field, over everyone or over the given agents, largest first."""
        if agent_ids is None:
            rows = self._query(
                "SELECT value, count(*) AS n FROM agent_values WHERE field = ? GROUP BY value ORDER BY n DESC, value", (field,)
            )
            return [(r["value"], r["n"]) for r in rows]
        counts: dict[str, int] = {}
        for r in self._rows_in("SELECT value, count(*) AS n FROM agent_values WHERE field = ? AND agent_id IN ({ids}) GROUP BY value", agent_ids, field):
            counts[r["value"]] = counts.get(r["value"], 0) + r["n"]
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))

    def list_page(self, agent_ids: set[int] | None, order: list[tuple[str, bool]], offset: int, limit: int) -> tuple[list[StoredAgent], int]:
        """One page in a total order (the identifier breaks ties), and the number of matches."""
        clauses = [f"{ORDERABLE[f]} {'DESC' if desc else 'ASC'}" for f, desc in order] + ["identifier ASC"]
        if agent_ids is None:
            total = self.count()
            rows = self._query(f"SELECT * FROM agents ORDER BY {', '.join(clauses)} LIMIT ? OFFSET ?", (limit, offset))
            return [_agent(r) for r in rows], total
        with self._lock:
            self._conn.execute("CREATE TEMP TABLE IF NOT EXISTS picked(id INTEGER PRIMARY KEY)")
            self._conn.execute("DELETE FROM picked")
            self._conn.executemany("INSERT INTO picked(id) VALUES (?)", [(i,) for i in agent_ids])
            rows = self._conn.execute(
                f"SELECT agents.* FROM agents JOIN picked ON picked.id = agents.id ORDER BY {', '.join(clauses)} LIMIT ? OFFSET ?", (limit, offset)
            ).fetchall()
        return [_agent(r) for r in rows], len(agent_ids)

    def iter_examples(self, batch: int = 2000) -> Iterator[list[tuple[int, int, np.ndarray]]]:
        """Every (example id, agent id, vector) in id order, in batches: what a rebuilt vector index needs."""
        last = 0
        while True:
            rows = self._query("SELECT id, agent_id, vector FROM examples WHERE id > ? ORDER BY id LIMIT ?", (last, batch))
            if not rows:
                return
            yield [(r["id"], r["agent_id"], v) for r, v in zip(rows, self._vectors.decode_many([r["vector"] for r in rows]), strict=True)]
            last = rows[-1]["id"]

    # -- lexical --------------------------------------------------------------------------------
    def document_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        if not terms:
            return {}
        rows = self._query(f"SELECT term, doc FROM agents_vocab WHERE term IN ({','.join('?' * len(terms))})", list(terms))
        return {r["term"]: int(r["doc"]) for r in rows}

    def agent_terms(self, agent_ids: Sequence[int]) -> dict[int, AgentTerms]:
        """Each agent's lexical terms, and the terms of each of its tags and capabilities."""
        return {r["id"]: AgentTerms(r["terms"], r["keyword_terms"])
                for r in self._rows_in("SELECT id, terms, keyword_terms FROM agents WHERE id IN ({ids})", agent_ids)}

    def lexical(self, match: str, limit: int, weights: tuple[float, float, float, float]) -> list[tuple[int, float]]:
        """FTS5 BM25 over the four fields; returns (agent id, score) with higher meaning better."""
        rows = self._query(
            "SELECT rowid, -bm25(agents_fts, ?, ?, ?, ?) AS score FROM agents_fts WHERE agents_fts MATCH ? ORDER BY score DESC LIMIT ?",
            (*weights, match, limit),
        )
        return [(r["rowid"], float(r["score"])) for r in rows]
