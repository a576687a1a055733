"""The embedded store: SQLite (WAL) in the data directory, with an FTS5 index for BM25 candidates. The
tables and their migrations are `schema`; the queries it shares with the PostgreSQL store are `base`.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, ClassVar

from ard_mcp.index.lexical import match_expression
from ard_mcp.index.records import AgentRows, FtsDocument
from ard_mcp.index.store import schema
from ard_mcp.index.store.base import Store
from ard_mcp.index.store.db import Db
from ard_mcp.index.store.schema import index_text, unindex_text
from ard_mcp.index.store.snapshot import read_rows

# (store, its own commits then, the version then): what `SqliteStore.one_version` read, for this context only
_HELD: ContextVar[tuple[SqliteStore, int, tuple[int, int]] | None] = ContextVar("ard_mcp_sqlite_version", default=None)


class SqliteStore(Store):
    """One connection guarded by a lock: SQLite is fast enough that a pool would only add contention on two
    cores, and one writer is what WAL wants anyway."""

    COLUMNS: ClassVar[dict[str, str]] = {
        "displayName": "display_name COLLATE NOCASE",
        "identifier": "identifier",
        "updatedAt": "updated_at",
        "createdAt": "created_at",
        "type": "type",
        "publisher": "publisher",
    }

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        self._writes = 0  # commits through this connection (data_version counts only other connections')
        with self._lock:
            self._conn.execute("PRAGMA busy_timeout=10000")  # processes sharing the store wait their turn to write
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            schema.prepare(self._conn)

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.path)!r})"

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def _reading(self, *, plain: bool = False) -> Iterator[Db]:
        with self._lock:
            if not plain:
                yield self._conn
                return
            cursor = self._conn.cursor()
            cursor.row_factory = None  # on the search path, building `sqlite3.Row`s cost more than SQLite's work
            yield cursor

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            with self._immediate() as conn:
                yield conn
            self._writes += 1

    @contextmanager
    def _immediate(self) -> Iterator[sqlite3.Connection]:
        """A transaction that holds SQLite's write lock from its start (no deadlock upgrading a read)."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    @contextmanager
    def _snapshot(self) -> Iterator[Db]:
        with self._reading(plain=True) as cursor:  # holds the lock
            cursor.execute("BEGIN")
            try:
                yield cursor
            finally:
                cursor.execute("COMMIT")

    def _autocommit(self, sql: str, params: Sequence[Any] = ()) -> None:
        with self._lock:
            self._conn.execute(sql, params)

    def _bookkeeping(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self._immediate() as conn:
            conn.executemany(sql, rows)

    def version(self) -> tuple[int, int]:
        held = _HELD.get()
        if held is not None and held[0] is self and held[1] == self._writes:
            return held[2]
        with self._lock:
            return (self._conn.execute("PRAGMA data_version").fetchone()[0], self._writes)

    @contextmanager
    def one_version(self) -> Iterator[None]:
        """Within it, `version()` in this thread (this context) answers what it read on entry, until this process
        writes: a search asked it 7 times (the search copy twice, the flagged and demoted sets, the agent count,
        expiry, the federation check), each a turn of the connection's lock and a PRAGMA, and under 8 concurrent
        MCP searches py-spy found 8% of the serve process's samples there, most of it threads queueing for the lock.
        A search then answers from the store as it was when it began; another process's commit meanwhile is seen
        by the next one, as a commit just after it would be. Nested, the outer read holds."""
        held = _HELD.get()
        if held is not None and held[0] is self and held[1] == self._writes:
            yield
            return
        with self._lock:
            writes = self._writes
            token = _HELD.set((self, writes, (self._conn.execute("PRAGMA data_version").fetchone()[0], writes)))
        try:
            yield
        finally:
            _HELD.reset(token)

    def _index_text(self, db: Db, agent_id: int, fts: FtsDocument) -> None:
        index_text(db, agent_id, fts)

    def _unindex_text(self, db: Db, agent_id: int, old: FtsDocument) -> None:
        unindex_text(db, agent_id, old)

    def lexical(self, terms: Sequence[str], limit: int, weights: tuple[float, float, float, float]) -> list[tuple[int, float]]:
        expression = match_expression(list(terms))
        if expression is None:
            return []
        rows = self._tuples(
            "SELECT rowid, -bm25(agents_fts, ?, ?, ?, ?) AS score FROM agents_fts WHERE agents_fts MATCH ? "
            "ORDER BY score DESC, rowid LIMIT ?",
            (*weights, expression, limit),
        )
        return [(int(agent), float(score)) for agent, score in rows]

    def _page_of(self, agent_ids: AbstractSet[int], clauses: str, offset: int, limit: int) -> list[Any]:
        with self._lock:
            self._conn.execute("CREATE TEMP TABLE IF NOT EXISTS picked(id INTEGER PRIMARY KEY)")
            self._conn.execute("DELETE FROM picked")
            self._conn.executemany("INSERT INTO picked(id) VALUES (?)", [(i,) for i in agent_ids])
            return self._conn.execute(
                f"SELECT agents.* FROM agents JOIN picked ON picked.id = agents.id ORDER BY {clauses} LIMIT ? OFFSET ?", (limit, offset)
            ).fetchall()

    def _read_all_rows(self) -> AgentRows:
        """On a read-only connection of its own, so requests are not held up by the lock."""
        reader = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False, isolation_level=None)
        try:
            reader.execute("BEGIN")
            return read_rows(reader, None)
        finally:
            reader.close()
