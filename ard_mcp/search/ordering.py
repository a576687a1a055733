"""`orderBy` of a listing (ARD §7.4): `displayName`, `updatedAt DESC, identifier`, ... over the fields every
store can order by (`ard_mcp.index.records.ORDERABLE`); the identifier always breaks ties."""

from __future__ import annotations

from ard_mcp.errors import InvalidArgument
from ard_mcp.index.records import ORDERABLE, Order

# The prose's spellings, accepted beside the schema's (`displayName`, `createdAt`).
_ALIASES = {
    "name": "displayName",
    "display_name": "displayName",
    "created_at": "createdAt",
    "updated_at": "updatedAt",
    "created": "createdAt",
    "updated": "updatedAt",
}


def parse_order(order_by: str | None) -> Order:
    """Fields of ORDERABLE (or their aliases), each optionally ASC or DESC, comma-separated."""
    if not order_by or not order_by.strip():
        return []
    order = []
    for part in order_by.split(","):
        tokens = part.split()
        if tokens:
            tokens[0] = _ALIASES.get(tokens[0].lower(), tokens[0])
        if not tokens or len(tokens) > 2 or tokens[0] not in ORDERABLE or (len(tokens) == 2 and tokens[1].upper() not in ("ASC", "DESC")):
            raise InvalidArgument(f"orderBy: {part.strip()!r} is not '<field> [ASC|DESC]' with a field of {', '.join(ORDERABLE)}")
        order.append((tokens[0], len(tokens) == 2 and tokens[1].upper() == "DESC"))
    return order
