"""One ranking from several registries' rankings.

Scores from different registries are not comparable (another registry's 80 may be our 40: other model,
other calibration, other catalog), so the lists are fused by rank: reciprocal rank fusion, each list
weighing the same, the local one winning ties. An entry several registries return is kept once: the
freshest copy (latest `updatedAt`; the local one on a tie or when neither says), with every registry that
returned it noted. `bench/federation.py` compares this with re-scoring the returned entries locally.
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


def _fresher(new: SearchResult, old: SearchResult) -> bool:
    new_at, old_at = new.updated, old.updated
    return new_at is not None and (old_at is None or new_at > old_at)


def _confident(result: SearchResult) -> bool:
    return result.evidence is None or result.evidence.confidence != "low"


def fuse(rankings: Sequence[Sequence[SearchResult]], limit: int) -> list[Merged]:
    """The first ranking is the local one. Returns at most `limit` entries, best first: the entries some
    registry vouches for before those that were only its closest (`confidence: low`), so one registry's
    nearest miss never outranks another's confident match at the same rank."""
    merged: dict[str, Merged] = {}
    for order, ranking in enumerate(rankings):
        for rank, result in enumerate(ranking):
            key = normalize_identifier(result.identifier)
            entry = merged.get(key)
            if entry is None:
                entry = merged[key] = Merged(result)
            elif _fresher(result, entry.result):
                entry.result = result
            entry.fused += 1.0 / (RRF_K + rank + 1) + (1e-9 if order == 0 else 0.0)  # local wins a tie
            if result.source not in entry.sources:
                entry.sources.append(result.source)
    return sorted(merged.values(), key=lambda m: (not _confident(m.result), -m.fused))[:limit]
