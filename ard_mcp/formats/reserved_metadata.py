"""The `metadata` keys that mean something to the registry, and the one form each may take.

Other metadata keys are the publisher's own and are kept as they come. These two change what the registry
does with the entry, so a value in another form must be refused, never read some other way:

- `expiresAt` (Xu's and AIDIP's `expires_at`): when the entry is removed. A value that is not a representable time once
  failed every read of a store (issue #30); one that was silently ignored would make a lease never expire.
- `visibleTo` (AIDIP per-client entitlements): the credentials that may see the entry, comma-separated.
  Read any other way it fails open or shut: an object was flattened to `visibleTo.names` and the entry
  became public; a JSON list was kept as the text `["alice"]` and hid the entry from alice too. A list of
  names is the one other form with a single meaning, so `leniency` joins it; everything else is refused.

A key that differs from one of these only in case or punctuation (`VisibleTo`, `visible_to`, `expires_at`)
is refused naming the right one: taken for a publisher's own key it failed open, the entry public and the
lease endless.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ard_mcp.formats.timestamps import EXAMPLE, parse_timestamp, utc_text

EXPIRES_KEY = "expiresAt"
VISIBLE_TO_KEY = "visibleTo"
RESERVED = (EXPIRES_KEY, VISIBLE_TO_KEY)
_NAME = re.compile(r"^[^\s,\[\]{}()\"'<>]+$")  # a token-file name or `oauth:<subject>`: nothing that reads as JSON
VISIBLE_TO_FORM = "a comma-separated string of credential names (token-file names, oauth:<subject>), or a list of them"


def visibility_names(value: str) -> set[str]:
    """The credential names a stored `visibleTo` value lets see the entry (case-insensitive)."""
    return {n.strip().lower() for n in value.split(",") if n.strip()}


def _squashed(key: str) -> str:
    return re.sub(r"[^0-9a-z]", "", key.casefold())


_NEAR_MISSES = {_squashed(key): key for key in RESERVED}  # "visibleto" → visibleTo: any case, `_`, `-` or `.` between
_PURPOSE = {EXPIRES_KEY: "makes the entry expire", VISIBLE_TO_KEY: "limits who may see the entry"}


def check_reserved(metadata: Mapping[str, Any]) -> None:
    """Raise ValueError naming the key when a reserved key's value is not in its one form. Keys that
    extend a reserved one (`visibleTo.names`, what flattening an object makes) are refused too, and so are
    near misses (`VisibleTo`, `visible_to`, `expires_at`): read as a publisher's own key, `VisibleTo` made
    the entry public and `expires_at` a lease that never ended, so the key the publisher meant is named."""
    for key in metadata:
        base = key.split(".", 1)[0]
        if base in RESERVED and key != base:
            raise ValueError(f"{base} must be {_form(base)}, not an object (found {key!r})")
        meant = _NEAR_MISSES.get(_squashed(base)) or _NEAR_MISSES.get(_squashed(key))
        if meant is not None and base != meant:
            raise ValueError(f"{key!r} is not {meant}, the key that {_PURPOSE[meant]}: spell it {meant} (a near miss is refused)")
    if EXPIRES_KEY in metadata:
        try:
            parse_timestamp(metadata[EXPIRES_KEY])
        except ValueError as exc:
            raise ValueError(f"{EXPIRES_KEY} {exc} (got {metadata[EXPIRES_KEY]!r})") from None
    if VISIBLE_TO_KEY in metadata:
        value = metadata[VISIBLE_TO_KEY]
        names = [n.strip() for n in value.split(",")] if isinstance(value, str) else []
        if not names or not all(_NAME.match(n) for n in names):
            raise ValueError(f"{VISIBLE_TO_KEY} must be {VISIBLE_TO_FORM} (got {value!r})")


def joined_names(value: Any) -> str | None:
    """A `visibleTo` list of names as the stored string, or None when `value` is no such list. The list
    may come as JSON text: what flattening a list made before these rules (`ard-mcp check --repair`)."""
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if isinstance(value, list) and value and all(isinstance(n, str) and _NAME.match(n.strip()) for n in value):
        return ",".join(n.strip() for n in value)
    return None


def expiry_metadata(expires_at: str | None) -> dict[str, str]:
    """A document's own `expires_at` (Xu, AIDIP) as the entry's `metadata.expiresAt` in the one spelling,
    which is what makes the registry remove the entry when it passes (`index.expiry`)."""
    return {EXPIRES_KEY: utc_text(parse_timestamp(expires_at))} if expires_at else {}


def _form(key: str) -> str:
    return VISIBLE_TO_FORM if key == VISIBLE_TO_KEY else f"an ISO 8601 date-time, e.g. {EXAMPLE}"
