"""One ranking from several registries' rankings.

Scores from different registries are not comparable (another registry's 80 may be our 40: other model,
other calibration, other catalog), so the lists are fused by rank: reciprocal rank fusion, each list
weighing the same, the local one winning ties. An entry several registries return is kept once: the
local copy when this registry holds one, else the copy of the first registry that returned it (upstreams in
the order they are asked). Never the "freshest" one: a later `updatedAt` is a claim, and an upstream that
said 2030 once replaced this registry's own entry with its copy. Every registry that returned the entry is
kept in its `evidence.sources`, the registries each copy already named included, so provenance survives
every hop. `bench/federation.py` compares this with re-scoring the returned entries locally.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ard_mcp.formats.identifiers import normalize_identifier
from ard_mcp.formats.messages import SearchResult

RRF_K = 60  # the constant of Cormack et al. (2009), which the benchmark's RRF baseline uses too


@dataclass
class Merged:
    result: SearchResult
    fused: float = 0.0
    sources: list[str] = field(default_factory=list)

    def noted(self) -> SearchResult:
        """The kept copy, naming in its evidence every registry that returned it (when more than one did)."""
        if len(self.sources) < 2 or self.result.evidence is None:
            return self.result
        evidence = self.result.evidence.model_copy(update={"sources": self.sources})
        return self.result.model_copy(update={"evidence": evidence})


def confident(result: SearchResult) -> bool:
    """Whether the registry that ranked `result` vouches for it; one that came without evidence is not vouched for."""
    return result.evidence is not None and result.evidence.confidence == "high"


def _sources(result: SearchResult) -> list[str]:
    return [result.source, *(result.evidence.sources or [] if result.evidence is not None else [])]


def _add_sources(sources: list[str], more: list[str]) -> None:
    """Add the registries of `more` not in `sources` yet: `https://r.example/` and `https://r.example` are one."""
    seen = {s.rstrip("/") for s in sources}
    for source in more:
        if source.rstrip("/") not in seen:
            seen.add(source.rstrip("/"))
            sources.append(source)


def fuse(rankings: Sequence[Sequence[SearchResult]], limit: int) -> list[Merged]:
    """The first ranking is the local one. Returns at most `limit` entries, best first: the entries some
    registry vouches for before those that were only its closest (`confidence: low`), so one registry's
    nearest miss never outranks another's confident match at the same rank."""
    merged: dict[str, Merged] = {}
    for order, ranking in enumerate(rankings):
        for rank, result in enumerate(ranking):
            key = normalize_identifier(result.identifier)
            entry = merged.setdefault(key, Merged(result))
            entry.fused += 1.0 / (RRF_K + rank + 1) + (1e-9 if order == 0 else 0.0)  # local wins a tie
            _add_sources(entry.sources, _sources(result))
    return sorted(merged.values(), key=lambda m: (not confident(m.result), -m.fused))[:limit]
