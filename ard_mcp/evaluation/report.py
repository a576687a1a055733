"""Running labelled queries through a search function and reporting the scores: overall, per category
and per kind of query, with the false-positive rate of the no-answer queries, how many answerable queries
got nothing or only low-confidence results, and the search latency. `registry_search` runs them over the
exact code path `search_agents` uses.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ard_mcp.evaluation.judgements import Judgement
from ard_mcp.evaluation.metrics import DEFAULT_K, ndcg_at, recall_at, reciprocal_rank
from ard_mcp.formats.identifiers import normalize_identifier
from ard_mcp.search.query import SearchQuery
from ard_mcp.search.visibility import EVERYONE

if TYPE_CHECKING:
    from ard_mcp.registry import Registry

Timer = Callable[[], float]


@dataclass(frozen=True)
class Answer:
    """What a search returned: identifiers best first, and whether it vouches for them. A search marks an
    answer low-confidence (`confident=False`) when nothing fit well and it listed the closest entries."""

    ids: list[str]
    confident: bool = True


SearchFn = Callable[[str], Answer | list[str]]  # a plain list: a search that is always confident (the baselines)


@dataclass(frozen=True)
class QueryResult:
    """What one query returned and how it scored; the metrics are None for a no-answer query."""

    id: str
    ranked: tuple[str, ...]
    latency_ms: float
    no_answer: bool
    ndcg: float | None
    recall5: float | None
    recall10: float | None
    rr: float | None
    category: str | None = None
    kind: str | None = None
    confident: bool = True
    found3: bool = False  # a relevant entry is among the first three results

    @property
    def false_positive(self) -> bool:
        """A no-answer query given results the search vouched for (closest entries marked low-confidence are not)."""
        return self.no_answer and bool(self.ranked) and self.confident

    @property
    def empty(self) -> bool:
        """An answerable query given nothing: for a host model, the worst outcome."""
        return not self.no_answer and not self.ranked

    @property
    def doubted(self) -> bool:
        """An answerable query whose results came marked low-confidence."""
        return not self.no_answer and bool(self.ranked) and not self.confident

    @property
    def doubted_right(self) -> bool:
        """A right answer the host is told to check: a relevant entry in the first three, the page marked
        low-confidence. What #46 counts, as a share of the answers whose first three hold a right entry."""
        return self.found3 and not self.confident


@dataclass(frozen=True)
class Summary:
    """Aggregate metrics over a set of queries. Quality means are over answerable queries only."""

    queries: int
    answerable: int
    ndcg10: float | None
    recall5: float | None
    recall10: float | None
    mrr: float | None
    no_answer: int
    no_answer_fp: int
    empty: int
    doubted: int
    found3: int  # answerable queries with a relevant entry in the first three results
    doubted_right: int  # of those, the ones marked low-confidence
    p50_ms: float | None
    p95_ms: float | None

    @property
    def fp_rate(self) -> float | None:
        """Share of no-answer queries that returned anything; None when there were none to judge."""
        return self.no_answer_fp / self.no_answer if self.no_answer else None

    @property
    def empty_rate(self) -> float | None:
        """Share of answerable queries that got no result at all."""
        return self.empty / self.answerable if self.answerable else None

    @property
    def doubted_right_rate(self) -> float | None:
        """Share of the queries with a right entry in the first three whose page was marked low-confidence."""
        return self.doubted_right / self.found3 if self.found3 else None

    @classmethod
    def of(cls, results: Sequence[QueryResult]) -> Summary:
        scored = [r for r in results if not r.no_answer]

        def mean(values: Iterable[float | None]) -> float | None:
            vals = [v for v in values if v is not None]
            return float(sum(vals) / len(vals)) if vals else None

        latencies = np.array([r.latency_ms for r in results], dtype=np.float64)
        return cls(
            queries=len(results),
            answerable=len(scored),
            ndcg10=mean(r.ndcg for r in scored),
            recall5=mean(r.recall5 for r in scored),
            recall10=mean(r.recall10 for r in scored),
            mrr=mean(r.rr for r in scored),
            no_answer=len(results) - len(scored),
            no_answer_fp=sum(1 for r in results if r.false_positive),
            empty=sum(1 for r in results if r.empty),
            doubted=sum(1 for r in results if r.doubted),
            found3=sum(1 for r in results if r.found3),
            doubted_right=sum(1 for r in results if r.doubted_right),
            p50_ms=float(np.percentile(latencies, 50)) if len(latencies) else None,
            p95_ms=float(np.percentile(latencies, 95)) if len(latencies) else None,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "queries": self.queries,
            "answerable": self.answerable,
            "ndcg@10": self.ndcg10,
            "recall@5": self.recall5,
            "recall@10": self.recall10,
            "mrr": self.mrr,
            "noAnswer": {"queries": self.no_answer, "returnedResults": self.no_answer_fp, "falsePositiveRate": self.fp_rate},
            "answered": {
                "empty": self.empty,
                "emptyRate": self.empty_rate,
                "lowConfidence": self.doubted,
                "rightInTop3": self.found3,
                "rightInTop3LowConfidence": self.doubted_right,
                "rightInTop3LowConfidenceRate": self.doubted_right_rate,
            },
            "latencyMs": {"p50": self.p50_ms, "p95": self.p95_ms},
        }


@dataclass(frozen=True)
class EvalReport:
    """Overall scores, the same per `category` and per `kind` (when the file labels them), per-query rows."""

    overall: Summary
    by_category: dict[str, Summary]
    by_kind: dict[str, Summary]
    results: tuple[QueryResult, ...]
    k: int = DEFAULT_K

    def to_dict(self, per_query: bool = False) -> dict[str, Any]:
        """The `--json` output; per-query rows on request (they dominate the size for large files)."""
        out: dict[str, Any] = {
            "k": self.k,
            "overall": self.overall.to_dict(),
            "byCategory": {name: s.to_dict() for name, s in self.by_category.items()},
            "byKind": {name: s.to_dict() for name, s in self.by_kind.items()},
        }
        if per_query:
            out["queries"] = [
                {
                    "id": r.id,
                    "category": r.category,
                    "kind": r.kind,
                    "results": list(r.ranked),
                    "confident": r.confident,
                    "rightInTop3": r.found3,
                    "latencyMs": r.latency_ms,
                    "noAnswer": r.no_answer,
                    "ndcg@10": r.ndcg,
                    "recall@5": r.recall5,
                    "recall@10": r.recall10,
                    "reciprocalRank": r.rr,
                }
                for r in self.results
            ]
        return out


def _grouped(results: Sequence[QueryResult], key: Callable[[QueryResult], str | None]) -> dict[str, Summary]:
    groups: dict[str, list[QueryResult]] = {}
    for r in results:
        name = key(r)
        if name is not None:
            groups.setdefault(name, []).append(r)
    return {name: Summary.of(rs) for name, rs in sorted(groups.items())}


def evaluate(search: SearchFn, judgements: Sequence[Judgement], timer: Timer = time.perf_counter, k: int = DEFAULT_K) -> EvalReport:
    """Run every judgement's query through `search` (ranked identifiers, best first) and score it.

    `timer` is injectable so tests can check the latency figures exactly; latency covers the `search`
    call only, which is what a client of `search_agents` waits for (minus transport)."""
    results: list[QueryResult] = []
    for j in judgements:
        start = timer()
        returned = search(j.query)
        elapsed_ms = (timer() - start) * 1000.0
        answer = returned if isinstance(returned, Answer) else Answer(returned)
        ranked = tuple(normalize_identifier(i) for i in answer.ids)[:k]
        answerable = not j.no_answer
        results.append(
            QueryResult(
                id=j.id,
                ranked=ranked,
                latency_ms=elapsed_ms,
                no_answer=not answerable,
                ndcg=ndcg_at(ranked, j, k) if answerable else None,
                recall5=recall_at(ranked, j, min(5, k)) if answerable else None,
                recall10=recall_at(ranked, j, k) if answerable else None,
                rr=reciprocal_rank(ranked, j, k) if answerable else None,
                category=j.category,
                kind=j.kind,
                confident=answer.confident,
                found3=answerable and bool(recall_at(ranked, j, 3)),
            )
        )
    return EvalReport(
        overall=Summary.of(results),
        by_category=_grouped(results, lambda r: r.category),
        by_kind=_grouped(results, lambda r: r.kind),
        results=tuple(results),
        k=k,
    )


def registry_search(registry: Registry, page_size: int = DEFAULT_K) -> SearchFn:
    """The search function `evaluate` needs, over the exact code path `search_agents` uses."""

    def search(text: str) -> Answer:
        page = registry.search(SearchQuery.of(text, page_size=page_size), viewer=EVERYONE)
        return Answer([c.agent.identifier for c in page.candidates], page.confident)

    return search


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def format_table(report: EvalReport) -> str:
    """A plain-text table: one row overall, then one per category and per kind, for a terminal or a PR. Right
    doubted: of the answerable queries with a right entry in the first three, those marked low-confidence."""
    header = ["set", "queries", "nDCG@10", "R@5", "R@10", "MRR", "empty", "low-conf", "right doubted", "no-answer FP", "p50 ms", "p95 ms"]
    rows: list[list[str]] = []

    def row(name: str, s: Summary) -> list[str]:
        fp = "-" if not s.no_answer else f"{s.no_answer_fp}/{s.no_answer} ({_fmt(s.fp_rate, 2)})"
        return [
            name,
            str(s.queries),
            _fmt(s.ndcg10),
            _fmt(s.recall5),
            _fmt(s.recall10),
            _fmt(s.mrr),
            str(s.empty) if s.answerable else "-",
            str(s.doubted) if s.answerable else "-",
            f"{s.doubted_right}/{s.found3}" if s.answerable else "-",
            fp,
            _fmt(s.p50_ms, 1),
            _fmt(s.p95_ms, 1),
        ]

    rows.append(row("overall", report.overall))
    rows += [row(f"category={name}", s) for name, s in report.by_category.items()]
    rows += [row(f"kind={name}", s) for name, s in report.by_kind.items()]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True)))

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(r) for r in rows)])
