"""A page of search results, and the same page as ARD results: each stored entry unchanged plus its
score, source and evidence (Xu matching evidence), trimmed to the query's detail level, or as the brief
lines a host model reads first (`detail=compact`).

The Xu and AIDIP surfaces read the page's candidates and answer in their own objects.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic_core import to_json

from ard_mcp.formats.catalog import CatalogEntry
from ard_mcp.formats.messages import (
    AGENT_RESOURCE,
    BriefResult,
    Confidence,
    Detail,
    Evidence,
    Fit,
    Freshness,
    MatchedExample,
    ScoreComponents,
    SearchResponse,
    SearchResult,
    TrustFinding,
    fit_of,
)
from ard_mcp.index.records import StoredAgent
from ard_mcp.search.selection import Candidate

#: Characters of a brief result's description and evidence. At 160 and 120 (and with `type`) the largest page
#: of ten on the benchmark sources was 1,593 tokens of the bundled tokenizer, over the ~1,500 a page may cost;
#: at these limits it is 1,401 (medians 700-1,071 per source; ten full entries: 6,500-33,000 at the median).
BRIEF_DESCRIPTION = 100
BRIEF_MATCH = 80
#: A wide character (CJK, fullwidth) counts as this many: in the shared catalogs' descriptions the bundled tokenizer
#: reads 4.7 characters a token of text without wide characters and 1.1 of mostly wide text. Counted as one, ten
#: Chinese descriptions and tool texts made a 1,503-token page.
WIDE = 4
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s")
#: Entries kept validated as results (`_validated`) and serialised (`_serialised`); past this many agents each starts again.
KEPT_RESULTS = 8_192
T = TypeVar("T")
_validated: dict[int, tuple[dict[str, Any], SearchResult]] = {}  # agent id -> (its stored entry, that entry as a result)
_serialised: dict[int, tuple[dict[str, Any], tuple[bytes, bytes]]] = {}  # agent id -> (its stored entry, `_entry_json` of it)
_OWN_FIELDS = frozenset(SearchResult.model_fields) - frozenset(CatalogEntry.model_fields)  # score, source, evidence, redacted


def _shorten(text: str, limit: int) -> str:
    """`text` on one line, cut to `limit` (wide characters counting `WIDE`) with an ellipsis. ASCII text is cut by
    its length: the width of each character, looked up one by one, was a third of a compact page's 0.6-1.0 ms."""
    text = " ".join(text.split())
    if text.isascii():  # every character counts one: the same cut, without a width look-up per character
        return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
    return _by_width(text, limit)


def _by_width(text: str, limit: int) -> str:
    """One-line `text` cut to `limit` counting each character's width."""
    room, kept = limit - 1, 0  # the ellipsis takes one
    for used in itertools.accumulate(WIDE if unicodedata.east_asian_width(c) in "WF" else 1 for c in text):
        if used > limit:
            return text[:kept].rstrip() + "…"
        kept += used <= room
    return text


def first_sentence(text: str, limit: int = BRIEF_DESCRIPTION) -> str:
    """The opening sentence of a description, at most `limit` characters: what tells entries apart in a list."""
    return _shorten(_SENTENCE_END.split(" ".join(text.split()), maxsplit=1)[0], limit)


def brief(result: SearchResult) -> BriefResult:
    """A result as one short line of facts. The evidence kept is the best matched example, unless that is the
    description already shown, when the matched words say more; for an entry the registry flagged, its first
    warning, since the description shown beside it may hold the very instruction it warns about."""
    evidence = result.evidence
    return _brief_line(
        result,
        result.score,
        fit_of(result.score, evidence is not None and evidence.confidence == "high"),
        evidence.trust if evidence is not None else None,
        _match(evidence.warnings, evidence.matchedExamples, evidence.matchedWords) if evidence is not None else None,
    )


def _brief_line(result: SearchResult, score: int, fit: Fit, trust: TrustFinding | None, match: str | None) -> BriefResult:
    return BriefResult(
        trust=trust.status if trust is not None else None,
        identifier=result.identifier,
        displayName=result.displayName,
        description=first_sentence(result.description) if result.description else None,
        score=score,
        fit=fit,
        match=match,
    )


def _match(warnings: list[str] | None, examples: list[MatchedExample], words: list[str]) -> str | None:
    """A brief line's evidence (`brief`)."""
    if warnings:
        return _shorten(f"warning: {warnings[0]}", BRIEF_MATCH)
    shown = [m for m in examples if m.kind != "description"]
    if shown:
        return _shorten(f"{shown[0].kind}: {shown[0].text}", BRIEF_MATCH)
    return "words: " + ", ".join(words[:8]) if words else None


@dataclass(frozen=True)
class SearchPage:
    """One page of a search: its candidates, how many there are in all (None when an unranked search
    stopped counting at this page), the token of the next page, how to show ARD results, and whether the
    ranking vouches for them (`confident`) or they are only the closest entries."""

    candidates: list[Candidate]
    total: int | None
    page_token: str | None
    source: str
    detail: Detail | None = None
    confident: bool = True

    @property
    def confidence(self) -> Confidence | None:
        return None if not self.candidates else "high" if self.confident else "low"

    def results(self) -> list[SearchResult]:
        """The page's ARD results, full: each stored entry with its score, source and evidence."""
        return [self._result(c) for c in self.candidates]

    def response(self) -> SearchResponse:
        """The page as `search_agents` answers it at a detail level. A page of a ranked search only: only those have scores."""
        results = [r.at_detail(self.detail, AGENT_RESOURCE.format(identifier=r.identifier)) for r in self.results()]
        return self._response(results)

    def brief(self) -> SearchResponse:
        """The page at `detail=compact`: one brief line per result, `brief(result)` of each, made from the ranking's
        explanation without the full result: its `Evidence` and the copy of the entry's validated result carrying it
        were a quarter of the 0.4-0.5 ms a compact page of ten cost, and the line reads four of their fields."""
        return self._response([self._brief(c) for c in self.candidates])

    def _brief(self, candidate: Candidate) -> BriefResult:
        assert candidate.explain is not None and candidate.score is not None, "only a ranked candidate has evidence"
        ranked, trust = candidate.explain(), TrustFinding.of(candidate.trust)
        match = _match(_warnings(trust, ranked.warnings), ranked.matched_examples, ranked.matched_words)
        return _brief_line(_as_result(candidate.agent), candidate.score, fit_of(candidate.score, self.confident), trust, match)

    def _response(self, results: list[SearchResult] | list[BriefResult]) -> SearchResponse:
        assert self.total is not None, "an unranked page has no ARD results"
        return SearchResponse(results=results, pageToken=self.page_token, totalResults=self.total, confidence=self.confidence)

    def ard_body(self) -> bytes:
        """The page as `POST /search` answers it (`ArdSearchResponse` of `results()`, serialised), byte for byte, with
        each entry's part serialised once per version of it (`_entry_json`): serialising ten full results took 0.43 ms
        of a search's CPU, most of it the entries' nested models, each through a Python serializer (`WireModel`)."""
        results = b",".join(self._result_json(c) for c in self.candidates)
        token = b"" if self.page_token is None else b',"pageToken":' + to_json(self.page_token)
        return b'{"results":[' + results + b"]" + token + b"}"

    def _result_json(self, candidate: Candidate) -> bytes:
        """`_result(candidate)` serialised: the entry's fields, then score, source and evidence (its declared fields
        in their order), then the entry's fields no model names, as pydantic serialises a `SearchResult`."""
        assert candidate.score is not None, "only a ranked candidate has evidence"
        head, tail = _entry_json(candidate.agent)
        own = b',"score":%d,"source":' % candidate.score + to_json(self.source)
        return head + own + b',"evidence":' + self._evidence(candidate).model_dump_json(by_alias=True).encode() + tail

    def _result(self, candidate: Candidate) -> SearchResult:
        """One ranked candidate as an ARD result with the evidence for its score."""
        assert candidate.score is not None, "only a ranked candidate has evidence"
        return _as_result(candidate.agent).model_copy(
            update={"score": candidate.score, "source": self.source, "evidence": self._evidence(candidate)}
        )

    def _evidence(self, candidate: Candidate) -> Evidence:
        assert candidate.explain is not None and candidate.score is not None, "only a ranked candidate has evidence"
        ranked = candidate.explain()
        agent = candidate.agent
        trust = TrustFinding.of(candidate.trust)
        return Evidence(
            matchedExamples=ranked.matched_examples,
            matchedTags=ranked.matched_tags,
            matchedWords=ranked.matched_words,
            scoreComponents=ScoreComponents(**ranked.components),
            freshness=Freshness(metadataUpdatedAt=agent.entry.get("updatedAt"), indexedAt=agent.indexed_at),
            confidence="high" if self.confident else "low",
            fit=fit_of(candidate.score, self.confident),
            trust=trust,
            warnings=_warnings(trust, ranked.warnings),
        )


def _warnings(trust: TrustFinding | None, ranked: list[str] | None) -> list[str] | None:
    """A result's warnings: a third-party trust finding's claim, then what the ranking flagged."""
    claim = [f"third-party claim: {trust.reason}"] if trust is not None and trust.status == "third-party" else []
    return [*claim, *(ranked or [])] or None


def _kept(kept: dict[int, tuple[dict[str, Any], T]], agent: StoredAgent, make: Callable[[], T]) -> T:
    """What `make` derives from the agent's stored entry, made once per entry: the copy of the store that searches
    read keeps one `entry` per version of an agent (`ard_mcp.index.resident`), so a value kept for that very object
    is current. Past `KEPT_RESULTS` agents `kept` starts again."""
    found = kept.get(agent.id)
    if found is not None and found[0] is agent.entry:
        return found[1]
    value = make()
    if len(kept) >= KEPT_RESULTS:
        kept.clear()
    kept[agent.id] = (agent.entry, value)
    return value


def _as_result(agent: StoredAgent) -> SearchResult:
    """The stored entry validated as a result (score, source and evidence to be set), once per entry (`_kept`).
    Validating the page's ten entries again for every search cost 0.2 ms of its CPU; a copy with the search's
    values set is the same result (the same JSON, byte for byte)."""
    return _kept(_validated, agent, lambda: SearchResult.model_validate({**agent.entry, "score": 0, "source": "", "evidence": None}))


def _entry_json(agent: StoredAgent) -> tuple[bytes, bytes]:
    """A result's JSON before its score (the opening brace and the entry's declared fields) and after its evidence
    (a comma and the fields no model names, then the closing brace), once per entry (`_kept`)."""

    def made() -> tuple[bytes, bytes]:
        result = _as_result(agent)
        extra = set(result.model_extra or ())
        head = result.model_dump_json(by_alias=True, exclude=extra | _OWN_FIELDS).encode()[:-1]
        tail = b"," + result.model_dump_json(by_alias=True, include=extra).encode()[1:] if extra else b"}"
        return head, tail

    return _kept(_serialised, agent, made)
