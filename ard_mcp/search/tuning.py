"""Every constant of the ranking in one place (`Tuning`), and what a model directory may replace of it.

The fitted parameters come from `bench/fit_fusion.py`; the other constants carry the measurement they came
from. `ard_mcp.search.ranking` reads them; the registry builds its tuning with `fitted_tuning`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ard_mcp.config import THIRD_PARTY_DEMOTED

SIGNALS = ("example", "secondExample", "context", "allExamples", "lexical", "tag")


@dataclass(frozen=True)
class Tuning:
    """Every constant of the ranking in one place.

    The weights, bias, floor, confidence weights and cutoff come from `python bench/fit_fusion.py`: a pairwise
    ranking fit over the candidates of five sources' dev queries (LiveMCPBench, MetaTool, Seal-Tools,
    ToolAlpaca, mcp-bench; each source weighs the same; only the entries a source labels, so the unlabelled
    rest of an index, mostly entries of one text, is not learnt as wrong: `fit_fusion.judged_rows`), then a
    calibration so `relevance` estimates how likely an entry is to satisfy the query and means the same for
    every query, then the floor, the confidence model and the cutoff by the rules in that script's docstring.
    `bench/quality.py` checks each source with parameters fitted on the others only.
    """

    # Candidates: the agents of the nearest examples of each query vector, and the best BM25 matches. On the
    # dev queries, 20 of each rank as well as 100 or 200 did; each candidate costs ~0.1 ms of exact rescoring.
    examples_per_intent: int = 40
    lexical_candidates: int = 40
    bm25_terms: int = 12  # the rarest query terms BM25 retrieves with ...
    bm25_postings: int = (
        4000  # ... while their document frequencies add up to at most this (the rarest always; FTS5 scores ~1 µs a posting)
    )
    # Query vectors searched in Chroma: the task and its first 2 parts (all parts still score every candidate exactly).
    # Each costs ~3 ms at 100,000 agents; a third part added 0.15% of the top 10's relevance there and nothing on the dev queries.
    searched_intents: int = 3
    exact_below: int = 400  # a filter matching fewer agents: score them all exactly; more: widen the HNSW query

    field_weights: tuple[float, float, float, float] = (4.0, 3.0, 1.5, 1.0)  # BM25: name, keywords, description, examples
    weights: tuple[float, ...] = (3.007, 2.945, 4.245, 2.896, 3.658, 1.590)  # in SIGNALS order
    bias: float = -4.977
    # A query's confidence (0-100, `ard_mcp.search.confidence`) is a logistic of its best candidate's relevance (as a logit), the
    # most of its terms' weight any candidate covers (the lexical signal), how far the best stands above the second
    # (logits) and the task's length (log of 1 + its words): (weight of each, bias). A near miss (sign language to
    # translate, asked of a catalog of text translators) has a well-scored candidate, words nothing has, and neighbours
    # that score alike; a long task's fitting entry scores lower than a short one's. Fitted by `bench/fit_fusion.py` with
    # the cutoff, which is chosen on the answers whose first three hold a right entry (the ones a doubt costs).
    # The relevance it reads counts an entry of one text's best similarity as its second too (`confidence_signals`).
    # Leave-one-source-out on the dev sources, beside fewer features: docs/search-quality.md.
    confidence_weights: tuple[float, float, float, float, float] = (0.48, 5.047, 0.269, 0.657, -4.543)
    cutoff: int = 31  # the confidence a query needs to be answered with confidence
    floor: int = 10  # a confident answer lists candidates down to this score; docs/search-quality.md has the trade-off
    tentative: int = 5  # below the cutoff a query still gets at least this many closest candidates, marked low-confidence
    evidence_examples: int = 3
    # A flagged entry's relevance is multiplied by this (1.0 turns the demotion off). At 0.09 its score is at most 9. A
    # confident answer never lists it, whatever the floor (`Ranker.select` leaves it out: a model's own fitted floor may be
    # lower, the trained one's is 5), so its text reaches a host model only among the closest candidates of a low-confidence
    # answer, after every unflagged candidate scoring more, with the warning in its evidence; and it can never make a query
    # confident. `bench/injection.py`: a keyword-stuffed entry with an injected instruction is in the top 3 /
    # top 10 of 4 / 28 of 60 unrelated dev queries undemoted (17 / 37 before the lexical budgets), 0 / 0 at 0.09. (Under an
    # earlier, steeper calibration: 1 / 18 at 0.84, 0 / 3 at 0.5, 0 / 0 at 0.25 and below.) Real entries flagged: none of 6,263.
    untrusted_demotion: float = 0.09
    # Entries whose trust status is one of these have their relevance multiplied by `trust_demotion`, so among comparable
    # matches the publisher's own comes first: third-party claims always (`trust.origin`), and under `--trust-policy demote`
    # invalid and self-asserted entries too. An operator's policy, not a fitted value: 0.5 keeps a self-asserted entry that
    # fits the task well above one that fits it poorly.
    demoted_trust: tuple[str, ...] = THIRD_PARTY_DEMOTED
    trust_demotion: float = 0.5


DEFAULT_TUNING = Tuning()
# What `bench/fit_fusion.py` fits, and so what a model directory may replace: the weights, bias and confidence are fitted
# on one model's similarities, and another model's may sit on another scale (the median cosine between two different dev
# questions: multilingual-e5-small 0.81, MiniLM 0.07), so the bundled model's tuning would miscalibrate it.
FITTED = ("weights", "bias", "confidence_weights", "cutoff", "floor")
OLDEST_CONFIDENCE = 3  # the confidence weights of the first fits: best relevance, lexical coverage, bias


def fitted_tuning(base: Tuning, fitted: Mapping[str, Any]) -> Tuning:
    """`base` with the parameters a model directory's `model.json` carries under "ranking"; ValueError naming
    what is wrong with them."""
    unknown = sorted(set(fitted) - set(FITTED))
    if unknown:
        raise ValueError(f"unknown ranking parameters {unknown}; known: {sorted(FITTED)}")
    return dataclasses.replace(base, **{key: _checked(key, value, getattr(base, key)) for key, value in fitted.items()})


def _checked(key: str, value: Any, default: Any) -> Any:
    """`value` in the form of the parameter it replaces: as many numbers as `default` has, a number, or a
    whole number from 0 to 100 (a score). Confidence weights fitted before the later features (three numbers: best
    relevance, lexical coverage, bias; four: the gap before the bias) still load, the features they lack weighed 0:
    the confidence they fitted, unchanged. (Each feature was added after the ones before it, so the weights an older
    fit has are the first ones.)"""
    if key == "confidence_weights" and isinstance(value, list) and OLDEST_CONFIDENCE <= len(value) < len(default):
        value = [*value[:-1], *[0.0] * (len(default) - len(value)), value[-1]]
    if isinstance(default, tuple):
        if not isinstance(value, list) or len(value) != len(default) or not all(_number(v) for v in value):
            raise ValueError(f"ranking {key} must be a list of {len(default)} numbers")
        return tuple(float(v) for v in value)
    if isinstance(default, float):
        if not _number(value):
            raise ValueError(f"ranking {key} must be a number")
        return float(value)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 100:
        raise ValueError(f"ranking {key} must be a whole number from 0 to 100")
    return value


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
