"""Request and response objects of the discovery operations (ARD §7), shared by the MCP tools, the CLI
and the HTTP routes so every surface speaks the same JSON."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ard_mcp.catalog import CatalogEntry, WireModel

FilterObject = dict[str, Any]


class ScoreComponents(WireModel):
    """The signals behind a score, each on its own scale (similarities are cosines in [-1, 1])."""

    example: float = Field(description="Cosine similarity of the best-matching example (over the whole query and its sub-intents).")
    secondExample: float = Field(description="Cosine similarity of the second-best example: several matching tools beat one.")
    context: float = Field(description="Cosine similarity of the entry's name and description.")
    allExamples: float = Field(description="Cosine similarity to the mean of all the entry's examples.")
    lexical: float = Field(description="IDF-weighted share of the query's terms found in the entry's text (0-1).")
    tag: float = Field(description="How many tags or capabilities the query names, as a share of three (0-1).")


class MatchedExample(WireModel):
    kind: Literal["description", "query", "tool", "skill", "capability"]
    label: str = Field(description="Which example: the tool or skill name, or the start of the query.")
    text: str
    similarity: float


class Freshness(WireModel):
    metadataUpdatedAt: str | None = Field(default=None, description="The entry's own updatedAt.")
    indexedAt: str = Field(description="When this registry last indexed the entry.")


class Evidence(WireModel):
    """Why the entry matched (Xu profile matching evidence)."""

    matchedExamples: list[MatchedExample]
    matchedTags: list[str]
    matchedWords: list[str]
    scoreComponents: ScoreComponents
    freshness: Freshness


class SearchResult(CatalogEntry):
    """A stored entry, unchanged, plus the registry's relevance judgement."""

    score: int = Field(ge=0, le=100, description="Absolute relevance 0-100; not a trust or safety rating.")
    source: str = Field(description="The registry that indexed this entry.")
    evidence: Evidence


class SearchResponse(WireModel):
    results: list[SearchResult]
    pageToken: str | None = Field(default=None, description="Pass back to get the next page; absent on the last page.")
    totalResults: int = Field(description="How many entries are above the relevance cutoff.")


class FacetRequest(WireModel):
    field: str = Field(description="Field path, as for filter keys (type, tags, publisher, metadata.x, ...).")
    limit: int = Field(default=20, ge=1, le=1000)
    minCount: int = Field(default=1, ge=1)


class FacetBucket(WireModel):
    value: str
    count: int


class FacetResult(WireModel):
    buckets: list[FacetBucket]
    otherCount: int = Field(description="Matching entries whose value is in buckets beyond the limit.")


class ExploreResponse(WireModel):
    resultType: Literal["facets"] = "facets"
    facets: dict[str, FacetResult]


class RegisterResult(WireModel):
    status: Literal["created", "updated", "unchanged"]
    entry: CatalogEntry


class DeregisterResult(WireModel):
    status: Literal["deleted"] = "deleted"
    identifier: str


class ListResponse(WireModel):
    items: list[CatalogEntry]
    total: int
    pageToken: str | None = None
