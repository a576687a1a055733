"""A persistent cache of the bundled model's vectors for the scale benchmark's example texts.

At 100,000 agents the catalog has ~600,000 example texts, and the model alone needs well over an hour for
them on a 2-core machine. The cache lets that model time be spent once, in the background and resumably
(`python bench/scale.py --warm-cache CACHE --sizes 100000`), and lets every later run ingest the same
catalog through the product's own path with the vectors the same model gave. Only ingest reads it: query
vectors, `register_agent` and the raw-throughput measurement always run the model. A cached ingest says so
in the results, and its throughput is then computed as its measured non-model time plus the model time
those texts cost at the raw throughput measured in the same run.

Keys are the model id and the text, so a cache never serves vectors from another model.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np


class VectorCache:
    def __init__(self, path: Path, model_id: str, dimension: int) -> None:
        self.model_id, self.dimension = model_id, dimension
        self._db = sqlite3.connect(path, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL) WITHOUT ROWID")

    def _key(self, text: str) -> bytes:
        return hashlib.blake2b(f"{self.model_id}\0{text}".encode(), digest_size=16).digest()

    def get(self, texts: list[str]) -> dict[str, np.ndarray]:
        keys = {self._key(t): t for t in texts}
        out: dict[str, np.ndarray] = {}
        key_list = list(keys)
        for start in range(0, len(key_list), 900):
            chunk = key_list[start : start + 900]
            rows = self._db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(chunk))})", chunk)
            for key, blob in rows:
                out[keys[key]] = np.frombuffer(blob, dtype=np.float32)
        return out

    def put(self, texts: list[str], vectors: np.ndarray) -> None:
        rows = [(self._key(t), np.asarray(v, dtype=np.float32).tobytes()) for t, v in zip(texts, vectors, strict=True)]
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", rows)

    def missing(self, texts: list[str]) -> list[str]:
        present = self.get(texts)
        return [t for t in texts if t not in present]

    def close(self) -> None:
        self._db.close()


class CachingEmbedder:
    """The real embedder with `embed` served from the cache where it can; everything else is the model's."""

    def __init__(self, real: Any, cache: VectorCache) -> None:
        self.real, self._cache = real, cache
        self.hits = self.misses = 0
        self.cache_seconds = 0.0  # reading and writing the cache: the benchmark's cost, not the product's

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def embed(self, texts: list[str]) -> np.ndarray:
        start = time.perf_counter()
        found = self._cache.get(texts)
        todo = [t for t in texts if t not in found]
        self.cache_seconds += time.perf_counter() - start
        if todo:
            computed = self.real.embed(todo)
            start = time.perf_counter()
            self._cache.put(todo, computed)
            self.cache_seconds += time.perf_counter() - start
            found.update(zip(todo, computed, strict=True))
        self.hits += len(texts) - len(todo)
        self.misses += len(todo)
        if not texts:
            return np.zeros((0, self.real.dimension), dtype=np.float32)
        return np.stack([found[t] for t in texts])


def chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def warm(cache: VectorCache, embedder: Any, texts: list[str], log: Callable[[str], None], chunk: int = 512) -> dict[str, float]:
    """Embed every text the cache lacks, committing each chunk, so an interrupted warm-up resumes."""
    todo = cache.missing(texts)
    log(f"vector cache: {len(texts) - len(todo)} of {len(texts)} texts cached, {len(todo)} to embed")
    start = last = time.perf_counter()
    done = 0
    for part in chunks(todo, chunk):
        cache.put(part, embedder.embed(part))
        done += len(part)
        if time.perf_counter() - last > 30:
            last = time.perf_counter()
            rate = done / (last - start)
            log(f"vector cache: {done}/{len(todo)} ({rate:.0f} texts/s, ~{(len(todo) - done) / max(rate, 1e-9) / 60:.0f} min left)")
    seconds = time.perf_counter() - start
    return {"texts": len(texts), "embedded": done, "seconds": seconds, "texts_per_s": done / seconds if done else float("nan")}
