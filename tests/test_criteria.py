"""§7.1 filters as callers send them, and the Xu / AIDIP criteria every surface selects with (no model,
no Chroma)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from ard_mcp.errors import InvalidArgument
from ard_mcp.index.filter_values import entry_values, scalar_text
from ard_mcp.search.criteria import Criteria, age_seconds, as_list
from ard_mcp.search.filters import check_field, parse_filter

NOW = datetime(2026, 6, 1, tzinfo=UTC)
ENTRY: dict[str, Any] = {
    "identifier": "urn:air:Example.com:hr:onboarding",
    "displayName": "Onboarding",
    "type": "application/agent-discovery-metadata+json",
    "tags": ["HR", "Workflow"],
    "capabilities": ["Onboard"],
    "updatedAt": "2026-05-31T00:00:00Z",
    "metadata": {"status": "Testing", "region": "apac", "free": True, "seats": 10.0},
    "trustManifest": {
        "identity": "spiffe://example.com/hr",
        "attestations": [{"type": "SOC2", "uri": "https://e.com/s", "mediaType": "application/pdf"}],
    },
    "data": {"bindings": [{"protocol": "https", "endpoint": "https://example.com/invoke"}], "examples": [{"text": "x", "language": "ja"}]},
}


def test_filter_values_are_flattened_in_one_spelling_per_value() -> None:
    values = entry_values(ENTRY)
    assert ("publisher", "example.com") in values and ("tags", "HR") in values
    assert ("trustManifest.attestations.type", "SOC2") in values
    assert ("metadata.free", "true") in values and ("metadata.seats", "10") in values
    assert [scalar_text(v) for v in (True, None, 1.5, 2.0, "x")] == ["true", "null", "1.5", "2", "x"]


def test_a_filter_object_is_checked_and_put_in_stored_spellings() -> None:
    assert parse_filter({"tags": "HR", "publisher": ["EXAMPLE.com"], "identifier": "urn:air:example.com:a", "metadata.free": True}) == {
        "tags": ["HR"],
        "publisher": ["example.com"],
        "identifier": ["urn:air:example.com:a"],
        "metadata.free": ["true"],
    }
    assert parse_filter(None) == {} and parse_filter({"tags": ["a", "a"]}) == {"tags": ["a"]}
    for bad, message in [
        ({"colour": ["red"]}, "filter key 'colour' is not supported"),
        ({"metadata.": ["x"]}, "not supported"),
        ({"tags": []}, "filter.tags: must list at least one value"),
        ({"tags": [{"a": 1}]}, "values must be strings, numbers or booleans"),
        (["tags"], "filter: must be an object"),
    ]:
        with pytest.raises(InvalidArgument, match=message):
            parse_filter(bad)  # type: ignore[arg-type]
    assert check_field("metadata.region") == "metadata.region"


def test_criteria_normalise_case_and_repeats_and_narrow_with_an_or_filter() -> None:
    criteria = Criteria.of(required_tags=[" HR ", "hr", "Workflow"], capabilities=["onboard"], preferred_tags=["x"])
    assert criteria.required_tags == ("hr", "workflow")
    assert criteria.narrowing() == {"tags": ["hr", "workflow"], "capabilities": ["onboard"]}
    assert Criteria().empty and not criteria.empty
    assert criteria.key() == Criteria.of(required_tags=["workflow", "hr"][::-1], capabilities=["ONBOARD"], preferred_tags=["X"]).key()
    assert as_list("a") == ["a"] and as_list(None) == [] and as_list(["a", "b"]) == ["a", "b"]


@pytest.mark.parametrize(
    ("criteria", "accepted"),
    [
        (Criteria.of(required_tags=["hr", "workflow"]), True),
        (Criteria.of(required_tags=["hr", "payroll"]), False),  # every required tag, not any
        (Criteria.of(excluded_tags=["workflow"]), False),
        (Criteria.of(capabilities=["onboard"], languages=["JA"]), True),
        (Criteria.of(languages=["en"]), False),
        (Criteria.of(protocols=["a2a", "https"]), True),  # any one protocol
        (Criteria.of(protocols=["a2a"]), False),
        (Criteria.of(statuses=["active"]), False),
        (Criteria.of(statuses=["testing"]), True),
        (Criteria.of(regions=["apac"]), True),
        (Criteria.of(regions=["eu"]), False),
        (Criteria.of(max_age_seconds=86_400), True),
        (Criteria.of(max_age_seconds=3_600), False),
    ],
)
def test_criteria_accept_exactly(criteria: Criteria, accepted: bool) -> None:
    assert criteria.accepts(ENTRY, "2026-01-01T00:00:00Z", NOW) is accepted


def test_age_is_from_the_publishers_timestamp_else_from_indexing() -> None:
    assert age_seconds(ENTRY, "2020-01-01T00:00:00Z", NOW) == 86_400
    assert age_seconds({"updatedAt": "garbage"}, "2026-05-31T12:00:00Z", NOW) == 43_200
    assert age_seconds({}, "2026-07-01T00:00:00Z", NOW) == 0.0  # never negative
    assert Criteria.of(preferred_tags=["hr", "x"]).preferred_in(ENTRY) == ["hr"]
