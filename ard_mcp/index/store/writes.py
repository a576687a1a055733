"""Row-level steps of a write, inside a transaction the caller holds: shared by both stores' writes and the
SQLite migrations that rewrite stored agents (`schema`), so all of them keep the full-text index, the term
counts and the change feed exact the same way. Each store says how an agent's text leaves its full-text
index and its terms leave the counts (`Unindex`)."""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Sequence
from typing import Any

from ard_mcp.formats.media_types import canonical_type
from ard_mcp.index.records import AgentWrite, FtsDocument, NewExample, Written, encode_vector
from ard_mcp.index.store.db import Db

CHANGES_KEPT = 100_000  # change-feed rows kept; a reader further behind than this reloads everything
PRUNE_EVERY = 1_000

Unindex = Callable[[Db, int, FtsDocument], None]
Index = Unindex  # how a store puts an agent's text into its full-text index and its terms into the counts
SET_META = "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value"
NEXT_CHANGE = "(SELECT coalesce(max(seq), 0) + 1 FROM changes)"  # the change feed's next number


def note_change(db: Db, agent_id: int, seq: int | None = None) -> None:
    """Append the agent to the change feed in-memory copies follow (gapless: the next number after the last,
    under the store's one-writer rule; `seq` when the write already took it, as `put_agent`'s mark); prune the
    feed now and then."""
    if seq is None:
        seq = int(db.execute(f"INSERT INTO changes(seq, agent_id) VALUES ({NEXT_CHANGE}, ?) RETURNING seq", (agent_id,)).fetchone()[0])
    else:
        db.execute("INSERT INTO changes(seq, agent_id) VALUES (?, ?)", (seq, agent_id))
    if seq % PRUNE_EVERY == 0:
        db.execute("DELETE FROM changes WHERE seq <= ?", (seq - CHANGES_KEPT,))


def delete_dependents(db: Db, agent_id: int, unindex: Unindex) -> list[int]:
    """Remove an agent's filter values, full-text document and examples, keeping the term counts exact;
    returns the removed example ids (for the vector index)."""
    removed = sorted(int(r[0]) for r in db.execute("DELETE FROM examples WHERE agent_id = ? RETURNING id", (agent_id,)).fetchall())
    db.execute("DELETE FROM agent_values WHERE agent_id = ?", (agent_id,))
    old = FtsDocument.packed(db.execute("SELECT fts FROM agents WHERE id = ?", (agent_id,)).fetchone()[0])
    unindex(db, agent_id, old)  # the text out of the full-text index, its terms out of the counts
    return removed


def delete_agent(db: Db, agent_id: int, unindex: Unindex) -> list[int]:
    """Remove every trace of an agent; returns its removed example ids."""
    removed = delete_dependents(db, agent_id, unindex)
    db.execute("DELETE FROM agents WHERE id = ?", (agent_id,))
    note_change(db, agent_id)
    return removed


VALUES_A_STATEMENT = 500  # 1,500 parameters: far under SQLite's 32,766


def insert_values(db: Db, agent_id: int, values: set[tuple[str, str]]) -> None:
    """An agent's filter values, up to `VALUES_A_STATEMENT` rows a statement instead of one statement a row
    (on PostgreSQL each costs psycopg's per-statement work even when pipelined: ~25 a registration)."""
    rows = [(field, value, agent_id) for field, value in sorted(values)]
    for start in range(0, len(rows), VALUES_A_STATEMENT):
        chunk = rows[start : start + VALUES_A_STATEMENT]
        placeholders = ", ".join(["(?, ?, ?)"] * len(chunk))
        db.execute(f"INSERT INTO agent_values(field, value, agent_id) VALUES {placeholders}", [v for row in chunk for v in row])


def insert_examples(db: Db, agent_id: int, examples: Sequence[NewExample]) -> list[int]:
    """Insert an agent's examples (at most `example_texts.MAX_EXAMPLES`) in one statement, not one each (a
    round trip each on PostgreSQL: 8 of the 31 of an update of the sample weather server); their ids in the
    examples' order. Both engines number the rows of one INSERT in VALUES order (SQLite: the next rowid;
    PostgreSQL: the identity sequence, and the store's one-writer rule keeps other inserts out), so the
    returned ids in ascending order are the examples' own."""
    if not examples:
        return []
    rows = ", ".join(["(?, ?, ?, ?, ?)"] * len(examples))
    params = [value for e in examples for value in (agent_id, e.kind, e.label, e.text, encode_vector(e.vector))]
    ids = sorted(
        int(row[0])
        for row in db.execute(f"INSERT INTO examples(agent_id, kind, label, text, vector) VALUES {rows} RETURNING id", params).fetchall()
    )
    assert len(ids) == len(examples), "one id per inserted example"
    return ids


def put_agent(db: Db, agent: AgentWrite, stamp: str, index: Index, unindex: Unindex) -> Written:
    """Insert or replace one agent with all its rows, its `vectors_pending` mark set to this write's number,
    the one it records in the change feed (the vector index has not got the rows yet).

    The mark is the write's own number, not a flag: whoever sends the vector index these examples clears it
    only if no later write of the agent has replaced it meanwhile (`Store.mark_vectors_done`). As a flag,
    the first of two quick writes of one agent, once sent, cleared the second's mark too, and a process
    killed before sending the second left the agent's examples out of the vector index for good, with
    nothing pending (the PostgreSQL SIGKILL reliability test, 1 run in 10-20: 12-39 examples)."""
    entry = agent.entry
    fields: dict[str, Any] = {
        "entry": zlib.compress(json.dumps(entry).encode()),
        "content_hash": agent.content_hash,
        "display_name": entry["displayName"],
        "type": canonical_type(entry["type"]),  # listings order equivalent spellings as one type
        "publisher": agent.publisher,
        "updated_at": agent.updated_at,
        "indexed_at": stamp,
        "fts": agent.fts.pack(),
    }
    row = db.execute("SELECT id FROM agents WHERE identifier = ?", (entry["identifier"],)).fetchone()
    if row is None:
        fields.update(identifier=entry["identifier"], created_at=stamp)
        columns, values = ", ".join(fields), "?, " * len(fields)
        sql = f"INSERT INTO agents({columns}, vectors_pending) VALUES ({values}{NEXT_CHANGE}) RETURNING id, vectors_pending"
        agent_id, write = (int(v) for v in db.execute(sql, list(fields.values())).fetchone())
        removed: list[int] = []
    else:
        agent_id = int(row[0])
        removed = delete_dependents(db, agent_id, unindex)  # first: FTS5 is told the old text
        assigned = ", ".join(f"{k} = ?" for k in fields)
        sql = f"UPDATE agents SET {assigned}, vectors_pending = {NEXT_CHANGE} WHERE id = ? RETURNING vectors_pending"
        write = int(db.execute(sql, [*fields.values(), agent_id]).fetchone()[0])
    insert_values(db, agent_id, agent.values)
    index(db, agent_id, agent.fts)
    note_change(db, agent_id, write)  # the change the mark names
    return Written(agent_id, write, removed, insert_examples(db, agent_id, agent.examples))
