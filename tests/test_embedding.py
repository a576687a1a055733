"""The embedder: vectors of the bundled model, and sub-intent vectors from one pass (late chunking)."""

from __future__ import annotations

import numpy as np
import pytest

from ard_mcp.index.embedding import load_embedder
from ard_mcp.search.ranking import split_intents

pytestmark = pytest.mark.slow  # the model, Chroma or a server

TASK = "geocode the office address, find parking nearby, then convert the trip report to a PDF"


def test_vectors_are_normalised_and_semantic() -> None:
    embedder = load_embedder()
    vectors = embedder.embed(["weather forecast for Paris", "will it rain in Paris tomorrow", "merge two PDF files"])
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2


def test_split_intents_finds_the_steps_of_a_task() -> None:
    assert split_intents(TASK) == ["geocode the office address", "find parking nearby", "convert the trip report to a PDF"]
    assert split_intents("weather in Oslo") == []


def test_parts_come_from_one_pass_and_stay_close_to_their_own_meaning() -> None:
    embedder = load_embedder()
    parts = split_intents(TASK)
    together = embedder.embed_with_parts(TASK, parts)
    alone = embedder.embed(parts)
    assert together.shape == (4, 384)
    assert np.allclose(together[0], embedder.embed_one(TASK), atol=1e-5)  # row 0 is the whole text
    similarity = together[1:] @ alone.T
    assert (similarity.argmax(axis=1) == np.arange(len(parts))).all()  # each part is nearest its own text


def test_a_part_cut_off_by_truncation_is_embedded_on_its_own() -> None:
    embedder = load_embedder()
    long_text = "summarise this " * 200 + "and translate the abstract into Japanese"
    part = "translate the abstract into Japanese"
    rows = embedder.embed_with_parts(long_text, [part])
    assert np.allclose(rows[1], embedder.embed_one(part), atol=1e-5)


def test_the_bulk_session_is_the_same_model() -> None:
    """Ingest batches run on a second ONNX session (onnxruntime's threads, spinning; queries run on one thread):
    same model, same vectors."""
    embedder = load_embedder()
    texts = [f"tool number {i}: converts {i} files into report {i % 7}" for i in range(70)]
    bulk = embedder.embed(texts)
    assert "_bulk_session" in embedder.__dict__ and bulk.shape == (70, 384)
    encodings = embedder._tokenizer.encode_batch(texts[:8])  # noqa: SLF001 - one batch through each session
    quiet = embedder._run(encodings, embedder._session)[1]  # noqa: SLF001
    spinning = embedder._run(encodings, embedder._bulk_session)[1]  # noqa: SLF001
    assert np.allclose(quiet, spinning, atol=1e-6)
