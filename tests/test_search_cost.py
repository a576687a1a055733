"""What a search costs (issue 57): repeated tasks answered from kept query vectors, numpy's BLAS on one thread, the
REST body serialised in one step, and each entry's terms, stored entry and validated result kept per version of it,
each leaving the answers as they were. The CPU figures themselves are
measured by `bench/throughput.py` (docs/benchmarks.md), not asserted here."""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from ard_mcp.formats.messages import ArdSearchResponse
from ard_mcp.index import embedding
from ard_mcp.index.lexical import Vocabulary
from ard_mcp.index.records import StoredAgent
from ard_mcp.registry import Registry
from ard_mcp.search.blas import one_blas_thread
from ard_mcp.search.query import SearchQuery
from ard_mcp.search.ranking import split_intents
from ard_mcp.search.results import _as_result, _entry_json
from ard_mcp.surfaces.rest.routes import search_body
from tests.conftest import PDF, entry

pytestmark = pytest.mark.slow  # the model and Chroma

TASKS = ["weather forecast for Oslo tomorrow", "turn a scanned PDF into text, then translate it to Japanese", "send an invoice"]


def _page(registry: Registry, text: str) -> dict[str, Any]:
    page = registry.search(SearchQuery.of(text))
    return ArdSearchResponse(results=page.results(), pageToken=page.page_token).model_dump(mode="json", by_alias=True)


def test_a_repeated_task_is_answered_from_its_kept_vectors(loaded: Registry) -> None:
    embedder = loaded.embedder
    first = [_page(loaded, task) for task in TASKS]
    hits, misses = embedder.query_hits, embedder.query_misses
    again = [_page(loaded, task) for task in TASKS]
    assert (embedder.query_hits - hits, embedder.query_misses - misses) == (len(TASKS), 0)
    assert again == first  # the same answers, scores and evidence
    text = TASKS[1]
    kept = embedder.embed_query(text, split_intents(text))
    assert not kept.flags.writeable  # shared between searches: nobody may change it
    assert np.array_equal(kept, embedder.embed_with_parts(text, split_intents(text)))  # exactly what the model gives


def test_the_kept_vectors_are_bounded_and_least_recently_used_go_first(loaded: Registry, monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = loaded.embedder
    monkeypatch.setattr(embedding, "QUERY_VECTORS", 2)
    for text in ("alpha task", "beta task", "alpha task", "gamma task"):  # alpha used again: beta is the oldest
        embedder.embed_query(text, [])
    misses = embedder.query_misses
    embedder.embed_query("alpha task", [])
    assert embedder.query_misses == misses
    embedder.embed_query("beta task", [])
    assert embedder.query_misses == misses + 1


def test_the_rest_body_is_the_response_model_as_json(loaded: Registry) -> None:
    for task in TASKS:
        body = json.loads(search_body(loaded.search(SearchQuery.of(task))))
        assert body == _page(loaded, task)
        assert body["results"]


def test_blas_runs_on_one_thread_once_set(loaded: Registry) -> None:
    _ = loaded.ranker  # a ranker sets it
    assert one_blas_thread() == one_blas_thread()  # once per process; the answer stays
    blas = [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]
    assert blas and (blas == [1] or "OPENBLAS_NUM_THREADS" in os.environ or "OMP_NUM_THREADS" in os.environ), blas


def test_what_is_kept_of_an_entry_follows_its_re_registration(loaded: Registry) -> None:
    loaded.warm_up()
    assert loaded.resident.loaded
    task = "merge several pdf documents into one"
    before = loaded.search(SearchQuery.of(task)).results()
    assert before[0].identifier == PDF["identifier"] and "documents" in before[0].evidence.matchedTags  # type: ignore[union-attr]
    changed = entry(PDF, displayName="PDF Foundry", tags=["paperwork"], description="Document conversion and merging toolkit.")
    assert loaded.indexer.register(changed).status == "updated"
    after = loaded.search(SearchQuery.of(task)).results()
    assert after[0].identifier == PDF["identifier"]
    assert after[0].displayName == "PDF Foundry" and after[0].tags == ["paperwork"]  # the new entry, not the kept one
    assert after[0].evidence is not None and "documents" not in after[0].evidence.matchedTags  # the new terms too
    agent_id = loaded.store.id_of(PDF["identifier"])
    assert agent_id is not None
    kept = loaded.resident.agents([agent_id])[agent_id]
    assert kept.entry == loaded.store.agents_by_id([agent_id])[agent_id].entry
    assert kept is loaded.resident.agents([agent_id])[agent_id]  # read once for this version
    _, vocabularies = loaded.resident.examples_and_vocabularies([agent_id], [])
    _, terms = loaded.store.examples_and_terms([agent_id])
    assert vocabularies[agent_id] == Vocabulary.of(terms[agent_id])


def test_a_result_is_validated_once_per_stored_entry() -> None:
    stored = StoredAgent(1, PDF["identifier"], entry(PDF), "hash", None, "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z")
    first = _as_result(stored)
    assert _as_result(stored) is first
    renamed = StoredAgent(1, PDF["identifier"], entry(PDF, displayName="Renamed"), "hash", None, "x", "y")  # same id, new entry
    assert _as_result(renamed).displayName == "Renamed"


def test_the_rest_body_is_the_response_models_json_byte_for_byte(loaded: Registry) -> None:
    """`SearchPage.ard_body` splices each entry's kept JSON around the result's own fields: the bytes pydantic gives,
    for entries with fields no model names (a null one among them, left out as pydantic leaves it out) too."""
    odd = entry(PDF, identifier="urn:air:example.com:pdf:odd", displayName='PDF Ünïcode "quoted" merger')
    odd |= {"x-vendor": {"nested": [1, "ü", None], "flag": True}, "x-empty": None, "zzz": "last"}
    assert loaded.indexer.register(odd).status == "created"
    for task in [*TASKS, "merge several pdf documents into one"]:
        page = loaded.search(SearchQuery.of(task, page_size=3))
        expected = ArdSearchResponse(results=page.results(), pageToken=page.page_token).model_dump_json(by_alias=True).encode()
        assert search_body(page) == expected
        assert search_body(page) == expected  # the second time from the kept parts
    body = json.loads(search_body(loaded.search(SearchQuery.of("merge several pdf documents into one"))))
    found = {r["identifier"]: r for r in body["results"]}
    assert found[odd["identifier"]]["x-vendor"] == odd["x-vendor"] and "x-empty" not in found[odd["identifier"]]
    assert list(found[odd["identifier"]])[-2:] == ["x-vendor", "zzz"]  # after score, source and evidence, as pydantic puts them


def test_an_entrys_kept_json_follows_its_new_version() -> None:
    stored = StoredAgent(2, PDF["identifier"], entry(PDF), "hash", None, "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z")
    head, _ = _entry_json(stored)
    assert _entry_json(stored)[0] is head
    renamed = StoredAgent(2, PDF["identifier"], entry(PDF, displayName="Renamed"), "hash", None, "x", "y")
    assert b'"displayName":"Renamed"' in _entry_json(renamed)[0]
