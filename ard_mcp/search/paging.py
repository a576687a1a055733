"""Pages of a search or a listing: the page size every surface accepts, and opaque page tokens.

A token carries the offset of the next page and a digest of the request it pages through, so a token is
never applied to another query (a client that changed its filter gets an error, not a shifted page).
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from ard_mcp.errors import InvalidArgument

MAX_PAGE_SIZE = 100
MAX_OFFSET = 2**31  # far past any registry; an offset SQLite and numpy can always hold
MAX_TOKEN_LENGTH = 128  # what `encode_token` makes is under 70 characters


def check_page_size(page_size: int) -> None:
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise InvalidArgument(f"pageSize: must be between 1 and {MAX_PAGE_SIZE} (got {page_size})")


def _key(request: Any) -> str:
    return hashlib.sha256(json.dumps(request, sort_keys=True, default=str).encode()).hexdigest()[:16]


def encode_token(offset: int, request: Any) -> str:
    """The token of the page at `offset` of `request` (any JSON-able description of the request)."""
    raw = json.dumps({"o": offset, "k": _key(request)}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_token(token: str | None, request: Any) -> int:
    """The offset a token names; 0 without one. A token of another request or not ours is refused."""
    if not token:
        return 0
    if len(token) > MAX_TOKEN_LENGTH:  # before decoding: a forged token nested 5,000 deep overflowed the JSON reader's stack
        raise InvalidArgument("pageToken: not a token this registry issued")
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        offset, key = data["o"], data["k"]
    except (ValueError, KeyError, TypeError):
        raise InvalidArgument("pageToken: not a token this registry issued") from None
    if not isinstance(offset, int) or isinstance(offset, bool) or not 0 <= offset <= MAX_OFFSET:
        raise InvalidArgument("pageToken: not a token this registry issued")  # forged: 1e400 once overflowed into a 500
    if key != _key(request):
        raise InvalidArgument("pageToken: belongs to a different query; repeat the query it came from")
    return offset
