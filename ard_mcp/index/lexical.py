"""The lexical signal: the terms an entry is indexed under and the terms of a query, made the same way.

Both sides go through `terms()`: identifiers split the way people write them (`get_weather`, `GeoCoder`
→ get weather, geo coder, and kept whole), a light suffix stemmer, and CJK runs cut into character
bigrams (FTS5's unicode61 would keep a whole Chinese phrase as one token). Because the index holds our
own terms, its vocabulary gives exact document frequencies for the query's terms, which makes the
lexical score absolute: the IDF-weighted share of the query's terms that an entry contains.

That share rewards breadth: an entry that lists every popular word contains some of every query's terms.
So the prose of an entry (its name, description and representative queries) is indexed without the words
of a keyword run beyond its 24th (`untrusted.cap_keyword_runs`: prose breaks a run with a function word
every few words, and no real text runs past 20), and each field an entry fills freely has a term budget
(`DESCRIPTION_TERMS`, `KEYWORD_TAGS`, `KEYWORD_GROUPS`, `EXAMPLE_TERMS`): what lies beyond is not
indexed. Both sit above the largest real entry of the benchmark catalogs, so no real entry loses a term
(all 6,263 index exactly as before); a stuffed one gains at most the budget, whether or not the registry
flags it. FTS5's BM25, which only picks candidates, already saturates repeated terms (k1) and discounts
long fields (b).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Container, Iterable, Mapping, Sequence, Sized
from dataclasses import dataclass

from ard_mcp.formats.catalog import CatalogEntry
from ard_mcp.formats.untrusted import cap_keyword_runs
from ard_mcp.index.example_texts import Example, humanize
from ard_mcp.index.records import AgentTerms, FtsDocument, keyword_group_count, keyword_groups

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+")
MAX_QUERY_TERMS = 48
#: Distinct terms of a description that are indexed: the largest real description has 72 (a Chinese one, in
#: character bigrams), 99.9% have at most 44. The model reads only a text's first 256 tokens, too.
DESCRIPTION_TERMS = 128
#: Tags indexed as keywords, in the entry's order. The `tag` signal counts the tags and capabilities a query
#: names, so every popular word listed as a tag is a chance to be named: 60 such tags put a stuffed entry in
#: the top 3 of 18-19 of 60 unrelated dev queries, 5-6 with this budget (`bench/injection.py`). Real
#: entries have at most 3 tags.
KEYWORD_TAGS = 16
#: Tags and capabilities indexed, in the entry's order: the most a real entry has is 36 (capabilities naming
#: an MCP server's tools); beyond that a list is keywords for their own sake.
KEYWORD_GROUPS = 64
#: Distinct terms of all the other examples together (queries, tools, skills): the largest real entry has
#: 661 (an MCP server of 35 richly documented tools), 99.9% at most 358.
EXAMPLE_TERMS = 1024

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below between both
    but by can could did do does doing down during each few for from further had has have having he her here hers
    herself him himself his how i if in into is it its itself just let me more most my myself no nor not now of off on
    once only or other our ours ourselves out over own please same she should so some such than that the their theirs
    them themselves then there these they this those through to too under until up very was we were what when where
    which while who whom why will with would you your yours yourself yourselves also get give help find show tell want
    need like make using use used via may might must shall us im cant cannot youd eg etc one two able know provide
    please thank thanks hello hi""".split()
)
_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ers", "er", "es", "ed", "ly", "s")


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A light, predictable suffix stemmer: plurals, -ing, -ed, -er, -ly, -ation (converts → convert).
    Cached: a catalog's words repeat (Zipf), and ingest stems every word of every entry."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)]
            return base + "y" if suffix == "ies" else base
    return word


def _cjk_bigrams(run: str) -> list[str]:
    return [run] if len(run) < 2 else [run[i : i + 2] for i in range(len(run) - 1)]


def words(text: str) -> list[str]:
    """A text's words as written, in order; a run of CJK characters (no spaces to split on) as its character
    bigrams, the unit the index matches them by. An ASCII word is told apart without a regex: `terms` of the
    bundled snapshot's texts twice over took 133 ms, 96 ms so (the same terms), which a new registry's first
    answer waits for."""
    out: list[str] = []
    for token in _WORD.findall(text):
        if not token.isascii() and _CJK.search(token):  # an ASCII word, most, needs no regex
            for run in _CJK.findall(token):
                out += _cjk_bigrams(run)
            out += _CJK.sub(" ", token).split()
        else:
            out.append(token)
    return out


def terms(text: str) -> list[str]:
    """Index/query terms of a text, in order (repeats kept: FTS5 uses term frequency)."""
    return [stem(w.lower()) if w.isascii() or not _CJK.match(w) else w for w in words(humanize(text) + " " + text)]


@functools.lru_cache(maxsize=1 << 16)
def word_terms(word: str) -> tuple[str, ...]:
    """`terms` of one word as typed, cached: a search maps each word of its task to its terms (the evidence's
    matched words show the words typed), and tasks' words repeat; uncached, 0.1 ms of a search."""
    return tuple(terms(word))


def query_terms(text: str) -> list[str]:
    """The terms of a query worth matching: no stop words, no lone characters or numbers, first-seen order."""
    kept = (t for t in terms(text) if (len(t) > 1 or _CJK.match(t)) and t not in STOPWORDS and not t.isdigit())
    return list(dict.fromkeys(kept))[:MAX_QUERY_TERMS]


def match_expression(query: list[str]) -> str | None:
    """An FTS5 query that ORs the terms (each quoted, so no term is read as an operator)."""
    return " OR ".join(f'"{t}"' for t in query) if query else None


def idf(document_frequency: int, documents: int) -> float:
    return math.log(1.0 + (documents - document_frequency + 0.5) / (document_frequency + 0.5))


def coverage(query: Iterable[str], agent_terms: Container[str], weights: Mapping[str, float]) -> float:
    """IDF-weighted share of the query's terms present in the agent's text (0-1, comparable across queries)."""
    return coverages(query, [agent_terms], weights)[0]


def coverages(query: Iterable[str], agents: Iterable[Container[str]], weights: Mapping[str, float]) -> list[float]:
    """`coverage` for each of several agents' terms: the query's weights looked up and summed once, not per agent."""
    weighted = [(term, weights.get(term, 0.0)) for term in query]
    total = 0.0
    for _, weight in weighted:
        total += weight
    out = []
    for agent_terms in agents:
        matched = 0.0
        for term, weight in weighted:
            if term in agent_terms:
                matched += weight
        out.append(matched / total if total > 0 else 0.0)
    return out


def named_keywords(named: Sized) -> float:
    """How many tags or capabilities the query names, as a share of three: an agent several of whose
    tools a task mentions is likelier to serve it than one with a single chance match."""
    return min(1.0, len(named) / 3)


_NO_TERMS: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Vocabulary:
    """An agent's terms, and those of each of its tags / capabilities (in `AgentTerms.keywords` order), as sets.

    What ranking asks of a candidate's terms: which of a query's dozen terms it has, and which keyword groups
    share one. Made once per entry version (`ard_mcp.index.resident` keeps them), each question is a few
    set look-ups; asked of `AgentTerms` per search (its bytes decoded, a regex compiled for the query and
    run over each candidate's text) the same answers cost ~0.85 ms of a search's CPU over 80 candidates, as
    sets 0.15 (docs/benchmarks.md, "What one search costs")."""

    terms: frozenset[str]
    keywords: tuple[frozenset[str], ...]
    keyword_terms: frozenset[str]  # of all the groups: most candidates share none with a query, told in one look

    @classmethod
    def of(cls, agent: AgentTerms) -> Vocabulary:
        """All of the agent's terms."""
        keywords = tuple(frozenset(k.every()) for k in agent.keywords)
        return cls(frozenset(agent.vocabulary.every()), keywords, frozenset().union(*keywords))

    @classmethod
    def asked(cls, query: Sequence[str], agents: Iterable[tuple[str, str]]) -> list[Vocabulary]:
        """For each agent's terms and keyword groups as text (`records.distinct_texts`), only those of its terms
        that are the query's: every question ranking asks of a candidate's vocabulary is about the query's terms,
        so the answers are those of `of`. Why: at 100,000 agents most candidates' whole vocabularies are not kept
        (`resident.KEPT_MAX`), and making them took ~4 ms of a search (43 µs a candidate). Each term is found by a
        substring search, a space either side, made once for the query; a candidate's keyword groups are split
        only when one holds a query term, which most do not. Made from `AgentTerms` (a `TermText` each, the
        groups split to count them, a substring made per term and candidate) they took 1.6-2.7 ms of a search's
        CPU over its ~114 candidates, so 0.93-1.06 (the same vocabularies for 100 dev queries at 100,000 agents,
        `bench/scale.py --copies 20`, the shared 2-core machine at load 3)."""
        padded = [(term, f" {term} ") for term in query]
        out = []
        for vocabulary, groups in agents:
            text = f" {vocabulary} "
            terms = frozenset([term for term, inside in padded if inside in text])
            keyword_text = f" {groups} "
            if groups and any(inside in keyword_text for _, inside in padded):
                keywords = tuple(frozenset([t for t, inside in padded if inside in f" {g} "]) for g in keyword_groups(groups))
                out.append(cls(terms, keywords, frozenset().union(*keywords)))
            else:
                out.append(cls(terms, (_NO_TERMS,) * keyword_group_count(groups), _NO_TERMS))
        return out

    def named(self, query: Iterable[str]) -> list[int]:
        """The positions of the keyword groups sharing a term with the query."""
        wanted = frozenset(query)
        if wanted.isdisjoint(self.keyword_terms):
            return []
        return [i for i, group in enumerate(self.keywords) if not group.isdisjoint(wanted)]


def _joined(texts: Iterable[str], budget: int | None = None) -> str:
    """The terms of `texts` in order, up to the first `budget` distinct ones (repeats of those kept)."""
    out: list[str] = []
    seen: set[str] = set()
    for text in texts:
        for term in terms(text):
            if budget is not None and term not in seen:
                if len(seen) >= budget:
                    return " ".join(out)
                seen.add(term)
            out.append(term)
    return " ".join(out)


def _prose(example: Example) -> str:
    """An example's text as indexed: a query's keyword runs capped, tool and skill texts as they are (listing
    parameters or component names is what those are for)."""
    return cap_keyword_runs(example.text) if example.kind == "query" else example.text


def indexed_keywords(tags: Iterable[str] | None, capabilities: Iterable[str] | None) -> list[str]:
    """The tags and capabilities indexed as keyword groups, in the order of `AgentTerms.keywords`."""
    return [*list(tags or [])[:KEYWORD_TAGS], *(capabilities or [])][:KEYWORD_GROUPS]


def fts_document(entry: CatalogEntry, examples: list[Example]) -> FtsDocument:
    """The four weighted fields of an entry, already turned into terms, each within its term budget."""
    name_part = entry.identifier.rsplit(":", 1)[-1]
    keywords = indexed_keywords(entry.tags, entry.capabilities)
    return FtsDocument(
        name=_joined([cap_keyword_runs(entry.displayName), name_part]),
        keywords=" | ".join(_joined([k]) for k in keywords),
        description=_joined([cap_keyword_runs(entry.description or "")], DESCRIPTION_TERMS),
        examples=_joined((_prose(e) for e in examples if e.kind != "description"), EXAMPLE_TERMS),
    )
