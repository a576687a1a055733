"""Rescoring the top of a ranking with a cross-encoder (`--rerank DIR`, made by `bench/train_reranker.py`).

The ranking's signals compare the task with each example through two independent vectors; a cross-encoder
reads "task [SEP] example" at once, so it can weigh a word of the task against a word of the text. It costs
one model pass per candidate, so only the `depth` best candidates are rescored, each against its best
example (the one the evidence shows first).

How its score combines with the calibrated relevance: the top candidates are put in the order of
logit(relevance) + blend x cross-encoder logit (`blend` from the model's model.json), and the relevances they
held are handed out again in that order, highest first. So scores stay absolute 0-100 and keep their
calibration as a set: the query's best score, its confidence, how many results pass the floor and the
low-confidence marking are exactly what they are without the reranker; only which entry holds which of
those scores changes. Refitting the calibration on cross-encoder scores would need a reranker trained
without each source to stay honest (docs/reranker.md). Entries the registry flagged or the trust policy
demotes are never rescored, so the reranker cannot lift one above the place its demotion gave it.

Off by default, because it does not pay: on the 2-core build machine the pass over 20 candidates took
320-630 ms at p50, 10-20x the whole search's 28-62 ms in the same run (the budget is 30 ms); and a
one-pass model, scored on sources it was not trained on, changed nDCG@10 by -0.060 to +0.007 at blend 1
(docs/reranker.md has the figures and how they were measured).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from ard_mcp.errors import ModelMismatch
from ard_mcp.index.embedding import onnx_session, read_description, verify_files

log = logging.getLogger(__name__)

DEPTH = 20
"""Candidates rescored per query: the first two pages of a default search."""


@dataclass(frozen=True)
class RerankerSpec:
    """What a reranker's `model.json` says (`bench/export_reranker.py` writes it)."""

    directory: Path
    id: str
    max_length: int
    blend: float  # the cross-encoder logit's weight against the relevance logit
    sha256: dict[str, str]

    @classmethod
    def load(cls, directory: Path) -> RerankerSpec:
        def build(raw: dict[str, Any]) -> RerankerSpec:
            kind = raw.get("kind")
            if kind != "cross-encoder":
                raise ModelMismatch(f"{directory / 'model.json'} does not describe a cross-encoder (kind {kind!r})")
            return cls(directory, str(raw["id"]), int(raw["max_length"]), float(raw["blend"]), dict(raw["files"]))

        return read_description(directory, build, "reranker")


class Reranker:
    """A cross-encoder's logits for (query, text) pairs. The files are checked and the session built on first
    use (`Registry.warm_up` does it in a server's background), so naming a reranker costs start-up nothing."""

    def __init__(self, spec: RerankerSpec, depth: int = DEPTH) -> None:
        self.spec = spec
        self.depth = depth
        self._lock = threading.Lock()

    @cached_property
    def _model(self) -> tuple[Any, Any]:
        from tokenizers import Tokenizer

        verify_files(self.spec.directory, self.spec.sha256)
        tokenizer = Tokenizer.from_file(str(self.spec.directory / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=self.spec.max_length)  # longest first: the longer of task and text gives way
        tokenizer.no_padding()
        session = onnx_session(self.spec.directory / "model.onnx", spinning=False)
        log.info("loaded reranker %s from %s", self.spec.id, self.spec.directory)
        return tokenizer, session

    def load(self) -> None:
        with self._lock:
            _ = self._model

    def scores(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """The logit of each text fitting the query (higher fits better), from one batch."""
        if not texts:
            return np.zeros(0, np.float32)
        with self._lock:
            tokenizer, session = self._model
            encodings = tokenizer.encode_batch([(query, text) for text in texts])
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), np.int64)
        types = np.zeros_like(ids)
        mask = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            ids[row, :n], types[row, :n], mask[row, :n] = encoding.ids, encoding.type_ids, 1
        return np.asarray(session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})[0], np.float32)

    def reorder(self, query: str, relevance: np.ndarray, eligible: np.ndarray, texts_of: Callable[[np.ndarray], list[str]]) -> np.ndarray:
        """`relevance` with the values of its `depth` best eligible rows handed out again in the order of
        logit(relevance) + blend x the cross-encoder's logit; `texts_of(rows)` gives each row's text."""
        rows = np.flatnonzero(eligible)
        top = rows[np.argsort(-relevance[rows], kind="stable")[: self.depth]]
        if len(top) < 2:
            return relevance
        held = np.clip(relevance[top], 1e-6, 1 - 1e-6)
        key = np.log(held / (1 - held)) + self.spec.blend * self.scores(query, texts_of(top))
        out = relevance.copy()
        out[top[np.argsort(-key, kind="stable")]] = np.sort(relevance[top])[::-1]
        return out


_rerankers: dict[Path, Reranker] = {}
_rerankers_lock = threading.Lock()


def load_reranker(directory: Path) -> Reranker:
    """One reranker per directory per process; its model.json is read now (a bad directory fails at start),
    its model on first use."""
    directory = directory.resolve()
    with _rerankers_lock:
        if directory not in _rerankers:
            _rerankers[directory] = Reranker(RerankerSpec.load(directory))
        return _rerankers[directory]
