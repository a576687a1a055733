"""Retrieval quality of ard-mcp on the shared benchmark data, next to simple reference baselines.

    python bench/quality.py [--data-dir DIR] [--shared DIR] [--json OUT]

Builds one index of the three catalogs in `<shared>/data` (740 entries) through the product's own ingest
path, runs the dev queries of LiveMCPBench and MetaTool through `search_agents`' code path
(`ard_mcp.evaluation.report.registry_search`), and in the same run scores three baselines over the *same*
entries with the *same* scorer, so a change to ranking can be judged against fixed floors instead of
remembered numbers:

* bm25: Okapi BM25 (k1=1.2, b=0.75) over all of an entry's text, lowercase word tokens;
* dense-name-desc: one MiniLM vector per entry over name + description, cosine;
* dense-all-text: one vector per entry over all of its text (the tokenizer truncates it at 256 tokens).

The data README (`<shared>/data/README.md`) lists reference figures for the baselines; they are printed
alongside so a drift in the data, the model or the scorer shows up at once.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ard_mcp.config import Config
from ard_mcp.evaluation.judgements import Judgement, load_queries
from ard_mcp.evaluation.report import EvalReport, evaluate, format_table, registry_search
from ard_mcp.formats.identifiers import normalize_identifier
from ard_mcp.formats.manifests import file_entries
from ard_mcp.index.embedding import Embedder
from ard_mcp.index.indexer import IngestReport
from ard_mcp.registry import Registry

REPO = Path(__file__).resolve().parent.parent
#: Ingest order matters: 8 identifiers are in both the seed and LiveMCPBench, and the later copy wins.
CATALOGS = ("mcp-registry-seed", "metatool", "livemcpbench")
DATASETS = ("livemcpbench", "metatool")
METHODS = ("ard-mcp", "bm25", "dense-name-desc", "dense-all-text")
METRICS = (("nDCG@10", "ndcg10"), ("R@5", "recall5"), ("R@10", "recall10"), ("MRR", "mrr"))
K = 10

#: The data README's reference figures (nDCG@10, R@5) per dataset, for the sanity check.
REFERENCE: dict[str, dict[str, tuple[float, float]]] = {
    "bm25": {"livemcpbench": (0.397, 0.391), "metatool": (0.500, 0.545)},
    "dense-name-desc": {"livemcpbench": (0.181, 0.231), "metatool": (0.619, 0.677)},
    "dense-all-text": {"livemcpbench": (0.352, 0.371), "metatool": (0.661, 0.715)},
}

SearchFn = Callable[[str], list[str]]


# -- entry text --------------------------------------------------------------------------------------


def _strings(values: Any) -> list[str]:
    """Strings of a list that may hold strings or named objects (ARD allows both for capabilities)."""
    out: list[str] = []
    for value in values if isinstance(values, list) else []:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            out += [v for v in (value.get("name"), value.get("description")) if isinstance(v, str)]
    return out


def name_description(entry: dict[str, Any]) -> str:
    name, description = entry.get("displayName") or "", entry.get("description") or ""
    return f"{name}: {description}" if description else name


def all_text(entry: dict[str, Any]) -> str:
    """Everything a person could match a task against: names, description, tags, capabilities,
    representative queries, and the names and descriptions of inline tools and skills."""
    parts = [entry.get("displayName") or "", entry.get("description") or ""]
    parts += _strings(entry.get("tags"))
    parts += _strings(entry.get("capabilities"))
    parts += _strings(entry.get("representativeQueries"))
    data = entry.get("data") if isinstance(entry.get("data"), dict) else {}
    for key in ("tools", "skills"):
        for item in data.get(key) or []:
            if isinstance(item, dict):
                parts += [v for v in (item.get("name"), item.get("description")) if isinstance(v, str)]
    return "\n".join(p for p in parts if p)


# -- baselines ---------------------------------------------------------------------------------------

_WORD = re.compile(r"\w+")


def tokenize(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class BM25:
    """Okapi BM25 with the non-negative idf ln(1 + (N - df + 0.5) / (df + 0.5)); query terms counted
    with repetition, as the usual reference implementations (rank_bm25, Lucene) do."""

    def __init__(self, ids: list[str], texts: list[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.ids, self.k1, self.b = ids, k1, b
        self.docs = [Counter(tokenize(t)) for t in texts]
        self.lengths = np.array([sum(d.values()) for d in self.docs], dtype=np.float64)
        self.avgdl = float(self.lengths.mean()) if len(self.docs) else 0.0
        df: Counter[str] = Counter()
        for doc in self.docs:
            df.update(doc.keys())
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.postings: dict[str, list[tuple[int, int]]] = {}
        for i, doc in enumerate(self.docs):
            for term, tf in doc.items():
                self.postings.setdefault(term, []).append((i, tf))

    def search(self, text: str, k: int = K) -> list[str]:
        scores = np.zeros(len(self.docs), dtype=np.float64)
        for term in tokenize(text):
            idf = self.idf.get(term)
            if idf is None:
                continue
            for i, tf in self.postings[term]:
                norm = self.k1 * (1 - self.b + self.b * self.lengths[i] / self.avgdl)
                scores[i] += idf * tf * (self.k1 + 1) / (tf + norm)
        order = np.argsort(-scores, kind="stable")[:k]
        return [self.ids[i] for i in order if scores[i] > 0]


def dense_search(ids: list[str], doc_vectors: np.ndarray, query_vectors: dict[str, np.ndarray], k: int = K) -> SearchFn:
    """Cosine top k; vectors are L2-normalised by the embedder, so cosine is a dot product."""

    def search(text: str) -> list[str]:
        scores = doc_vectors @ query_vectors[text]
        return [ids[i] for i in np.argsort(-scores, kind="stable")[:k]]

    return search


# -- ingest ------------------------------------------------------------------------------------------


def ingest(reg: Registry, data: Path) -> tuple[dict[str, IngestReport], float]:
    reports: dict[str, IngestReport] = {}
    start = time.perf_counter()
    for name in CATALOGS:
        t0 = time.perf_counter()
        reports[name] = report = reg.indexer.register_many(file_entries(data / name / "catalog.json"))
        print(
            f"  {name:<18} added {report.added:>4}  updated {report.updated:>3}  unchanged {report.unchanged:>3}  "
            f"rejected {len(report.rejected):>3}  ({time.perf_counter() - t0:.1f} s)",
            flush=True,
        )
        for message in report.rejected[:5]:
            print(f"    rejected: {message}")
    return reports, time.perf_counter() - start


def indexed_entries(reg: Registry, data: Path) -> dict[str, dict[str, Any]]:
    """The catalogs' entries as the index holds them: same order, later copies replace earlier ones,
    entries the registry rejected left out. Ordered by first appearance, so ties break the same way."""
    entries: dict[str, dict[str, Any]] = {}
    for name in CATALOGS:
        for _, raw in file_entries(data / name / "catalog.json"):
            if isinstance(raw, dict) and isinstance(raw.get("identifier"), str):
                entries[normalize_identifier(raw["identifier"])] = raw
    return {i: e for i, e in entries.items() if reg.store.get(i) is not None}


def overlap_note(data: Path) -> str:
    def ids(name: str) -> set[str]:
        return {
            normalize_identifier(e["identifier"])
            for _, e in file_entries(data / name / "catalog.json")
            if isinstance(e, dict) and "identifier" in e
        }

    both = ids("mcp-registry-seed") & ids("livemcpbench")
    return (
        f"note: {len(both)} identifiers are in both mcp-registry-seed and livemcpbench; the seed copies carry only a "
        f"description, so livemcpbench is ingested last and its richer copies (tools, tags, capabilities) win"
    )


# -- output ------------------------------------------------------------------------------------------


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def render(rows: list[list[str]], header: list[list[str]]) -> str:
    table = header + rows
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    out = []
    for n, row in enumerate(table):
        out.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))).rstrip())
        if n == len(header) - 1:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def main_table(results: dict[str, dict[str, EvalReport]]) -> str:
    has_no_answer = any(results["ard-mcp"][d].overall.no_answer for d in DATASETS)
    top = [""] + [d for d in DATASETS for _ in METRICS] + ["ard-mcp latency (all queries)", ""]
    sub = ["method"] + [m for _ in DATASETS for m, _ in METRICS] + ["p50 ms", "p95 ms"]
    if has_no_answer:
        top += list(DATASETS)
        sub += ["no-ans FP" for _ in DATASETS]
    latencies = np.array([r.latency_ms for d in DATASETS for r in results["ard-mcp"][d].results])
    rows = []
    for method in METHODS:
        row = [method]
        for d in DATASETS:
            s = results[method][d].overall
            row += [_fmt(getattr(s, attr)) for _, attr in METRICS]
        if method == "ard-mcp":
            row += [f"{np.percentile(latencies, 50):.1f}", f"{np.percentile(latencies, 95):.1f}"]
        else:
            row += ["", ""]
        if has_no_answer:
            for d in DATASETS:
                s = results[method][d].overall
                row.append(f"{s.no_answer_fp}/{s.no_answer}" if s.no_answer else "-")
        rows.append(row)
    # the dataset names span their four metric columns: print each once, over its first column
    for i in range(len(top) - 1, 0, -1):
        if top[i] == top[i - 1] and top[i]:
            top[i] = ""
    return render(rows, [top, sub])


def reference_check(results: dict[str, dict[str, EvalReport]]) -> str:
    lines = ["baselines vs the data README (nDCG@10 / R@5, measured - reference):"]
    for method, refs in REFERENCE.items():
        cells = []
        for d in DATASETS:
            s = results[method][d].overall
            (rn, rr) = refs[d]
            cells.append(f"{d} {s.ndcg10:.3f}/{s.recall5:.3f} vs {rn:.3f}/{rr:.3f} ({s.ndcg10 - rn:+.3f}/{s.recall5 - rr:+.3f})")
        lines.append(f"  {method:<16} " + "   ".join(cells))
    return "\n".join(lines)


# -- main --------------------------------------------------------------------------------------------


NO_ANSWER = Path(__file__).resolve().parent / "no_answer.jsonl"
#: The issue's targets on the dev queries: (dataset, metric key, target).
TARGETS = (
    ("livemcpbench", "ndcg10", 0.58),
    ("livemcpbench", "recall10", 0.72),
    ("metatool", "ndcg10", 0.76),
    ("metatool", "recall5", 0.84),
)


def target_check(results: dict[str, dict[str, EvalReport]]) -> str:
    lines = ["targets (ard-mcp):"]
    for dataset, key, target in TARGETS:
        value = getattr(results["ard-mcp"][dataset].overall, key)
        lines.append(f"  {dataset:<13} {key:<9} {value:.3f}  target ≥ {target:.2f}  {'met' if value >= target else 'NOT met'}")
    p50 = max(results["ard-mcp"][d].overall.p50_ms for d in DATASETS)
    lines.append(f"  search_agents p50 latency {p50:.1f} ms  target ≤ 30 ms  {'met' if p50 <= 30 else 'NOT met'}")
    return "\n".join(lines)


def run(data_dir: Path, shared: Path, json_out: Path | None) -> int:
    data = shared / "data"
    queries: dict[str, list[Judgement]] = {d: load_queries(data / d / "queries.dev.jsonl") for d in DATASETS}
    reg = Registry(Config(data_dir=data_dir))
    try:
        print(f"index: {data_dir}")
        print(overlap_note(data))
        reports, ingest_s = ingest(reg, data)
        rejected = sum(len(r.rejected) for r in reports.values())
        print(f"ingest: {reg.store.count()} entries indexed in {ingest_s:.1f} s ({rejected} rejected)")

        entries = indexed_entries(reg, data)
        if len(entries) != reg.store.count():
            print(f"warning: baselines see {len(entries)} entries but the index holds {reg.store.count()}", file=sys.stderr)
        ids = list(entries)
        full = [all_text(e) for e in entries.values()]

        results: dict[str, dict[str, EvalReport]] = {m: {} for m in METHODS}
        product = registry_search(reg, K)
        reg.warm_up()
        product(queries[DATASETS[0]][0].query)  # first-call costs (Chroma, model warm-up) are not query latency
        t0 = time.perf_counter()
        for d in DATASETS:
            results["ard-mcp"][d] = evaluate(product, queries[d])
        no_answer = evaluate(product, load_queries(NO_ANSWER))
        print(f"ard-mcp: {sum(len(q) for q in queries.values())} queries in {time.perf_counter() - t0:.1f} s")

        t0 = time.perf_counter()
        bm25 = BM25(ids, full)
        # the reference figures embed whole entries at the model's 256-token inference limit; the product
        # embeds short examples at 128 tokens (the length the model was trained on)
        embed = Embedder(dataclasses.replace(reg.embedder.spec, max_length=256)).embed
        name_vectors = embed([name_description(e) for e in entries.values()])
        full_vectors = embed(full)
        texts = sorted({j.query for qs in queries.values() for j in qs})
        query_vectors = dict(zip(texts, embed(texts), strict=True))
        for d in DATASETS:
            results["bm25"][d] = evaluate(bm25.search, queries[d])
            results["dense-name-desc"][d] = evaluate(dense_search(ids, name_vectors, query_vectors), queries[d])
            results["dense-all-text"][d] = evaluate(dense_search(ids, full_vectors, query_vectors), queries[d])
        print(f"baselines: built and run in {time.perf_counter() - t0:.1f} s over {len(ids)} entries")
    finally:
        reg.close()

    print()
    print(
        f"Retrieval quality, dev queries ({', '.join(f'{d}: {len(queries[d])}' for d in DATASETS)}), "
        f"index of {len(ids)} entries, ingest {ingest_s:.1f} s"
    )
    print(main_table(results))
    print()
    print(target_check(results))
    fp = no_answer.overall
    print(
        f"no-answer queries ({NO_ANSWER.name}, our own, none of which any entry fits): ard-mcp returned results for "
        f"{fp.no_answer_fp} of {fp.no_answer} (false-positive rate {fp.fp_rate:.2f}); the baselines have no cutoff (1.00)"
    )
    print()
    print(reference_check(results))
    for d in DATASETS:
        report = results["ard-mcp"][d]
        if report.by_category or report.by_kind:
            print()
            print(f"ard-mcp on {d}, by category / kind:")
            print(format_table(report))

    if json_out is not None:
        payload = {
            "entries": len(ids),
            "ingestSeconds": ingest_s,
            "ingest": {name: r.as_dict() for name, r in reports.items()},
            "results": {m: {d: results[m][d].to_dict(per_query=(m == "ard-mcp")) for d in DATASETS} for m in METHODS},
        }
        json_out.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"\nwrote {json_out}")
    return 0


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, help="index directory to build into (default: a fresh temporary one, deleted afterwards)")
    parser.add_argument(
        "--shared", type=Path, default=REPO.parent / "shared", help="the shared folder holding data/ (default: %(default)s)"
    )
    parser.add_argument(
        "--json", type=Path, dest="json_out", metavar="OUT", help="also write every figure (and ard-mcp's per-query results) to OUT"
    )
    args = parser.parse_args(list(argv) if argv is not None else None)
    if not (args.shared / "data").is_dir():
        parser.error(f"{args.shared / 'data'} does not exist; pass --shared DIR")
    if args.data_dir is not None:
        return run(args.data_dir, args.shared, args.json_out)
    temp = Path(tempfile.mkdtemp(prefix="ard-mcp-quality-"))
    try:
        return run(temp, args.shared, args.json_out)
    finally:
        shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
