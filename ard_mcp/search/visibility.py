"""Per-client visibility (AIDIP's per-client entitlements): an entry whose `metadata.visibleTo` names
credentials (comma-separated: token-file names, `oauth:<subject>`) is seen only by those credentials and
by the credentials that may write its publisher's entries. Everyone else never learns it exists: it is
left out of search results and their totals, facets, listings, look-ups and the served manifest alike,
because every read starts from the set of agents the viewer may see.

Restricted entries are expected to be few; finding them is one scan of that key's index.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ard_mcp.formats.identifiers import publisher_of
from ard_mcp.formats.reserved_metadata import VISIBLE_TO_KEY, visibility_names
from ard_mcp.index.filter_values import METADATA_PREFIX

if TYPE_CHECKING:  # the surfaces build viewers before the store (and numpy) are loaded: start-up stays fast
    from ard_mcp.index.store.base import Store

_FIELD = METADATA_PREFIX + VISIBLE_TO_KEY


@dataclass(frozen=True)
class Viewer:
    """Who is reading: a credential's name and publisher scope, nobody (anonymous), or everyone (the local
    user over stdio and the command line, or a registry without credentials, where nobody could prove more)."""

    name: str | None = None
    may_write: Callable[[str], bool] | None = None
    everything: bool = False


EVERYONE = Viewer(everything=True)
ANONYMOUS = Viewer()


def hidden_agents(store: Store, viewer: Viewer) -> frozenset[int]:
    """The agents `viewer` may not see."""
    if viewer.everything:
        return frozenset()
    refused = [v for v, _ in store.facet(_FIELD, None) if viewer.name is None or viewer.name.lower() not in visibility_names(v)]
    hidden = store.filter_agents({_FIELD: refused}) if refused else None
    if not hidden:
        return frozenset()
    if viewer.may_write is not None:
        owned = {a.id for a in store.agents_by_id(hidden).values() if viewer.may_write(publisher_of(a.identifier))}
        hidden = hidden - owned
    return frozenset(hidden)


def visible(store: Store, ids: AbstractSet[int] | None, hidden: AbstractSet[int]) -> AbstractSet[int] | None:
    """`ids` (None: every agent) without the hidden ones."""
    if not hidden:
        return ids
    return (ids if ids is not None else store.agent_ids()) - hidden
