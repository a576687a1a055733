"""Retrieval quality of ard-mcp per source, next to simple baselines on the same index, leave-one-source-out.

    python bench/build_sources.py              # once: builds bench/.data/ from the fetched public repositories
    python bench/quality.py [--data-dir D] [--shared DIR] [--json OUT]
    python bench/quality.py --model-dir M --data-dir D2   # another model (fit_fusion.py --model-dir M --save first)
    python bench/quality.py --rerank R [--sources mcp-bench livemcpbench]   # with a cross-encoder (train_reranker.py)

Every source of `suite.py` (LiveMCPBench and MetaTool over the shared data's 740 entries; Seal-Tools,
ToolAlpaca and mcp-bench over their own catalogs; two no-answer sets) runs through the product's own
ingest and ranking, and so does `everyday` (issue #56's dev set of everyday tasks over the bundled snapshot),
whose own table (right first, in the top 3, confident and wrong: `everyday.py`) follows. The held-out public
sets (`suite.HELD_OUT_SOURCES`: APIBench, RestBench, NESTFUL; `build_sources.py --held-out`) run only when
`--sources` names them, with the product's tuning: no fit here or anywhere sees them. For each source it
prints:

* ard-mcp: the product's tuning (fitted on every dev source by `fit_fusion.py`), and held-out: tuning
  fitted by the same code on the *other* sources only, which is what to expect on a catalog nobody tuned on;
* empty answers and low-confidence answers of answerable queries (low-conf), and of the answerable queries
  whose first three results hold a right entry, the share marked low-confidence anyway (right doubted: a
  good answer the host is told to check, issue #46's measure); for the no-answer sets the share given
  confident results (false positives; results marked low-confidence are not);
* baselines over the *same* entries with the *same* scorer: BM25 over all of an entry's text; one vector
  (of the index's model) per entry over name + description, and over all its text (truncated at 256 tokens); the
  example-level max (each entry's best example, the product's own example vectors); and RRF (k=60) of
  BM25 and the example-level max;
* with `--rerank DIR`, `+rerank`: the product's ranking of the same collected candidates with the cross-encoder
  rescoring the top (`ard_mcp.search.rerank`); its latency is what the rescoring adds to a search (the ranking
  of collected candidates plus the cross-encoder pass), so a search with it costs about the two p50s together;
* what a host model reads: tokens of a default `search_agents` page (detail=compact, the JSON text sent as
  `content`) and of the same page at detail=full, counted with the bundled tokenizer (an approximation of a
  host model's), and the search latency.

The data README (`<shared>/data/README.md`) lists reference figures for three baselines on the shared
index; they are printed alongside so a drift in the data, the model or the scorer shows up at once.
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
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))

import everyday
import suite
from fit_fusion import describe, fit
from suite import Collected, Source

from ard_mcp.config import bundled_model_dir
from ard_mcp.evaluation.report import Answer, EvalReport, Summary, evaluate, format_table
from ard_mcp.formats.identifiers import normalize_identifier
from ard_mcp.formats.manifests import file_entries
from ard_mcp.formats.messages import SearchResponse
from ard_mcp.index.embedding import Embedder
from ard_mcp.registry import Registry
from ard_mcp.search.query import SearchQuery
from ard_mcp.search.rerank import Reranker, RerankerSpec
from ard_mcp.search.results import SearchPage
from ard_mcp.search.visibility import EVERYONE

BASELINES = ("bm25", "dense-name-desc", "dense-all-text", "example-max", "rrf")
METRICS = (("nDCG@10", "ndcg10"), ("R@5", "recall5"), ("R@10", "recall10"), ("MRR", "mrr"))
K = 10
RRF_K = 60

#: The data README's reference figures (nDCG@10, R@5) on the shared index.
REFERENCE: dict[str, dict[str, tuple[float, float]]] = {
    "bm25": {"livemcpbench": (0.397, 0.391), "metatool": (0.500, 0.545)},
    "dense-name-desc": {"livemcpbench": (0.181, 0.231), "metatool": (0.619, 0.677)},
    "dense-all-text": {"livemcpbench": (0.352, 0.371), "metatool": (0.661, 0.715)},
}
#: The issue's targets: margin over the best baseline on every source, dev figures, abstention, context cost.
MARGIN = 0.05
DEV_TARGETS = {"livemcpbench": 0.62, "metatool": 0.76}
MAX_EMPTY_RATE = 0.02
MAX_FP_RATE = 0.15  # confident answers to the hard no-answer set (#46)
MAX_RIGHT_DOUBTED = 0.10  # right answers in the first three marked low-confidence, per source (#46)
MAX_PAGE_TOKENS = 1500
MAX_P50_MS = 30.0

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
    data = entry["data"] if isinstance(entry.get("data"), dict) else {}
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


# -- the index's entries and examples ------------------------------------------------------------------


def indexed_entries(registry: Registry, files: Sequence[Path]) -> dict[str, dict[str, Any]]:
    """The catalogs' entries as the index holds them: same order, later copies replace earlier ones,
    entries the registry rejected left out. Ordered by first appearance, so ties break the same way."""
    entries: dict[str, dict[str, Any]] = {}
    for path in files:
        for _, raw in file_entries(path):
            if isinstance(raw, dict) and isinstance(raw.get("identifier"), str):
                entries[normalize_identifier(raw["identifier"])] = raw
    return {i: e for i, e in entries.items() if registry.store.get(i) is not None}


def example_max_search(registry: Registry, ids: list[str], query_vectors: dict[str, np.ndarray], k: int = K) -> SearchFn:
    """Each entry scored by its best example's cosine, over the product's own example vectors."""
    by_identifier = {
        normalize_identifier(a.identifier): a_id for a_id, a in registry.store.agents_by_id(registry.store.agent_ids()).items()
    }
    agent_ids = [by_identifier[i] for i in ids]
    examples, _ = registry.store.examples_and_terms(sorted(agent_ids))
    starts = np.flatnonzero(np.r_[True, examples.agent_ids[1:] != examples.agent_ids[:-1]])
    owner = {int(a): n for n, a in enumerate(examples.agent_ids[starts])}
    column = np.array([owner[a] for a in agent_ids])  # entry i's row among the grouped agents

    def search(text: str) -> list[str]:
        best = np.maximum.reduceat(examples.vectors @ query_vectors[text], starts)[column]
        return [ids[i] for i in np.argsort(-best, kind="stable")[:k]]

    return search


def rrf(*searches: SearchFn, depth: int = 100, k: int = K) -> SearchFn:
    """Reciprocal rank fusion (1 / (60 + rank)) of several rankings, each read to `depth`."""

    def search(text: str) -> list[str]:
        scores: dict[str, float] = {}
        for fn in searches:
            for rank, ident in enumerate(fn(text)[:depth]):
                scores[ident] = scores.get(ident, 0.0) + 1.0 / (RRF_K + rank + 1)
        return [i for i, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))][:k]

    return search


def baselines(registry: Registry, files: Sequence[Path], texts: Iterable[str]) -> dict[str, SearchFn]:
    entries = indexed_entries(registry, files)
    ids = list(entries)
    full = [all_text(e) for e in entries.values()]
    bm25 = BM25(ids, full)
    # the reference figures embed whole entries at the model's 256-token inference limit; the product and
    # the example-level max embed short examples and queries at 128 tokens (the length the model was trained on)
    long_embed = Embedder(dataclasses.replace(registry.embedder.spec, max_length=256)).embed
    name_vectors = long_embed([name_description(e) for e in entries.values()])
    full_vectors = long_embed(full)
    unique = sorted(set(texts))
    long_queries = dict(zip(unique, long_embed(unique), strict=True))
    queries = dict(zip(unique, registry.embedder.embed(unique), strict=True))
    example_max = example_max_search(registry, ids, queries, k=100)
    deep_bm25: SearchFn = lambda text: bm25.search(text, 100)  # noqa: E731
    return {
        "bm25": bm25.search,
        "dense-name-desc": dense_search(ids, name_vectors, long_queries),
        "dense-all-text": dense_search(ids, full_vectors, long_queries),
        "example-max": lambda text: example_max(text)[:K],
        "rrf": rrf(deep_bm25, example_max),
    }


# -- the product -------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PageCost:
    """Tokens of one default `search_agents` page as text, and of the same page at detail=full."""

    compact: int
    full: int


def product_pass(registry: Registry, source: Source, tokenizer: Tokenizer) -> tuple[EvalReport, list[PageCost]]:
    """Each query through `Registry.search` and the compact page, as `search_agents` runs them, timed; then
    each page's token cost (counted outside the timing)."""
    pages: list[tuple[SearchPage, SearchResponse]] = []

    def search(text: str) -> Answer:
        page = registry.search(SearchQuery.of(text, page_size=K), viewer=EVERYONE)
        pages.append((page, page.brief()))
        return Answer([c.agent.identifier for c in page.candidates], page.confident)

    report = evaluate(search, source.queries)
    costs = [
        PageCost(
            len(tokenizer.encode(brief.model_dump_json(by_alias=True)).ids),
            len(tokenizer.encode(page.response().model_dump_json(by_alias=True)).ids),
        )
        for page, brief in pages
    ]
    return report, costs


def ranked_under(registry: Registry, tuning: Any, items: Sequence[Collected]) -> EvalReport:
    """A source's figures under another tuning, from its collected candidates (no second search)."""
    ranker = suite.ranker_with(registry, tuning)
    answers = {item.judgement.id: suite.answer(ranker, item) for item in items}
    by_text = {item.judgement.query: answers[item.judgement.id] for item in items}
    return evaluate(lambda text: by_text[text], [item.judgement for item in items])


class MemoReranker(Reranker):
    """A reranker that scores the same (query, texts) once: a blend sweep rescores the same top candidates again."""

    def __init__(self, spec: RerankerSpec, memo: dict[tuple[str, tuple[str, ...]], np.ndarray]) -> None:
        super().__init__(spec)
        self._memo = memo

    def scores(self, query: str, texts: Sequence[str]) -> np.ndarray:
        key = (query, tuple(texts))
        if key not in self._memo:
            self._memo[key] = super().scores(query, texts)
        return self._memo[key]


def reranked(registry: Registry, reranker: Reranker, items: Sequence[Collected]) -> EvalReport:
    """A source's figures with the cross-encoder rescoring the top of each collected query, the rescoring timed
    (a `MemoReranker`'s second pass over the same queries times only the ranking)."""
    ranker = suite.ranker_with(registry, registry.ranker.tuning, reranker)
    by_text = {item.judgement.query: item for item in items}
    return evaluate(lambda text: suite.answer(ranker, by_text[text]), [item.judgement for item in items])


# -- output ------------------------------------------------------------------------------------------


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def render(rows: list[list[str]], header: list[str]) -> str:
    table = [header, *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = [
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))).rstrip() for row in table
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _right_doubted(s: Summary) -> str:
    return f"{s.doubted_right}/{s.found3} ({_fmt(s.doubted_right_rate, 2)})"


def source_table(name: str, rows: dict[str, EvalReport]) -> str:
    header = ["method", *(m for m, _ in METRICS), "empty", "low-conf", "right doubted", "no-ans FP"]
    out = []
    for method, report in rows.items():
        s = report.overall
        fp = f"{s.no_answer_fp}/{s.no_answer} ({_fmt(s.fp_rate, 2)})" if s.no_answer else "-"
        empty = f"{s.empty}/{s.answerable}" if s.answerable else "-"
        doubted = (str(s.doubted), _right_doubted(s)) if s.answerable else ("-", "-")
        out.append([method, *(_fmt(getattr(s, attr)) for _, attr in METRICS), empty, *doubted, fp])
    return f"{name} ({rows['ard-mcp'].overall.queries} queries)\n" + render(out, header)


def summary_table(results: dict[str, dict[str, EvalReport]], costs: dict[str, list[PageCost]]) -> tuple[str, list[str]]:
    """One row per source: the product, held-out, the best baseline and the margin; tokens; latency. And the
    targets that were missed."""
    header = ["source", "ard-mcp", "held-out", "best baseline", "margin", "empty", "right doubted", "FP"]
    header += ["tokens p50/max", "full p50", "p50 ms"]
    with_rerank = any("+rerank" in rows_of for rows_of in results.values())
    if with_rerank:
        header += ["+rerank", "rerank ms"]
    rows, missed = [], []
    for name, rows_of in results.items():
        product = rows_of["ard-mcp"].overall
        tokens = np.array([c.compact for c in costs[name]])
        full = np.array([c.full for c in costs[name]])
        cells = [name]
        if product.answerable:
            best_name = max(BASELINES, key=lambda b: rows_of[b].overall.ndcg10 or 0.0)
            best = rows_of[best_name].overall.ndcg10 or 0.0
            held = rows_of["held-out"].overall.ndcg10 if "held-out" in rows_of else None
            margin = min(product.ndcg10 or 0.0, held if held is not None else 1.0) - best
            cells += [_fmt(product.ndcg10), _fmt(held), f"{best:.3f} {best_name}", f"{margin:+.3f}"]
            cells += [f"{product.empty}/{product.answerable}", _right_doubted(product), "-"]
            if margin < MARGIN:
                missed.append(
                    f"{name}: ahead of the best baseline ({best_name}) by {margin:+.3f} nDCG@10 "
                    f"(the lower of product and held-out), target +{MARGIN:.2f}"
                )
            if (product.doubted_right_rate or 0.0) > MAX_RIGHT_DOUBTED:
                missed.append(
                    f"{name}: {product.doubted_right_rate:.1%} of the answers with a right entry in the first three marked "
                    f"low-confidence, target ≤ {MAX_RIGHT_DOUBTED:.0%}"
                )
            if (product.empty_rate or 0.0) > MAX_EMPTY_RATE:
                missed.append(f"{name}: empty answers {product.empty_rate:.1%}, target ≤ {MAX_EMPTY_RATE:.0%}")
            target = DEV_TARGETS.get(name)
            if target is not None and (product.ndcg10 or 0.0) < target:
                missed.append(f"{name}: nDCG@10 {product.ndcg10:.3f}, target ≥ {target:.2f}")
        else:
            cells += ["-", "-", "-", "-", "-", "-", f"{product.no_answer_fp}/{product.no_answer} ({_fmt(product.fp_rate, 2)})"]
            if name == "no-answer-hard" and (product.fp_rate or 0.0) > MAX_FP_RATE:
                missed.append(f"{name}: false-positive rate {product.fp_rate:.2f}, target ≤ {MAX_FP_RATE:.2f}")
        cells += [f"{int(np.median(tokens))}/{int(tokens.max())}", str(int(np.median(full))), _fmt(product.p50_ms, 1)]
        if with_rerank:
            extra = rows_of.get("+rerank")
            cells += [_fmt(extra.overall.ndcg10), _fmt(extra.overall.p50_ms, 1)] if extra else ["-", "-"]
        if tokens.max() > MAX_PAGE_TOKENS:
            missed.append(f"{name}: a compact page of {int(tokens.max())} tokens, target ≤ {MAX_PAGE_TOKENS}")
        if (product.p50_ms or 0.0) > MAX_P50_MS:
            missed.append(f"{name}: search p50 {product.p50_ms:.1f} ms, target ≤ {MAX_P50_MS:.0f} ms")
        rows.append(cells)
    return render(rows, header), missed


def reference_check(results: dict[str, dict[str, EvalReport]]) -> str:
    lines = ["baselines vs the data README (nDCG@10 / R@5, measured - reference):"]
    for method, refs in REFERENCE.items():
        cells = []
        for d, (rn, rr) in refs.items():
            if d in results:
                s = results[d][method].overall
                cells.append(
                    f"{d} {s.ndcg10:.3f}/{s.recall5:.3f} vs {rn:.3f}/{rr:.3f} ({(s.ndcg10 or 0) - rn:+.3f}/{(s.recall5 or 0) - rr:+.3f})"
                )
        lines.append(f"  {method:<16} " + "   ".join(cells))
    return "\n".join(lines)


# -- main --------------------------------------------------------------------------------------------


def run(
    root: Path,
    shared: Path,
    built: Path,
    json_out: Path | None,
    model_dir: Path | None = None,
    rerank_dir: Path | None = None,
    only: Sequence[str] = (),
    blends: Sequence[float] = (),
) -> int:
    chosen = suite.sources(shared, built, only)
    every_index = suite.catalogs(shared, built, held_out=True)  # a held-out source's index is opened only when chosen
    indexes = {name: files for name, files in every_index.items() if any(s.index == name for s in chosen)}
    memo: dict[tuple[str, tuple[str, ...]], np.ndarray] = {}
    spec = RerankerSpec.load(rerank_dir) if rerank_dir else None
    rerankers = {} if spec is None else {"+rerank": MemoReranker(spec, memo)}
    rerankers.update({f"+rerank x{w:g}": MemoReranker(dataclasses.replace(spec, blend=w), memo) for w in blends if spec})
    missing = [n for n in suite.BUILT_SOURCES if n not in every_index]
    if missing:
        print(f"note: {', '.join(missing)} not built (python bench/build_sources.py); their rows are left out", file=sys.stderr)
    tokenizer = Tokenizer.from_file(str(bundled_model_dir() / "tokenizer.json"))
    tokenizer.no_truncation()
    start = time.perf_counter()
    registries = {name: suite.open_index(name, files, root, model_dir) for name, files in indexes.items()}
    product = next(iter(registries.values())).tuning  # the code's, or the --model-dir's own (fit_fusion.py --save)
    print(
        f"indexes ready in {time.perf_counter() - start:.1f} s: "
        + ", ".join(f"{n} {r.store.count()} entries" for n, r in registries.items())
    )
    try:
        for registry in registries.values():
            registry.warm_up()
        registry_of = {s.name: registries[s.index] for s in chosen}
        collected = {s.name: suite.collect(registry_of[s.name], s.queries) for s in chosen}
        answerable = {n: items for n, items in collected.items() if n not in suite.NO_ANSWER}
        # the held-out sets (suite.HELD_OUT_SOURCES) are scored with the product's tuning only: no fit sees them;
        # a scored-only dev source (suite.NOT_FITTED) gets the tuning fitted on the others, the product's
        dev = {n: items for n, items in answerable.items() if n not in suite.HELD_OUT_SOURCES}
        if suite.fitted(dev):
            refit = fit(registry_of, suite.fitted(dev), collected.get("no-answer", []))
            same = refit == product
            print(
                f"refit on every dev source: {describe(refit)}".replace("\n", "; ")
                + ("  (= the product's)" if same else "  (DIFFERS from the product's)")
            )
        held_out = {}
        for name in dev:
            others = {n: items for n, items in suite.fitted(dev).items() if n != name}
            if not others:  # `--sources` named one dev source: nothing to fit a held-out tuning on
                continue
            held_out[name] = fit(registry_of, others, collected.get("no-answer", []))
            print(f"held-out tuning for {name}: {describe(held_out[name])}".replace("\n", "; "))

        results: dict[str, dict[str, EvalReport]] = {}
        costs: dict[str, list[PageCost]] = {}
        reference: dict[str, dict[str, SearchFn]] = {}  # per index, over every query of its dev sources
        for source in chosen:
            registry = registry_of[source.name]
            t0 = time.perf_counter()
            report, costs[source.name] = product_pass(registry, source, tokenizer)
            rows = {"ard-mcp": report}
            for label, reranker in rerankers.items():
                if source.name not in suite.NO_ANSWER:  # it changes no confidence: no-answer rows stay as they are
                    rows[label] = reranked(registry, reranker, collected[source.name])
            if source.name in held_out:
                rows["held-out"] = ranked_under(registry, held_out[source.name], collected[source.name])
            if source.name in answerable:
                if source.index not in reference:
                    texts = [j.query for s in chosen if s.index == source.index and s.name in answerable for j in s.queries]
                    reference[source.index] = baselines(registry, indexes[source.index], texts)
                for method, fn in reference[source.index].items():
                    rows[method] = evaluate(fn, source.queries)
            results[source.name] = rows
            print(f"{source.name}: {len(source.queries)} queries in {time.perf_counter() - t0:.1f} s", flush=True)
        # right first, in the top 3, doubted, confident and wrong, as the everyday set reports them
        outside = {s.name: everyday.table(everyday.run(registry_of[s.name], s.queries)) for s in chosen if s.name in suite.HELD_OUT_SOURCES}
    finally:
        for registry in registries.values():
            registry.close()

    print()
    print(f"product tuning: {describe(product)}".replace("\n", "; "))
    print()
    for name, rows in results.items():
        print(source_table(name, rows))
        print()
    table, missed = summary_table(results, costs)
    print("Per source (nDCG@10; held-out: tuned on the other sources only; margin: the lower of the two minus the best baseline)")
    print(table)
    print()
    print("targets: all met" if not missed else "targets NOT met:\n  " + "\n  ".join(missed))
    print()
    print(reference_check(results))
    for name, rows in results.items():
        report = rows["ard-mcp"]
        if report.by_kind:
            print()
            print(f"ard-mcp on {name}, by kind:")
            print(format_table(dataclasses.replace(report, by_category={})))

    if any(s.name == "everyday" for s in chosen):
        print()
        print(everyday.report(everyday.TASKS, root / "everyday", model_dir, show_misses=False))
    for name, shown in outside.items():
        print()
        print(f"{name} (held out), as the everyday set is reported:")
        print(shown)

    if json_out is not None:
        payload = {
            name: {method: report.to_dict(per_query=method in ("ard-mcp", "held-out")) for method, report in rows.items()}
            for name, rows in results.items()
        }
        json_out.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"\nwrote {json_out}")
    return 0 if not missed else 1


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, help="where the indexes are kept between runs (default: fresh ones, deleted afterwards)")
    parser.add_argument(
        "--shared", type=Path, default=suite.REPO.parent / "shared", help="the shared folder holding data/ (default: %(default)s)"
    )
    parser.add_argument(
        "--built", type=Path, default=suite.BUILT, help="the sources built by bench/build_sources.py (default: %(default)s)"
    )
    parser.add_argument(
        "--model-dir",
        type=Path,
        help="index and rank with this model (bench/export_model.py) under the tuning its model.json carries (fit_fusion.py --save)",
    )
    parser.add_argument(
        "--json", type=Path, dest="json_out", metavar="OUT", help="also write every figure (and ard-mcp's per-query results) to OUT"
    )
    parser.add_argument(
        "--rerank", type=Path, metavar="DIR", help="also rank with this cross-encoder (train_reranker.py): the +rerank rows"
    )
    parser.add_argument(
        "--blend",
        type=float,
        action="append",
        default=[],
        metavar="W",
        help="with --rerank, also rows at this blend instead of its model.json's (repeatable; the scores are reused, not re-timed)",
    )
    parser.add_argument(
        "--sources", nargs="+", default=[], metavar="NAME", help="only these sources (default: all; only their indexes are built)"
    )
    args = parser.parse_args(list(argv) if argv is not None else None)
    if not (args.shared / "data").is_dir():
        parser.error(f"{args.shared / 'data'} does not exist; pass --shared DIR")
    known = {s.name for s in suite.sources(args.shared, args.built, held_out=True)}
    if set(args.sources) - known:
        parser.error(f"unknown source(s) {', '.join(sorted(set(args.sources) - known))}; known: {', '.join(sorted(known))}")
    root = args.data_dir or Path(tempfile.mkdtemp(prefix="ard-mcp-quality-"))
    try:
        return run(root, args.shared, args.built, args.json_out, args.model_dir, args.rerank, args.sources, args.blend)
    finally:
        if args.data_dir is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
