"""Reading many agents' examples and terms at once into flat arrays (`AgentRows`): what the search's
in-memory copy of the store (`ard_mcp.index.resident`) loads at warm-up and re-reads for changed agents.

Kept out of the store class: it is one consistent read of two tables, which a store runs in whatever
snapshot suits it (its own connection for a few agents, a separate one for all of them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ard_mcp.index.records import AgentRows, FtsDocument
from ard_mcp.index.store.db import Db

IN_CHUNK = 900  # ids per IN list: under SQLite's limit on the parameters of one statement
_READ_CHUNK = 20_000  # rows per fetch when reading every example


def read_rows(db: Db, agent_ids: list[int] | None) -> AgentRows:
    """The examples and distinct terms of some agents (None: all of them), inside the read transaction `db`
    is in (plain tuple rows)."""
    ids = sorted(agent_ids) if agent_ids is not None else None
    blocks = [ids[i : i + IN_CHUNK] for i in range(0, len(ids), IN_CHUNK)] if ids is not None else [[]]

    def select(sql: str, column: str, block: list[int]) -> Any:
        where = "" if ids is None else f" WHERE {column} IN ({','.join('?' * len(block))})"
        return db.execute(sql.format(where=where), block)

    seq = int(db.execute("SELECT coalesce(max(seq), 0) FROM changes").fetchone()[0])
    total = sum(select("SELECT count(*) FROM examples{where}", "agent_id", b).fetchone()[0] for b in blocks)
    columns = np.zeros((3, total), np.int64)  # agent id, example id, is description
    vectors: np.ndarray | None = None
    filled = 0
    term_ids: list[int] = []
    term_sizes: list[int] = [0]
    terms = bytearray()
    for block in blocks:
        cursor = select("SELECT agent_id, id, kind = 'description', vector FROM examples{where} ORDER BY agent_id, id", "agent_id", block)
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
    agents = np.array(term_ids, np.int64)
    return AgentRows(
        seq=seq,
        agent_ids=agents,
        offsets=np.asarray(np.searchsorted(columns[0], np.r_[agents, np.iinfo(np.int64).max])),
        example_ids=columns[1],
        is_description=columns[2].astype(bool),
        vectors=vectors if vectors is not None else np.zeros((0, 0), np.uint8),
        terms=bytes(terms),
        term_offsets=np.cumsum(term_sizes),
    )
