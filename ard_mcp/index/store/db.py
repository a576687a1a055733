"""A connection as the stores' shared SQL uses it: `sqlite3.Connection` (or cursor) is one as it is; the
PostgreSQL store wraps a psycopg cursor to be one."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol


class Cursor(Protocol):
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...
    def fetchmany(self, size: int = ...) -> list[Any]: ...


class Db(Protocol):
    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Any: ...
    def executemany(self, sql: str, rows: Iterable[Sequence[Any]], /) -> Any: ...
