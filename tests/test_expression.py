"""ARD Appendix A filter expressions, `orderBy` and page tokens: parsed exactly or refused with the
position and what was expected (no model, no Chroma)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ard_mcp.errors import InvalidArgument
from ard_mcp.search.expression import MAX_EXPRESSION_CHARS, parse_expression
from ard_mcp.search.ordering import parse_order
from ard_mcp.search.paging import check_page_size, decode_token, encode_token


def test_conditions_are_anded_and_commas_or_within_one() -> None:
    parsed = parse_expression("type = 'application/a2a-agent-card+json,application/ai-skill' AND publisherId = Example.com AND tags = a,b")
    assert parsed.equals == [
        ("type", ["application/a2a-agent-card+json", "application/ai-skill"]),
        ("publisher", ["Example.com"]),
        ("tags", ["a", "b"]),
    ]


def test_a_quoted_value_keeps_its_commas_except_in_fields_whose_values_never_have_them() -> None:
    assert parse_expression("tags = 'a,b'").equals == [("tags", ["a,b"])]
    assert parse_expression('metadata.note = "it\'s, fine"').equals == [("metadata.note", ["it's, fine"])]


def test_names_match_case_insensitive_substrings_and_dates_keep_the_latest_bound() -> None:
    parsed = parse_expression(
        "displayName = Weather AND createdAfter > '2026-01-01' AND createdAfter > 2026-03-01T12:00:00z AND updatedAfter > 2025-12-31"
    )
    assert parsed.names == [["weather"]]
    assert parsed.created_after == datetime(2026, 3, 1, 12, tzinfo=UTC)
    assert parsed.updated_after == datetime(2025, 12, 31, tzinfo=UTC)
    assert parse_expression("  ").key() == parse_expression(None).key()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("type = a OR tags = b", "expected AND between conditions, got 'OR' at position 10"),
        ("type >= a", "'>=' applies to createdAfter and updatedAfter only"),
        ("type = ", "expected a value, got the end of the expression"),
        ("= a", "expected a field name, got '=' at position 1"),
        ("colour = red", "filter field 'colour' is not supported"),
        ("createdAfter > yesterday", "createdAfter needs an ISO 8601 date or date-time"),
        ("createdAfter > 2026-01-01,2026-02-01", "createdAfter takes one timestamp"),
        ("type = ','", "type needs at least one non-empty value"),
        ("x" * (MAX_EXPRESSION_CHARS + 1), f"must be at most {MAX_EXPRESSION_CHARS} characters"),
    ],
)
def test_a_malformed_expression_is_refused_whole_with_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_expression(text)


def test_order_takes_schema_names_or_prose_aliases_each_optionally_descending() -> None:
    assert parse_order("displayName, updatedAt DESC") == [("displayName", False), ("updatedAt", True)]
    assert parse_order("name asc, created_at desc") == [("displayName", False), ("createdAt", True)]
    assert parse_order(None) == parse_order(" ") == []
    for bad in ("score", "displayName sideways", "displayName,", "a b c"):
        with pytest.raises(InvalidArgument, match="orderBy"):
            parse_order(bad)


def test_a_page_token_only_pages_the_request_it_came_from() -> None:
    request = ["search", "weather", {"tags": ["x"]}]
    token = encode_token(20, request)
    assert decode_token(token, request) == 20 and decode_token(None, request) == 0
    with pytest.raises(InvalidArgument, match="belongs to a different query"):
        decode_token(token, ["search", "weather", {}])
    for forged in ("not a token", "eyJvIjogLTEsICJrIjogIngifQ", "e30"):
        with pytest.raises(InvalidArgument, match="pageToken"):
            decode_token(forged, request)
    for size in (0, 101):
        with pytest.raises(InvalidArgument, match="pageSize: must be between 1 and 100"):
            check_page_size(size)
