"""The cross-encoder reranker (`--rerank DIR`): a real ONNX session over a tiny cross-encoder that the test exports
with bench/export_reranker.py from a seeded BERT checkpoint (one layer, width 16, the bundled tokenizer), so the
product's code runs against the exporter's real graph. Its scores mean nothing; what is checked is what the
product promises whatever the model: a real logit per text, the same for a text alone or in a padded batch; the
top candidates ordered by the blend; the scores, the confidence and the count unchanged as a set; flagged
entries never moved; a wrong directory refused clearly."""

from __future__ import annotations

import json
import shutil
import struct
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ard_mcp.assembly.cli import main as cli_main
from ard_mcp.config import Config, bundled_model_dir
from ard_mcp.errors import ModelMismatch
from ard_mcp.registry import Registry
from ard_mcp.search.query import SearchQuery
from ard_mcp.search.rerank import Reranker, RerankerSpec, load_reranker
from ard_mcp.search.visibility import EVERYONE
from tests.conftest import REPO, SAMPLE

sys.path.insert(0, str(REPO / "bench"))
from export_reranker import export

HIDDEN, INNER, VOCAB, POSITIONS = 16, 32, 30522, 512
QUERY = "weather forecast and rain for a city, then translate the report and send an invoice"


def _write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    header: dict[str, object] = {}
    offset = 0
    for name, array in tensors.items():
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + array.nbytes]}
        offset += array.nbytes
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"".join(a.astype("<f4").tobytes() for a in tensors.values()))


def _checkpoint(folder: Path) -> Path:
    """A one-layer BERT sequence classifier with seeded random weights, saved as CrossEncoder.save saves one."""
    rng = np.random.default_rng(0)

    def dense(name: str, out: int, inp: int) -> dict[str, np.ndarray]:
        return {f"{name}.weight": rng.normal(0, 0.3, (out, inp)), f"{name}.bias": rng.normal(0, 0.1, out)}

    def norm(name: str) -> dict[str, np.ndarray]:
        return {f"{name}.weight": 1 + rng.normal(0, 0.1, HIDDEN), f"{name}.bias": rng.normal(0, 0.1, HIDDEN)}

    layer = "bert.encoder.layer.0"
    tensors = {
        "bert.embeddings.word_embeddings.weight": rng.normal(0, 1, (VOCAB, HIDDEN)),
        "bert.embeddings.position_embeddings.weight": rng.normal(0, 0.2, (POSITIONS, HIDDEN)),
        "bert.embeddings.token_type_embeddings.weight": rng.normal(0, 1, (2, HIDDEN)),
        **norm("bert.embeddings.LayerNorm"),
        **dense(f"{layer}.attention.self.query", HIDDEN, HIDDEN),
        **dense(f"{layer}.attention.self.key", HIDDEN, HIDDEN),
        **dense(f"{layer}.attention.self.value", HIDDEN, HIDDEN),
        **dense(f"{layer}.attention.output.dense", HIDDEN, HIDDEN),
        **norm(f"{layer}.attention.output.LayerNorm"),
        **dense(f"{layer}.intermediate.dense", INNER, HIDDEN),
        **dense(f"{layer}.output.dense", HIDDEN, INNER),
        **norm(f"{layer}.output.LayerNorm"),
        **dense("bert.pooler.dense", HIDDEN, HIDDEN),
        **dense("classifier", 1, HIDDEN),
    }
    folder.mkdir(parents=True)
    _write_safetensors(folder / "model.safetensors", {k: np.asarray(v, np.float32) for k, v in tensors.items()})
    config = {
        "model_type": "bert",
        "hidden_size": HIDDEN,
        "num_attention_heads": 2,
        "num_hidden_layers": 1,
        "intermediate_size": INNER,
        "hidden_act": "gelu",
        "layer_norm_eps": 1e-12,
        "max_position_embeddings": POSITIONS,
        "type_vocab_size": 2,
        "vocab_size": VOCAB,
        "pad_token_id": 0,
    }
    (folder / "config.json").write_text(json.dumps(config))
    shutil.copy(bundled_model_dir() / "tokenizer.json", folder / "tokenizer.json")
    return folder


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The exported tiny cross-encoder's directory, with a blend large enough that its logit decides the order."""
    root = tmp_path_factory.mktemp("reranker")
    target = root / "model"
    export(_checkpoint(root / "trained"), target, "tiny-test-cross-encoder", 128, blend=1000.0)
    return target


@pytest.fixture
def reranked(loaded: Registry, cross_encoder: Path, store_url: str | None) -> Iterator[Registry]:
    """`loaded`'s data directory opened a second time, with the reranker."""
    loaded.close()
    registry = Registry(Config(loaded.config.data_dir, store_url=store_url, rerank_dir=cross_encoder))
    yield registry
    registry.close()


def test_scores_are_one_logit_per_text_the_same_alone_or_padded(cross_encoder: Path) -> None:
    reranker = Reranker(RerankerSpec.load(cross_encoder))
    texts = ["Weather Forecast Server: current conditions", "x", "Creates, sends and reconciles customer invoices. " * 20]
    together = reranker.scores("will it rain in Lisbon tomorrow", texts)
    alone = np.concatenate([reranker.scores("will it rain in Lisbon tomorrow", [t]) for t in texts])
    assert together.shape == (3,) and np.isfinite(together).all()
    assert np.allclose(together, alone, atol=0.05)  # padding and the attention mask change nothing (int8: per-batch scales)
    assert len(set(np.round(together, 4))) == 3  # a real model: different texts, different logits
    assert reranker.scores("anything", []).shape == (0,)


@pytest.mark.slow  # the model and Chroma
def test_reranking_reorders_the_top_and_keeps_the_scores(loaded: Registry, cross_encoder: Path, store_url: str | None) -> None:
    query = SearchQuery.of(QUERY, page_size=10)
    before = loaded.search(query, viewer=EVERYONE)
    loaded.close()
    registry = Registry(Config(loaded.config.data_dir, store_url=store_url, rerank_dir=cross_encoder))
    try:
        after = registry.search(query, viewer=EVERYONE)
        texts = [c.explain().matched_examples[0].text for c in after.candidates if c.explain is not None]
    finally:
        registry.close()
    assert len(before.candidates) >= 3
    assert after.confident == before.confident and after.total == before.total
    assert [c.score for c in after.candidates] == [c.score for c in before.candidates]  # the same scores, best first
    assert {c.agent.identifier for c in after.candidates} <= {e["identifier"] for e in SAMPLE}  # which entry holds a score may change
    # with the blend at 1000 the cross-encoder's logit for each entry's first evidence decides the order
    logits = load_reranker(cross_encoder).scores(QUERY, texts)
    assert len(texts) == len(after.candidates)
    assert list(np.argsort(-logits, kind="stable")) == list(range(len(texts)))
    assert [c.agent.identifier for c in after.candidates] != [c.agent.identifier for c in before.candidates]


@pytest.mark.slow
def test_flagged_entries_are_never_rescored(reranked: Registry) -> None:
    found = reranked.ranker.candidates(QUERY, None)
    assert found is not None and found.flagged is not None
    found.flagged[:] = True  # as if the registry had flagged every candidate's text
    plain = reranked.ranker.relevance(found.signals) * reranked.tuning.untrusted_demotion
    ranking = reranked.ranker.select(found)
    assert [h.relevance for h in ranking.hits] == sorted(plain, reverse=True)[: len(ranking.hits)]
    order = np.lexsort((found.agent_ids, -plain))
    assert [h.agent_id for h in ranking.hits] == [int(found.agent_ids[i]) for i in order[: len(ranking.hits)]]


def test_a_wrong_directory_is_refused_clearly(tmp_path: Path, cross_encoder: Path) -> None:
    with pytest.raises(ModelMismatch, match="does not describe a cross-encoder"):
        RerankerSpec.load(bundled_model_dir())  # an embedding model
    with pytest.raises(ModelMismatch, match=r"model\.json is missing"):
        RerankerSpec.load(tmp_path)
    tampered = tmp_path / "tampered"
    shutil.copytree(cross_encoder, tampered)
    with (tampered / "tokenizer.json").open("a") as handle:
        handle.write(" ")
    reranker = Reranker(RerankerSpec.load(tampered))  # nothing is read before first use
    with pytest.raises(ModelMismatch, match="sha256"):
        reranker.scores("weather", ["Weather Forecast Server"])


@pytest.mark.slow
@pytest.mark.sqlite_only  # its search may be a back-end's, a process the --store postgres pass's in-process switch misses
def test_the_search_command_takes_rerank(loaded: Registry, cross_encoder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    loaded.close()
    argv = ["search", "--data-dir", str(loaded.config.data_dir), "--rerank", str(cross_encoder), "--detail", "minimal", QUERY]
    if loaded.config.store_url:
        argv[1:1] = ["--store-url", loaded.config.store_url]
    assert cli_main(argv) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    assert len(results) >= 3 and {r["identifier"] for r in results} <= {e["identifier"] for e in SAMPLE}
