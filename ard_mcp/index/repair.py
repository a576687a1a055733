"""`ard-mcp check`: find the stored rows reads cannot use (`store.readable`), and repair or remove them.

Such a row is left out of every answer, so the registry keeps serving; this is how an operator learns of
it and clears it. Repairing re-registers the stored document through today's rules (`leniency`), which
fixes what an older version stored in a spelling it now reads one way (a `visibleTo` list kept as JSON
text); what still fails them can only be removed, and removing works for any row, since a delete needs
only the identifier.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ard_mcp.errors import ArdError
from ard_mcp.index.indexer import Indexer
from ard_mcp.index.store.base import Store
from ard_mcp.index.store.readable import decoded


@dataclass
class CheckReport:
    checked: int = 0
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (identifier, why), as found
    repaired: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    still_unreadable: list[tuple[str, str]] = field(default_factory=list)  # after repairing or removing


def check_store(store: Store, indexer: Indexer, *, repair: bool = False, remove: bool = False) -> CheckReport:
    report = CheckReport(checked=store.count(), unreadable=list(store.unreadable()))
    for identifier, why in report.unreadable:
        if repair and _repaired(store, indexer, identifier):
            report.repaired.append(identifier)
        elif remove:
            indexer.deregister(identifier)
            report.removed.append(identifier)
        else:
            report.still_unreadable.append((identifier, why))
    return report


def _repaired(store: Store, indexer: Indexer, identifier: str) -> bool:
    """Whether registering the row's stored document again, as a publisher's, makes it readable."""
    blob = store.raw_entry(identifier)
    document = decoded(blob)[0] if blob is not None else None
    if document is None or document.get("identifier") != identifier:
        return False
    try:
        indexer.register(document)
    except ArdError:
        return False
    return store.get(identifier) is not None
