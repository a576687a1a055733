"""The ranking metrics of `ard-mcp eval`, over a query's requirements (`judgements`): nDCG@k (each
requirement's gain discounted at the rank of its first satisfying result; the ideal ranking places the
gains in descending order at ranks 1, 2, ...), recall@k (the share of requirements met in the top k) and
the reciprocal rank of the first result that meets any requirement. No-answer queries are scored apart
(`report`): the metrics are undefined for them.

Nothing here depends on the registry, so the functions can be checked by hand against small examples and
reused with any search backend (baselines in `bench/quality.py`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ard_mcp.evaluation.judgements import Judgement, Requirement

DEFAULT_K = 10
"""How many results a query is judged on: `search_agents` shows ten by default, and nDCG@10 needs ten."""


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
