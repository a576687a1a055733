"""Fit every parameter of the ranking (`ard_mcp.search.ranking.Tuning`: the six signal weights, the bias, the
cutoff and the floor) from labelled queries of several sources, and check the fit leave-one-source-out.

    python bench/fit_fusion.py [--data-dir D]    # indexes kept in D (default: fresh ones, deleted afterwards)

Steps, all over the six signals the ranker computes for every candidate (`Ranker.candidates`, collected
once per query by `suite.collect`):

1. Ranking: a pairwise logistic (RankNet) fit of w so that w·x(relevant) > w·x(other) for each relevant
   candidate against the 40 strongest irrelevant ones of its query. Every source weighs the same, and
   every query the same within its source, so no one catalog's style (tool-rich MCP servers, plugins with
   sample questions, REST APIs with parameter lists) sets the weights.
2. Calibration: a class-balanced logistic fit of relevance on z = w·x (Platt scaling). It is monotone, so
   the order is step 1's, while `relevance` becomes an estimate that means the same for every query: that
   is what makes `score` absolute and a cutoff meaningful. The product stores a·w and c.
3. The floor (an answered query lists candidates down to it): the highest grid value whose mean nDCG@10
   over the sources is within 0.002 of the best, so the lists are no longer than quality needs.
4. The cutoff (a query whose best candidate misses it comes back marked low-confidence): the grid value
   that best separates answerable queries from queries nothing fits, maximising
   1.5 x (1 - share of answerable queries marked low-confidence) + (1 - share of no-answer queries
   answered confidently). Doubting a right answer weighs more than vouching for a wrong one: for a host,
   a good answer it is told to distrust is close to the worst outcome, an empty list. (Weights 1.0, 1.5
   and 2.0 gave cutoffs 95, 85 and 77; at 95 a plain weather question to a weather server came back
   low-confidence, and 10-20% of answerable queries of four sources did.) The no-answer side is half the
   25 queries of `bench/no_answer.jsonl` and half *near misses*: each answerable query with its relevant
   entries taken out of its candidates, which is what a query looks like when the catalog lacks the one
   thing it needs. `bench/no_answer_hard.jsonl` is never fitted on; but the 1.5 above was picked after
   its false-positive rate at the three weights had been seen, so it is not a clean outside check.

Leave-one-source-out: for each dev source, steps 1-4 run on the other sources only and the held-out
source is scored with the result; `quality.py` prints those figures beside the product's.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import suite
from suite import Collected

from ard_mcp.evaluation.metrics import ndcg_at
from ard_mcp.registry import Registry
from ard_mcp.search.ranking import DEFAULT_TUNING, SIGNALS, Tuning

HARD_NEGATIVES = 40
FLOORS = tuple(range(5, 55, 5))
CUTOFFS = tuple(range(20, 100))
SAME_NDCG = 0.002
DOUBT_COST = 1.5


def fit_pairwise(queries: Sequence[tuple[str, np.ndarray, np.ndarray]], rounds: int = 2) -> np.ndarray:
    """RankNet on (source, signals, labels) per query; the hard negatives of each round are the ones the
    previous round's weights rank highest (the first round starts from equal weights)."""
    w = np.ones(queries[0][1].shape[1])
    for _ in range(rounds):
        w = _pairwise_round(queries, w)
    return w


def _pairwise_round(
    queries: Sequence[tuple[str, np.ndarray, np.ndarray]], w: np.ndarray, steps: int = 3000, rate: float = 2.0, l2: float = 1e-3
) -> np.ndarray:
    per_source: dict[str, int] = {}
    for source, _, _ in queries:
        per_source[source] = per_source.get(source, 0) + 1
    diffs, weights = [], []
    for source, x, y in queries:
        positives, negatives = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
        if not len(positives) or not len(negatives):
            continue
        strongest = negatives[np.argsort(-(x[negatives] @ w))][:HARD_NEGATIVES]
        pairs = (x[positives][:, None, :] - x[strongest][None, :, :]).reshape(-1, x.shape[1])
        diffs.append(pairs)
        weights.append(np.full(len(pairs), 1.0 / len(per_source) / per_source[source] / len(pairs)))
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


def best_scores(tuning: Tuning, items: Sequence[Collected], near_miss: bool = False) -> np.ndarray:
    """Each query's best score (0-100) under `tuning`; -1 where nothing was found. With `near_miss`, the
    best among the candidates that meet none of the query's requirements."""
    w = np.array(tuning.weights)
    out = []
    for item in items:
        signals = None if item.found is None else item.found.signals
        if signals is not None and near_miss:
            signals = signals[suite.labels(item) == 0]
        if signals is None or not len(signals):
            out.append(-1.0)
        else:
            out.append(float(np.round(100 / (1 + np.exp(-(signals @ w + tuning.bias)))).max()))
    return np.array(out)


def mean_ndcg(registry_of: Mapping[str, Registry], tuning: Tuning, dev: Mapping[str, Sequence[Collected]]) -> float:
    """Mean over sources of each source's mean nDCG@10 under `tuning`."""
    per_source = []
    for name, items in dev.items():
        ranker = suite.ranker_with(registry_of[name], tuning)
        per_source.append(np.mean([ndcg_at(suite.answer(ranker, item).ids, item.judgement) for item in items]))
    return float(np.mean(per_source))


def fit(registry_of: Mapping[str, Registry], dev: Mapping[str, Sequence[Collected]], no_answer: Sequence[Collected]) -> Tuning:
    """Steps 1-4 on the given sources (answerable queries in `dev`, no-answer queries in `no_answer`)."""
    rows = [(name, item.found.signals, suite.labels(item)) for name, items in dev.items() for item in items if item.found is not None]
    ranking = fit_pairwise(rows)
    x = np.vstack([signals for _, signals, _ in rows])
    y = np.concatenate([labels for _, _, labels in rows])
    slope, bias = fit_calibration(x @ ranking, y)
    weights = slope * ranking
    base = suite.tuned(DEFAULT_TUNING, weights, bias, DEFAULT_TUNING.cutoff, DEFAULT_TUNING.floor)
    quality = {f: mean_ndcg(registry_of, suite.tuned(base, weights, bias, base.cutoff, f), dev) for f in FLOORS}
    floor = max(f for f, q in quality.items() if q >= max(quality.values()) - SAME_NDCG)
    base = suite.tuned(base, weights, bias, base.cutoff, floor)
    rejected = best_scores(base, no_answer)
    answerable = {name: best_scores(base, items) for name, items in dev.items()}
    near_misses = {name: best_scores(base, items, near_miss=True) for name, items in dev.items()}

    def separation(cutoff: int) -> float:
        doubted = float(np.mean([np.mean(scores < cutoff) for scores in answerable.values()]))
        near = float(np.mean([np.mean(scores >= cutoff) for scores in near_misses.values()]))
        fp = (float(np.mean(rejected >= cutoff)) + near) / 2 if len(rejected) else near
        return DOUBT_COST * (1 - doubted) + (1 - fp)

    cutoff = max(CUTOFFS, key=separation)
    return suite.tuned(base, weights, bias, cutoff, floor)


def describe(tuning: Tuning) -> str:
    return (
        "weights=(" + ", ".join(f"{w:.3f}" for w in tuning.weights) + f"),  # {', '.join(SIGNALS)}\n"
        f"bias={tuning.bias:.3f}, cutoff={tuning.cutoff}, floor={tuning.floor}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, help="where the indexes are kept between runs (default: fresh, deleted afterwards)")
    parser.add_argument("--shared", type=Path, default=suite.REPO.parent / "shared")
    parser.add_argument("--built", type=Path, default=suite.BUILT, help="the sources built by bench/build_sources.py")
    args = parser.parse_args()
    root = args.data_dir or Path(tempfile.mkdtemp(prefix="ard-fit-"))
    indexes = suite.catalogs(args.shared, args.built)
    registries = {name: suite.open_index(name, files, root) for name, files in indexes.items()}
    try:
        chosen = suite.sources(args.shared, args.built)
        collected = {s.name: suite.collect(registries[s.index], s.queries) for s in chosen if s.name != "no-answer-hard"}
        registry_of = {s.name: registries[s.index] for s in chosen}
        dev = {name: items for name, items in collected.items() if name not in suite.NO_ANSWER}
        tuning = fit(registry_of, dev, collected.get("no-answer", []))
        print(f"fitted on {', '.join(dev)} ({sum(len(v) for v in dev.values())} queries):\n{describe(tuning)}")
    finally:
        for registry in registries.values():
            registry.close()
        if args.data_dir is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
