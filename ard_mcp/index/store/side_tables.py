"""What the store keeps beside the agents' own rows: the crawler's memory of each document it fetched
(`ard_mcp.web.sources`), the registry's findings about an entry (its trust status) among its filter
values, the vector records a write could not remove while the vector index was unreachable
(`ard_mcp.index.indexer`), and the idempotency keys of REST writes with the answers they were given
(`ard_mcp.index.idempotency`). A mixin of `Store`, in a module of its own so the store's core stays one
screenful of concerns."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from ard_mcp.index.store import writes
from ard_mcp.index.store.db import Db


@dataclass(frozen=True)
class KeyRecord:
    """An idempotency key's row: the request it was first used with (`fingerprint`), who holds it while that
    request runs (`owner`), when it started (seconds since the epoch), and once answered the answer."""

    fingerprint: str
    owner: str
    started: float
    status: int | None
    headers: str | None
    body: bytes | None


class SideTables:
    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        raise NotImplementedError  # Store's

    def _tuples(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError  # Store's

    def _autocommit(self, sql: str, params: Sequence[Any] = ()) -> None:
        raise NotImplementedError  # Store's

    def _bookkeeping(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        raise NotImplementedError  # Store's

    def transaction(self) -> AbstractContextManager[Db]:
        raise NotImplementedError  # Store's

    # -- crawl sources --------------------------------------------------------------------------
    def crawl_sources(self) -> dict[str, dict[str, Any]]:
        """What the crawler remembers of each document it fetched, by URL."""
        return {row["url"]: json.loads(row["state"]) for row in self._query("SELECT url, state FROM crawl_sources")}

    def crawl_source(self, url: str) -> dict[str, Any] | None:
        """What the crawler remembers of one document: one row, not the whole table (an MCP registry's state
        lists every server it imported)."""
        rows = self._query("SELECT state FROM crawl_sources WHERE url = ?", (url,))
        return json.loads(rows[0]["state"]) if rows else None

    def set_crawl_source(self, url: str, state: dict[str, Any]) -> None:
        self._autocommit(
            "INSERT INTO crawl_sources(url, state) VALUES (?, ?) ON CONFLICT(url) DO UPDATE SET state = excluded.state",
            (url, json.dumps(state, sort_keys=True)),
        )

    def delete_crawl_source(self, url: str) -> None:
        self._autocommit("DELETE FROM crawl_sources WHERE url = ?", (url,))

    # -- the registry's findings ---------------------------------------------------------------------
    def owned_values(self, agent_id: int, fields: Iterable[str]) -> set[tuple[str, str]]:
        """The agent's values at `fields`: what the registry found about it (its trust status), not what it says."""
        wanted = list(fields)
        marks = ", ".join("?" * len(wanted))
        sql = f"SELECT field, value FROM agent_values WHERE agent_id = ? AND field IN ({marks})"
        return {(str(f), str(v)) for f, v in self._tuples(sql, (agent_id, *wanted))}

    def values_of(self, agent_ids: Sequence[int], fields: Iterable[str]) -> dict[int, dict[str, str]]:
        """Each agent's (single) value at each of `fields`, for the page of results being shown."""
        ids, wanted = list(agent_ids), list(fields)
        if not ids or not wanted:
            return {}
        sql = (
            f"SELECT agent_id, field, value FROM agent_values WHERE agent_id IN ({', '.join('?' * len(ids))}) "
            f"AND field IN ({', '.join('?' * len(wanted))})"
        )
        found: dict[int, dict[str, str]] = {}
        for agent_id, field, value in self._tuples(sql, (*ids, *wanted)):
            found.setdefault(int(agent_id), {})[str(field)] = str(value)
        return found

    def replace_owned_values(self, agent_id: int, fields: Iterable[str], pairs: Iterable[tuple[str, str]]) -> None:
        """Replace the agent's values at `fields` (a new trust check of an unchanged entry), noting the change."""
        wanted = list(fields)
        marks = ", ".join("?" * len(wanted))
        with self.transaction() as db:
            db.execute(f"DELETE FROM agent_values WHERE agent_id = ? AND field IN ({marks})", (agent_id, *wanted))
            rows = [(f, v, agent_id) for f, v in pairs]
            db.executemany("INSERT INTO agent_values(field, value, agent_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING", rows)
            writes.note_change(db, agent_id)

    # -- vector records to remove once the vector index answers again ---------------------------------
    def queue_vector_deletions(self, examples: Sequence[tuple[int, int]]) -> None:
        """Keep (example id, agent id) pairs a write removed from the store but could not remove from the vector
        index. Bookkeeping: lost in a crash, they leave records whose agents are gone, which searches skip."""
        self._bookkeeping("INSERT INTO vector_deletions(example_id, agent_id) VALUES (?, ?) ON CONFLICT DO NOTHING", list(examples))

    def queued_vector_deletions(self, limit: int) -> list[tuple[int, int, bool]]:
        """Up to `limit` queued (example id, agent id) pairs, each with whether the store holds such an example
        again (SQLite reuses the highest id after a delete): a removal must not delete a record now in use."""
        sql = (
            "SELECT d.example_id, d.agent_id, x.id IS NOT NULL FROM vector_deletions d "
            "LEFT JOIN examples x ON x.id = d.example_id AND x.agent_id = d.agent_id ORDER BY d.example_id, d.agent_id LIMIT ?"
        )
        return [(int(e), int(a), bool(live)) for e, a, live in self._tuples(sql, (limit,))]

    def forget_vector_deletions(self, examples: Sequence[tuple[int, int]]) -> None:
        self._bookkeeping("DELETE FROM vector_deletions WHERE example_id = ? AND agent_id = ?", list(examples))

    # -- idempotency keys -------------------------------------------------------------------------------
    def claim_key(
        self, scope: str, key: str, fingerprint: str, owner: str, now: float, stale_before: float, abandoned_before: float
    ) -> KeyRecord | None:
        """Take `key` of `scope` for a request (None), or the record of whoever has it: one statement each step,
        each atomic in both stores, so two processes claiming one key at once cannot both get it. A key first
        used before `stale_before`, or held unanswered since before `abandoned_before` (its process died), is
        free again."""
        for _ in range(3):  # a record found taken may be forgotten before it is read; then it is free again
            self._autocommit(
                "DELETE FROM idempotency_keys WHERE scope = ? AND key = ? AND (started < ? OR (status IS NULL AND started < ?))",
                (scope, key, stale_before, abandoned_before),
            )
            taken = self._tuples(
                "INSERT INTO idempotency_keys(scope, key, fingerprint, owner, started) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(scope, key) DO NOTHING RETURNING owner",
                (scope, key, fingerprint, owner, now),
            )
            if taken:
                return None
            rows = self._tuples(
                "SELECT fingerprint, owner, started, status, headers, body FROM idempotency_keys WHERE scope = ? AND key = ?", (scope, key)
            )
            if rows:
                f, o, started, status, headers, body = rows[0]
                return KeyRecord(
                    str(f), str(o), float(started), None if status is None else int(status), headers, None if body is None else bytes(body)
                )
        raise RuntimeError(f"idempotency key {key!r} was taken and freed three times while being claimed")

    def answer_key(self, scope: str, key: str, owner: str, status: int, headers: str, body: bytes) -> None:
        """Keep the answer of the request that holds the key (only while it still does)."""
        self._autocommit(
            "UPDATE idempotency_keys SET status = ?, headers = ?, body = ? WHERE scope = ? AND key = ? AND owner = ? AND status IS NULL",
            (status, headers, body, scope, key, owner),
        )

    def release_key(self, scope: str, key: str, owner: str) -> None:
        """Free a key whose request was not answered with anything worth replaying (a 5xx: nothing was saved)."""
        self._autocommit("DELETE FROM idempotency_keys WHERE scope = ? AND key = ? AND owner = ? AND status IS NULL", (scope, key, owner))

    def forget_keys(self, started_before: float) -> None:
        """Forget every key first used before `started_before` (kept keys expire)."""
        self._autocommit("DELETE FROM idempotency_keys WHERE started < ?", (started_before,))
