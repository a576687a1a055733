"""Entries that expire (Xu `expires_at`, stored as `metadata.expiresAt`): when the next one is due.

An expiry is a lease the publisher did not renew (Xu profile §4.8: stop returning the record), so a due
entry goes the way of a deregistration (`Indexer.expire`). Every read asks first whether one may be due;
the clock answers with one comparison until one actually is, or until the store has changed since it
looked (another process sharing the store may have written an entry that expires sooner), so reads need
no lookup.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ard_mcp.formats.entry_facts import expiry_of
from ard_mcp.formats.reserved_metadata import EXPIRES_KEY
from ard_mcp.formats.timestamps import stored_timestamp
from ard_mcp.index.filter_values import METADATA_PREFIX
from ard_mcp.index.records import StoredAgent
from ard_mcp.index.store.base import Store

FIELD = METADATA_PREFIX + EXPIRES_KEY
_UNKNOWN: Any = object()  # not looked up since the registry opened


class ExpiryClock:
    """The earliest expiry still to come, kept current as entries are written."""

    def __init__(self) -> None:
        self._next: datetime | None = _UNKNOWN
        self._version: Any = _UNKNOWN  # the store's version when the clock last looked

    def note(self, wire: dict[str, Any]) -> None:
        """An entry was written: an earlier expiry than the one known becomes the next."""
        expires = expiry_of(wire)
        if expires is not None and self._next is not _UNKNOWN and (self._next is None or expires < self._next):
            self._next = expires

    def may_be_due(self, now: datetime, version: Any) -> bool:
        return version != self._version or self._next is _UNKNOWN or (self._next is not None and self._next <= now)

    def due(self, store: Store, now: datetime) -> list[StoredAgent]:
        """The entries whose expiry has passed; the clock then waits for the earliest one still to come."""
        expiries: list[tuple[datetime, str]] = []
        self._version = store.version()  # before reading: a write meanwhile makes the clock look again
        for value, _ in store.facet(FIELD, None):
            stamp = stored_timestamp(value)
            if stamp is not None:  # not a time (a row an older version wrote): `ard-mcp check` reports it
                expiries.append((stamp, value))
        due = [value for stamp, value in expiries if stamp <= now]
        self._next = min((stamp for stamp, _ in expiries if stamp > now), default=None)
        if not due:
            return []
        return list(store.agents_by_id(store.filter_agents({FIELD: due}) or set()).values())
