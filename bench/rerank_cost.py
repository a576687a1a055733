"""What the reranker costs per query: one cross-encoder pass over N (task, example text) pairs, timed.

    python bench/rerank_cost.py DIR [--queries 200] [--depth 20 --depth 30]

DIR is a `--rerank` directory (`train_reranker.py` or `export_reranker.py`); the cost does not depend on how
it was trained, only on its size and the texts' lengths. The texts are real: tasks and the product's own
example texts from `train_pairs.py`'s output, each task against N distinct example texts (chosen by sha256,
no `random`), run through `Reranker.scores` exactly as a search runs it. For scale it also times the bundled
encoder on the task alone (what every search already pays for its query vector). Prints p50 / p99 / mean in
ms; run it on an idle machine for figures to quote (the 2-core machines here are shared: say how loaded).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ard_mcp.index.embedding import load_embedder
from ard_mcp.search.rerank import DEPTH, Reranker, RerankerSpec

PAIRS = Path(__file__).resolve().parent / ".data" / "training" / "pairs.jsonl"


def _key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def workload(pairs: Path, queries: int, depth: int) -> list[tuple[str, list[str]]]:
    """`queries` tasks, each with `depth` distinct example texts (its own positive first)."""
    rows = [json.loads(line) for line in pairs.read_text(encoding="utf-8").splitlines()]
    texts = sorted({r["positive"] for r in rows}, key=_key)
    tasks = sorted({r["query"]: r["positive"] for r in rows}.items(), key=lambda item: _key(item[0]))[:queries]
    out = []
    for n, (task, positive) in enumerate(tasks):
        others = [t for t in texts[n * depth : n * depth + 2 * depth] if t != positive]
        out.append((task, [positive, *others][:depth]))
    return out


def timed(run: Callable[[], object], repeat: int = 1) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        run()
    return (time.perf_counter() - start) * 1000 / repeat


def report(label: str, ms: Sequence[float]) -> str:
    values = np.asarray(ms)
    return f"{label:<34} p50 {np.percentile(values, 50):6.1f}  p99 {np.percentile(values, 99):6.1f}  mean {values.mean():6.1f} ms"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("reranker", type=Path, help="a --rerank directory")
    parser.add_argument("--pairs", type=Path, default=PAIRS, help="train_pairs.py's output (default: %(default)s)")
    parser.add_argument("--queries", type=int, default=200, help="tasks timed per depth (default: %(default)s)")
    parser.add_argument("--depth", type=int, action="append", help=f"candidates rescored per task (repeatable; default {DEPTH} and 30)")
    args = parser.parse_args(argv)

    reranker = Reranker(RerankerSpec.load(args.reranker))
    reranker.load()
    embedder = load_embedder()
    print(
        f"{args.reranker}: {reranker.spec.id}, max_length {reranker.spec.max_length}; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}"
    )
    for depth in args.depth or [DEPTH, 30]:
        work = workload(args.pairs, args.queries, depth)
        for task, texts in work[:5]:  # warm-up
            reranker.scores(task, texts)
        rerank = [timed(lambda task=task, texts=texts: reranker.scores(task, texts)) for task, texts in work]
        encode = [timed(lambda task=task: embedder.embed_with_parts(task, [])) for task, _ in work]
        print(report(f"rerank {depth} candidates ({len(work)} tasks)", rerank))
        print(report("  the task's own vector (reference)", encode))
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
