"""The networked store: PostgreSQL, for registries that run many ard-mcp processes on many machines.

It runs the same queries as the embedded store (`base`) over a psycopg 3 connection pool, and fills the
engine hooks the PostgreSQL way:
- **one writer at a time**: every write transaction takes one advisory lock first, as SQLite's BEGIN
  IMMEDIATE does, so the change feed is numbered in commit order without gaps and a reader that has
  seen change n has seen every change before it;
- **noticing other processes' writes**: each write also sends NOTIFY, and a listening connection counts
  them; that count is the store's `version`, so kept answers (filters, counts, the search's in-memory copy)
  are dropped as soon as the notification arrives (a few milliseconds on a LAN; `tests/test_postgres.py`
  measures it across three processes);
- **BM25 candidates**: the query terms' `postings` rows (each term's count per field and the agent's
  token count, all in the primary key's index), scored in the server with FTS5's own formula (k1 1.2,
  b 0.75, its IDF and its field weights), so both stores pick the same candidates (`lexical`). An
  earlier SQL version joined `agents` for the token counts, a scan that grew with the catalog (4.8 ms
  at 2,000 agents against 2.6 ms for the index read and scored in numpy).
Tokens are folded as FTS5's unicode61 tokenizer does (lower case, diacritics removed).
"""

from __future__ import annotations

import itertools
import logging
import selectors
import threading
import time
import unicodedata
from collections.abc import Iterator, Sequence
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, ClassVar
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg.rows import RowMaker
from psycopg_pool import ConnectionPool, PoolTimeout

from ard_mcp.errors import StoreUnavailable
from ard_mcp.index.records import AgentRows, FtsDocument
from ard_mcp.index.store import pg_schema
from ard_mcp.index.store.base import Store
from ard_mcp.index.store.db import Db
from ard_mcp.index.store.snapshot import read_rows

log = logging.getLogger(__name__)

CHANNEL = "ard_mcp_changes"
WRITE_LOCK = 0x6172_645F_6D63_7001  # pg_advisory_xact_lock key every write transaction takes
_K1, _B = 1.2, 0.75  # FTS5's bm25() constants
DOWN_WAIT = 1.0  # seconds a call waits for a connection while the server is known to be unreachable
_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _ended(conn: psycopg.Connection[Any]) -> bool:
    """Whether the server ended this idle connection, found without a round trip (every store call would pay
    one): an idle connection has nothing to read, so data (the server's "terminating connection" error) or
    end of file on its socket means the server restarted, failed over or closed the session. A connection
    already closed counts as ended too (its socket is gone), so it goes back to the pool to be dropped."""
    if conn.closed:
        return True
    with selectors.DefaultSelector() as selector:
        selector.register(conn.fileno(), selectors.EVENT_READ)
        return bool(selector.select(0))


@lru_cache(maxsize=256)
def _dialect(sql: str) -> str:
    """`?` placeholders as psycopg's `%s` (the shared SQL has no other `?` or `%`)."""
    return sql.replace("?", "%s")


@lru_cache(maxsize=1 << 16)
def fold(term: str) -> str:
    """A term as FTS5's unicode61 tokenizer (remove_diacritics 2) indexes it: lower case, no diacritics."""
    return "".join(c for c in unicodedata.normalize("NFD", term.lower()) if not unicodedata.combining(c))


def field_counts(fts: FtsDocument) -> tuple[dict[str, list[int]], int]:
    """Each folded term's count in each of the four fields, and the document's token count (`|` separates
    keyword groups and is no token, as for FTS5)."""
    counts: dict[str, list[int]] = {}
    tokens = 0
    for field, column in enumerate(fts.columns()):
        for term in column.split():
            if term == "|":
                continue
            counts.setdefault(fold(term), [0, 0, 0, 0])[field] += 1
            tokens += 1
    return counts, tokens


class _Row(tuple[Any, ...]):
    """A row read by name or by position, as `sqlite3.Row` is."""

    names: ClassVar[dict[str, int]] = {}

    def __getitem__(self, key: Any) -> Any:
        return tuple.__getitem__(self, self.names[key] if isinstance(key, str) else key)


def _named_rows(cursor: Any) -> RowMaker[_Row]:
    names = {column.name: i for i, column in enumerate(cursor.description or ())}
    return type("Row", (_Row,), {"names": names})  # type: ignore[return-value]


def _params(params: Sequence[Any]) -> Sequence[Any] | None:
    """PostgreSQL text cannot hold NUL, which SQLite's can. Nothing stored has one (registration removes
    control characters), so a NUL in a value looked up becomes U+FFFD: it still matches nothing, as in
    SQLite, instead of failing the statement (the REST fuzzer sent one in an identifier)."""
    if not params:
        return None
    return [_text(p) for p in params]


def _text(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd") if "\x00" in value else value
    if isinstance(value, list):
        return [_text(v) for v in value]
    return value


class _PgDb:
    """A psycopg cursor speaking the shared SQL (`base.Db`)."""

    def __init__(self, cursor: psycopg.Cursor[Any]) -> None:
        self.cursor = cursor

    def execute(self, sql: str, params: Sequence[Any] = ()) -> psycopg.Cursor[Any]:
        return self.cursor.execute(_dialect(sql), _params(params))

    def executemany(self, sql: str, rows: Any) -> psycopg.Cursor[Any]:
        rows = [_params(row) for row in rows]
        if rows:
            self.cursor.executemany(_dialect(sql), rows)
        return self.cursor


class _StreamingDb:
    """Each statement on a server-side cursor of its own, so reading every example streams instead of
    holding ~0.25 GB of rows at once (inside the transaction the caller holds)."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn
        self._names = (f"rows_{i}" for i in itertools.count())
        self._open: psycopg.ServerCursor[Any] | None = None

    def execute(self, sql: str, params: Sequence[Any] = ()) -> psycopg.ServerCursor[Any]:
        if self._open is not None:
            self._open.close()
        self._open = self._conn.cursor(name=next(self._names), binary=True)
        self._open.itersize = 20_000
        return self._open.execute(_dialect(sql), _params(params))

    def executemany(self, sql: str, rows: Any) -> None:
        raise TypeError("a read-only stream")


def redacted(url: str) -> str:
    """The URL with its password left out, for logs and errors."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


class PostgresStore(Store):
    COLUMNS: ClassVar[dict[str, str]] = {
        "displayName": f"translate(display_name, '{_UPPER}', '{_UPPER.lower()}')",  # SQLite's NOCASE folds ASCII only
        "identifier": "identifier",
        "updatedAt": "updated_at",
        "createdAt": "created_at",
        "type": "type",
        "publisher": "publisher",
    }

    def __init__(self, url: str, *, pool_size: int = 8, connect_timeout: float = 10.0) -> None:
        super().__init__()
        self.url = url
        self._writes = 0
        self._heard = 0  # notifications of commits (this process's and others'), counted by the listener
        self._totals: tuple[Any, tuple[int, float]] | None = None
        self._closed = threading.Event()
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=int(connect_timeout)) as conn:
                pg_schema.prepare(conn)
        except psycopg.Error as exc:
            raise StoreUnavailable(f"cannot open the PostgreSQL store at {redacted(url)}: {str(exc).strip()}") from None
        self._pool = ConnectionPool(
            url, min_size=1, max_size=pool_size, kwargs={"autocommit": True}, timeout=connect_timeout, open=True, name="ard-mcp"
        )
        self._listening = threading.Event()
        self._listener = threading.Thread(target=self._listen, name="ard-mcp-store-listener", daemon=True)
        self._listener.start()
        self._listening.wait(connect_timeout)

    def __repr__(self) -> str:
        return f"PostgresStore({redacted(self.url)!r})"

    def close(self) -> None:
        self._closed.set()
        self._listener.join(timeout=5)
        self._pool.close()

    # -- connections ------------------------------------------------------------------------------
    def _live_connection(self) -> psycopg.Connection[Any]:
        """A pooled connection the server has not ended. Dead ones are closed, so the pool drops them and
        opens new ones. Handing them out instead, each of the next searches after a restart of the server
        failed (503) until every pooled connection had been tried; psycopg_pool's own `check` would find
        them too, but it sleeps with backoff after each (1, 2, 4 s...), so a pool of stale connections
        took longer than the 10 s timeout (`tests/test_postgres.py`). While the change listener cannot reach
        the server, a call waits `DOWN_WAIT` for a connection, not the pool's 10 s: during an outage a client
        hears 503 at once instead of holding a worker thread for 10 s."""
        timeout = None if self._listening.is_set() else DOWN_WAIT
        for _ in range(self._pool.max_size):
            conn = self._pool.getconn(timeout)
            if not _ended(conn):
                return conn
            conn.close()
            self._pool.putconn(conn)
        return self._pool.getconn(timeout)

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        try:
            conn = self._live_connection()
            try:
                yield conn
            finally:
                self._pool.putconn(conn)
        except (PoolTimeout, psycopg.OperationalError) as exc:
            raise StoreUnavailable(f"the PostgreSQL store at {redacted(self.url)} is unavailable: {str(exc).strip()}") from None

    @contextmanager
    def _reading(self, *, plain: bool = False) -> Iterator[Db]:
        with self._connection() as conn:
            cursor = conn.cursor(binary=True) if plain else conn.cursor(binary=True, row_factory=_named_rows)
            with cursor:
                yield _PgDb(cursor)

    @contextmanager
    def transaction(self) -> Iterator[Db]:
        with self._connection() as conn, conn.transaction(), conn.cursor(binary=True, row_factory=_named_rows) as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
            yield _PgDb(cursor)
            cursor.execute(f"NOTIFY {CHANNEL}")
        self._writes += 1

    @contextmanager
    def _snapshot(self) -> Iterator[Db]:
        with self._connection() as conn, conn.transaction(), conn.cursor(binary=True) as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield _PgDb(cursor)

    def _autocommit(self, sql: str, params: Sequence[Any] = ()) -> None:
        with self._reading() as db:
            db.execute(sql, params)

    def _bookkeeping(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Without the write lock, the NOTIFY (nothing a search reads changes) and the wait for the commit to
        be durable: a registration's mark took 1.8 ms at p50 as a write transaction."""
        with self._connection() as conn, conn.transaction(), conn.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit = off")
            _PgDb(cursor).executemany(sql, rows)

    def _read_all_rows(self) -> AgentRows:
        with self._connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            return read_rows(_StreamingDb(conn), None)

    # -- following other processes ------------------------------------------------------------------
    def version(self) -> tuple[int, int]:
        return (self._heard, self._writes)

    def _listen(self) -> None:
        """Count NOTIFYs on a connection of its own; after a lost connection, count one more (whatever was
        committed meanwhile) and listen again, once a second, until the server is back. Whether it listens
        is also whether the server is reachable (`_live_connection` fails fast while it is not)."""
        lost = False
        while not self._closed.is_set():
            try:
                with psycopg.connect(self.url, autocommit=True, connect_timeout=10) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self._heard += 1
                    self._listening.set()
                    if lost:
                        log.warning("the PostgreSQL store at %s is reachable again", redacted(self.url))
                        lost = False
                    while not self._closed.is_set():
                        for _ in conn.notifies(timeout=0.5):
                            self._heard += 1
            except psycopg.Error as exc:
                if self._closed.is_set():
                    return
                self._listening.clear()
                self._heard += 1
                if not lost:  # once per outage, not once per attempt
                    log.warning("lost the PostgreSQL store's change notifications (%s); reconnecting", str(exc).strip())
                    lost = True
                time.sleep(1.0)

    # -- full text ------------------------------------------------------------------------------------
    def _index_text(self, db: Db, agent_id: int, fts: FtsDocument) -> None:
        counts, tokens = field_counts(fts)
        assert isinstance(db, _PgDb)
        db.execute("UPDATE lexical_totals SET documents = documents + 1, tokens = tokens + ? WHERE id = 1", (tokens,))
        with db.cursor.copy("COPY postings(term, agent_id, name, keywords, description, examples, tokens) FROM STDIN") as copy:
            for term in sorted(counts):
                copy.write_row((term, agent_id, *counts[term], tokens))
        self._count_terms(db, fts.vocabulary(), +1)

    def _unindex_text(self, db: Db, agent_id: int, old: FtsDocument) -> None:
        counts, tokens = field_counts(old)
        db.execute("DELETE FROM postings WHERE agent_id = ? AND term = ANY(?)", (agent_id, sorted(counts)))
        db.execute("UPDATE lexical_totals SET documents = documents - 1, tokens = tokens - ? WHERE id = 1", (tokens,))
        self._count_terms(db, old.vocabulary(), -1)

    @staticmethod
    def _count_terms(db: Db, terms: set[str], delta: int) -> None:
        """SQLite's `schema.count_change` as one statement over an array of the terms, not one statement a term: an
        agent has ~100 distinct terms, and psycopg's per-statement work (even pipelined) dominated writes:
        an ingest of 1,000 synthetic agents with cached vectors took 30.6 s, 19.5 s with this, 17.6 s with
        the filter values also written by one statement (`writes.insert_values`); SQLite takes 11 s."""
        ordered = sorted(terms)
        db.execute(
            "INSERT INTO term_agents(term, agents) SELECT t, ? FROM unnest(?::text[]) AS t "
            "ON CONFLICT(term) DO UPDATE SET agents = term_agents.agents + excluded.agents",
            (delta, ordered),
        )
        if delta < 0:
            db.execute("DELETE FROM term_agents WHERE term = ANY(?) AND agents <= 0", (ordered,))

    def _lexical_totals(self) -> tuple[int, float]:
        """Documents and average tokens a document, as FTS5 keeps them; read again only after a change."""
        version = self.version()
        if self._totals is None or self._totals[0] != version:
            documents, tokens = self._tuples("SELECT documents, tokens FROM lexical_totals")[0]
            self._totals = (version, (int(documents), int(tokens) / max(1, int(documents))))
        return self._totals[1]

    def count(self) -> int:
        """Every agent has one full-text document, so the totals count them without a scan of `agents`."""
        return self._lexical_totals()[0]

    def lexical(self, terms: Sequence[str], limit: int, weights: tuple[float, float, float, float]) -> list[tuple[int, float]]:
        """FTS5's bm25() over `postings`, summed in the server: only the best `limit` agents travel. Read into
        Python and scored in numpy, the up to 4,000 postings a query reads cost ~5 ms of this process's time at
        100,000 agents, competing with the query's embedding for the interpreter; scored here, 4.2 ms of the
        server's, and a whole search took 27.6 ms at p50 instead of 29.2 (`bench/scale.py`'s queries, the two
        interleaved; the same agents in the same order on 300 MetaTool queries). A term's document count is
        its postings' (as FTS5 counts it), not `term_agents`' (kept for unfolded terms)."""
        phrases = [fold(t) for t in terms]
        rows, average = self._lexical_totals()
        if not phrases or not rows:
            return []
        distinct = sorted(set(phrases))
        found = self._tuples(
            "SELECT agent_id, sum(times * greatest(ln((?::float8 - hits + 0.5) / (hits + 0.5)), 1e-6)"
            " * w * ?::float8 / (w + ?::float8 * (?::float8 + ?::float8 * tokens / ?::float8))) AS score"
            " FROM (SELECT p.agent_id, q.times, p.tokens, count(*) OVER (PARTITION BY p.term) AS hits,"
            " p.name * ?::float8 + p.keywords * ?::float8 + p.description * ?::float8 + p.examples * ?::float8 AS w"
            " FROM postings p JOIN unnest(?::text[], ?::int[]) AS q(term, times) ON p.term = q.term) AS scored"
            " GROUP BY agent_id ORDER BY score DESC, agent_id LIMIT ?",
            (rows, _K1 + 1.0, _K1, 1.0 - _B, _B, average, *weights, distinct, [phrases.count(t) for t in distinct], limit),
        )
        return [(int(agent), float(score)) for agent, score in found]

    # -- listing ----------------------------------------------------------------------------------------
    def _page_of(self, agent_ids: AbstractSet[int], clauses: str, offset: int, limit: int) -> list[Any]:
        return self._query(
            f"SELECT * FROM agents WHERE id = ANY(?) ORDER BY {clauses} LIMIT ? OFFSET ?", (sorted(agent_ids), limit, offset)
        )
