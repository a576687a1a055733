"""Answering AIDIP `POST /agents/search`: filters narrow exactly (every listed capability, tag and
language), a query ranks semantically through the same search as `search_agents`, `top` bounds."""

from __future__ import annotations

from ard_mcp.formats.aidip import AidipFilters, AidipSearchRequest, AidipSearchResponse, AidipSummary, agent_view
from ard_mcp.formats.messages import fit_of
from ard_mcp.registry import Registry
from ard_mcp.search.criteria import Criteria, as_list
from ard_mcp.search.query import SearchQuery
from ard_mcp.search.selection import Candidate
from ard_mcp.search.visibility import Viewer


def summary(chosen: Candidate) -> AidipSummary:
    view = agent_view(chosen.agent.entry)
    return AidipSummary(
        id=view["id"],
        identifier=chosen.agent.identifier,
        name=view["name"],
        description=view.get("description"),
        endpoint=view.get("endpoint"),
        capabilities=view.get("capabilities"),
        tags=view.get("tags"),
        status=view["status"],
        score=None if chosen.score is None else round(chosen.score / 100, 4),
        fit=None if chosen.score is None else fit_of(chosen.score, True),  # only a page the ranking vouches for is answered
    )


def search(registry: Registry, request: AidipSearchRequest, viewer: Viewer) -> AidipSearchResponse:
    """`POST /agents/search`: filters narrow exactly (AND), a query ranks semantically, `top` bounds."""
    filters = request.filters or AidipFilters()
    criteria = Criteria.of(
        required_tags=as_list(filters.tags),
        capabilities=as_list(filters.capabilities),
        languages=as_list(filters.supported_languages) + as_list(filters.supported_language),
    )
    text = request.query if request.query and request.query.strip() else None
    page = registry.search(SearchQuery.of(text, criteria=criteria, page_size=request.top), viewer=viewer)
    # AIDIP's answer is a bare list with nowhere to say "low confidence": it keeps to what the ranking vouches for
    return AidipSearchResponse([summary(c) for c in page.candidates] if page.confident else [])
