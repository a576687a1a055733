"""Which entries a listing covers (ARD §7.4): a §7.1 filter object or an Appendix A expression, both read
as one `Expression`, turned into the set of agents it selects.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from datetime import datetime
from typing import Any

from ard_mcp.formats.timestamps import stored_timestamp
from ard_mcp.index.records import Order
from ard_mcp.index.store.base import Store
from ard_mcp.search.expression import Expression, parse_expression
from ard_mcp.search.filters import parse_filter

_SCAN = 500  # agents read at a time when walking the registry newest first


def listing_key(selection: Expression, order: Order) -> list[Any]:
    """What a listing's page token is bound to (`Registry.list`), so a token cannot page another listing; the
    web page builds the token of its page N from it, as `GET /agents` would have handed it back."""
    return ["list", selection.key(), order]


def parse_selection(selection: Mapping[str, Any] | str | None) -> Expression:
    """A filter object's keys become exact conditions; a string is an Appendix A expression."""
    if isinstance(selection, str):
        return parse_expression(selection)
    return Expression(equals=list(parse_filter(selection).items()))


def selected_ids(store: Store, expression: Expression) -> AbstractSet[int] | None:
    """The agents meeting every condition; None when there is no condition (everyone)."""
    picks: list[AbstractSet[int]] = []
    for key, values in expression.equals:
        picks.append(store.filter_agents(parse_filter({key: values})) or set())
    for patterns in expression.names:
        names = [v for v, _ in store.facet("displayName", None) if any(p in v.lower() for p in patterns)]
        picks.append(store.filter_agents({"displayName": names}) or set() if names else set())
    if expression.created_after is not None:
        picks.append(_changed_since(store, "createdAt", expression.created_after))
    if expression.updated_after is not None:
        picks.append(_changed_since(store, "updatedAt", expression.updated_after))
    ids: AbstractSet[int] | None = None
    for pick in picks:
        ids = pick if ids is None else ids & pick
    return ids


def _changed_since(store: Store, column: str, since: datetime) -> set[int]:
    """Agents whose createdAt (registration) or updatedAt (entry) is after `since`, newest first until older."""
    found: set[int] = set()
    offset = 0
    while True:
        agents, _ = store.list_page(None, [(column, True)], offset, _SCAN)
        for agent in agents:
            raw = agent.created_at if column == "createdAt" else agent.updated_at
            if raw is None:
                return found  # no date sorts last
            stamp = stored_timestamp(raw)
            if stamp is not None and stamp <= since:
                return found
            if stamp is not None:
                found.add(agent.id)
        if len(agents) < _SCAN:
            return found
        offset += len(agents)
