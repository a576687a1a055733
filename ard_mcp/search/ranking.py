"""From a task description to ranked agents with the evidence for each.

Candidates come from two retrievers: the nearest examples in Chroma (one batched query for the whole text
and each sub-intent of a multi-step task) and BM25 over the store's FTS5 index. Every candidate is then
rescored exactly against all of its own examples in one matrix product, so the similarities reported as
evidence are the ones that produced the score. The signals are fused into an absolute relevance (a
logistic of a weighted sum, not a per-query normalisation). A query is answered with confidence only if
its confidence (`confidence`: its best candidate's relevance, how far that stands above the next, how
much of its wording any candidate covers, and how long the task is) reaches the cutoff, and then lists
every candidate down to the floor (the servers for the secondary steps of a task score lower than the
main one but are still wanted). A query whose confidence
stays below the cutoff is not left empty: its closest few candidates come back marked low-confidence,
because for a host model an empty list where a fitting agent exists is the worst outcome, and a score
alone cannot tell a near miss from a poorly described fit (docs/search-quality.md has the measured
trade-off). Evidence texts are fetched only for the page that is returned. With `--rerank`, a cross-encoder
reorders the top candidates among the relevances they hold (`ard_mcp.search.rerank`), so the confidence and
the scores a page shows keep their meaning.

An entry whose text is aimed at a model (`ard_mcp.formats.untrusted`: instruction overrides, chat-template
syntax, hidden prompts, keyword stuffing) is flagged by the registry when it is stored
(`filter_values.UNTRUSTED_FIELD`) and its relevance is multiplied by `Tuning.untrusted_demotion` after the
signals are fused, which ranks it under its rivals; the registry never vouches for it (a confident answer
does not list it, whatever the floor, and it cannot make a query confident); a low-confidence answer may still show it among
the closest candidates, below every unflagged one scoring more, with the warning in its evidence. The
scores of unflagged entries do not change. Nothing else about the ranking reads an entry: the tuning, the
weights, the filters and the page come from the code and the caller, never from entry text or metadata.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ard_mcp.formats.entry_facts import TRUST_STATUS
from ard_mcp.formats.messages import MatchedExample
from ard_mcp.index.embedding import Embedder
from ard_mcp.index.filter_values import UNTRUSTED_FIELD
from ard_mcp.index.lexical import Vocabulary, coverages, idf, indexed_keywords, named_keywords, query_terms, word_terms
from ard_mcp.index.records import CandidateExamples, StoredAgent
from ard_mcp.index.resident import ResidentExamples
from ard_mcp.index.store.base import Store
from ard_mcp.index.vectors import VectorIndex
from ard_mcp.monitoring import tracing
from ard_mcp.monitoring.stages import stage
from ard_mcp.search.blas import one_blas_thread
from ard_mcp.search.confidence import confidence, confidence_features, confidence_signals
from ard_mcp.search.rerank import Reranker
from ard_mcp.search.tuning import DEFAULT_TUNING, SIGNALS, Tuning

ExampleText = tuple[str, str, str]  # an example's kind, label and text, as `Store.example_texts` reads them
# The lexical side of concurrent searches (`Ranker._lexical`); as many as the PostgreSQL store's pooled connections.
_HELPERS = ThreadPoolExecutor(max_workers=8, thread_name_prefix="ard-mcp-lexical")


# Steps and needs of a task: sentences, "then"-steps, and clauses joined by commas, "and", "as well as".
_SPLIT = re.compile(
    r"(?:[.;!?\n]+\s+|,?\s+(?:and\s+)?then\s+|,\s+(?:and\s+)?|\s+and\s+(?:also\s+)?|\s+as well as\s+|\s+along with\s+)",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W_]+")


def relevance(tuning: Tuning, signals: np.ndarray) -> np.ndarray:
    """Probability-like relevance in (0, 1) for each row of signals; comparable across queries."""
    return np.asarray(1.0 / (1.0 + np.exp(-(signals @ np.asarray(tuning.weights) + tuning.bias))))


def split_intents(text: str) -> list[str]:
    """Sub-intents of a task with several needs ("geocode this, then find parking and a PDF"), at most 8.

    Each is embedded too and an example's similarity is its best over the whole text and the parts, so
    the agent for each step can surface, not only the one closest to the sum of all steps."""
    parts = [p.strip(" ,.") for p in _SPLIT.split(text)]
    parts = [p for p in parts if len(p.split()) >= 2]
    return parts[:8] if len(parts) > 1 else []


@dataclass(frozen=True)
class Hit:
    agent_id: int
    relevance: float

    @property
    def score(self) -> int:
        return round(100 * self.relevance)


@dataclass(frozen=True)
class Ranked:
    """One result explained: its relevance, the signals behind it and the evidence."""

    agent_id: int
    score: int
    relevance: float
    components: dict[str, float]
    matched_examples: list[MatchedExample]
    matched_words: list[str]
    matched_tags: list[str]
    warnings: list[str] | None = None  # why the registry flagged the entry's text (see `Tuning.untrusted_demotion`)


@dataclass
class Candidates:
    """Every candidate of one query with its signals; examples stay at hand for the evidence."""

    agent_ids: np.ndarray  # (n,)
    signals: np.ndarray  # (n, len(SIGNALS))
    examples: CandidateExamples  # all candidate examples, grouped by agent
    similarity: np.ndarray  # (m,) each example's best similarity over the query's intents
    starts: np.ndarray  # (n,) where each agent's examples begin in `examples`
    query: list[str]  # the query's terms
    surface: dict[str, str]  # term -> the word the user typed
    terms: dict[int, Vocabulary]  # agent -> its terms, and those of each tag / capability
    text: str  # the query as searched (what a reranker reads; its length enters the confidence)
    flagged: np.ndarray | None = None  # (n,) bool: the registry flagged the agent's text as aimed at a model

    @property
    def sizes(self) -> np.ndarray:
        """(n,) how many examples each candidate has."""
        return np.diff(np.r_[self.starts, len(self.similarity)])


@dataclass
class Ranking:
    """The relevant agents of one query, best first; `explain` adds evidence for the ones shown.

    `confident` is False when the query's confidence missed the cutoff: the hits are then the closest candidates,
    not ones the ranking vouches for."""

    hits: list[Hit]
    found: Candidates | None
    ranker: Ranker
    confident: bool = True
    _shown: list[Hit] = field(default_factory=list)
    _texts: dict[int, ExampleText] = field(default_factory=dict)

    def __iter__(self) -> Iterator[Hit]:
        return iter(self.hits)

    def show(self, hits: Sequence[Hit]) -> None:
        """The hits of the page being returned: the first `explain` reads the evidence texts of all of them in
        one store read, not one per result (each a round trip to a PostgreSQL store: 10 of a search's 14)."""
        self._shown = list(hits)

    def explain(self, hit: Hit, entry: Mapping[str, Any]) -> Ranked:
        assert self.found is not None, "a ranking with hits has candidates"
        if self._shown:
            wanted = [i for shown in self._shown for i in self.ranker.evidence_ids(self.found, shown.agent_id)]
            self._texts.update(self.ranker.store.example_texts(wanted))
            self._shown = []
        return self.ranker.explain(self.found, hit, entry, self._texts)


def _among(ids: np.ndarray, members: np.ndarray) -> np.ndarray:
    """`np.isin`, which costs 0.05 ms even when `members` is empty (as the flagged and demoted agents usually are)."""
    return np.isin(ids, members) if len(members) else np.zeros(len(ids), bool)


def _matched(kind: str, label: str, text: str, similarity: float) -> MatchedExample:
    """Evidence for one example; its kind is one the store was given by `ard_mcp.index.example_texts`."""
    return MatchedExample.model_validate({"kind": kind, "label": label, "text": text, "similarity": similarity})


class ExampleSource(Protocol):
    """Where candidates' examples, terms and entries are read: the store's copy (`ard_mcp.index.resident`)."""

    def examples_and_vocabularies(
        self, agent_ids: Sequence[int], query: Sequence[str]
    ) -> tuple[CandidateExamples, dict[int, Vocabulary]]: ...

    def agents(self, agent_ids: Iterable[int]) -> dict[int, StoredAgent]: ...


class Ranker:
    def __init__(
        self,
        store: Store,
        vectors: VectorIndex,
        embedder: Embedder,
        tuning: Tuning = DEFAULT_TUNING,
        examples: ExampleSource | None = None,
        reranker: Reranker | None = None,
    ) -> None:
        self.store = store
        self.examples: ExampleSource = examples or ResidentExamples(store)  # never loaded: it reads the store
        self.vectors = vectors
        self.embedder = embedder
        self.tuning = tuning
        self.reranker = reranker  # rescores the top candidates (`ard_mcp.search.rerank`); None: the fused relevance alone
        self._flags: tuple[tuple[int, int], np.ndarray] | None = None
        self._demoted: tuple[tuple[int, int], np.ndarray] | None = None
        one_blas_thread()  # the rescoring's small products: spinning BLAS threads cost more CPU than the products (`blas`)

    def flagged(self) -> np.ndarray:
        """The ids of agents whose text the registry flagged (ascending), read once per store version: one
        index range scan of a field only the registry writes (`filter_values.UNTRUSTED_FIELD`)."""
        version = self.store.version()
        if self._flags is None or self._flags[0] != version:
            values = [v for v, _ in self.store.facet(UNTRUSTED_FIELD, None)]
            ids = self.store.filter_agents({UNTRUSTED_FIELD: values}) if values else frozenset()
            self._flags = (version, np.array(sorted(ids or ()), np.int64))
        return self._flags[1]

    def demoted(self) -> np.ndarray:
        """The ids of agents whose trust status the policy demotes (`Tuning.demoted_trust`), read once per store version."""
        version = self.store.version()
        if self._demoted is None or self._demoted[0] != version:
            ids = self.store.filter_agents({TRUST_STATUS: list(self.tuning.demoted_trust)}) if self.tuning.demoted_trust else frozenset()
            self._demoted = (version, np.array(sorted(ids or ()), np.int64))
        return self._demoted[1]

    def warnings(self, agent_id: int) -> list[str]:
        """Why the registry flagged an agent's text; empty for an unflagged one."""
        return [v for v, _ in self.store.facet(UNTRUSTED_FIELD, {agent_id})]

    def relevance(self, signals: np.ndarray) -> np.ndarray:
        return relevance(self.tuning, signals)

    def rank(self, text: str, allowed: AbstractSet[int] | None) -> Ranking:
        """Agents scoring at least the floor, best first (ties by id, so pages are stable). When the query's
        confidence misses the cutoff, the ranking is not confident and holds at least the `tentative` closest."""
        with stage("ranking"):
            return self.select(self.candidates(text, allowed))

    def select(self, found: Candidates | None) -> Ranking:
        """The ranking of a query's candidates by this ranker's tuning (a benchmark scores one query's
        candidates under several tunings without searching again)."""
        if found is None:
            return Ranking([], None, self)
        demotion, eligible = self._demotion(found)
        relevance = self.relevance(found.signals) * demotion
        if self.reranker is not None:
            relevance = self.reranker.reorder(found.text, relevance, eligible, lambda rows: self._best_texts(found, rows))
        scores = np.round(relevance * 100)
        order = np.lexsort((found.agent_ids, -relevance))
        confident = self.confidence(found, demotion) >= self.tuning.cutoff
        vouched = scores >= self.tuning.floor
        if found.flagged is not None and self.tuning.untrusted_demotion < 1.0:  # 1.0: the demotion turned off
            vouched &= ~found.flagged  # never listed as a fit, whatever a model's fitted floor (see `Tuning.untrusted_demotion`)
        listed = [i for i in order if vouched[i]]
        if not confident and len(listed) < self.tuning.tentative:
            listed = list(order[: self.tuning.tentative])  # the closest few, a flagged one among them where it is that close
        hits = [Hit(int(found.agent_ids[i]), float(relevance[i])) for i in listed]
        return Ranking(hits, found, self, confident)

    def confidence(self, found: Candidates, demotion: np.ndarray | None = None) -> int:
        """The query's confidence (0-100), from its candidates' signals as `confidence_signals` reads them and
        the same demotions as their relevance (`demotion`, computed again if not given)."""
        signals = confidence_signals(found.signals, found.sizes)
        demotion = self._demotion(found)[0] if demotion is None else demotion
        return confidence(self.tuning, confidence_features(self.relevance(signals) * demotion, signals, found.flagged, found.text))

    def _demotion(self, found: Candidates) -> tuple[np.ndarray, np.ndarray]:
        """What each candidate's relevance is multiplied by (flagged text, a demoted trust status), and which
        candidates neither touches (the ones a reranker may reorder)."""
        demotion = np.ones(len(found.agent_ids))
        eligible = np.ones(len(found.agent_ids), bool) if found.flagged is None else ~found.flagged
        if found.flagged is not None and found.flagged.any():
            demotion[found.flagged] *= self.tuning.untrusted_demotion
        if self.tuning.demoted_trust:
            demoted = _among(found.agent_ids, self.demoted())
            demotion[demoted] *= self.tuning.trust_demotion
            eligible &= ~demoted
        return demotion, eligible

    def _evidence(self, found: Candidates, agent_id: int) -> tuple[int, np.ndarray]:
        """The agent's row in `found`, and the positions in `found.examples` of its best examples, best first."""
        index = int(np.searchsorted(found.agent_ids, agent_id))
        start = found.starts[index]
        end = found.starts[index + 1] if index + 1 < len(found.starts) else len(found.similarity)
        return index, start + np.argsort(-found.similarity[start:end], kind="stable")[: self.tuning.evidence_examples]

    def _best_texts(self, found: Candidates, rows: np.ndarray) -> list[str]:
        """The text of each row's best example (its first evidence), read in one store read."""
        wanted = [int(found.examples.ids[self._evidence(found, int(found.agent_ids[row]))[1][0]]) for row in rows]
        texts = self.store.example_texts(wanted)
        return [texts[i][2] if i in texts else "" for i in wanted]  # "": replaced by an update since it was ranked

    def evidence_ids(self, found: Candidates, agent_id: int) -> list[int]:
        """The ids of the examples shown as an agent's evidence."""
        return [int(found.examples.ids[i]) for i in self._evidence(found, agent_id)[1]]

    def explain(self, found: Candidates, hit: Hit, entry: Mapping[str, Any], texts: Mapping[int, ExampleText] | None = None) -> Ranked:
        """The evidence for one ranked agent: its best examples, its signals, the words and tags it shares.
        `texts` may hold the evidence texts already read; whatever it lacks is read from the store."""
        agent_id = hit.agent_id
        index, best = self._evidence(found, agent_id)
        wanted = [int(found.examples.ids[i]) for i in best]
        if texts is None or not all(i in texts for i in wanted):
            texts = self.store.example_texts(wanted)
        local = [i for i in best if int(found.examples.ids[i]) in texts]  # an update since ranking replaced the others
        terms = found.terms[agent_id]
        keywords = indexed_keywords(entry.get("tags"), entry.get("capabilities"))
        flagged = found.flagged is not None and bool(found.flagged[index])
        return Ranked(
            agent_id=agent_id,
            score=hit.score,
            relevance=hit.relevance,
            components={name: round(float(v), 4) for name, v in zip(SIGNALS, found.signals[index], strict=True)},
            matched_examples=[_matched(*texts[int(found.examples.ids[i])], round(float(found.similarity[i]), 4)) for i in local],
            matched_words=sorted({found.surface.get(t, t).lower() for t in found.query if t in terms.terms}),
            matched_tags=[keywords[i] for i in terms.named(found.query) if i < len(keywords)],
            warnings=(self.warnings(agent_id) or None) if flagged else None,
        )

    def candidates(self, text: str, allowed: AbstractSet[int] | None) -> Candidates | None:
        """All candidate agents of a query and their signals, computed exactly against all of their examples."""
        if allowed is not None and not allowed:
            return None
        qterms = query_terms(text)
        documents = max(1, self.store.count())
        lexical_side = _HELPERS.submit(tracing.in_context(self._lexical), qterms, allowed)
        try:
            with stage("embedding"):
                intents = self.embedder.embed_query(text, split_intents(text))
            dense = self._dense_candidates(intents, allowed, documents)
        except BaseException:
            lexical_side.cancel()
            raise
        frequencies, bm25 = lexical_side.result()
        weights = {term: idf(frequencies.get(term, 0), documents) for term in qterms}
        pool = dense | bm25
        if not pool:
            return None
        with tracing.span("store.examples"):
            examples, agent_terms = self.examples.examples_and_vocabularies(sorted(pool), qterms)
        if not len(examples.ids):  # Chroma named agents the store does not have (e.g. a server index shared with another store)
            return None
        sims = (examples.vectors @ intents.T).max(axis=1)  # each example's best over the task and its parts
        agents = examples.agent_ids
        starts = np.flatnonzero(np.r_[True, agents[1:] != agents[:-1]])
        agent_ids = agents[starts]
        group = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(agents)]))
        ordered = np.lexsort((-sims, group))  # by agent, best example first
        best = sims[ordered[starts]]
        sizes = np.diff(np.r_[starts, len(agents)])
        second = np.where(sizes > 1, sims[ordered[np.minimum(starts + 1, len(agents) - 1)]], 0.0)
        context = np.zeros(len(starts))
        context[group[examples.is_description]] = sims[examples.is_description]
        centroids = np.add.reduceat(examples.vectors, starts, axis=0)
        centroids /= np.clip(np.linalg.norm(centroids, axis=1, keepdims=True), 1e-9, None)
        all_examples = centroids @ intents[0]
        vocabularies, asked = [agent_terms[a] for a in agent_ids.tolist()], frozenset(qterms)
        lexical = np.array(coverages(qterms, [v.terms for v in vocabularies], weights))
        tag = np.array([named_keywords(v.named(asked)) for v in vocabularies])
        signals = np.column_stack([best, second, context, all_examples, lexical, tag])
        surface = {term: word for word in _WORD.findall(text) for term in word_terms(word)}
        flagged = _among(agent_ids, self.flagged())
        return Candidates(agent_ids, signals, examples, sims, starts, qterms, surface, agent_terms, text, flagged)

    def _dense_candidates(self, intents: np.ndarray, allowed: AbstractSet[int] | None, total: int) -> set[int]:
        t = self.tuning
        if allowed is not None and len(allowed) <= t.exact_below:
            return set(allowed)  # few enough to score every one of them exactly
        widen = 1 if allowed is None else min(16, math.ceil(total / max(1, len(allowed))))
        agents = self.vectors.nearest_agents(intents[: t.searched_intents], t.examples_per_intent * widen)
        return agents if allowed is None else agents & allowed

    def _lexical(self, qterms: list[str], allowed: AbstractSet[int] | None) -> tuple[dict[str, int], set[int]]:
        """The query terms' document frequencies and the BM25 candidates. Run on a helper thread while this
        one embeds the query and asks the vector index (neither needs the other's result). At 100,000 agents
        on PostgreSQL they took ~8 ms of a 41 ms search; overlapped, a search took 42.1 ms at p50 instead of
        44.3 (identical answers; both cores were already busy with the model). The embedded store at 2,000
        agents: no difference."""
        with tracing.span("store.lexical"):
            frequencies = self.store.document_frequencies(qterms)
            return frequencies, self._bm25(qterms, frequencies, allowed)

    def _bm25(self, qterms: list[str], frequencies: Mapping[str, int], allowed: AbstractSet[int] | None) -> set[int]:
        """BM25 candidates from the query's rarest terms: common words add little to BM25 and would make
        the store score most of a large index (every term still counts in the lexical coverage signal)."""
        present = sorted((t for t in qterms if frequencies.get(t)), key=lambda t: frequencies[t])
        chosen: list[str] = []
        postings = 0
        for term in present[: self.tuning.bm25_terms]:
            postings += frequencies[term]
            if chosen and postings > self.tuning.bm25_postings:
                break  # BM25 scores every document of every term: bounded work on a large index
            chosen.append(term)
        limit = self.tuning.lexical_candidates * (1 if allowed is None else 10)
        hits = [a for a, _ in self.store.lexical(chosen, limit, self.tuning.field_weights) if allowed is None or a in allowed]
        return set(hits[: self.tuning.lexical_candidates])  # as many as unfiltered, so a filter costs no extra rescoring
