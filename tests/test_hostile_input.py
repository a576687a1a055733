"""Hostile input answered with a clear error naming what is wrong, never a server error (issue #15): forged
page tokens, and the limits on what one entry or one request may ask of the registry."""

from __future__ import annotations

import base64
import json

import pytest

from ard_mcp.errors import InvalidArgument
from ard_mcp.search.paging import decode_token, encode_token


def _forged(data: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode()


@pytest.mark.parametrize(
    "token",
    [
        "eyJvIjogMWU0MDAsICJrIjogIngifQ==",  # {"o": 1e400, "k": "x"}: int(inf) raised OverflowError
        _forged({"o": 10**24, "k": "x"}),
        _forged({"o": -1, "k": "x"}),
        _forged({"o": True, "k": "x"}),
        _forged({"o": "5", "k": "x"}),
        _forged([1, 2]),
        "%%%",
    ],
)
def test_forged_page_tokens_are_refused(token: str) -> None:
    with pytest.raises(InvalidArgument, match="pageToken: not a token this registry issued"):
        decode_token(token, {"q": "x"})


def test_a_token_of_another_query_is_refused_and_ours_is_read() -> None:
    token = encode_token(40, {"q": "x"})
    assert decode_token(token, {"q": "x"}) == 40
    with pytest.raises(InvalidArgument, match="belongs to a different query"):
        decode_token(token, {"q": "y"})
