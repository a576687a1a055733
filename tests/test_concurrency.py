"""Searches racing writes: a search reads one consistent state (a candidate's examples and its terms from
the same snapshot), so concurrent registrations and deletions never make it fail."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from ard_mcp.config import Config
from ard_mcp.registry import Registry
from ard_mcp.search.query import SearchQuery
from tests.conftest import SAMPLE, WEATHER, entry

pytestmark = pytest.mark.slow
ROUNDS = 60


@pytest.mark.parametrize("resident", [True, False], ids=["in-memory copy", "store"])
def test_searches_never_fail_while_entries_come_and_go(tmp_path: Path, resident: bool) -> None:
    registry = Registry(Config(tmp_path / "data"))
    try:
        for item in SAMPLE:
            registry.indexer.register(item)
        if resident:
            registry.resident.load()
        churn = [entry(WEATHER, identifier=f"urn:air:example.com:weather:copy{i}", displayName=f"Weather copy {i}") for i in range(4)]
        for item in churn:
            registry.indexer.register(item)
        errors: list[BaseException] = []
        done = threading.Event()

        def writer() -> None:
            try:
                for _ in range(ROUNDS):
                    for item in churn:
                        registry.indexer.deregister(item["identifier"])
                    for item in churn:
                        registry.indexer.register(item)
            except BaseException as exc:  # reported by the test
                errors.append(exc)
            finally:
                done.set()

        thread = threading.Thread(target=writer)
        thread.start()
        searches = 0
        while not done.is_set() or searches < 20:
            try:
                registry.search(SearchQuery.of("will it rain in Lisbon this weekend?", page_size=10)).response()
            except BaseException as exc:  # reported by the test
                errors.append(exc)
                break
            searches += 1
        thread.join(timeout=120)
        assert not errors, f"{len(errors)} failure(s) in {searches} searches, first: {errors[0]!r}"
    finally:
        registry.close()
