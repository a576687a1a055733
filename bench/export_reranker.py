"""Turn a sentence-transformers CrossEncoder checkpoint (BERT, one label) into a model directory for `--rerank`.

    python bench/export_reranker.py TRAINED OUT --id NAME [--float PATH] [--blend W]

`train_reranker.py` calls it. The graph is `export_model.py`'s hand-built encoder with a `token_type_ids`
input (the text is segment 1 of the pair) and BERT's sequence-classification head on top: the [CLS] vector
through the pooler (dense + tanh) and the classifier (dense to one logit). Output `logits` [batch], the raw
score before the sigmoid CrossEncoder.predict applies. It is quantized as `export_model.py` quantizes an
encoder (smoothed activations, int8 weights per channel, the feed-forward output projections and the
two-layer head in float32), and the script prints how far the int8 logits are from the float graph's on
a few pairs, and whether both order every query's texts the same way.

`model.json` says `kind: cross-encoder`, the `max_length` of a pair, the `blend` weight the product gives
the cross-encoder's logit against its own relevance logit (`ard_mcp.search.rerank`), and both files' sha256.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from export_model import _Graph, build_encoder, load_checkpoint, quantize, sha256

if TYPE_CHECKING:
    import onnx

#: (query, text) pairs: each query against a fitting text and two that do not fit.
SAMPLE_PAIRS = (
    ("weather forecast for tomorrow in Lisbon", "Weather: current conditions and 7-day forecasts for any city"),
    ("weather forecast for tomorrow in Lisbon", "Docker: build, run and inspect containers"),
    ("weather forecast for tomorrow in Lisbon", "Lisbon Metro: timetables of the city's underground lines"),
    ("reserve a berth for a container ship", "Port Calls: book berths and pilotage for vessels arriving at a port"),
    ("reserve a berth for a container ship", "Docker: build, run and inspect containers"),
    ("reserve a berth for a container ship", "Hotel booking: reserve rooms and compare prices"),
    ("Query a PostgreSQL database and explain a slow SQL statement", "Postgres MCP: run read-only SQL and EXPLAIN plans"),
    ("Query a PostgreSQL database and explain a slow SQL statement", "GitHub: issues, pull requests and repositories"),
    ("Query a PostgreSQL database and explain a slow SQL statement", "Spreadsheet: read and write cells of a workbook"),
    ("Translate this paragraph into Spanish", "DeepL: translate text and documents between 30 languages"),
    ("Translate this paragraph into Spanish", "Image generation: draw pictures from a prompt"),
    ("Translate this paragraph into Spanish", "Spanish recipes: search dishes by ingredient"),
)
HEAD = ("pooler.matmul", "classifier.matmul")


def build_cross_encoder(source: Path) -> tuple[onnx.ModelProto, int]:
    """The cross-encoder graph (inputs input_ids, attention_mask, token_type_ids; output logits) and its layer count."""
    from onnx import TensorProto, helper

    encoder, weights = load_checkpoint(source)
    if encoder.kind != "bert":
        raise SystemExit(f"{source}: only BERT cross-encoders are supported (the bundled MiniLM is one), not {encoder.kind}")
    head = {k.removeprefix("bert."): v for k, v in weights.items() if k.startswith(("bert.pooler.", "classifier."))}
    if {"pooler.dense.weight", "classifier.weight"} - head.keys():
        raise SystemExit(f"{source}: no pooler or classifier weights; is it a CrossEncoder checkpoint?")
    if head["classifier.weight"].shape[0] != 1:
        raise SystemExit(f"{source}: the classifier has {head['classifier.weight'].shape[0]} labels; a reranker has one")
    model = build_encoder(encoder, weights, token_types=True)
    g = _Graph()
    first = g.op("Gather", ["last_hidden_state", g.const("cls_index", np.array(0, np.int64))], "cls", axis=1)
    pooled = g.op("Tanh", [g.linear(first, head, "pooler.dense", "pooler")], "pooled")
    logit = g.linear(pooled, head, "classifier", "classifier")
    g.op("Squeeze", [logit, g.const("last_axis", np.array([1], np.int64))], "logits")
    model.graph.node.extend(g.nodes)
    model.graph.initializer.extend(g.initializers)
    del model.graph.output[:]
    model.graph.output.append(helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch"]))
    return model, encoder.layers


def pair_feeds(tokenizer: Path, pairs: tuple[tuple[str, str], ...], max_length: int) -> list[dict[str, np.ndarray]]:
    """One feed per pair, tokenized as the product does (`ard_mcp.search.rerank`)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer))
    tok.no_padding()
    tok.enable_truncation(max_length=max_length)
    feeds = []
    for query, text in pairs:
        encoding = tok.encode(query, text)
        ids = np.array([encoding.ids], np.int64)
        feeds.append({"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.array([encoding.type_ids], np.int64)})
    return feeds


def logits_of(path: Path, feeds: list[dict[str, np.ndarray]]) -> np.ndarray:
    import onnxruntime

    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return np.array([float(session.run(None, feed)[0][0]) for feed in feeds])


def same_order(a: np.ndarray, b: np.ndarray, group: int = 3) -> bool:
    """Whether two score lists order each query's `group` texts alike (SAMPLE_PAIRS come in threes)."""
    return all((np.argsort(-a[i : i + group]) == np.argsort(-b[i : i + group])).all() for i in range(0, len(a), group))


def export(source: Path, target: Path, model_id: str, max_length: int, blend: float, float_path: Path | None = None) -> np.ndarray:
    """Write the model directory; returns the int8 model's logits on SAMPLE_PAIRS (for a caller to compare)."""
    import onnx

    model, layers = build_cross_encoder(source)
    onnx.checker.check_model(model)
    target.mkdir(parents=True, exist_ok=True)
    tokenizer = json.loads((source / "tokenizer.json").read_text(encoding="utf-8"))
    tokenizer["truncation"] = tokenizer["padding"] = None  # the product sets both itself
    (target / "tokenizer.json").write_text(json.dumps(tokenizer, ensure_ascii=False), encoding="utf-8")
    feeds = pair_feeds(target / "tokenizer.json", SAMPLE_PAIRS, max_length)
    with tempfile.TemporaryDirectory() as tmp:
        float32 = float_path or Path(tmp) / "float32.onnx"
        onnx.save(model, str(float32))
        smoothed = quantize(model, target / "model.onnx", feeds, layers, plain=False, keep_float=HEAD)
        exact, int8 = logits_of(float32, feeds), logits_of(target / "model.onnx", feeds)
    description = {
        "id": model_id,
        "kind": "cross-encoder",
        "max_length": max_length,
        "blend": blend,
        "files": {name: sha256(target / name) for name in ("model.onnx", "tokenizer.json")},
    }
    (target / "model.json").write_text(json.dumps(description, indent=2) + "\n")
    print(f"wrote {target}: smoothed {smoothed} activations; model.onnx {(target / 'model.onnx').stat().st_size:,} bytes", file=sys.stderr)
    print(
        f"int8 vs float32 logits on {len(feeds)} pairs: largest difference {np.abs(exact - int8).max():.3f} "
        f"(float range {exact.min():.2f} to {exact.max():.2f}); same order of every query's texts: {same_order(exact, int8)}",
        file=sys.stderr,
    )
    return int8


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("source", type=Path, help="a CrossEncoder folder (config.json, model.safetensors, tokenizer.json)")
    parser.add_argument("target", type=Path, help="model directory to write (model.onnx, tokenizer.json, model.json)")
    parser.add_argument("--id", required=True, help="the model's id in model.json")
    parser.add_argument("--max-length", type=int, default=128, help="tokens per (query, text) pair (default %(default)s, as trained)")
    parser.add_argument("--blend", type=float, default=1.0, help="the cross-encoder logit's weight in the product (default %(default)s)")
    parser.add_argument("--float", type=Path, dest="float_path", help="also keep the float32 ONNX graph at this path")
    args = parser.parse_args(argv)
    export(args.source, args.target, args.id, args.max_length, args.blend, args.float_path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
