"""The lexical signal: what words an entry is indexed under and how a query becomes an FTS5 match.

Identifiers are split the way people write them (`get_weather`, `GeoCoder` → get weather, geo coder) and
kept whole as well, so both a pasted tool name and a paraphrase find it. Porter stemming is FTS5's.
"""

from __future__ import annotations

import re

from ard_mcp.catalog import CatalogEntry
from ard_mcp.examples import Example, humanize
from ard_mcp.store import FtsDocument

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
MAX_QUERY_TERMS = 48

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below between both
    but by can could did do does doing down during each few for from further had has have having he her here hers
    herself him himself his how i if in into is it its itself just let me more most my myself no nor not now of off on
    once only or other our ours ourselves out over own please same she should so some such than that the their theirs
    them themselves then there these they this those through to too under until up very was we were what when where
    which while who whom why will with would you your yours yourself yourselves also get give help find show tell want
    need like make using use used via may might must shall us i'm im can't cannot could you'd e g eg etc one two""".split()
)


def words(text: str) -> list[str]:
    """Lower-case word tokens of `text`, identifiers split into their parts as well."""
    return [w.lower() for w in _WORD.findall(humanize(text))] + [w.lower() for w in _WORD.findall(text)]


def content_words(text: str) -> list[str]:
    """The words of a query worth matching: no stop words, no single characters, first-seen order."""
    seen = dict.fromkeys(w for w in words(text) if len(w) > 1 and w not in STOPWORDS and not w.isdigit())
    return list(seen)[:MAX_QUERY_TERMS]


def match_expression(text: str) -> str | None:
    """An FTS5 query that ORs the content words (each quoted, so no word is read as an operator)."""
    terms = content_words(text)
    return " OR ".join(f'"{t}"' for t in terms) if terms else None


def fts_document(entry: CatalogEntry, examples: list[Example]) -> FtsDocument:
    name_part = entry.identifier.rsplit(":", 1)[-1]
    name = " ".join(dict.fromkeys([entry.displayName, humanize(entry.displayName), name_part, humanize(name_part)]))
    keywords = [*(entry.tags or []), *(entry.capabilities or [])]
    keywords += [humanize(k) for k in keywords]
    texts = [e.text for e in examples if e.kind != "description"]
    return FtsDocument(name=name, keywords=" ".join(keywords), description=entry.description or "", examples=" ".join(texts))
