"""Refit the ranking's fusion weights (`ard_mcp.search.ranking.Tuning.weights` and `.bias`) from labelled queries.

    python bench/fit_fusion.py                 # fresh index of the three catalogs, both dev query files
    python bench/fit_fusion.py --data-dir D    # reuse an index built by bench/quality.py --data-dir D

Two steps, both over the six signals the ranker computes for every candidate (`Ranker.candidates`):

1. Ranking: a pairwise logistic (RankNet) fit of w so that w·x(relevant) > w·x(other) for each relevant
   candidate against the 40 strongest irrelevant ones of its query. Each query weighs the same within its
   set; LiveMCPBench (multi-step tasks over tool-rich servers) gets 25% of the loss and MetaTool
   (single questions over plugins with example queries) 75%: the two kinds of request pull the lexical and
   dense weights in opposite directions, and this share keeps both above every reference method.
2. Calibration: a class-balanced logistic fit of relevance on z = w·x (Platt scaling). It is monotone, so
   the order is step 1's, while `relevance` becomes an estimate that means the same for every query: that
   is what makes `score` absolute and the cutoff meaningful. The product stores a·w and c.

It prints the weights to paste into `Tuning`, and the figures of ranking by them (no cutoff).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from quality import DATASETS, REPO, ingest

from ard_mcp.config import Config
from ard_mcp.evaluation.judgements import Judgement, load_queries
from ard_mcp.evaluation.metrics import ndcg_at, recall_at
from ard_mcp.registry import Registry
from ard_mcp.search.ranking import SIGNALS

SHARE = {"livemcpbench": 0.25, "metatool": 0.75}
HARD_NEGATIVES = 40


def fit_pairwise(queries: list[tuple[str, np.ndarray, np.ndarray]], rounds: int = 2) -> np.ndarray:
    """RankNet on (dataset, signals, labels) per query; the hard negatives of each round are the ones the
    previous round's weights rank highest (the first round starts from equal weights)."""
    w = np.ones(queries[0][1].shape[1])
    for _ in range(rounds):
        w = _pairwise_round(queries, w)
    return w


def _pairwise_round(
    queries: list[tuple[str, np.ndarray, np.ndarray]], w: np.ndarray, steps: int = 3000, rate: float = 2.0, l2: float = 1e-3
) -> np.ndarray:
    per_set = {d: sum(1 for q in queries if q[0] == d) for d in SHARE}
    diffs, weights = [], []
    for dataset, x, y in queries:
        positives, negatives = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
        if not len(positives) or not len(negatives):
            continue
        strongest = negatives[np.argsort(-(x[negatives] @ w))][:HARD_NEGATIVES]
        pairs = (x[positives][:, None, :] - x[strongest][None, :, :]).reshape(-1, x.shape[1])
        diffs.append(pairs)
        weights.append(np.full(len(pairs), SHARE[dataset] / per_set[dataset] / len(pairs)))
    d, v = np.vstack(diffs), np.concatenate(weights)
    v /= v.sum()
    w = w.copy()
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(d @ w)))
        w -= rate * (-(d.T @ ((1 - p) * v)) + l2 * w)
    return w


def fit_calibration(z: np.ndarray, y: np.ndarray, steps: int = 4000, rate: float = 1.0) -> tuple[float, float]:
    """Class-balanced logistic regression of y on the ranking value z; returns (slope, intercept)."""
    balance = np.where(y == 1, len(y) / (2 * y.sum()), len(y) / (2 * (len(y) - y.sum())))
    a, c = 1.0, 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(a * z + c)))
        g = (p - y) * balance / len(y)
        a -= rate * float(g @ z)
        c -= rate * float(g.sum())
    return a, c


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, help="an existing index of the three catalogs (default: build a fresh one)")
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    args = parser.parse_args()
    data = args.shared / "data"
    fresh = args.data_dir is None
    data_dir = Path(tempfile.mkdtemp(prefix="ard-fit-")) if fresh else args.data_dir
    registry = Registry(Config(data_dir))
    try:
        if fresh:
            ingest(registry, data)
        queries: list[tuple[str, Judgement, np.ndarray, list[str]]] = []
        for dataset in DATASETS:
            for judgement in load_queries(data / dataset / "queries.dev.jsonl"):
                found = registry.ranker.candidates(judgement.query, None)
                if found is None or judgement.no_answer:
                    continue
                agents = registry.store.agents_by_id(found.agent_ids.tolist())
                ids = [agents[int(a)].identifier for a in found.agent_ids]
                queries.append((dataset, judgement, found.signals, ids))
    finally:
        registry.close()
        if fresh:
            shutil.rmtree(data_dir, ignore_errors=True)

    labels = [np.array([1.0 if any(i in r.members for r in j.requirements) else 0.0 for i in ids]) for _, j, _, ids in queries]
    ranking = fit_pairwise([(d, signals, y) for (d, _, signals, _), y in zip(queries, labels, strict=True)])
    x = np.vstack([signals for _, _, signals, _ in queries])
    y = np.concatenate(labels)
    slope, bias = fit_calibration(x @ ranking, y)
    weights = slope * ranking
    print(f"{len(queries)} queries, {len(y)} candidates, {int(y.sum())} relevant")
    print("weights: (" + ", ".join(f"{w:.3f}" for w in weights) + f")  # {', '.join(SIGNALS)}")
    print(f"bias: {bias:.3f}")
    for dataset in DATASETS:
        rows = [(j, ids, signals @ weights) for d, j, signals, ids in queries if d == dataset]
        ranked = [(j, [ids[i] for i in np.argsort(-s, kind="stable")]) for j, ids, s in rows]
        print(
            f"{dataset}: nDCG@10 {np.mean([ndcg_at(r, j) for j, r in ranked]):.3f}"
            f"  R@5 {np.mean([recall_at(r, j, 5) for j, r in ranked]):.3f}"
            f"  R@10 {np.mean([recall_at(r, j, 10) for j, r in ranked]):.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
