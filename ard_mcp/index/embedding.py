"""The sentence embedder: a sentence-transformers ONNX export run with onnxruntime and tokenizers.

The files are checked against the sha256 sums in `model.json` before use, so a truncated or swapped
file fails loudly instead of producing vectors from another space. Nothing is ever downloaded.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ard_mcp.config import bundled_model_dir, shipped_model_dir
from ard_mcp.errors import ModelMismatch

log = logging.getLogger(__name__)
T = TypeVar("T")

_BATCH = 64
_BULK = 64  # texts in one call from which the spinning session is used (ingest; not queries or one registration)
_SPREAD = 1.3  # a batch's longest text is at most this many times its shortest (+ _SLACK tokens)
_SLACK = 4
#: Query vectors kept (`Embedder.embed_query`): a few KB each (the text's vector and one per step of it), so at most
#: a few MB. Hosts and people repeat the same tasks; a kept one answers in microseconds instead of the model's ms.
QUERY_VECTORS = 2048
TRAINED_ON = "trainedOn"  # the model.json key naming the sources an encoder was trained on (`ModelSpec.trained_on`)


@dataclass(frozen=True)
class ModelSpec:
    """What `model.json` says about a model directory."""

    directory: Path
    id: str
    dimension: int
    pooling: str
    normalize: bool
    max_length: int
    sha256: dict[str, str]
    #: The ranking parameters fitted on this model's similarities (`bench/fit_fusion.py --model-dir DIR --save`),
    #: read by `ard_mcp.search.tuning.fitted_tuning`; empty: the product's own, fitted on the bundled model.
    ranking: dict[str, Any]
    #: The sources whose data trained this encoder (`bench/train_encoder.py`); empty: none of the benchmark's. A
    #: model scores the catalogs it was trained on higher than ones it never saw, so `bench/fit_fusion.py` fits
    #: its cutoff for that (its docstring, step 5).
    trained_on: frozenset[str]

    @classmethod
    def load(cls, directory: Path) -> ModelSpec:
        def build(raw: dict[str, Any]) -> ModelSpec:
            return cls(
                directory=directory,
                id=str(raw["id"]),
                dimension=int(raw["dimension"]),
                pooling=str(raw.get("pooling", "mean")),
                normalize=bool(raw.get("normalize", True)),
                max_length=int(raw.get("max_length", 256)),
                sha256=dict(raw["files"]),
                ranking=dict(raw.get("ranking", {})),
                trained_on=_names(raw.get(TRAINED_ON, []), TRAINED_ON),
            )

        return read_description(directory, build, "model")

    def verify(self) -> None:
        verify_files(self.directory, self.sha256)


def _names(value: Any, key: str) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{key} must be a list of names")
    return frozenset(value)


def read_description(directory: Path, build: Callable[[dict[str, Any]], T], what: str) -> T:
    """`build` applied to a model directory's model.json; a missing or malformed one is a ModelMismatch naming it."""
    path = directory / "model.json"
    try:
        return build(json.loads(path.read_text()))
    except FileNotFoundError:
        raise ModelMismatch(f"{path} is missing: a {what} directory needs model.json, model.onnx and tokenizer.json") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ModelMismatch(f"{path} is not a valid {what} description ({exc})") from None


def verify_files(directory: Path, sha256: dict[str, str]) -> None:
    """Check a model directory's model.onnx and tokenizer.json against the sums its model.json names."""
    for name in ("model.onnx", "tokenizer.json"):
        path = directory / name
        expected = sha256.get(name)
        if not path.is_file():
            raise ModelMismatch(f"model file {path} is missing")
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        if expected != digest.hexdigest():
            raise ModelMismatch(f"model file {path} has sha256 {digest.hexdigest()}, but model.json names {expected}")


def onnx_session(path: Path, *, spinning: bool, threads: int = 0) -> Any:
    """An onnxruntime CPU session for a model file. The arena keeps the peak of the largest batch for the life
    of the process (+1.1 GB measured for batches of 64 long tool descriptions) and buys no measurable speed:
    memory is released instead. `spinning` keeps idle worker threads spinning between runs (`Embedder`);
    `threads`: its intra-op threads (0: onnxruntime's choice, one per physical core)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    options.enable_cpu_mem_arena = False
    options.intra_op_num_threads = threads
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    return onnxruntime.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


class Embedder:
    """Turns texts into L2-normalised float32 vectors; thread-safe, loaded once per process."""

    def __init__(self, spec: ModelSpec) -> None:
        from tokenizers import Tokenizer

        spec.verify()
        self.spec = spec
        # ONNX Runtime's idle worker threads spin for a while after each run. Between the back-to-back runs of
        # a bulk ingest that is worth 1.3x; after a query's single run it takes the core the rest of the search
        # needs (on two cores a 100,000-agent search went from 28 to 55 ms). So: two sessions, used by size.
        # The small one runs on the calling thread alone: a query's ~30 tokens give each operator too little work
        # to hand to other threads, which wake and sleep for every one of them. On the quiet 2-core machine, 600
        # tasks embedded alternately: 4.0 ms wall and 4.0 ms CPU each on one thread, 4.7 ms wall and 6.0 ms CPU
        # on onnxruntime's two, the vectors bit-identical; at saturation the serve process's CPU a search fell
        # from 12.3 to 11.4-11.8 ms, its throughput unchanged.
        self._session = self._new_session(spinning=False, threads=1)
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tokenizer = Tokenizer.from_file(str(spec.directory / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=spec.max_length)
        self._tokenizer.no_padding()  # batches are padded in `_run`, each to its own longest text
        self._pad_id = self._tokenizer.token_to_id("[PAD]") or 0
        self._lock = threading.Lock()
        self._queries: OrderedDict[tuple[str, str, tuple[str, ...]], np.ndarray] = OrderedDict()
        self._queries_lock = threading.Lock()
        self.query_hits = self.query_misses = 0
        log.debug("loaded embedding model %s from %s", spec.id, spec.directory)  # every command loads it: not news

    def _new_session(self, *, spinning: bool, threads: int = 0) -> Any:
        return onnx_session(self.spec.directory / "model.onnx", spinning=spinning, threads=threads)

    @cached_property
    def _bulk_session(self) -> Any:
        return self._new_session(spinning=True)

    @property
    def dimension(self) -> int:
        return self.spec.dimension

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed in batches of similar token length: the model's cost is batch size x longest text, so a
        registration's six texts of 12 to 128 tokens run as two or three small batches, not one padded to 128."""
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        with self._lock:
            encodings = self._tokenizer.encode_batch(texts)
        session = self._bulk_session if len(texts) >= _BULK else self._session
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        batch: list[int] = []
        for i in order:
            if batch and (len(batch) == _BATCH or len(encodings[i].ids) > _SPREAD * len(encodings[batch[0]].ids) + _SLACK):
                out[batch] = self._run([encodings[j] for j in batch], session)[1]
                batch = []
            batch.append(i)
        out[batch] = self._run([encodings[j] for j in batch], session)[1]
        return out

    def embed_one(self, text: str) -> np.ndarray:
        return np.asarray(self.embed([text])[0])

    def embed_query(self, text: str, parts: list[str]) -> np.ndarray:
        """`embed_with_parts`, answered from the last `QUERY_VECTORS` queries' vectors when the same text (with
        the same parts) was embedded before: a bounded LRU keyed by this model's id and the text as searched
        (`query_text` strips it; any other normalisation could change the vectors, and with them the ranking).
        The array is shared, so it is read-only."""
        key = (self.spec.id, text, tuple(parts))
        with self._queries_lock:
            found = self._queries.get(key)
            if found is not None:
                self._queries.move_to_end(key)
                self.query_hits += 1
                return found
            self.query_misses += 1
        vectors = self.embed_with_parts(text, parts)
        vectors.setflags(write=False)
        with self._queries_lock:
            self._queries[key] = vectors
            while len(self._queries) > QUERY_VECTORS:
                self._queries.popitem(last=False)
        return vectors

    def embed_with_parts(self, text: str, parts: list[str]) -> np.ndarray:
        """The text's vector, then one per part (a substring of it), from a single pass of the model.

        A part's vector pools the text's own token vectors over the part's characters ("late chunking"),
        so splitting a long task into steps costs no extra model time; a part the truncation cut off
        is embedded on its own. Rows follow `[text, *parts]`."""
        with self._lock:
            encoding = self._tokenizer.encode(text)
        hidden, pooled = self._run([encoding], self._session)
        rows = [pooled[0]]
        missing: list[int] = []
        cursor = 0
        offsets = np.array(encoding.offsets)
        real = np.array(encoding.attention_mask, dtype=bool) & (offsets[:, 1] > offsets[:, 0])
        for part in parts:
            start = text.find(part, cursor)
            start = text.find(part) if start < 0 else start
            cursor = max(cursor, start)
            inside = real & (offsets[:, 0] >= start) & (offsets[:, 1] <= start + len(part)) if start >= 0 else real & False
            if inside.any():
                rows.append(self._normalized(hidden[0][inside].mean(axis=0, keepdims=True))[0])
            else:
                missing.append(len(rows))
                rows.append(pooled[0])
        if missing:
            for index, vector in zip(missing, self.embed([parts[i - 1] for i in missing]), strict=True):
                rows[index] = vector
        return np.stack(rows).astype(np.float32)

    def _run(self, encodings: list[Any], session: Any) -> tuple[np.ndarray, np.ndarray]:
        """(token vectors, pooled and normalised text vectors) for a batch of encodings, padded here."""
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run(None, feeds)[0]
        if self.spec.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return hidden, self._normalized(pooled).astype(np.float32)

    def _normalized(self, vectors: np.ndarray) -> np.ndarray:
        if not self.spec.normalize:
            return vectors
        return np.asarray(vectors / np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None))


_embedders: dict[Path, Embedder] = {}
_embedders_lock = threading.Lock()


def load_embedder(model_dir: Path | None = None) -> Embedder:
    """One embedder per model directory per process: the session costs ~0.3 s and ~60 MB to build."""
    directory = (model_dir or bundled_model_dir()).resolve()
    with _embedders_lock:
        if directory not in _embedders:
            _embedders[directory] = Embedder(ModelSpec.load(directory))
        return _embedders[directory]


def use_embedder(embedder: Embedder) -> Embedder | None:
    """Make `embedder` the one `load_embedder` gives for its model directory from now on, and return the
    one it replaces. For a stand-in that serves the same model's vectors from elsewhere (the scale
    benchmark's vector cache); registries opened afterwards use it."""
    directory = embedder.spec.directory.resolve()
    with _embedders_lock:
        previous = _embedders.get(directory)
        _embedders[directory] = embedder
        return previous


@functools.cache
def chroma_embedding_function() -> type:
    """The registered Chroma embedding function class, imported lazily so start-up skips chromadb."""
    from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
    from chromadb.utils.embedding_functions import register_embedding_function

    @register_embedding_function
    class ArdOnnxEmbeddingFunction(EmbeddingFunction[Documents]):
        """Chroma's hook onto our embedder, registered so a reopened collection never falls back to
        Chroma's default function (which downloads a model and fails offline)."""

        def __init__(self, model_dir: str | None = None) -> None:
            """`None` is the general bundled model, a bare name another shipped one. Nothing loads here: Chroma
            builds this from the stored config on every open, and the index must still open after its model
            directory moved."""
            self._model_dir = model_dir

        def __call__(self, input: Documents) -> Embeddings:
            named = shipped_model_dir(self._model_dir) if self._model_dir and "/" not in self._model_dir else None
            return list(load_embedder(named or (Path(self._model_dir) if self._model_dir else None)).embed(list(input)))

        @staticmethod
        def name() -> str:
            return "ard-mcp-onnx"

        def get_config(self) -> dict[str, Any]:
            return {"model_dir": self._model_dir}

        @staticmethod
        def build_from_config(config: dict[str, Any]) -> ArdOnnxEmbeddingFunction:
            return ArdOnnxEmbeddingFunction(config.get("model_dir"))

        def default_space(self) -> str:  # type: ignore[override]
            return "cosine"

        def supported_spaces(self) -> list[str]:  # type: ignore[override]
            return ["cosine"]

        def is_legacy(self) -> bool:
            return False

    return ArdOnnxEmbeddingFunction
