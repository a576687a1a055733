"""A page of search results, and the same page as ARD results: each stored entry unchanged plus its
score, source and evidence (Xu matching evidence), trimmed to the query's detail level.

The Xu and AIDIP surfaces read the page's candidates and answer in their own objects.
"""

from __future__ import annotations

from dataclasses import dataclass

from ard_mcp.formats.messages import AGENT_RESOURCE, Detail, Evidence, Freshness, ScoreComponents, SearchResponse, SearchResult
from ard_mcp.search.selection import Candidate


def ard_result(candidate: Candidate, source: str) -> SearchResult:
    """One ranked candidate as an ARD result with the evidence for its score."""
    assert candidate.explain is not None and candidate.score is not None, "only a ranked candidate has evidence"
    ranked = candidate.explain()
    agent = candidate.agent
    evidence = Evidence(
        matchedExamples=ranked.matched_examples,
        matchedTags=ranked.matched_tags,
        matchedWords=ranked.matched_words,
        scoreComponents=ScoreComponents(**ranked.components),
        freshness=Freshness(metadataUpdatedAt=agent.entry.get("updatedAt"), indexedAt=agent.indexed_at),
    )
    return SearchResult.model_validate({**agent.entry, "score": candidate.score, "source": source, "evidence": evidence})


@dataclass(frozen=True)
class SearchPage:
    """One page of a search: its candidates, how many there are in all (None when an unranked search
    stopped counting at this page), the token of the next page, and how to show ARD results."""

    candidates: list[Candidate]
    total: int | None
    page_token: str | None
    source: str
    detail: Detail | None = None

    def response(self) -> SearchResponse:
        """The page as `search_agents` answers it. A page of a ranked search only: only those have scores."""
        assert self.total is not None, "an unranked page has no ARD results"
        results = [ard_result(c, self.source) for c in self.candidates]
        results = [r.at_detail(self.detail, AGENT_RESOURCE.format(identifier=r.identifier)) for r in results]
        return SearchResponse(results=results, pageToken=self.page_token, totalResults=self.total)
