"""Row-level steps of a write, inside a transaction the caller holds: shared by the store's writes and the
migrations that rewrite stored agents (`schema`), so both keep the FTS index, the term counts and the
change feed exact the same way."""

from __future__ import annotations

import sqlite3

from ard_mcp.index.records import FtsDocument

CHANGES_KEPT = 100_000  # change-feed rows kept; a reader further behind than this reloads everything
PRUNE_EVERY = 1_000


def count_change(db: sqlite3.Connection, terms: set[str], delta: int) -> None:
    """Add `delta` to the number of agents indexed under each of `terms`."""
    db.executemany(
        "INSERT INTO term_agents(term, agents) VALUES (?, ?) ON CONFLICT(term) DO UPDATE SET agents = agents + excluded.agents",
        [(t, delta) for t in terms],
    )
    if delta < 0:
        db.executemany("DELETE FROM term_agents WHERE term = ? AND agents <= 0", [(t,) for t in terms])


def note_change(db: sqlite3.Connection, agent_id: int) -> None:
    """Append the agent to the change feed in-memory copies follow; prune the feed now and then."""
    seq = db.execute("INSERT INTO changes(agent_id) VALUES (?)", (agent_id,)).lastrowid
    if seq is not None and seq % PRUNE_EVERY == 0:
        db.execute("DELETE FROM changes WHERE seq <= ?", (seq - CHANGES_KEPT,))


def delete_dependents(db: sqlite3.Connection, agent_id: int) -> list[int]:
    """Remove an agent's filter values, FTS document (a contentless index is told the old text) and
    examples, keeping the term counts exact; returns the removed example ids (for the vector index)."""
    removed = [r[0] for r in db.execute("SELECT id FROM examples WHERE agent_id = ?", (agent_id,))]
    db.execute("DELETE FROM agent_values WHERE agent_id = ?", (agent_id,))
    old = FtsDocument.packed(db.execute("SELECT fts FROM agents WHERE id = ?", (agent_id,)).fetchone()[0])
    count_change(db, old.vocabulary(), -1)
    db.execute(
        "INSERT INTO agents_fts(agents_fts, rowid, name, keywords, description, examples) VALUES ('delete', ?, ?, ?, ?, ?)",
        (agent_id, *old.columns()),
    )
    db.execute("DELETE FROM examples WHERE agent_id = ?", (agent_id,))
    return removed


def delete_agent(db: sqlite3.Connection, agent_id: int) -> list[int]:
    """Remove every trace of an agent; returns its removed example ids."""
    removed = delete_dependents(db, agent_id)
    db.execute("DELETE FROM agents WHERE id = ?", (agent_id,))
    note_change(db, agent_id)
    return removed
