"""Constraints beyond an ARD §7.1 filter: the Xu profile's hard filters and tag preferences, AIDIP's
"must have all of these" filters. One definition, so `POST /discover`, `POST /agents/search` and the
`search_agents` / `discover_agents` tools select candidates the same way.

ARD filters are OR within a key; "has every required tag" is an AND within a key, so a search narrows
with an OR filter of the same values (exact and cheap) and `Criteria.accepts` then decides exactly
(`ard_mcp.search.selection`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from ard_mcp.errors import InvalidArgument
from ard_mcp.formats.entry_facts import capabilities_of, languages_of, protocols_of, regions_of, status_of, tags_of
from ard_mcp.formats.timestamps import stored_timestamp

PREFERRED_BOOST = 0.1
"""Relevance added when an entry has every preferred tag (a share of it for some): enough to reorder close
results, never enough to lift an unrelated entry over a relevant one."""
UNRESTRICTED_REGIONS = frozenset({"global", "any", "*", "worldwide"})


MAX_VALUES = 100  # per list: required_tags with 10,000 values once took 6 s


def _norm(values: Iterable[str] | None, name: str) -> tuple[str, ...]:
    found = tuple(dict.fromkeys(v.strip().lower() for v in values or () if v.strip()))
    if len(found) > MAX_VALUES:
        raise InvalidArgument(f"{name}: at most {MAX_VALUES} values (got {len(found)})")
    return found


@dataclass(frozen=True)
class Criteria:
    """Everything is case-insensitive. Empty means "no constraint"."""

    required_tags: tuple[str, ...] = ()
    excluded_tags: tuple[str, ...] = ()
    preferred_tags: tuple[str, ...] = ()
    capabilities: tuple[str, ...] = ()  # every one required (AIDIP)
    languages: tuple[str, ...] = ()  # every one required (AIDIP)
    protocols: tuple[str, ...] = ()  # any one suffices (Xu)
    statuses: tuple[str, ...] = ()  # any one suffices
    regions: tuple[str, ...] = ()  # the client's region(s); entries restricted elsewhere are dropped
    max_age_seconds: float | None = None

    @classmethod
    def of(
        cls,
        *,
        required_tags: Iterable[str] | None = None,
        excluded_tags: Iterable[str] | None = None,
        preferred_tags: Iterable[str] | None = None,
        capabilities: Iterable[str] | None = None,
        languages: Iterable[str] | None = None,
        protocols: Iterable[str] | None = None,
        statuses: Iterable[str] | None = None,
        regions: Iterable[str] | None = None,
        max_age_seconds: float | None = None,
    ) -> Criteria:
        return cls(
            _norm(required_tags, "required_tags"),
            _norm(excluded_tags, "excluded_tags"),
            _norm(preferred_tags, "preferred_tags"),
            _norm(capabilities, "capabilities"),
            _norm(languages, "languages"),
            _norm(protocols, "protocols"),
            _norm(statuses, "status"),
            _norm(regions, "region"),
            max_age_seconds,
        )

    @property
    def empty(self) -> bool:
        return self == Criteria()

    def key(self) -> dict[str, Any]:
        """A JSON-able form, to bind page tokens to the criteria they page through. Every field is flat (tuples of
        strings, a number), so no `asdict`: its deep copy was 0.05 ms of every search (twice: the token read and made)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def narrowing(self) -> dict[str, list[str]]:
        """OR filters (field → wanted lower-case values) that every accepted entry satisfies."""
        out: dict[str, list[str]] = {}
        if self.required_tags:
            out["tags"] = list(self.required_tags)
        if self.capabilities:
            out["capabilities"] = list(self.capabilities)
        return out

    def accepts(self, entry: Mapping[str, Any], indexed_at: str, now: datetime) -> bool:
        tags = tags_of(entry)
        if not set(self.required_tags) <= tags or tags & set(self.excluded_tags):
            return False
        if not set(self.capabilities) <= capabilities_of(entry) or not set(self.languages) <= languages_of(entry):
            return False
        if self.protocols and not protocols_of(entry) & set(self.protocols):
            return False
        if self.statuses and status_of(entry) not in self.statuses:
            return False
        if self.regions:
            regions = regions_of(entry)
            if regions and not regions & (set(self.regions) | UNRESTRICTED_REGIONS):
                return False
        return self.max_age_seconds is None or age_seconds(entry, indexed_at, now) <= self.max_age_seconds

    def preferred_in(self, entry: Mapping[str, Any]) -> list[str]:
        tags = tags_of(entry)
        return [t for t in self.preferred_tags if t in tags]


def age_seconds(entry: Mapping[str, Any], indexed_at: str, now: datetime) -> float:
    """How old the metadata is: from the publisher's `updatedAt`, else from when this registry indexed it."""
    stamp = stored_timestamp(entry.get("updatedAt")) or stored_timestamp(indexed_at)
    return max(0.0, (now - stamp).total_seconds()) if stamp is not None else 0.0


def as_list(value: str | list[str] | None) -> list[str]:
    """A bare string counts as a one-element list (both drafts accept either)."""
    return [value] if isinstance(value, str) else list(value or [])
