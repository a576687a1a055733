"""Retrieval-quality evaluation: the logic behind `ard-mcp eval --queries FILE.jsonl`.

A registry is only as useful as what `search_agents` puts in its first ten results, so this module runs
labelled queries through a search function and scores the rankings the way the benchmark data's README
defines (shared/data/README.md), so the CLI, the bench script and the tests all agree on one formula:

* A query's *requirements* are its `relevant` identifiers plus its `relevant_any_of` groups. A group is
  met by any one member (several servers offer the same tool). An identifier in `relevant` that is also a
  member of a group is not a second requirement: it counts once, through the group, otherwise a
  ranking would be rewarded twice for one need and penalised for not showing the group's alternative.
* Grades (`relevant` given as `{id: grade}`) are gains; 1 when not given. A group's gain is the highest
  grade any of its members has in `relevant`, else 1.
* nDCG@k: each requirement's gain is discounted at the rank of its first satisfying result; the ideal
  ranking places the requirements' gains in descending order at ranks 1, 2, ... Recall@k is the share of
  requirements met in the top k; MRR uses the rank of the first result that meets any requirement.
* A query with no requirements is a *no-answer* query: a good engine returns nothing above its relevance
  cutoff. It is kept out of nDCG/recall/MRR (they are undefined for it) and reported instead as the share
  of such queries that returned anything (the false-positive rate).

Nothing here depends on the registry except `registry_search`, so the metric functions can be checked by
hand against small examples and reused with any search backend (baselines in `bench/quality.py`).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ard_mcp.catalog import normalize_identifier

if TYPE_CHECKING:
    from ard_mcp.registry import Registry

SearchFn = Callable[[str], list[str]]
Timer = Callable[[], float]

#: How many results a query is judged on: `search_agents` shows ten by default, and nDCG@10 needs ten.
DEFAULT_K = 10


@dataclass(frozen=True)
class Requirement:
    """One need of a query: met by any identifier in `members`; worth `gain` when met."""

    members: frozenset[str]
    gain: float


@dataclass(frozen=True)
class Judgement:
    """One labelled query, as a line of the queries JSONL file.

    `relevant` maps identifier -> grade (a plain list in the file means grade 1 each); `relevant_any_of`
    holds the groups of interchangeable identifiers. Identifiers are normalised the way the registry
    normalises them (`urn:air:` -> `urn:ai:`) so a label never misses a result over spelling alone.
    """

    id: str
    query: str
    relevant: Mapping[str, float] = field(default_factory=dict)
    relevant_any_of: tuple[tuple[str, ...], ...] = ()
    category: str | None = None
    kind: str | None = None

    @classmethod
    def from_json(cls, raw: Any, line: int = 0) -> Judgement:
        """Validate one decoded JSONL line; `ValueError` messages name the line so a labeller can fix it."""
        where = f"line {line}" if line else "query"
        if not isinstance(raw, dict):
            raise ValueError(f"{where}: expected a JSON object, got {type(raw).__name__}")
        query = raw.get("query")
        if query is None:
            raise ValueError(f"{where}: missing 'query' (the natural-language task to search for)")
        if not isinstance(query, str) or not query.strip():
            raise ValueError(f"{where}: 'query' must be a non-empty string")
        qid = raw.get("id", f"line-{line}" if line else None)
        if qid is None:
            raise ValueError(f"{where}: missing 'id'")
        if isinstance(qid, bool) or not isinstance(qid, str | int):
            raise ValueError(f"{where}: 'id' must be a string")
        relevant = _parse_relevant(raw.get("relevant"), where)
        groups = _parse_groups(raw.get("relevant_any_of", []), where)
        labels: dict[str, str | None] = {}
        for name in ("category", "kind"):
            value = raw.get(name)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{where}: '{name}' must be a string")
            labels[name] = value
        return cls(id=str(qid), query=query, relevant=relevant, relevant_any_of=groups, **labels)

    @property
    def requirements(self) -> tuple[Requirement, ...]:
        """The query's needs, each counted once (see the module docstring for why)."""
        grouped = {m for g in self.relevant_any_of for m in g}
        reqs = [Requirement(frozenset([i]), g) for i, g in self.relevant.items() if i not in grouped and g > 0]
        seen: set[frozenset[str]] = set()
        for group in self.relevant_any_of:
            members = frozenset(group)
            if members in seen:  # the same group twice is one need, not two
                continue
            seen.add(members)
            gain = max((self.relevant[m] for m in group if m in self.relevant), default=1.0)
            if gain > 0:
                reqs.append(Requirement(members, gain))
        return tuple(reqs)

    @property
    def no_answer(self) -> bool:
        """True when nothing in the catalog fits: any result at all is a false positive."""
        return not self.requirements


def _parse_relevant(raw: Any, where: str) -> dict[str, float]:
    if raw is None:
        return {}
    if isinstance(raw, list):
        if not all(isinstance(i, str) and i for i in raw):
            raise ValueError(f"{where}: 'relevant' must list identifier strings")
        return {normalize_identifier(i): 1.0 for i in raw}
    if isinstance(raw, dict):
        out: dict[str, float] = {}
        for ident, grade in raw.items():
            if isinstance(grade, bool) or not isinstance(grade, int | float) or not math.isfinite(grade) or grade < 0:
                raise ValueError(f"{where}: grade of {ident!r} in 'relevant' must be a number >= 0 (got {grade!r})")
            out[normalize_identifier(ident)] = float(grade)
        return out
    raise ValueError(
        f"{where}: 'relevant' must be a list of identifiers or an object {{identifier: grade}}, not {type(raw).__name__}"
    )


def _parse_groups(raw: Any, where: str) -> tuple[tuple[str, ...], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ValueError(f"{where}: 'relevant_any_of' must be a list of lists of identifiers")
    groups = []
    for i, group in enumerate(raw):
        if not isinstance(group, list) or not group or not all(isinstance(m, str) and m for m in group):
            raise ValueError(f"{where}: 'relevant_any_of'[{i}] must be a non-empty list of identifier strings")
        groups.append(tuple(dict.fromkeys(normalize_identifier(m) for m in group)))
    return tuple(groups)


def load_queries(path: Path | str) -> list[Judgement]:
    """Read a queries JSONL file; blank lines are skipped, anything else malformed is a `ValueError`."""
    path = Path(path)
    out: list[Judgement] = []
    ids: dict[str, int] = {}
    with path.open(encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                raw = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path.name} line {number}: not valid JSON ({exc.msg})") from None
            try:
                judgement = Judgement.from_json(raw, number)
            except ValueError as exc:
                raise ValueError(f"{path.name} {exc}") from None
            if judgement.id in ids:
                raise ValueError(f"{path.name} line {number}: id {judgement.id!r} already used on line {ids[judgement.id]}")
            ids[judgement.id] = number
            out.append(judgement)
    return out


# -- metrics -------------------------------------------------------------------------------------


def _first_hits(ranked_ids: Sequence[str], reqs: Sequence[Requirement], k: int) -> list[int | None]:
    """For each requirement, the 1-based rank of its first satisfying result within the top k (or None)."""
    top = list(ranked_ids[:k])
    hits: list[int | None] = []
    for req in reqs:
        hits.append(next((r for r, ident in enumerate(top, start=1) if ident in req.members), None))
    return hits


def ndcg_at(ranked_ids: Sequence[str], judgement: Judgement, k: int = DEFAULT_K) -> float:
    """nDCG@k with the requirements' gains; 0.0 for a no-answer judgement (it is scored separately).

    Each requirement's gain is discounted at the rank of its first satisfying result, so a result that
    repeats or a second member of a met group adds nothing. One identifier listed in two groups meets
    both needs at once (a server offering both tools), which the gains-sorted ideal does not foresee;
    the score is capped at 1.0 so such a ranking is perfect rather than better than perfect."""
    reqs = judgement.requirements
    if not reqs:
        return 0.0
    dcg = sum(r.gain / math.log2(h + 1) for r, h in zip(reqs, _first_hits(ranked_ids, reqs, k), strict=True) if h is not None)
    gains = sorted((r.gain for r in reqs), reverse=True)[:k]
    idcg = sum(g / math.log2(rank + 1) for rank, g in enumerate(gains, start=1))
    return min(1.0, dcg / idcg) if idcg > 0 else 0.0


def recall_at(ranked_ids: Sequence[str], judgement: Judgement, k: int = DEFAULT_K) -> float:
    """Share of requirements met in the top k (unweighted: a need is met or not, whatever its grade)."""
    reqs = judgement.requirements
    if not reqs:
        return 0.0
    return sum(1 for h in _first_hits(ranked_ids, reqs, k) if h is not None) / len(reqs)


def reciprocal_rank(ranked_ids: Sequence[str], judgement: Judgement, k: int = DEFAULT_K) -> float:
    """1 / rank of the first result that meets any requirement within the top k; 0.0 when none does."""
    ranks = [h for h in _first_hits(ranked_ids, judgement.requirements, k) if h is not None]
    return 1.0 / min(ranks) if ranks else 0.0


# -- running and aggregating ---------------------------------------------------------------------


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

    @property
    def false_positive(self) -> bool:
        return self.no_answer and bool(self.ranked)


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
    p50_ms: float | None
    p95_ms: float | None

    @property
    def fp_rate(self) -> float | None:
        """Share of no-answer queries that returned anything; None when there were none to judge."""
        return self.no_answer_fp / self.no_answer if self.no_answer else None

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
        ranked = tuple(normalize_identifier(i) for i in returned)[:k]
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

    def search(text: str) -> list[str]:
        return [r.identifier for r in registry.search(text, None, page_size).results]

    return search


# -- text output ---------------------------------------------------------------------------------


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def format_table(report: EvalReport) -> str:
    """A plain-text table: one row overall, then one per category and per kind, for a terminal or a PR."""
    header = ["set", "queries", "nDCG@10", "R@5", "R@10", "MRR", "no-answer FP", "p50 ms", "p95 ms"]
    rows: list[list[str]] = []

    def row(name: str, s: Summary) -> list[str]:
        fp = "-" if not s.no_answer else f"{s.no_answer_fp}/{s.no_answer} ({_fmt(s.fp_rate, 2)})"
        return [name, str(s.queries), _fmt(s.ndcg10), _fmt(s.recall5), _fmt(s.recall10), _fmt(s.mrr), fp, _fmt(s.p50_ms, 1), _fmt(s.p95_ms, 1)]

    rows.append(row("overall", report.overall))
    rows += [row(f"category={name}", s) for name, s in report.by_category.items()]
    rows += [row(f"kind={name}", s) for name, s in report.by_kind.items()]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True)))

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(r) for r in rows)])
