"""The source of truth: SQLite (WAL) holding entries as registered, their freshness, filterable values,
examples with their vectors, and an FTS5 index for the lexical signal.

Chroma holds only a derived copy of the example vectors for approximate nearest-neighbour search; it can
always be rebuilt from here (`ard-mcp reindex`) without running the model again.

Layout 2 (new stores) is sized for 100,000 agents: entries are zlib-compressed JSON, vectors are int8
with one float32 scale each (cosine 0.9999 to the model's), and the FTS index keeps no copy of its text
(its four columns are kept compressed beside the entry, which FTS5 needs to delete a document, and which
ranking reads as the agent's terms). A store made with layout 1 (JSON text, float16 vectors, FTS with
content, terms in plain columns) is read and written in its own layout.

Document frequencies live in `term_agents`, kept in step with every write: FTS5's own vocabulary table
counts them by reading each term's whole posting list, which cost 6-8 ms a query at 100,000 agents.

Every write and delete also appends the agent to `changes`, a feed that in-memory copies of the store
(`ard_mcp.resident`, in this process or another one sharing the file) follow to stay in step.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
import threading
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from ard_mcp.filters import Filter

SCHEMA_VERSION = "2"
log = logging.getLogger(__name__)

_SEPARATOR = "\x1f"  # between the FTS columns in `agents.fts`: never produced by the lexical terms
_IN_CHUNK = 900  # ids per IN list: under SQLite's limit on the parameters of one statement
_FILTERS_KEPT = 32
_CHANGES_KEPT = 100_000  # change-feed rows kept; a reader further behind than this reloads everything
_PRUNE_EVERY = 1_000
_READ_CHUNK = 20_000  # rows per fetch when reading every example

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
CREATE TABLE IF NOT EXISTS term_agents(term TEXT PRIMARY KEY, agents INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS changes(seq INTEGER PRIMARY KEY AUTOINCREMENT, agent_id INTEGER NOT NULL);
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

    def columns(self) -> tuple[str, str, str, str]:
        return (self.name, self.keywords, self.description, self.examples)

    def vocabulary(self) -> set[str]:
        return set(" ".join(self.columns()).split()) - {"|"}

    def terms(self) -> AgentTerms:
        """The keywords column holds one group of terms per tag or capability, `|`-separated."""
        return AgentTerms(" ".join(self.columns()), self.keywords)

    @classmethod
    def packed(cls, blob: bytes) -> FtsDocument:
        """Layout 2 keeps the four columns zlib-compressed in `agents.fts`."""
        return cls(*zlib.decompress(blob).decode().split(_SEPARATOR))

    def pack(self) -> bytes:
        return zlib.compress(_SEPARATOR.join(self.columns()).encode())

    def distinct(self) -> bytes:
        """What an in-memory copy keeps (`AgentRows.terms`): each term once and the keyword groups, uncompressed.
        A third of the four columns' length, so finding a query's terms in it is three times cheaper."""
        return f"{' '.join(self.vocabulary())}{_SEPARATOR}{self.keywords}".encode()


class TermText:
    """A space-separated list of terms (repeats allowed), asked `term in it` by substring search: ranking
    asks a dozen query terms of a hundred candidates, and building a set of each one's terms cost more."""

    __slots__ = ("_text",)

    def __init__(self, terms: str) -> None:
        self._text = f" {terms} "

    def __contains__(self, term: object) -> bool:
        return f" {term} " in self._text

    def any_of(self, terms: Iterable[str]) -> bool:
        return any(f" {t} " in self._text for t in terms)

    def present(self, finder: re.Pattern[str]) -> set[str]:
        """The terms of a `finder` (see `term_finder`) that occur here: one scan for all of a query's
        terms, where a substring search per term cost ~3 ms a query over a hundred candidates."""
        return set(finder.findall(self._text))


def term_finder(terms: Iterable[str]) -> re.Pattern[str]:
    """Matches any of `terms` as a whole term of a `TermText` (the lookahead leaves the next term's space);
    no terms match nothing."""
    alternatives = sorted({re.escape(t) for t in terms}, key=len, reverse=True)
    return re.compile(" (" + "|".join(alternatives) + ")(?= )" if alternatives else "(?!)")


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

    @classmethod
    def distinct(cls, raw: bytes) -> AgentTerms:
        """From `FtsDocument.distinct`."""
        vocabulary, keywords = raw.decode().split(_SEPARATOR)
        return cls(vocabulary, keywords)

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

    @classmethod
    def empty(cls) -> CandidateExamples:
        return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, bool), np.zeros((0, 0), np.float32))


@dataclass(frozen=True)
class AgentRows:
    """Some agents' examples (vectors encoded as stored) and lexical terms, in flat arrays grouped by agent:
    the search's in-memory copy of the store (`ard_mcp.resident`) is made of these. About 390 bytes an
    example and 800 an agent: 0.31 GB at 100,000 agents."""

    seq: int  # the change feed's newest entry when these were read
    agent_ids: np.ndarray  # (n,) ascending
    offsets: np.ndarray  # (n + 1,) agent i's examples are rows offsets[i]:offsets[i + 1]
    example_ids: np.ndarray  # (m,)
    is_description: np.ndarray  # (m,)
    vectors: np.ndarray  # (m, blob size) uint8, encoded as stored
    terms: bytes  # every agent's `FtsDocument.distinct()` back to back
    term_offsets: np.ndarray  # (n + 1,)

    def rows_of(self, agent_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The example rows of those of `agent_ids` (ascending) that are here, grouped in the same order,
        and the agent of each row."""
        found = self._positions(agent_ids)
        starts = self.offsets[found]
        sizes = self.offsets[found + 1] - starts
        rows = np.repeat(starts - np.cumsum(sizes) + sizes, sizes) + np.arange(int(sizes.sum()))
        return rows, np.repeat(self.agent_ids[found], sizes)

    def agent_terms(self, agent_ids: np.ndarray) -> dict[int, AgentTerms]:
        found = self._positions(agent_ids)
        return {int(self.agent_ids[i]): AgentTerms.distinct(self.terms[self.term_offsets[i] : self.term_offsets[i + 1]]) for i in found}

    def _positions(self, agent_ids: np.ndarray) -> np.ndarray:
        """Where those of `agent_ids` that are here sit (the others, e.g. deleted, are left out)."""
        if not len(self.agent_ids):
            return np.zeros(0, np.int64)
        positions = np.minimum(np.searchsorted(self.agent_ids, agent_ids), len(self.agent_ids) - 1)
        return positions[self.agent_ids[positions] == agent_ids]


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
        return self.decode_rows(np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), -1))

    def decode_rows(self, raw: np.ndarray) -> np.ndarray:
        """(n, dimension) float32 from an (n, blob size) uint8 matrix of encoded vectors."""
        if not self.compact:
            return np.ascontiguousarray(raw).view(np.float16).astype(np.float32)
        scales = np.ascontiguousarray(raw[:, :4]).view(np.float32)
        return raw[:, 4:].view(np.int8).astype(np.float32) * scales

    def decode(self, blob: bytes) -> np.ndarray:
        return self.decode_many([blob])[0]


class Store:
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
        with self._lock:
            self._conn.execute("PRAGMA busy_timeout=10000")  # processes sharing the store wait their turn to write
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_SCHEMA)  # IF NOT EXISTS throughout: a layout 1 store keeps its tables
            if self.meta("schema_version") is None:
                self.set_meta("schema_version", SCHEMA_VERSION)
        self._compact = self.meta("schema_version") != "1"
        self._vectors = _VectorCodec(self._compact)
        if self.meta("term_agents") is None:
            self._count_terms()

    def _count_terms(self) -> None:
        """Fill `term_agents` for a store made before it existed (once; 20 s at 100,000 agents)."""
        counts: Counter[str] = Counter()
        with self.transaction() as db:
            agents = db.execute("SELECT count(*) FROM agents").fetchone()[0]
            if agents:
                log.warning("counting the terms of %d agents once: this store predates its term counts", agents)
            for (agent_id,) in db.execute("SELECT id FROM agents"):
                counts.update(self._terms_of(db, agent_id))
            db.execute("DELETE FROM term_agents")
            db.executemany("INSERT INTO term_agents(term, agents) VALUES (?, ?)", counts.items())
            db.execute("INSERT INTO meta(key, value) VALUES ('term_agents', '1')")

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @property
    def compact(self) -> bool:
        """Layout 2, whose packed terms and int8 vectors an in-memory copy (`AgentRows`) can hold."""
        return self._compact

    def decode_vectors(self, raw: np.ndarray) -> np.ndarray:
        """Float32 vectors from rows of `AgentRows.vectors`."""
        return self._vectors.decode_rows(raw)

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
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start : start + _IN_CHUNK]
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
        columns = fts.columns()
        document = json.dumps(entry)
        stored_entry: str | bytes = zlib.compress(document.encode()) if self._compact else document
        fields: dict[str, Any] = {
            "entry": stored_entry, "content_hash": content_hash, "display_name": entry["displayName"], "type": entry["type"],
            "publisher": publisher, "updated_at": updated_at, "indexed_at": stamp, "vectors_pending": 1,
        }
        if self._compact:
            fields["fts"] = fts.pack()
        else:
            fields.update(terms=" ".join(sorted(fts.vocabulary())), keyword_terms=fts.keywords)
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
            self._count_change(db, fts.vocabulary(), +1)
            self._changed(db, agent_id)
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
            old = FtsDocument.packed(db.execute("SELECT fts FROM agents WHERE id = ?", (agent_id,)).fetchone()["fts"])
            self._count_change(db, old.vocabulary(), -1)
            db.execute("INSERT INTO agents_fts(agents_fts, rowid, name, keywords, description, examples) VALUES ('delete', ?, ?, ?, ?, ?)",
                       (agent_id, *old.columns()))
        else:
            self._count_change(db, self._terms_of(db, agent_id), -1)
            db.execute("DELETE FROM agents_fts WHERE rowid = ?", (agent_id,))
        db.execute("DELETE FROM examples WHERE agent_id = ?", (agent_id,))

    def _terms_of(self, db: sqlite3.Connection, agent_id: int) -> set[str]:
        """The distinct terms an agent is indexed under, from whichever column its layout keeps them in."""
        row = db.execute(f"SELECT {'fts' if self._compact else 'terms'} FROM agents WHERE id = ?", (agent_id,)).fetchone()
        return FtsDocument.packed(row[0]).vocabulary() if self._compact else set(row[0].split())

    @staticmethod
    def _count_change(db: sqlite3.Connection, terms: set[str], delta: int) -> None:
        db.executemany(
            "INSERT INTO term_agents(term, agents) VALUES (?, ?) ON CONFLICT(term) DO UPDATE SET agents = agents + excluded.agents",
            [(t, delta) for t in terms],
        )
        if delta < 0:
            db.executemany("DELETE FROM term_agents WHERE term = ? AND agents <= 0", [(t,) for t in terms])

    @staticmethod
    def _changed(db: sqlite3.Connection, agent_id: int) -> None:
        seq = db.execute("INSERT INTO changes(agent_id) VALUES (?)", (agent_id,)).lastrowid
        if seq is not None and seq % _PRUNE_EVERY == 0:
            db.execute("DELETE FROM changes WHERE seq <= ?", (seq - _CHANGES_KEPT,))

    def changes_since(self, seq: int) -> tuple[int, list[int]] | None:
        """The agents written or deleted after change `seq`, and the newest change; None when the feed no
        longer reaches back to `seq` (it keeps the last `_CHANGES_KEPT`), so the reader must read everything."""
        rows = self._tuples("SELECT seq, agent_id FROM changes WHERE seq > ? ORDER BY seq", (seq,))
        if rows and rows[0][0] != seq + 1:
            return None
        return (rows[-1][0] if rows else seq), sorted({agent for _, agent in rows})

    def read_rows(self, agent_ids: Sequence[int] | None = None) -> AgentRows:
        """The examples and distinct terms of some agents (layout 2), or of all of them, read consistently
        (one read transaction). Reading all of them (~10 s at 100,000 agents, most of it collecting each
        agent's distinct terms) uses a connection of its own, so requests are not held up by the lock."""
        assert self._compact, "layout 1 keeps no packed terms"
        if agent_ids is not None:
            with self._lock:
                return self._read_rows(self._conn, list(agent_ids))
        reader = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False, isolation_level=None)
        try:
            return self._read_rows(reader, None)
        finally:
            reader.close()

    @staticmethod
    def _read_rows(db: sqlite3.Connection, agent_ids: list[int] | None) -> AgentRows:
        ids = sorted(agent_ids) if agent_ids is not None else None
        blocks = [ids[i : i + _IN_CHUNK] for i in range(0, len(ids), _IN_CHUNK)] if ids is not None else [[]]
        cursor = db.cursor()
        cursor.row_factory = None

        def select(sql: str, column: str, block: list[int]) -> sqlite3.Cursor:
            where = "" if ids is None else f" WHERE {column} IN ({','.join('?' * len(block))})"
            return cursor.execute(sql.format(where=where), block)

        cursor.execute("BEGIN")
        try:
            seq = cursor.execute("SELECT coalesce(max(seq), 0) FROM changes").fetchone()[0]
            total = sum(select("SELECT count(*) FROM examples{where}", "agent_id", b).fetchone()[0] for b in blocks)
            columns = np.zeros((3, total), np.int64)  # agent id, example id, is description
            vectors: np.ndarray | None = None
            filled = 0
            term_ids: list[int] = []
            term_sizes: list[int] = [0]
            terms = bytearray()
            for block in blocks:
                select("SELECT agent_id, id, kind = 'description', vector FROM examples{where} ORDER BY agent_id, id", "agent_id", block)
                while chunk := cursor.fetchmany(_READ_CHUNK):
                    *fields, blobs = zip(*chunk, strict=True)
                    encoded = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(chunk), -1)
                    if vectors is None:  # preallocated: at 100,000 agents this is 0.23 GB, too much to hold twice
                        vectors = np.empty((total, encoded.shape[1]), np.uint8)
                    columns[:, filled : filled + len(chunk)] = fields
                    vectors[filled : filled + len(chunk)] = encoded
                    filled += len(chunk)
                for agent_id, packed in select("SELECT id, fts FROM agents{where} ORDER BY id", "id", block):
                    distinct = FtsDocument.packed(packed).distinct()
                    term_ids.append(agent_id)
                    terms += distinct
                    term_sizes.append(len(distinct))
        finally:
            cursor.execute("COMMIT")
        agents = np.array(term_ids, np.int64)
        return AgentRows(
            seq=seq,
            agent_ids=agents,
            offsets=np.searchsorted(columns[0], np.r_[agents, np.iinfo(np.int64).max]),
            example_ids=columns[1],
            is_description=columns[2].astype(bool),
            vectors=vectors if vectors is not None else np.zeros((0, 0), np.uint8),
            terms=bytes(terms),
            term_offsets=np.cumsum(term_sizes),
        )

    def delete(self, identifier: str) -> tuple[int, list[int]] | None:

        """Remove every trace of an agent; returns its id and example ids (for Chroma), or None if unknown."""
        with self.transaction() as db:
            row = db.execute("SELECT id FROM agents WHERE identifier = ?", (identifier,)).fetchone()
            if row is None:
                return None
            removed = [r["id"] for r in db.execute("SELECT id FROM examples WHERE agent_id = ?", (row["id"],))]
            self._delete_rows(db, row["id"])
            db.execute("DELETE FROM agents WHERE id = ?", (row["id"],))
            self._changed(db, row["id"])
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
        """All examples of the given agents, ordered by agent then example, vectors decoded in one go
        (ordered in numpy: an ORDER BY and `sqlite3.Row`s tripled the cost of this, the search's largest read)."""
        rows = self._rows_in("SELECT id, agent_id, kind = 'description', vector FROM examples WHERE agent_id IN ({ids})", agent_ids, plain=True)
        if not rows:
            return CandidateExamples.empty()
        ids, agents, descriptions, blobs = zip(*rows, strict=True)
        order = np.lexsort((np.array(ids, np.int64), np.array(agents, np.int64)))
        return CandidateExamples(
            ids=np.array(ids, np.int64)[order],
            agent_ids=np.array(agents, np.int64)[order],
            is_description=np.array(descriptions, bool)[order],
            vectors=self._vectors.decode_many([blobs[i] for i in order]),
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
            ids = frozenset(r[0] for r in self._rows_in("SELECT agent_id FROM agent_values WHERE field = ? AND value IN ({ids})", values, field, plain=True))
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
        for r in self._rows_in("SELECT value, count(*) AS n FROM agent_values WHERE field = ? AND agent_id IN ({ids}) GROUP BY value", agent_ids, field):
            counts[r["value"]] = counts.get(r["value"], 0) + r["n"]
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))

    def list_page(self, agent_ids: AbstractSet[int] | None, order: list[tuple[str, bool]], offset: int, limit: int) -> tuple[list[StoredAgent], int]:
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
        return dict(self._rows_in("SELECT term, agents FROM term_agents WHERE term IN ({ids})", terms, plain=True))

    def agent_terms(self, agent_ids: Sequence[int]) -> dict[int, AgentTerms]:
        """Each agent's lexical terms, and the terms of each of its tags and capabilities."""
        if self._compact:
            return {i: FtsDocument.packed(blob).terms() for i, blob in self._rows_in("SELECT id, fts FROM agents WHERE id IN ({ids})", agent_ids, plain=True)}
        return {i: AgentTerms(t, k) for i, t, k in self._rows_in("SELECT id, terms, keyword_terms FROM agents WHERE id IN ({ids})", agent_ids, plain=True)}

    def lexical(self, match: str, limit: int, weights: tuple[float, float, float, float]) -> list[tuple[int, float]]:
        """FTS5 BM25 over the four fields; returns (agent id, score) with higher meaning better."""
        rows = self._query(
            "SELECT rowid, -bm25(agents_fts, ?, ?, ?, ?) AS score FROM agents_fts WHERE agents_fts MATCH ? ORDER BY score DESC LIMIT ?",
            (*weights, match, limit),
        )
        return [(r["rowid"], float(r["score"])) for r in rows]
