"""The catalog store: entries as registered, filter values, examples with their vectors, full-text data, term
counts and the change feed. `base` is the SQL both engines share; `sqlite` is the embedded store (its
tables and migrations in `schema`), `postgres` the networked one (`pg_schema`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ard_mcp.errors import InvalidArgument

if TYPE_CHECKING:
    from ard_mcp.config import Config
    from ard_mcp.index.store.base import Store

CATALOG_FILE = "catalog.sqlite3"  # the embedded store, in the data directory


def require_postgres_driver() -> None:
    """psycopg is an extra (`ard-mcp[postgres]`): without it, say how to install it, not a traceback."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ModuleNotFoundError as exc:
        raise InvalidArgument(
            f"--store-url postgresql://... needs the PostgreSQL driver ({exc.name}), which is not installed: "
            'pip install "ard-mcp[postgres]"'
        ) from None


def open_store(config: Config) -> Store:
    """The store `config` names: PostgreSQL at `store_url` (psycopg is imported only then), else SQLite in
    the data directory."""
    if config.store_url is not None:
        require_postgres_driver()
        from ard_mcp.index.store.postgres import PostgresStore

        return PostgresStore(config.store_url)
    from ard_mcp.index.store.sqlite import SqliteStore

    return SqliteStore(config.data_dir / CATALOG_FILE)
