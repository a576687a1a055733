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
from ard_mcp.lexical import content_words, match_expression, words
from ard_mcp.store import ExampleRow, Store
from ard_mcp.vectors import VectorIndex


@dataclass(frozen=True)
class Tuning:
    """Every constant of the ranking in one place (measured with `bench/quality.py`)."""

    examples_per_intent: int = 200  # nearest examples fetched from Chroma for each query vector
    lexical_candidates: int = 100  # BM25 candidates
    exact_below: int = 3000  # with a filter matching fewer agents, score them all exactly
    field_weights: tuple[float, float, float, float] = (4.0, 3.0, 1.5, 1.0)  # name, keywords, description, examples
    w_example: float = 1.0
    w_context: float = 0.35
    w_second: float = 0.2
    w_lexical: float = 0.35
    w_tag: float = 0.1
    midpoint: float = 0.62  # fused value that scores 50
    temperature: float = 0.09
    cutoff: int = 30  # results scoring below this are not relevant enough to return
    evidence_examples: int = 3


DEFAULT_TUNING = Tuning()


@dataclass(frozen=True)
class MatchedExample:
    kind: str
    label: str
    text: str
    similarity: float


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


def _stem(word: str) -> str:
    for suffix in ("ing", "es", "s", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


class Ranker:
    def __init__(self, store: Store, vectors: VectorIndex, embedder: Embedder, tuning: Tuning = DEFAULT_TUNING) -> None:
        self.store = store
        self.vectors = vectors
        self.embedder = embedder
        self.tuning = tuning

    def rank(self, text: str, allowed: set[int] | None) -> list[Ranked]:
        """Every agent at or above the cutoff, best first (ties broken by agent id for stable pages)."""
        if allowed is not None and not allowed:
            return []
        t = self.tuning
        intents = [text, *split_intents(text)]
        queries = self.embedder.embed(intents)
        candidates = self._dense_candidates(queries, allowed) | set()
        lexical = self._lexical(text, allowed)
        candidates |= lexical.keys()
        if not candidates:
            return []
        examples = self.store.examples_of(candidates)
        by_agent: dict[int, list[ExampleRow]] = defaultdict(list)
        for row in examples:
            by_agent[row.agent_id].append(row)
        max_lex = max(lexical.values(), default=0.0)
        query_words = {_stem(w) for w in content_words(text)}
        agents = self.store.agents_by_id(by_agent.keys())

        ranked: list[Ranked] = []
        for agent_id, rows in by_agent.items():
            matrix = np.stack([r.vector for r in rows])
            sims = matrix @ queries.T  # examples × intents
            per_example = sims.max(axis=1)
            order = np.argsort(-per_example)
            best = float(per_example[order[0]])
            second = float(per_example[order[1]]) if len(order) > 1 else 0.0
            context = max((float(per_example[i]) for i, r in enumerate(rows) if r.kind == "description"), default=0.0)
            lex = lexical.get(agent_id, 0.0) / max_lex if max_lex > 0 else 0.0
            entry = agents[agent_id].entry
            keywords = [*(entry.get("tags") or []), *(entry.get("capabilities") or [])]
            matched_tags = [k for k in keywords if query_words & {_stem(w) for w in words(k)}]
            tag = min(1.0, len(matched_tags) / 3)
            fused = t.w_example * best + t.w_context * context + t.w_second * second + t.w_lexical * lex + t.w_tag * tag
            fused /= t.w_example + t.w_context + t.w_second
            relevance = 1.0 / (1.0 + math.exp(-(fused - t.midpoint) / t.temperature))
            score = int(round(100 * relevance))
            if score < t.cutoff:
                continue
            agent_words = {_stem(w) for w in words(" ".join([entry.get("displayName", ""), entry.get("description") or "", *keywords]))}
            ranked.append(
                Ranked(
                    agent_id=agent_id,
                    score=score,
                    relevance=relevance,
                    components={"example": round(best, 4), "context": round(context, 4), "lexical": round(lex, 4), "tag": round(tag, 4)},
                    matched_examples=[
                        MatchedExample(rows[i].kind, rows[i].label, rows[i].text, round(float(per_example[i]), 4))
                        for i in order[: t.evidence_examples]
                    ],
                    matched_tags=matched_tags,
                    matched_words=sorted({w for w in content_words(text) if _stem(w) in agent_words}),
                )
            )
        ranked.sort(key=lambda r: (-r.relevance, r.agent_id))
        return ranked

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

    def _lexical(self, text: str, allowed: set[int] | None) -> dict[int, float]:
        expression = match_expression(text)
        if expression is None:
            return {}
        limit = self.tuning.lexical_candidates * (1 if allowed is None else 10)
        hits = self.store.lexical(expression, limit, self.tuning.field_weights)
        return {a: s for a, s in hits if allowed is None or a in allowed}
