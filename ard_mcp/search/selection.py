"""From a ranking (or, without a text, from the filter alone) to the entries of one page, with the
criteria applied: hard constraints drop entries, preferred tags raise them.

Preferred tags add up to `PREFERRED_BOOST` relevance after the cutoff and floor were applied, so a boost
reorders close results but never admits an unrelated entry. Without criteria the ranking's order stands
and only the page's entries are read.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial

from ard_mcp.formats.entry_facts import TRUST_FIELDS
from ard_mcp.index.filter_values import Filter
from ard_mcp.index.records import StoredAgent
from ard_mcp.index.store.base import Store
from ard_mcp.search.criteria import PREFERRED_BOOST, Criteria
from ard_mcp.search.ranking import Hit, Ranked, Ranking

_SCAN = 500  # agents read at a time when criteria are checked without a ranking


@dataclass
class Candidate:
    """One selected entry. `score` (0-100, preferred-tag boost included) and `explain` (its evidence,
    computed on demand: only shown candidates pay for it) are None when nothing was ranked."""

    agent: StoredAgent
    score: int | None
    preferred: list[str] = field(default_factory=list)
    explain: Callable[[], Ranked] | None = None
    trust: dict[str, str] = field(default_factory=dict)  # the registry's trust finding (`entry_facts.TRUST_FIELDS`)


@dataclass(frozen=True)
class Selection:
    """One page of candidates; `total` is None when criteria were checked only as far as the page needed;
    `confident` is False when they are only the closest candidates of a ranking that vouches for none."""

    candidates: list[Candidate]
    total: int | None
    more: bool
    confident: bool = True


def narrowed(store: Store, flt: Filter, criteria: Criteria) -> Filter | None:
    """The filter plus the criteria's OR narrowing in stored spellings; None when nothing can match.

    Criteria compare case-insensitively and filter values are exact, so the stored spellings are looked
    up (one index scan of the field). A key the caller already filters on keeps the caller's values."""
    out = dict(flt)
    for key, wanted in criteria.narrowing().items():
        if key in out:
            continue
        values = [v for v, _ in store.facet(key, None) if v.lower() in wanted]
        if not values:
            return None
        out[key] = values
    return out


def ranked_page(ranking: Ranking, criteria: Criteria, now: datetime, offset: int, size: int) -> Selection:
    """The page of a ranking at `offset`, best first (ties by agent id, so pages are stable). An agent of the
    page a read cannot have (deleted since it was ranked, or a row reads cannot use) is left out of the page
    and of the total alike: the total once counted it, and a search answered `totalResults: 1` with no
    result (issue #44). Pages keep their places in the ranking, so none repeats another's entries. Entries are
    read where the ranking read its candidates (`Ranker.examples`: each entry decoded and checked once per version)."""
    read = ranking.ranker.examples.agents
    agents: dict[int, StoredAgent] = {}
    chosen: list[tuple[float, Hit, list[str]]]
    if criteria.empty:
        chosen = [(hit.relevance, hit, []) for hit in ranking]
    else:
        agents = read(hit.agent_id for hit in ranking)
        chosen = []
        for hit in ranking:
            agent = agents.get(hit.agent_id)
            if agent is None or not criteria.accepts(agent.entry, agent.indexed_at, now):
                continue
            preferred = criteria.preferred_in(agent.entry)
            share = len(preferred) / len(criteria.preferred_tags) if criteria.preferred_tags else 0.0
            chosen.append((min(1.0, hit.relevance + PREFERRED_BOOST * share), hit, preferred))
        chosen.sort(key=lambda item: (-item[0], item[1].agent_id))
    page = chosen[offset : offset + size]
    if criteria.empty:
        agents = read(hit.agent_id for _, hit, _ in page)
    shown = [(relevance, hit, preferred) for relevance, hit, preferred in page if hit.agent_id in agents]
    ranking.show([hit for _, hit, _ in shown])
    candidates = [
        Candidate(agents[hit.agent_id], round(100 * relevance), preferred, partial(ranking.explain, hit, agents[hit.agent_id].entry))
        for relevance, hit, preferred in shown
    ]
    total = len(chosen) - (len(page) - len(shown))
    return Selection(candidates, total, offset + size < len(chosen), ranking.confident)


def with_trust(store: Store, selection: Selection) -> Selection:
    """The page's candidates with their trust findings: one read for the page, since every result shows it."""
    found = store.values_of([c.agent.id for c in selection.candidates], TRUST_FIELDS)
    for candidate in selection.candidates:
        candidate.trust = found.get(candidate.agent.id, {})
    return selection


def unranked_page(store: Store, ids: AbstractSet[int] | None, criteria: Criteria, now: datetime, offset: int, size: int) -> Selection:
    """The page at `offset` of the entries among `ids` (None: all) meeting the criteria, in identifier order."""
    if criteria.empty:
        agents, total = store.list_page(ids, [], offset, size)
        return Selection([Candidate(a, None) for a in agents], total, offset + size < total)
    found: list[Candidate] = []
    scanned = 0
    while len(found) <= offset + size:  # one more than the page: whether another page follows
        agents, _ = store.list_page(ids, [], scanned, _SCAN)
        found += [Candidate(a, None, criteria.preferred_in(a.entry)) for a in agents if criteria.accepts(a.entry, a.indexed_at, now)]
        scanned += len(agents)
        if len(agents) < _SCAN:
            return Selection(found[offset : offset + size], len(found), offset + size < len(found))
    return Selection(found[offset : offset + size], None, True)
