"""How to merge two registries' first pages: rank fusion against re-scoring, on the quality benchmark split in two.

    python bench/federation.py [--data-dir D] [--full-dir DIR] [--shared DIR]

The shared index's catalogs (the entries `quality.indexed_entries` reads: those the registry accepts, each
identifier once) are split in two halves by a hash of each identifier, and each half is ingested into a
registry of its own: A (the local one) and B (the upstream). Every dev query of LiveMCPBench and MetaTool
is asked of both, as a federated search asks them (`Registry.search`, a first page of 10 ARD results with
their scores and `evidence.confidence`), and the two pages are merged by:

* `single registry`: no federation, the whole catalog in one index: the ceiling a merge can approach;
* `local only`: A's page alone: what federation has to improve on;
* `rrf`: the product's merge (`ard_mcp.federation.merge.fuse`): reciprocal rank fusion (k=60), entries
  some registry is confident about before the others, the local one winning ties. It uses ranks only,
  since another registry's score may come from another model, calibration or catalog;
* `rescore`: the union of both pages re-ranked by one ranker, the full index's (same model, same signals,
  same corpus statistics), restricted to those entries (`Ranker.rank(text, allowed)`). In production the
  local registry would first have to embed the returned entries' examples (a few to a few dozen texts per
  entry, at query time), which this bench does not pay: the full index holds their vectors already. So it
  measures the quality ceiling of re-scoring, and its merge time leaves out that embedding;
* `interleave by score`: the union sorted by each registry's own score: the naive merge, which trusts
  that a score means the same in both registries.

Both halves use this product, so their scores are as comparable as two registries' scores can be (same
model and calibration; only the corpus statistics differ): `interleave by score` is the best case for it.
Each method's nDCG@10 is the mean over a source's queries (`ard_mcp.evaluation.metrics.ndcg_at`), "both"
the mean of the two sources' means (MetaTool has 17 times LiveMCPBench's queries). Merge times are the
median of the merge alone, both pages in hand (the `single registry` time is its whole search).
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import suite
from quality import indexed_entries, render

from ard_mcp.config import Config
from ard_mcp.evaluation.metrics import ndcg_at
from ard_mcp.federation.merge import fuse
from ard_mcp.formats.identifiers import normalize_identifier
from ard_mcp.formats.messages import SearchResult
from ard_mcp.registry import Registry
from ard_mcp.search.query import SearchQuery

K = 10
SOURCES = ("livemcpbench", "metatool")
HALVES = {"A": "https://registry-a.example.org", "B": "https://registry-b.example.org"}
METHODS = ("single registry", "local only", "rrf", "rescore", "interleave by score")
TIE = 0.005  # nDCG@10 differences smaller than this are called even

Merge = Callable[[str, list[SearchResult], list[SearchResult]], list[str]]


def half(identifier: str) -> str:
    """A or B, from a hash of the normalised identifier: stable across runs, machines and catalog order."""
    return "A" if hashlib.sha256(normalize_identifier(identifier).encode()).digest()[0] % 2 == 0 else "B"


def open_half(name: str, entries: dict[str, dict[str, Any]], root: Path) -> Registry:
    """One half's registry under `root/federation-<name>`, ingested when empty (a kept data dir is reused)."""
    registry = Registry(Config(data_dir=root / f"federation-{name}", source_url=HALVES[name]))
    if registry.store.count() == 0:
        start = time.perf_counter()
        report = registry.indexer.register_many((f"half {name}", e) for i, e in entries.items() if half(i) == name)
        print(f"  registry {name}: added {report.added}, rejected {len(report.rejected)} ({time.perf_counter() - start:.1f} s)", flush=True)
    return registry


def ids(results: Iterable[SearchResult]) -> list[str]:
    return [normalize_identifier(r.identifier) for r in results]


def merges(full: Registry) -> dict[str, Merge]:
    """The three merges of A's page and B's page (the two without a merge are computed apart)."""
    agents = full.store.agents_by_id(full.store.agent_ids())
    agent_of = {normalize_identifier(a.identifier): a_id for a_id, a in agents.items()}
    name_of = {a_id: i for i, a_id in agent_of.items()}

    def rrf(text: str, a: list[SearchResult], b: list[SearchResult]) -> list[str]:
        return ids(m.result for m in fuse([a, b], K))

    def rescore(text: str, a: list[SearchResult], b: list[SearchResult]) -> list[str]:
        allowed = {agent_of[i] for i in ids([*a, *b])}
        return [name_of[hit.agent_id] for hit in full.ranker.rank(text, allowed).hits[:K]]

    def interleave(text: str, a: list[SearchResult], b: list[SearchResult]) -> list[str]:
        return ids(sorted([*a, *b], key=lambda r: -r.score)[:K])  # stable: A first on equal scores

    return {"rrf": rrf, "rescore": rescore, "interleave by score": interleave}


def measure(
    full: Registry, a: Registry, b: Registry, sources: Sequence[suite.Source]
) -> tuple[dict[str, dict[str, list[float]]], dict[str, list[float]]]:
    """Per source and method, each query's nDCG@10; per method, each merge's time in ms."""
    scores: dict[str, dict[str, list[float]]] = {s.name: {m: [] for m in METHODS} for s in sources}
    times: dict[str, list[float]] = {m: [] for m in METHODS}
    merge = merges(full)
    for source in sources:
        for judgement in source.queries:
            query = SearchQuery.of(judgement.query, page_size=K)
            start = time.perf_counter()
            ranked: dict[str, list[str]] = {"single registry": ids(full.search(query).results())}
            times["single registry"].append(1000 * (time.perf_counter() - start))
            page_a, page_b = a.search(query).results(), b.search(query).results()
            ranked["local only"] = ids(page_a)
            times["local only"].append(0.0)
            for name, fn in merge.items():
                start = time.perf_counter()
                ranked[name] = fn(judgement.query, page_a, page_b)
                times[name].append(1000 * (time.perf_counter() - start))
            for name in METHODS:
                scores[source.name][name].append(ndcg_at(ranked[name], judgement, K))
    return scores, times


def table(scores: dict[str, dict[str, list[float]]], times: dict[str, list[float]]) -> str:
    header = ["method", *(f"{s} ({len(next(iter(m.values())))})" for s, m in scores.items()), "both", "merge p50 ms"]
    rows = []
    for method in METHODS:
        means = [statistics.fmean(by_method[method]) for by_method in scores.values()]
        took = "-" if method == "local only" else f"{statistics.median(times[method]):.2f}"
        rows.append([method, *(f"{v:.3f}" for v in means), f"{statistics.fmean(means):.3f}", took])
    return render(rows, header)


def verdict(scores: dict[str, dict[str, list[float]]], times: dict[str, list[float]]) -> str:
    """One paragraph from the numbers: rescore against rrf, how much of local-only's gap to one registry each
    closes, the naive merge against rrf, and what rescoring costs."""

    def mean(method: str) -> float:
        return statistics.fmean(statistics.fmean(by_method[method]) for by_method in scores.values())

    rrf, rescore, naive = mean("rrf"), mean("rescore"), mean("interleave by score")
    local, single = mean("local only"), mean("single registry")
    diff = rescore - rrf
    better = "on par with" if abs(diff) < TIE else "better than" if diff > 0 else "worse than"
    per_source = ", ".join(f"{name} {statistics.fmean(m['rescore']) - statistics.fmean(m['rrf']):+.3f}" for name, m in scores.items())
    pairs = [(x, y) for m in scores.values() for x, y in zip(m["rescore"], m["rrf"], strict=True)]
    wins, losses = sum(x > y for x, y in pairs), sum(x < y for x, y in pairs)
    gap = single - local

    def closed(value: float) -> str:
        return f"{(value - local) / gap:.1%}" if gap > 0 else "n/a"

    return (
        f"verdict: re-scoring the union locally is {better} reciprocal rank fusion: {rescore:.3f} against {rrf:.3f} nDCG@10 "
        f"(mean of both sources, {diff:+.3f}; per source {per_source}; better on {wins} of {len(pairs)} queries, worse on {losses}). "
        f"Of the gap between the local registry alone ({local:.3f}) and one registry holding everything ({single:.3f}), "
        f"rescore closes {closed(rescore)} and rrf {closed(rrf)}. Interleaving by each registry's own score gives {naive:.3f} "
        f"({naive - rrf:+.3f} against rrf, {naive - rescore:+.3f} against rescore), with both registries running the same product, "
        f"model and calibration: its best case, since registries in general do not share a score scale. "
        f"The merge takes a median {statistics.median(times['rescore']):.2f} ms when re-scoring (query embedding and exact scoring, "
        f"before any embedding of the returned entries' examples) against {statistics.median(times['rrf']):.2f} ms for rrf."
    )


def run(root: Path, full_dir: Path | None, shared: Path) -> int:
    files = suite.catalogs(shared, suite.BUILT)["shared"]
    sources = suite.sources(shared, suite.BUILT, only=SOURCES)
    start = time.perf_counter()
    full = suite.open_index("shared", files, root) if full_dir is None else suite.open_index(full_dir.name, files, full_dir.parent)
    opened = [full]
    try:
        entries = indexed_entries(full, files)
        opened += [open_half(name, entries, root) for name in HALVES]
        _, a, b = opened
        print(
            f"indexes ready in {time.perf_counter() - start:.1f} s: single registry {full.store.count()} entries, "
            f"A {a.store.count()}, B {b.store.count()}",
            flush=True,
        )
        for registry in opened:
            registry.warm_up()
        start = time.perf_counter()
        scores, times = measure(full, a, b, sources)
        print(f"{sum(len(s.queries) for s in sources)} queries in {time.perf_counter() - start:.1f} s\n")
    finally:
        for registry in opened:
            registry.close()
    print("nDCG@10 (queries per source in brackets; both: the mean of the two sources' means)")
    print(table(scores, times))
    print()
    print(verdict(scores, times))
    return 0


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, help="where the indexes are kept between runs (default: fresh ones, deleted afterwards)")
    parser.add_argument(
        "--full-dir",
        type=Path,
        help="an index of the whole shared data to use as the single registry (e.g. quality.py's <data-dir>/shared)",
    )
    parser.add_argument(
        "--shared", type=Path, default=suite.REPO.parent / "shared", help="the shared folder holding data/ (default: %(default)s)"
    )
    args = parser.parse_args(list(argv) if argv is not None else None)
    if not (args.shared / "data").is_dir():
        parser.error(f"{args.shared / 'data'} does not exist; pass --shared DIR")
    if args.data_dir is not None:
        return run(args.data_dir, args.full_dir, args.shared)
    temp = Path(tempfile.mkdtemp(prefix="ard-mcp-federation-"))
    try:
        return run(temp, args.full_dir, args.shared)
    finally:
        shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
