"""How sure a search is that one of its candidates fits the task (0-100), from what is true of any catalog.

`Ranker.select` answers a query with confidence when this reaches the tuning's cutoff; `bench/fit_fusion.py`
fits the weights and the cutoff from the same features, computed by the same functions.
"""

from __future__ import annotations

import math

import numpy as np

from ard_mcp.index.lexical import words
from ard_mcp.search.tuning import SIGNALS, Tuning

_BEST, _SECOND, _LEXICAL = (SIGNALS.index(name) for name in ("example", "secondExample", "lexical"))


def confidence_signals(signals: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The candidates' signals as the confidence reads them: an entry described by one text (`sizes`: each
    candidate's examples) has its best similarity as its second too. Its missing second example is a lack of
    evidence, not evidence against it, and the ranking's weight on the second example (fitted on catalogs
    whose entries list several tools or sample questions) left such an entry's relevance low however well its
    one text fits: most of the bundled snapshot's entries have one text, and the confidence doubted 52 of the
    84 everyday tasks whose first three held a right server. Read this way (refitted on the five dev sources,
    `bench/quality.py`, one run) it doubts 21 of them, vouches for 9 instead of 4 of the set's 53 no-answer
    tasks and 24 instead of 20 of the 172 hard no-answer queries; on the dev sources held out it doubts 0-13
    more right answers each (MetaTool 20 of 722 instead of 7). The ranking itself
    keeps the signals as they are: there the fits preferred them."""
    single = sizes == 1
    if not single.any():
        return signals
    out = signals.copy()
    out[single, _SECOND] = out[single, _BEST]
    return out


def _logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


Features = tuple[float, float, float, float]  # what `confidence` weighs, in `confidence_features` order


def confidence_features(relevance: np.ndarray, signals: np.ndarray, flagged: np.ndarray | None, text: str) -> Features:
    """What a query's confidence is computed from: the logit of its best candidate's relevance, the largest
    lexical coverage of a candidate, how far the best stands above the second (the difference of their
    logits; 0 with one candidate), and the length of the query (log of 1 + its words). Candidates the
    registry flagged do not count, so a flagged entry (however well it matches, or however many words it was
    stuffed with) cannot make a query confident.

    The gap tells a near miss from a fit: where the catalog lacks the one thing a task needs, several
    neighbours tend to score alike, while a fitting entry stands out. Added to the first two it lowered the
    hard no-answer set's false positives at the same share of doubted right answers.

    The length corrects the best relevance for what a long task does to it: a task of many steps matches
    no one entry as closely as a one-line request, so a fitting entry scores lower. Held out (each source
    scored by the model trained and fitted without it), the trained model doubted 19 of mcp-bench's 102
    right answers (tasks of ~200 words) without it and 1 with it; over all five sources, of the right
    answers in tasks over 60 words 1 of 226 instead of 19, in tasks under 13 words 4 of 151 instead of 2.
    (`Tuning.confidence_weights`; docs/search-quality.md.)"""
    length = math.log1p(len(words(text)))
    if flagged is not None:
        relevance, signals = relevance[~flagged], signals[~flagged]
    if not len(relevance):
        return _logit(0.0), 0.0, 0.0, length
    top = np.sort(relevance)[-2:]
    gap = _logit(float(top[-1])) - _logit(float(top[0])) if len(top) == 2 else 0.0
    return _logit(float(top[-1])), float(signals[:, _LEXICAL].max()), gap, length


def confidence(tuning: Tuning, features: Features) -> int:
    """How sure the ranking is, 0-100, that one of a query's candidates fits it (`Tuning.confidence_weights`)."""
    *weights, bias = tuning.confidence_weights
    return round(100 / (1 + math.exp(-(float(np.dot(weights, features)) + bias))))
