"""`ard-mcp export`: the whole registry as one ARD v0.9 `ai-catalog.json` manifest, written as it is read.

The store is read in batches through one read transaction and each batch is written out before the
next is read, so memory stays flat at any size (the whole list is never held) and the file is one
snapshot, even while a server keeps writing. Like `backup`, this reads the store read-only without
claiming the data directory, so it needs neither the model nor Chroma and works beside a running server.

Entries are written in their stored form (`CatalogEntry.stored()`): as registered, after normalising,
with every representative query. That is lossless: `ard-mcp ingest` of the file into an empty data
directory restores the same entries with the same documents. It is not always valid against the v0.9
schema, which allows 2-5 queries: an entry registered with one query or more than five keeps them all
(every one is indexed), and ingest reads those back with a warning. `served=True` writes the entries as
the registry serves them instead (the first five queries, a lone one left out): always schema-valid, lossy
for those entries.

What is written is what a read of the registry shows the local operator, who sees every entry (those
`visibleTo` hides from others included): a row reads leave out is left out here too, logged with why. That
is a row today's rules refuse (written by an older version, or edited by hand: `ard-mcp check` lists,
repairs or removes it) and an entry whose `expiresAt` has passed, which the next read removes. An export
once wrote both, so a file restored entries no registry answered with, and ingest refused the others.
`ard-mcp backup` copies the store as it is, rows no read can use included.

Nested catalogs (`application/ai-catalog+json` with inline `data`) and their members are stored as
separate entries, and each is written once at top level. Catalogs come first: ingest registers a
catalog's members again as it walks it, so the members as stored must follow to have the last word.

A PostgreSQL store (`export_postgres`) is read the same way: one REPEATABLE READ transaction, a
server-side cursor per group.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from ard_mcp.errors import InvalidArgument
from ard_mcp.formats.catalog import CatalogEntry, HostInfo
from ard_mcp.formats.entry_facts import expiry_of
from ard_mcp.formats.media_types import AI_CATALOG
from ard_mcp.formats.timestamps import utc_text
from ard_mcp.index.backup import connect_read_only, temporary_beside
from ard_mcp.index.store import CATALOG_FILE, require_postgres_driver
from ard_mcp.index.store.readable import stored_document
from ard_mcp.index.store.schema import SCHEMA_VERSION

log = logging.getLogger(__name__)
SPEC_VERSION = "1.0"
HOST = HostInfo(displayName="ard-mcp agent registry")  # as in the registry's own /.well-known/ai-catalog.json
BATCH = 500  # entries read, decoded and written together
Progress = Callable[[int, int], None]  # (entries written, entries in the snapshot)

# The catalogs by their canonical type, from the filter index rather than the `type` column: that one sits
# after the entry in each row, and reaching it would read every entry twice.
_CATALOGS = "SELECT agent_id FROM agent_values WHERE field = 'type' AND value = ?"
_GROUPS = (
    f"SELECT identifier, entry FROM agents WHERE id IN ({_CATALOGS}) ORDER BY id",
    f"SELECT identifier, entry FROM agents WHERE id NOT IN ({_CATALOGS}) ORDER BY id",
)


def export(data_dir: Path, out: IO[bytes], *, served: bool = False, progress: Progress | None = None, batch: int = BATCH) -> int:
    """Write every entry of `data_dir`'s store to `out` as one manifest (UTF-8); returns how many."""
    db = connect_read_only(data_dir)
    try:
        db.execute("BEGIN")  # one snapshot for the whole file: WAL writers carry on, none of their changes is half in it
        try:
            _check_layout(db, data_dir)
            total = int(db.execute("SELECT count(*) FROM agents").fetchone()[0])
            cursor = db.cursor()
            return write_manifest(_stored_batches(lambda sql: cursor.execute(sql, (AI_CATALOG,)), batch, served), out, total, progress)
        finally:
            if db.in_transaction:  # SQLite may have ended it already, after an error
                db.execute("COMMIT")
    except sqlite3.DatabaseError as exc:
        raise InvalidArgument(f"{data_dir / CATALOG_FILE} cannot be read: {exc}") from None
    finally:
        db.close()


def _check_layout(db: sqlite3.Connection, data_dir: Path) -> None:
    """Entries are decoded as the current layout stores them; an older store is migrated when a registry
    opens it, which an export, reading only, does not do."""
    row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is None or row[0] != SCHEMA_VERSION:
        raise InvalidArgument(
            f"the store in {data_dir} has layout {row[0] if row else 'unknown'}, and this version exports layout {SCHEMA_VERSION}; "
            f"a store made by an earlier version is migrated by any command that opens the registry (e.g. `ard-mcp search test`)"
        )


def export_postgres(store_url: str, out: IO[bytes], *, served: bool = False, progress: Progress | None = None, batch: int = BATCH) -> int:
    """`export` of the PostgreSQL store at `store_url`."""
    require_postgres_driver()
    import psycopg

    from ard_mcp.index.store.pg_schema import MIGRATIONS
    from ard_mcp.index.store.postgres import redacted

    try:
        with psycopg.connect(store_url) as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
            if row is None or row[0] != len(MIGRATIONS):
                raise InvalidArgument(
                    f"the PostgreSQL store at {redacted(store_url)} has schema version {row[0] if row else 'none'}, and this version "
                    f"exports version {len(MIGRATIONS)}; any command that opens the registry migrates it (e.g. `ard-mcp search test`)"
                )
            total = int(conn.execute("SELECT count(*) FROM agents").fetchone()[0])  # type: ignore[index]

            def select(sql: str) -> Any:
                return conn.cursor(name=f"export_{abs(hash(sql))}").execute(sql.replace("?", "%s"), (AI_CATALOG,))

            return write_manifest(_stored_batches(select, batch, served), out, total, progress)
    except psycopg.Error as exc:
        raise InvalidArgument(f"the PostgreSQL store at {redacted(store_url)} cannot be read: {str(exc).strip()}") from None


def _stored_batches(select: Callable[[str], Any], batch: int, served: bool) -> Iterator[list[dict[str, Any]]]:
    """Every entry a read would show (`StoredAgent.entry`), nested catalogs first, each group in registration
    order; `select(sql)` runs one group's query (its one parameter, the catalog type, bound) on a cursor."""
    now = datetime.now(UTC)
    for sql in _GROUPS:
        cursor = select(sql)
        while rows := cursor.fetchmany(batch):
            documents = [d for d in (stored_document(identifier, blob) for identifier, blob in rows) if d is not None and _current(d, now)]
            yield [CatalogEntry.model_validate(d).wire() for d in documents] if served else documents


def _current(document: dict[str, Any], now: datetime) -> bool:
    """Whether the entry has not expired: a registry that opens the store removes it at its first read."""
    expires = expiry_of(document)
    if expires is not None and expires <= now:
        log.warning("%s expired at %s and is left out of the export", document.get("identifier"), utc_text(expires))
        return False
    return True


def write_manifest(batches: Iterator[list[dict[str, Any]]], out: IO[bytes], total: int, progress: Progress | None = None) -> int:
    """The manifest around the entries, one entry a line (greppable, and diffable between two exports)."""
    host = json.dumps(HOST.model_dump(mode="json"), ensure_ascii=False)
    out.write(f'{{"specVersion": "{SPEC_VERSION}", "host": {host}, "entries": ['.encode())
    written = 0
    for entries in batches:
        lines = (json.dumps(e, ensure_ascii=False) for e in entries)
        out.write("".join((",\n" if written or i else "\n") + line for i, line in enumerate(lines)).encode())
        written += len(entries)
        if progress:
            progress(written, total)
    out.write(b"\n]}\n")
    return written


@contextmanager
def replacing(path: Path) -> Iterator[IO[bytes]]:
    """A file that becomes `path` only once it is complete and on disk: an interrupted export leaves the
    previous file, not half a manifest."""
    partial = temporary_beside(path)
    try:
        with open(partial, "xb") as out:  # a new file: the user's umask applies, as to any file they make
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
