"""What the store keeps beside the agents' own rows: the crawler's memory of each document it fetched
(`ard_mcp.web.sources`) and the registry's findings about an entry (its trust status) among its filter
values. A mixin of `Store`, in a module of its own so the store's core stays one screenful of concerns."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from ard_mcp.index.store import writes
from ard_mcp.index.store.db import Db


class SideTables:
    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        raise NotImplementedError  # Store's

    def _tuples(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError  # Store's

    def _autocommit(self, sql: str, params: Sequence[Any] = ()) -> None:
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
