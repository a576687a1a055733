"""From a task description to ranked agents with the evidence for each.

Candidates come from two retrievers: approximate nearest examples in Chroma (for the whole text and for
each sub-intent of a multi-step task) and BM25 over the store's FTS5 index. Every candidate is then
rescored exactly against all of its own examples, so the reported similarities are the ones that produced
the score. Signals are fused into an absolute relevance (a logistic of a weighted sum, not a per-query
normalisation), so a query that fits nothing scores low and falls under the cutoff.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from ard_mcp.embedding import Embedder
from ard_mcp.lexical import coverage, idf, match_expression, query_terms, terms
from ard_mcp.store import ExampleRow, Store
from ard_mcp.vectors import VectorIndex


@dataclass(frozen=True)
class Tuning:
    """Every constant of the ranking in one place.

    The signal weights are a class-balanced logistic regression of relevance on the six signals over the
    candidates of the dev queries (`python bench/fit_fusion.py` refits and prints them), so `relevance`
    estimates how likely an entry is to satisfy the query and means the same for every query. Six weights
    for ~160k labelled candidates leave little room to overfit single queries.
    """

    examples_per_intent: int = 200  # nearest examples fetched from Chroma for each query vector
    lexical_candidates: int = 100  # BM25 candidates
    exact_below: int = 3000  # with a filter matching fewer agents, score them all exactly
    field_weights: tuple[float, float, float, float] = (4.0, 3.0, 1.5, 1.0)  # BM25: name, keywords, description, examples
    w_best: float = 2.862
    w_second: float = 4.84
    w_context: float = 2.355
    w_lexical: float = 3.391
    w_tag: float = 0.852
    w_centroid: float = 4.288
    bias: float = -4.097
    cutoff: int = 50  # relevance below even odds is not returned (see README, "Search quality")
    evidence_examples: int = 3


DEFAULT_TUNING = Tuning()


@dataclass(frozen=True)
class MatchedExample:
    kind: str
    label: str
    text: str
    similarity: float


@dataclass
class Features:
    """One candidate's signals, and the evidence that goes with them."""

    agent_id: int
    best: float
    second: float
    context: float
    lexical: float
    tag: float
    centroid: float
    matched_examples: list[MatchedExample]
    matched_tags: list[str]
    matched_words: list[str]

    def components(self) -> dict[str, float]:
        return {
            "example": round(self.best, 4),
            "secondExample": round(self.second, 4),
            "context": round(self.context, 4),
            "allExamples": round(self.centroid, 4),
            "lexical": round(self.lexical, 4),
            "tag": round(self.tag, 4),
        }


@dataclass
class Ranked:
    agent_id: int
    score: int
    relevance: float
    components: dict[str, float]
    matched_examples: list[MatchedExample] = field(default_factory=list)
    matched_tags: list[str] = field(default_factory=list)
    matched_words: list[str] = field(default_factory=list)


_SPLIT = re.compile(r"(?:[.;!?\n]+\s+|,?\s+(?:and\s+)?then\s+|,\s+(?:and\s+)?(?:also|finally|next)\s+)", re.IGNORECASE)


def split_intents(text: str) -> list[str]:
    """Sub-intents of a multi-step task: its sentences and `then`-separated steps (max 6, ≥ 3 words)."""
    parts = [p.strip(" ,.") for p in _SPLIT.split(text)]
    parts = [p for p in parts if len(p.split()) >= 3]
    return parts[:6] if len(parts) > 1 else []


class Ranker:
    def __init__(self, store: Store, vectors: VectorIndex, embedder: Embedder, tuning: Tuning = DEFAULT_TUNING) -> None:
        self.store = store
        self.vectors = vectors
        self.embedder = embedder
        self.tuning = tuning

    def rank(self, text: str, allowed: set[int] | None) -> list[Ranked]:
        """Every agent at or above the cutoff, best first (ties broken by agent id for stable pages)."""
        t = self.tuning
        ranked = []
        for f in self.features(text, allowed):
            relevance = self.relevance(f)
            score = int(round(100 * relevance))
            if score >= t.cutoff:
                ranked.append(
                    Ranked(
                        agent_id=f.agent_id,
                        score=score,
                        relevance=relevance,
                        components=f.components(),
                        matched_examples=f.matched_examples,
                        matched_tags=f.matched_tags,
                        matched_words=f.matched_words,
                    )
                )
        ranked.sort(key=lambda r: (-r.relevance, r.agent_id))
        return ranked

    def relevance(self, f: Features) -> float:
        """Probability-like relevance in (0, 1): a logistic of the weighted signals, comparable across queries."""
        t = self.tuning
        z = (
            t.bias
            + t.w_best * f.best
            + t.w_second * f.second
            + t.w_context * f.context
            + t.w_lexical * f.lexical
            + t.w_tag * f.tag
            + t.w_centroid * f.centroid
        )
        return 1.0 / (1.0 + math.exp(-z))

    def features(self, text: str, allowed: set[int] | None) -> list[Features]:
        """The signals of every candidate agent, computed exactly against all of its examples."""
        if allowed is not None and not allowed:
            return []
        t = self.tuning
        intents = [text, *split_intents(text)]
        queries = self.embedder.embed(intents)
        qterms = query_terms(text)
        bm25 = self._bm25(qterms, allowed)
        candidates = self._dense_candidates(queries, allowed) | bm25.keys()
        if not candidates:
            return []
        by_agent: dict[int, list[ExampleRow]] = defaultdict(list)
        for row in self.store.examples_of(candidates):
            by_agent[row.agent_id].append(row)
        documents = max(1, self.store.count())
        frequencies = self.store.document_frequencies(qterms)
        weights = {term: idf(frequencies.get(term, 0), documents) for term in qterms}
        surface = {term: word for word in re.findall(r"[^\W_]+", text) for term in terms(word)}
        agent_terms = self.store.agent_terms(by_agent.keys())
        agents = self.store.agents_by_id(by_agent.keys())

        out: list[Features] = []
        for agent_id, rows in by_agent.items():
            vectors = np.stack([r.vector for r in rows])
            sims = vectors @ queries.T  # examples × intents
            centroid = vectors.mean(axis=0)
            centroid /= max(float(np.linalg.norm(centroid)), 1e-9)
            per_example = sims.max(axis=1)
            order = np.argsort(-per_example)
            entry = agents[agent_id].entry
            keywords = [*(entry.get("tags") or []), *(entry.get("capabilities") or [])]
            matched_tags = [k for k in keywords if weights.keys() & set(terms(k))]
            own_terms = agent_terms.get(agent_id, set())
            out.append(
                Features(
                    agent_id=agent_id,
                    best=float(per_example[order[0]]),
                    second=float(per_example[order[1]]) if len(order) > 1 else 0.0,
                    context=max((float(per_example[i]) for i, r in enumerate(rows) if r.kind == "description"), default=0.0),
                    lexical=coverage(qterms, own_terms, weights),
                    tag=min(1.0, len(matched_tags) / 3),
                    centroid=float(centroid @ queries[0]),
                    matched_examples=[
                        MatchedExample(rows[i].kind, rows[i].label, rows[i].text, round(float(per_example[i]), 4))
                        for i in order[: t.evidence_examples]
                    ],
                    matched_tags=matched_tags,
                    matched_words=sorted({surface.get(term, term).lower() for term in qterms if term in own_terms}),
                )
            )
        return out

    def _dense_candidates(self, queries: np.ndarray, allowed: set[int] | None) -> set[int]:
        t = self.tuning
        if allowed is not None and len(allowed) <= t.exact_below:
            return set(allowed)  # few enough to score every one of them exactly
        total = max(1, self.store.count())
        widen = 1 if allowed is None else min(16, math.ceil(total / max(1, len(allowed))))
        hits: set[int] = set()
        for vector in queries:
            hits.update(i for i, _ in self.vectors.query(vector, t.examples_per_intent * widen))
        agents = set(self.store.example_agents(sorted(hits)).values())
        return agents if allowed is None else agents & allowed

    def _bm25(self, qterms: list[str], allowed: set[int] | None) -> dict[int, float]:
        expression = match_expression(qterms)
        if expression is None:
            return {}
        limit = self.tuning.lexical_candidates * (1 if allowed is None else 10)
        hits = self.store.lexical(expression, limit, self.tuning.field_weights)
        return {a: s for a, s in hits if allowed is None or a in allowed}
