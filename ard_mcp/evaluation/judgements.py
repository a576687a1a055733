"""Labelled queries for `ard-mcp eval`: one JSON object a line, as the benchmark data's README defines them
(shared/data/README.md).

* A query's *requirements* are its `relevant` identifiers plus its `relevant_any_of` groups. A group is
  met by any one member (several servers offer the same tool). An identifier in `relevant` that is also a
  member of a group is not a second requirement: it counts once, through the group, otherwise a
  ranking would be rewarded twice for one need and penalised for not showing the group's alternative.
* Grades (`relevant` given as `{id: grade}`) are gains; 1 when not given. A group's gain is the highest
  grade any of its members has in `relevant`, else 1.
* A query with no requirements is a *no-answer* query: a good engine returns nothing above its relevance
  cutoff.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ard_mcp.formats.identifiers import normalize_identifier


@dataclass(frozen=True)
class Requirement:
    """One need of a query: met by any identifier in `members`; worth `gain` when met."""

    members: frozenset[str]
    gain: float


@dataclass(frozen=True)
class Judgement:
    """One labelled query, as a line of the queries JSONL file.

    `relevant` maps identifier -> grade (a plain list in the file means grade 1 each); `relevant_any_of`
    holds the groups of interchangeable identifiers. Identifiers are normalised the way the registry
    normalises them (`urn:ai:` -> `urn:air:`) so a label never misses a result over spelling alone.
    """

    id: str
    query: str
    relevant: Mapping[str, float] = field(default_factory=dict)
    relevant_any_of: tuple[tuple[str, ...], ...] = ()
    category: str | None = None
    kind: str | None = None

    @classmethod
    def from_json(cls, raw: Any, line: int = 0) -> Judgement:
        """Validate one decoded JSONL line; `ValueError` messages name the line so a labeller can fix it."""
        where = f"line {line}" if line else "query"
        if not isinstance(raw, dict):
            raise ValueError(f"{where}: expected a JSON object, got {type(raw).__name__}")
        query = raw.get("query")
        if query is None:
            raise ValueError(f"{where}: missing 'query' (the natural-language task to search for)")
        if not isinstance(query, str) or not query.strip():
            raise ValueError(f"{where}: 'query' must be a non-empty string")
        qid = raw.get("id", f"line-{line}" if line else None)
        if qid is None:
            raise ValueError(f"{where}: missing 'id'")
        if isinstance(qid, bool) or not isinstance(qid, str | int):
            raise ValueError(f"{where}: 'id' must be a string")
        relevant = _parse_relevant(raw.get("relevant"), where)
        groups = _parse_groups(raw.get("relevant_any_of", []), where)
        labels: dict[str, str | None] = {}
        for name in ("category", "kind"):
            value = raw.get(name)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{where}: '{name}' must be a string")
            labels[name] = value
        return cls(id=str(qid), query=query, relevant=relevant, relevant_any_of=groups, **labels)

    @property
    def requirements(self) -> tuple[Requirement, ...]:
        """The query's needs, each counted once (see the module docstring for why)."""
        grouped = {m for g in self.relevant_any_of for m in g}
        reqs = [Requirement(frozenset([i]), g) for i, g in self.relevant.items() if i not in grouped and g > 0]
        seen: set[frozenset[str]] = set()
        for group in self.relevant_any_of:
            members = frozenset(group)
            if members in seen:  # the same group twice is one need, not two
                continue
            seen.add(members)
            gain = max((self.relevant[m] for m in group if m in self.relevant), default=1.0)
            if gain > 0:
                reqs.append(Requirement(members, gain))
        return tuple(reqs)

    @property
    def no_answer(self) -> bool:
        """True when nothing in the catalog fits: any result at all is a false positive."""
        return not self.requirements


def _parse_relevant(raw: Any, where: str) -> dict[str, float]:
    if raw is None:
        return {}
    if isinstance(raw, list):
        if not all(isinstance(i, str) and i for i in raw):
            raise ValueError(f"{where}: 'relevant' must list identifier strings")
        return {normalize_identifier(i): 1.0 for i in raw}
    if isinstance(raw, dict):
        out: dict[str, float] = {}
        for ident, grade in raw.items():
            if isinstance(grade, bool) or not isinstance(grade, int | float) or not math.isfinite(grade) or grade < 0:
                raise ValueError(f"{where}: grade of {ident!r} in 'relevant' must be a number >= 0 (got {grade!r})")
            out[normalize_identifier(ident)] = float(grade)
        return out
    raise ValueError(f"{where}: 'relevant' must be a list of identifiers or an object {{identifier: grade}}, not {type(raw).__name__}")


def _parse_groups(raw: Any, where: str) -> tuple[tuple[str, ...], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ValueError(f"{where}: 'relevant_any_of' must be a list of lists of identifiers")
    groups = []
    for i, group in enumerate(raw):
        if not isinstance(group, list) or not group or not all(isinstance(m, str) and m for m in group):
            raise ValueError(f"{where}: 'relevant_any_of'[{i}] must be a non-empty list of identifier strings")
        groups.append(tuple(dict.fromkeys(normalize_identifier(m) for m in group)))
    return tuple(groups)


def load_queries(path: Path | str) -> list[Judgement]:
    """Read a queries JSONL file; blank lines are skipped, anything else malformed is a `ValueError`."""
    path = Path(path)
    out: list[Judgement] = []
    ids: dict[str, int] = {}
    with path.open(encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                raw = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path.name} line {number}: not valid JSON ({exc.msg})") from None
            try:
                judgement = Judgement.from_json(raw, number)
            except ValueError as exc:
                raise ValueError(f"{path.name} {exc}") from None
            if judgement.id in ids:
                raise ValueError(f"{path.name} line {number}: id {judgement.id!r} already used on line {ids[judgement.id]}")
            ids[judgement.id] = number
            out.append(judgement)
    return out
