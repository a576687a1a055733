"""The derived vector index: one Chroma record per example, holding only its id and vector.

No documents or metadata go into Chroma: texts, agents and filterable fields live in the store, which
keeps inserts near Chroma's raw vector speed and keeps filters off Chroma's slow `where` path.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ard_mcp.embedding import Embedder, chroma_embedding_function
from ard_mcp.errors import ModelMismatch

log = logging.getLogger(__name__)

COLLECTION = "ard_examples"
HNSW = {"space": "cosine", "ef_construction": 200, "ef_search": 160, "max_neighbors": 32}
_WRITE_BATCH = 4000


class VectorIndex:
    def __init__(self, path: Path, embedder: Embedder, *, fresh: bool = False) -> None:
        import chromadb
        from chromadb.config import Settings

        self._embedder = embedder
        self._client = chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))
        self._function = chroma_embedding_function()(str(embedder.spec.directory))
        if fresh:
            self._drop()
        self._collection = self._open()

    def _open(self) -> Any:
        spec = self._embedder.spec
        collection = self._client.get_or_create_collection(
            COLLECTION,
            configuration={"hnsw": HNSW},
            metadata={"model_id": spec.id, "dimension": spec.dimension},
            embedding_function=self._function,
        )
        meta = collection.metadata or {}
        if meta.get("model_id") != spec.id or meta.get("dimension") != spec.dimension:
            raise ModelMismatch(
                f"the vector index was built with model {meta.get('model_id')!r} ({meta.get('dimension')} dimensions), "
                f"not {spec.id!r} ({spec.dimension}); run `ard-mcp reindex` to rebuild it with this model"
            )
        return collection

    def close(self) -> None:
        """Release Chroma's in-process system so the directory can be reopened, moved or deleted."""
        self._client.close()

    def count(self) -> int:
        return int(self._collection.count())

    def add(self, ids: Sequence[int], vectors: np.ndarray) -> None:
        for start in range(0, len(ids), _WRITE_BATCH):
            self._collection.upsert(
                ids=[str(i) for i in ids[start : start + _WRITE_BATCH]], embeddings=vectors[start : start + _WRITE_BATCH]
            )

    def delete(self, ids: Sequence[int]) -> None:
        for start in range(0, len(ids), _WRITE_BATCH):
            self._collection.delete(ids=[str(i) for i in ids[start : start + _WRITE_BATCH]])

    def query(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The k nearest examples as (example id, cosine similarity), best first."""
        k = min(k, self.count())
        if k <= 0:
            return []
        result = self._collection.query(query_embeddings=[vector], n_results=k, include=["distances"])
        return [(int(i), 1.0 - float(d)) for i, d in zip(result["ids"][0], result["distances"][0], strict=True)]

    def _drop(self) -> None:
        """Forget every vector (reindex, or a switch of model): the store can rebuild them."""
        if COLLECTION in {c.name if hasattr(c, "name") else c for c in self._client.list_collections()}:
            self._client.delete_collection(COLLECTION)
