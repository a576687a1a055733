"""The lexical signal: the terms an entry is indexed under and the terms of a query, made the same way.

Both sides go through `terms()`: identifiers split the way people write them (`get_weather`, `GeoCoder`
→ get weather, geo coder, and kept whole), a light suffix stemmer, and CJK runs cut into character
bigrams (FTS5's unicode61 would keep a whole Chinese phrase as one token). Because the index holds our
own terms, its vocabulary gives exact document frequencies for the query's terms, which makes the
lexical score absolute: the IDF-weighted share of the query's terms that an entry contains.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Container, Iterable, Mapping, Sized

from ard_mcp.formats.catalog import CatalogEntry
from ard_mcp.index.example_texts import Example, humanize
from ard_mcp.index.records import FtsDocument

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+")
MAX_QUERY_TERMS = 48

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


def terms(text: str) -> list[str]:
    """Index/query terms of a text, in order (repeats kept: FTS5 uses term frequency)."""
    out: list[str] = []
    for token in _WORD.findall(humanize(text) + " " + text):
        if _CJK.search(token):
            for run in _CJK.findall(token):
                out += _cjk_bigrams(run)
            out += [stem(t.lower()) for t in _CJK.sub(" ", token).split()]
        else:
            out.append(stem(token.lower()))
    return out


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
    total = matched = 0.0
    for term in query:
        weight = weights.get(term, 0.0)
        total += weight
        if term in agent_terms:
            matched += weight
    return matched / total if total > 0 else 0.0


def named_keywords(named: Sized) -> float:
    """How many tags or capabilities the query names, as a share of three: an agent several of whose
    tools a task mentions is likelier to serve it than one with a single chance match."""
    return min(1.0, len(named) / 3)


def _joined(texts: Iterable[str]) -> str:
    return " ".join(t for text in texts for t in terms(text))


def fts_document(entry: CatalogEntry, examples: list[Example]) -> FtsDocument:
    """The four weighted fields of an entry, already turned into terms."""
    name_part = entry.identifier.rsplit(":", 1)[-1]
    return FtsDocument(
        name=_joined([entry.displayName, name_part]),
        keywords=" | ".join(_joined([k]) for k in [*(entry.tags or []), *(entry.capabilities or [])]),
        description=_joined([entry.description or ""]),
        examples=_joined(e.text for e in examples if e.kind != "description"),
    )
