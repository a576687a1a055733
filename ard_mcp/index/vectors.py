"""The derived vector index: one Chroma record per example, holding only its id and vector.

No documents or metadata go into Chroma: texts, agents and filterable fields live in the store, which
keeps inserts near Chroma's raw vector speed and keeps filters off Chroma's slow `where` path.

A small embedded index is searched exactly instead (`_Exact`): one product of the query's vectors with a float32
copy of every vector kept in this process, which is cheaper than Chroma's HNSW query up to `EXACT_MAX` vectors.
"""

from __future__ import annotations

import logging
import shutil
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import numpy as np

from ard_mcp.config import DEFAULT_MODEL, bundled_model_dir, shipped_model_dir
from ard_mcp.errors import InvalidArgument, ModelMismatch, VectorIndexUnavailable
from ard_mcp.index.embedding import Embedder, chroma_embedding_function
from ard_mcp.index.rwlock import ReadWriteLock

log = logging.getLogger(__name__)


def _key(example_id: int, agent_id: int) -> str:
    return f"{example_id}@{agent_id}"


def _is_uuid(name: str) -> bool:
    try:
        uuid.UUID(name)
    except ValueError:
        return False
    return True


COLLECTION = "ard_examples"
# At 590k vectors, recall@10 against exact search was 0.960 with ef_search 160, 0.972 with 400, 0.986 with 600
# (a vector query 2.8 -> 3.6 ms) and 0.988 with 800. The other three fix the graph, so only ef_search can change later.
HNSW = {"space": "cosine", "ef_construction": 200, "ef_search": 600, "max_neighbors": 32}
_WRITE_BATCH = 4000
#: An embedded index of at most this many vectors answers `nearest_agents` from its float32 copy (`_Exact`), not
#: Chroma's HNSW query. On the bundled snapshot (2,216 vectors, 2 cores) Chroma's query took 2.5 ms of a search's
#: ~12.5 ms CPU for the task and its two steps (`ef_search` 600 visits most of so small a graph); the exact product
#: 0.25 ms. The product grows with the vectors (1.3-1.9 ms at 10,000, 4-5 ms at 20,000, one BLAS thread), HNSW's
#: query with their logarithm, so past this Chroma answers. The exact answer is the one HNSW approximates: on the
#: 890 dev queries' 2,000 vectors Chroma returned the exact 40 nearest for all but 4, which lacked one example the
#: exact search ranks 10th-34th), and not one of those queries' pages changed (docs/benchmarks.md, third round).
EXACT_MAX = 10_000
# Sends a Chroma server the deletion half of `VectorIndex.replace` while this thread sends the upsert.
_DELETER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ard-mcp-vector-delete")


def _client(path: Path, url: str | None) -> Any:
    """Embedded Chroma in `path`, or the Chroma server at `url` (`chroma run`), which several processes share."""
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False)
    if url is None:
        return chromadb.PersistentClient(path=str(path), settings=settings)
    parsed = urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise InvalidArgument(f"chroma URL {url!r}: must be http://HOST:PORT or https://HOST:PORT")
    port = parsed.port or (443 if parsed.scheme == "https" else 8000)
    try:
        return chromadb.HttpClient(host=parsed.hostname, port=port, ssl=parsed.scheme == "https", settings=settings)
    except Exception as exc:
        raise VectorIndexUnavailable(f"cannot reach the Chroma server at {url}: {exc}") from None


def _recorded_model_dir(embedder: Embedder) -> str | None:
    """What the collection's stored config names as its model: nothing for the general bundled model, the
    name of another shipped one (`tools`), so a reinstalled or moved package still opens the index it built;
    the path of any other."""
    directory = embedder.spec.directory.resolve()
    try:
        if directory == bundled_model_dir().resolve():
            return None
        named = shipped_model_dir(DEFAULT_MODEL)
        return DEFAULT_MODEL if named is not None and directory == named.resolve() else str(directory)
    except ModelMismatch:  # a custom model in an install without the bundled one
        return str(directory)


@dataclass(frozen=True)
class _Exact:
    """Every vector of the index, float32 and normalised (as Chroma's cosine space compares them), with its example
    and agent; replaced whole on each write, so a search reads one state without a lock."""

    examples: np.ndarray  # (n,) int64: each row's example id, unique (an updated entry's examples get new ids)
    agents: np.ndarray  # (n,) int64
    matrix: np.ndarray  # (n, dimension) float32

    @classmethod
    def of(cls, examples: Sequence[tuple[int, int]], vectors: Any, dimension: int) -> _Exact:
        pairs = np.asarray(examples, np.int64).reshape(-1, 2)
        return cls(pairs[:, 0], pairs[:, 1], _unit(np.asarray(vectors, np.float32).reshape(len(pairs), dimension)))

    def without(self, examples: Sequence[tuple[int, int]]) -> _Exact:
        gone = np.isin(self.examples, np.asarray([e for e, _ in examples], np.int64))
        return _Exact(self.examples[~gone], self.agents[~gone], self.matrix[~gone]) if gone.any() else self

    def upserted(self, examples: Sequence[tuple[int, int]], vectors: np.ndarray) -> _Exact:
        added = _Exact.of(examples, vectors, self.matrix.shape[1])
        kept = self.without(examples)
        return _Exact(
            np.concatenate([kept.examples, added.examples]),
            np.concatenate([kept.agents, added.agents]),
            np.concatenate([kept.matrix, added.matrix]) if len(kept.examples) else added.matrix,
        )

    def nearest_agents(self, vectors: np.ndarray, k: int) -> set[int]:
        """The agents owning the k most similar rows to any of the vectors, as Chroma's query would name them."""
        if not len(self.examples):
            return set()
        similarity = self.matrix @ _unit(np.asarray(vectors, np.float32)).T  # (n, queries)
        if k < len(self.examples):
            similarity = np.argpartition(-similarity, k - 1, axis=0)[:k]
            return set(self.agents[similarity.ravel()].tolist())
        return set(self.agents.tolist())


def _unit(vectors: np.ndarray) -> np.ndarray:
    return np.asarray(vectors / np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None), np.float32)


class VectorIndex:
    def __init__(self, path: Path, embedder: Embedder, *, url: str | None = None, fresh: bool = False, exact_max: int = EXACT_MAX) -> None:
        """`exact_max`: the most vectors an embedded index searches exactly (`EXACT_MAX`; 0: always Chroma's query)."""
        self._embedder = embedder
        self._path = path
        self._url = url
        # Only an embedded index is searched exactly: this process owns it, so every write passes through here and
        # keeps the copy current (a Chroma server's other clients write past it). None: not read yet, or Chroma answers.
        self._exact_max = exact_max if url is None else 0
        self._exact: _Exact | None = None
        self._exact_read = False
        self._lock = ReadWriteLock()  # a query racing a write fails inside Chroma (see `rwlock`)
        self._opening = threading.Lock()
        self._client: Any = None
        self._collection: Any = None
        self._opened: Callable[[], None] | None = None
        if url is None and not fresh and self._exact_max > 0 and not path.exists():
            # A new embedded index holds nothing: its copy starts empty and Chroma opens when first needed (`defers`).
            self._exact, self._exact_read = _Exact.of([], [], embedder.dimension), True
        else:
            self._chroma(fresh)

    def _chroma(self, fresh: bool = False) -> Any:
        """The collection, Chroma opened first if it is not yet (`defers`), then sent what was put off
        (`when_opened`) before anything else reads or writes it. Whatever may open it calls this before taking
        `_lock` (the put-off writes take it), so under `_lock` it only returns the open collection."""
        if self._collection is None:
            with self._opening:
                opening = self._collection is None
                if opening:
                    self._client = _client(self._path, self._url)
                    self._function = chroma_embedding_function()(_recorded_model_dir(self._embedder))
                    with self._reached():
                        if fresh:
                            self._drop()
                        self._collection = self._open()
            if opening and self._opened is not None:
                self._opened()
        return self._collection

    def when_opened(self, callback: Callable[[], None]) -> None:
        """Call `callback` once Chroma opens: `catch_up.VectorSync` sends the writes a new index put off."""
        self._opened = callback

    @property
    def opened(self) -> bool:
        """Whether Chroma is open (a new embedded index opens it at its first use that needs it)."""
        return self._collection is not None

    def defers(self, adding: int) -> bool:
        """Whether a write of `adding` vectors may go to the copy alone for now (`remember`), sent to Chroma
        later (`catch_up.VectorSync`): while a new embedded index has not opened Chroma and stays within the copy.
        Why: importing Chroma, opening it and writing the bundled snapshot's 2,216 vectors into it took ~0.9 s of
        the ~2 s a new registry's first answer spends adding the snapshot (profiled on the 2-core machine), and
        the first searches need none of it, since the copy answers them."""
        return self._collection is None and self._exact is not None and len(self._exact.examples) + adding <= self._exact_max

    def remember(self, added: Sequence[tuple[int, int]], vectors: np.ndarray) -> None:
        """Add records to the copy alone (see `defers`); `add` sends them to Chroma later, to the same end."""
        with self._lock.writing():
            assert self._exact is not None, "only a copy that answers searches may hold a write Chroma lacks"
            self._exact = self._exact.upserted(added, vectors) if added else self._exact

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
        hnsw = (collection.configuration or {}).get("hnsw") or {}
        if hnsw.get("ef_search") not in (None, HNSW["ef_search"]):  # an index made by an earlier version
            log.info("vector index: ef_search %s -> %s", hnsw.get("ef_search"), HNSW["ef_search"])
            collection.modify(configuration={"hnsw": {"ef_search": HNSW["ef_search"]}})
        return collection

    def close(self) -> None:
        """Release Chroma's in-process system so the directory can be reopened, moved or deleted."""
        self._exact = None
        if self._client is not None:
            self._client.close()

    @contextmanager
    def _reached(self) -> Iterator[None]:
        """A Chroma server that cannot be reached is VectorIndexUnavailable (503, retry later), as an unreachable
        PostgreSQL store is StoreUnavailable: the client's transport error reached callers as a 500 internal error."""
        try:
            yield
        except httpx.TransportError as exc:
            raise VectorIndexUnavailable(f"the Chroma server at {self._url} cannot be reached: {exc}") from None

    def count(self) -> int:
        with self._reached():
            return int(self._chroma().count())

    def add(self, examples: Sequence[tuple[int, int]], vectors: np.ndarray) -> None:
        """Store vectors of (example id, agent id) pairs; the agent is part of the record's id so a query
        names the agents without a lookup."""
        self._chroma()
        for start in range(0, len(examples), _WRITE_BATCH):
            with self._lock.writing():
                self._upsert(examples[start : start + _WRITE_BATCH], vectors[start : start + _WRITE_BATCH])

    def _upsert(self, examples: Sequence[tuple[int, int]], vectors: np.ndarray) -> None:
        with self._reached():
            self._chroma().upsert(ids=[_key(e, a) for e, a in examples], embeddings=vectors)
        if self._exact is not None:  # the write lock is held: no search reads the copy half made
            grown = self._exact.upserted(examples, vectors)
            self._exact = grown if len(grown.examples) <= self._exact_max else None  # past it, Chroma's query answers

    def delete(self, examples: Sequence[tuple[int, int]]) -> None:
        self._chroma()
        for start in range(0, len(examples), _WRITE_BATCH):
            with self._lock.writing():
                self._delete(examples[start : start + _WRITE_BATCH])

    def _delete(self, examples: Sequence[tuple[int, int]]) -> None:
        with self._reached():
            self._chroma().delete(ids=[_key(e, a) for e, a in examples])
        if self._exact is not None:
            self._exact = self._exact.without(examples)

    def replace(self, removed: Sequence[tuple[int, int]], added: Sequence[tuple[int, int]], vectors: np.ndarray) -> None:
        """Delete the `removed` records and store the `added` ones (disjoint: an update's examples get new ids).

        A Chroma server is sent both requests at once. For an updated entry at 100,000 agents, in turn they
        took 24 ms at p50 and 88 ms at the mean (some deletes wait long for the server's preceding write), at
        once 19 and 20 ms, and the whole `register_agent` 50.3 ms at p50 instead of 60.6. Embedded Chroma
        gets them in turn, as its queries and writes must not race (`rwlock`)."""
        if self._url is None or not removed or not added:
            self.delete(removed)
            self.add(added, vectors)
            return
        self._chroma()
        with self._lock.writing():
            deleting = [_DELETER.submit(self._delete, removed[i : i + _WRITE_BATCH]) for i in range(0, len(removed), _WRITE_BATCH)]
            try:
                for start in range(0, len(added), _WRITE_BATCH):
                    self._upsert(added[start : start + _WRITE_BATCH], vectors[start : start + _WRITE_BATCH])
            finally:
                for done in deleting:
                    done.result()

    def stored_vectors(self, examples: Sequence[tuple[int, int]]) -> tuple[list[int], np.ndarray]:
        """The float32 vectors the index holds for (example id, agent id) pairs, and the example id of each
        row (those the index lacks are left out): an exact-search oracle for measuring recall."""
        collection = self._chroma()
        with self._lock.reading():
            got = collection.get(ids=[_key(e, a) for e, a in examples], include=["embeddings"])
        return [int(i.split("@")[0]) for i in got["ids"]], np.asarray(got["embeddings"], dtype=np.float32)

    def _nearest(self, vectors: np.ndarray, k: int, *, distances: bool = True) -> tuple[list[list[str]], list[list[float]]]:
        """Chroma returns fewer than k when the collection is smaller, so no count() on the hot path. Without
        `distances` only the ids come back (a search's candidates need no more; 0.1-0.3 ms less a query)."""
        collection = self._chroma()
        with self._lock.reading(), self._reached():
            result = collection.query(query_embeddings=list(vectors), n_results=k, include=["distances"] if distances else [])
        return result["ids"], result["distances"] or []

    def query(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The k nearest examples as (example id, cosine similarity), best first."""
        ids, distances = self._nearest(vector[None, :], k)
        return [(int(i.split("@")[0]), 1.0 - float(d)) for i, d in zip(ids[0], distances[0], strict=True)]

    def nearest_agents(self, vectors: np.ndarray, k: int) -> set[int]:
        """The agents owning the k nearest examples of any of the vectors (one batched query; exact while the
        index is small, see `EXACT_MAX`)."""
        exact = self._exact if self._exact_read else self._read_exact()
        if exact is not None:
            return exact.nearest_agents(vectors, k)
        ids, _ = self._nearest(vectors, k, distances=False)
        return {int(i.split("@")[1]) for row in ids for i in row}

    @property
    def exact(self) -> bool:
        """Whether `nearest_agents` is answered by the exact product (once the first search asked)."""
        return self._exact is not None

    def _read_exact(self) -> _Exact | None:
        """The exact copy, read from Chroma at the first search when the index is small enough (2,216 vectors:
        ~30 ms, once). Under the write lock, so no write lands between the read and the copy's first state."""
        self._chroma()
        with self._lock.writing():
            if not self._exact_read:
                if self._exact_max > 0 and self.count() <= self._exact_max:
                    with self._reached():
                        got = self._chroma().get(include=["embeddings"])
                    pairs = [(int(e), int(a)) for e, a in (key.split("@") for key in got["ids"])]
                    self._exact = _Exact.of(pairs, got["embeddings"] if pairs else [], self._embedder.dimension)
                self._exact_read = True
            return self._exact

    def _drop(self) -> None:
        """Forget every vector (reindex, or a switch of model): the store can rebuild them.

        Embedded Chroma 1.x deletes a collection's records but leaves its HNSW segment directory on disk
        (chroma-core/chroma#5259), so every reindex at 100,000 agents would leak 1.1 GB. The directory
        holds only this one collection, so once it is deleted every segment directory is garbage."""
        if COLLECTION in {c.name if hasattr(c, "name") else c for c in self._client.list_collections()}:
            self._client.delete_collection(COLLECTION)
        if self._url is None:
            for child in self._path.iterdir():
                if child.is_dir() and _is_uuid(child.name):
                    log.info("removing the segment directory %s of the deleted vector index", child.name)
                    shutil.rmtree(child)
