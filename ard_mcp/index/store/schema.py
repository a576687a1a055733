"""The SQLite store's tables, and the migrations that bring an older store up to them once, when it opens.

Layout 3 (the current one) is sized for 100,000 agents: entries are zlib-compressed JSON, vectors int8 with
one float32 scale each (`ard_mcp.index.records`), and the FTS index keeps no copy of its text: its four
columns are kept packed in `agents.fts`, which FTS5 needs to delete a document and which ranking reads as
the agent's terms. Document frequencies live in `term_agents`, kept in step with every write: FTS5's own
vocabulary table counts them by reading each term's whole posting list, which cost 6-8 ms a query at
100,000 agents. `changes` is the feed in-memory copies of the store follow (`ard_mcp.index.resident`). `crawl_sources` is
what the crawler remembers of each document it fetched (`ard_mcp.web.sources`), as JSON;
`vector_deletions` the vector records a write could not remove while the vector index was unreachable, and
`idempotency_keys` the answers kept for the REST writes' `Idempotency-Key` header (`side_tables`): a store of
any layout gets these tables when it opens, empty.

Older stores are migrated in one transaction each, so an interrupted migration leaves the old layout:
- layout 1 (JSON text entries, float16 vectors, an FTS index with its own content, terms in plain
  columns) is rewritten in the compact form without running the model;
- layout 2 kept two plain-term columns that only layout 1 filled; they are dropped;
- layout 3 kept identifiers as registered in v0.5 (`urn:ai:`); they are put in the canonical spelling of
  `ard_mcp.formats.identifiers` (`urn:air:`, publisher in lower case), in the entries too. Two entries
  whose identifiers differ only in the publisher's case become one: the most recently indexed stays;
- layout 4 kept media types as registered in the `type` filter values and ordering column; they are put
  in their canonical spelling (`ard_mcp.formats.media_types`), so both names of one type filter alike;
- a store made before `term_agents` existed has its terms counted.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

from ard_mcp.formats.identifiers import normalize_identifier
from ard_mcp.formats.media_types import canonical_type
from ard_mcp.index.records import FtsDocument, content_hash, encode_vector
from ard_mcp.index.store import writes
from ard_mcp.index.store.db import Db
from ard_mcp.index.store.readable import decoded

log = logging.getLogger(__name__)

SCHEMA_VERSION = "5"

FTS_TABLE = """CREATE VIRTUAL TABLE IF NOT EXISTS agents_fts USING fts5(
    name, keywords, description, examples, content = '', tokenize = 'unicode61 remove_diacritics 2'
)"""

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS agents(
    id INTEGER PRIMARY KEY,
    identifier TEXT NOT NULL UNIQUE,
    entry BLOB NOT NULL,
    content_hash TEXT NOT NULL,
    display_name TEXT NOT NULL,
    type TEXT NOT NULL,
    publisher TEXT NOT NULL,
    updated_at TEXT,
    created_at TEXT NOT NULL,
    indexed_at TEXT NOT NULL,
    vectors_pending INTEGER NOT NULL DEFAULT 1,
    fts BLOB NOT NULL
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
{FTS_TABLE};
CREATE TABLE IF NOT EXISTS term_agents(term TEXT PRIMARY KEY, agents INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS changes(seq INTEGER PRIMARY KEY AUTOINCREMENT, agent_id INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS crawl_sources(url TEXT PRIMARY KEY, state TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS vector_deletions(
    example_id INTEGER NOT NULL, agent_id INTEGER NOT NULL, PRIMARY KEY(example_id, agent_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS idempotency_keys(
    scope TEXT NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL, owner TEXT NOT NULL, started REAL NOT NULL,
    status INTEGER, headers TEXT, body BLOB, PRIMARY KEY(scope, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS idempotency_keys_started ON idempotency_keys(started);
"""
_PLAIN_TERM_COLUMNS = frozenset({"terms", "keyword_terms"})  # layouts 1 and 2; only layout 1 filled them


def count_change(db: Db, terms: set[str], delta: int) -> None:
    """Add `delta` to the number of agents indexed under each of `terms`, one statement a term (PostgreSQL's
    store sends them as one array instead: `PostgresStore._count_terms`)."""
    ordered = sorted(terms)
    db.executemany(
        "INSERT INTO term_agents(term, agents) VALUES (?, ?) ON CONFLICT(term) DO UPDATE SET agents = term_agents.agents + excluded.agents",
        [(t, delta) for t in ordered],
    )
    if delta < 0:
        db.executemany("DELETE FROM term_agents WHERE term = ? AND agents <= 0", [(t,) for t in ordered])


def index_text(db: Db, agent_id: int, fts: FtsDocument) -> None:
    db.execute("INSERT INTO agents_fts(rowid, name, keywords, description, examples) VALUES (?, ?, ?, ?, ?)", (agent_id, *fts.columns()))
    count_change(db, fts.vocabulary(), +1)


def unindex_text(db: Db, agent_id: int, old: FtsDocument) -> None:
    """A contentless FTS5 index is told the old text to remove."""
    db.execute(
        "INSERT INTO agents_fts(agents_fts, rowid, name, keywords, description, examples) VALUES ('delete', ?, ?, ?, ?, ?)",
        (agent_id, *old.columns()),
    )
    count_change(db, old.vocabulary(), -1)


def _meta(db: sqlite3.Connection, key: str) -> str | None:
    row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def _set_meta(db: sqlite3.Connection, key: str, value: str) -> None:
    db.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def prepare(db: sqlite3.Connection) -> None:
    """Create the tables of a new store, or migrate an older one (each step once, in its own transaction).

    `db` is in autocommit mode; concurrent openers of one file serialise on BEGIN IMMEDIATE, and each step
    checks the version again inside its transaction, so a store is migrated by whichever process comes first."""
    db.executescript(SCHEMA)  # IF NOT EXISTS throughout: an older store keeps its tables for the steps below
    with _transaction(db):
        if _meta(db, "schema_version") is None:  # a new store: every earlier layout recorded its version
            _set_meta(db, "schema_version", SCHEMA_VERSION)
    for version, step in enumerate(_STEPS, start=1):
        with _transaction(db):
            if _meta(db, "schema_version") == str(version):
                step(db)
                _set_meta(db, "schema_version", str(version + 1))
    with _transaction(db):
        if _meta(db, "term_agents") is None:
            _count_terms(db)


@contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    """All or nothing, like the store's own `transaction` (which needs the store's lock, not yet shared here)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _compact_layout_1(db: sqlite3.Connection) -> None:
    """Layout 1 → 2: compress entries, pack the FTS columns beside them, re-encode float16 vectors as int8,
    and rebuild the FTS index without content. Vectors are re-encoded, never re-embedded."""
    agents = db.execute("SELECT count(*) FROM agents").fetchone()[0]
    log.warning("migrating a layout 1 store of %d agents to the compact layout (once)", agents)
    if "fts" not in _columns(db, "agents"):
        db.execute("ALTER TABLE agents ADD COLUMN fts BLOB")
    documents = {row[0]: FtsDocument(*row[1:]) for row in db.execute("SELECT rowid, name, keywords, description, examples FROM agents_fts")}
    for agent_id, entry in db.execute("SELECT id, entry FROM agents").fetchall():
        text = entry.encode() if isinstance(entry, str) else entry
        db.execute("UPDATE agents SET entry = ?, fts = ? WHERE id = ?", (zlib.compress(text), documents[agent_id].pack(), agent_id))
    for example_id, blob in db.execute("SELECT id, vector FROM examples").fetchall():
        vector = np.frombuffer(blob, dtype=np.float16).astype(np.float32)
        db.execute("UPDATE examples SET vector = ? WHERE id = ?", (encode_vector(vector), example_id))
    db.execute("DROP TABLE agents_fts")
    db.execute(FTS_TABLE)
    db.executemany(
        "INSERT INTO agents_fts(rowid, name, keywords, description, examples) VALUES (?, ?, ?, ?, ?)",
        [(agent_id, *document.columns()) for agent_id, document in documents.items()],
    )


def _drop_plain_term_columns(db: sqlite3.Connection) -> None:
    """Layout 2 → 3: the plain-term columns only layout 1 filled."""
    log.info("dropping the plain-term columns of a layout 2 store (once)")
    for column in sorted(_PLAIN_TERM_COLUMNS & _columns(db, "agents")):
        db.execute(f"ALTER TABLE agents DROP COLUMN {column}")


def _canonical_identifiers(db: sqlite3.Connection) -> None:
    """Layout 3 → 4: every identifier, in the `agents` column, the filter values and the entry itself, in its
    canonical spelling; the content hash follows the entry, so re-registering it is still "unchanged"."""
    spellings: dict[str, list[tuple[str, int, str]]] = {}
    for agent_id, identifier, indexed_at in db.execute("SELECT id, identifier, indexed_at FROM agents"):
        spellings.setdefault(normalize_identifier(identifier), []).append((indexed_at, agent_id, identifier))
    changed = sum(1 for canonical, found in spellings.items() if len(found) > 1 or found[0][2] != canonical)
    if changed:
        log.warning("writing %d identifiers in their v0.9 spelling (urn:air:, publisher in lower case), once", changed)
    for canonical, found in spellings.items():
        *older, (_, agent_id, identifier) = sorted(found)
        for _, loser, spelling in older:
            log.warning("%s and %s name one entry; keeping the one indexed last (%s)", spelling, identifier, identifier)
            writes.delete_agent(db, loser, unindex_text)  # its vectors stay in the vector index until a reindex; searches skip them
        if identifier == canonical:
            continue
        entry = decoded(db.execute("SELECT entry FROM agents WHERE id = ?", (agent_id,)).fetchone()[0])[0]
        if entry is None:  # cannot be decoded: the row keeps its document, reads leave it out (`readable`)
            db.execute("UPDATE agents SET identifier = ? WHERE id = ?", (canonical, agent_id))
        else:
            entry["identifier"] = canonical
            db.execute(
                "UPDATE agents SET identifier = ?, entry = ?, content_hash = ? WHERE id = ?",
                (canonical, zlib.compress(json.dumps(entry).encode()), content_hash(entry), agent_id),
            )
        db.execute("UPDATE agent_values SET value = ? WHERE agent_id = ? AND field = 'identifier'", (canonical, agent_id))
        writes.note_change(db, agent_id)


def _canonical_types(db: sqlite3.Connection) -> None:
    """Layout 4 → 5: the `type` filter values and ordering column in the canonical spelling of each type."""
    for (raw,) in db.execute("SELECT DISTINCT type FROM agents").fetchall():
        canonical = canonical_type(raw)
        if canonical != raw:
            log.info("media type %r is now filtered and faceted as %r", raw, canonical)
            db.execute("UPDATE agents SET type = ? WHERE type = ?", (canonical, raw))
            db.execute("UPDATE agent_values SET value = ? WHERE field = 'type' AND value = ?", (canonical, raw))


_STEPS: tuple[Callable[[sqlite3.Connection], None], ...] = (
    _compact_layout_1,
    _drop_plain_term_columns,
    _canonical_identifiers,
    _canonical_types,
)
"""Step i (from 1) migrates layout i to layout i + 1; the last one reaches SCHEMA_VERSION."""


def _count_terms(db: sqlite3.Connection) -> None:
    """Fill `term_agents` for a store made before it existed (20 s at 100,000 agents)."""
    counts: Counter[str] = Counter()
    agents = db.execute("SELECT count(*) FROM agents").fetchone()[0]
    if agents:
        log.warning("counting the terms of %d agents once: this store predates its term counts", agents)
    for (packed,) in db.execute("SELECT fts FROM agents"):
        counts.update(FtsDocument.packed(packed).vocabulary())
    db.execute("DELETE FROM term_agents")
    db.executemany("INSERT INTO term_agents(term, agents) VALUES (?, ?)", counts.items())
    _set_meta(db, "term_agents", "1")
