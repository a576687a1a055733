"""What a search costs (issue 57): repeated tasks answered from kept query vectors, numpy's BLAS on one thread, and
the REST body serialised in one step, each leaving the answers as they were. The CPU figures themselves are
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
from ard_mcp.registry import Registry
from ard_mcp.search.blas import one_blas_thread
from ard_mcp.search.query import SearchQuery
from ard_mcp.search.ranking import split_intents
from ard_mcp.surfaces.rest.routes import search_body

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
