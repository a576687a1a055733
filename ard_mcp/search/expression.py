"""ARD Appendix A filter expressions, the `filter` parameter of `GET /agents`.

    type = 'application/mcp-server-card+json,application/a2a-agent-card+json' AND createdAfter > '2026-01-01'

Conditions are joined by `AND`; a condition is `field op value[,value...]`; comma means OR within a
condition. Appendix A names `displayName` (case-insensitive: entries whose name contains a value),
`type`, `publisherId`, `createdAfter` and `updatedAfter` (ISO 8601; a date alone means midnight UTC);
any §7.1 filter key (`tags`, `capabilities`, `metadata.<key>`, ...) is accepted too, compared exactly.
A malformed expression is refused with the position and what was expected, never half-applied.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ard_mcp.errors import InvalidArgument
from ard_mcp.formats.timestamps import parse_date_or_timestamp
from ard_mcp.search.filters import check_field

MAX_EXPRESSION_CHARS = 2000
_TOKEN = re.compile(
    r"""\s*(?:
        (?P<quoted>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
      | (?P<op>>=|=|>|:)
      | (?P<comma>,)
      | (?P<word>[^\s,'"=>:]+(?::[^\s,'"=>]+)*)
    )""",
    re.VERBOSE,
)
_DATE_FIELDS = {"createdafter": "created_after", "updatedafter": "updated_after"}
_ALIASES = {"publisherid": "publisher", "publisher": "publisher", "type": "type", "displayname": "displayName", "name": "displayName"}
_SPLIT_QUOTED = {"type", "publisher"}  # their values never contain commas, so 'a,b' inside quotes is a list too


@dataclass
class Expression:
    """A parsed expression: exact conditions (ANDed; values ORed), name patterns, time bounds."""

    equals: list[tuple[str, list[str]]] = field(default_factory=list)
    names: list[list[str]] = field(default_factory=list)
    created_after: datetime | None = None
    updated_after: datetime | None = None

    def key(self) -> dict[str, Any]:
        """A JSON-able canonical form, to bind page tokens to the expression they page through."""
        return {
            "equals": self.equals,
            "names": self.names,
            "created_after": self.created_after.isoformat() if self.created_after else None,
            "updated_after": self.updated_after.isoformat() if self.updated_after else None,
        }


def _timestamp(value: str, name: str) -> datetime:
    try:
        return parse_date_or_timestamp(value)
    except ValueError as exc:
        raise InvalidArgument(
            f"filter: {name} needs an ISO 8601 date or date-time, e.g. '2026-01-01' or '2026-01-01T00:00:00Z' (got {value!r}, which {exc})"
        ) from None


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out: list[tuple[str, str, int]] = []
    position = 0
    while position < len(text):
        if text[position:].strip() == "":
            break
        match = _TOKEN.match(text, position)
        if not match or match.end() == position:
            raise InvalidArgument(f"filter: unexpected character {text[position:].lstrip()[:1]!r} at position {position + 1}")
        kind = match.lastgroup or "word"
        value = match.group(kind)
        if kind == "quoted":
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        out.append((kind, value, match.start(kind) + 1))
        position = match.end()
    return out


def parse_expression(text: str | None) -> Expression:
    """Parse an Appendix A expression; empty means no constraint."""
    parsed = Expression()
    if text is None or not text.strip():
        return parsed
    if len(text) > MAX_EXPRESSION_CHARS:
        raise InvalidArgument(f"filter: must be at most {MAX_EXPRESSION_CHARS} characters (got {len(text)})")
    tokens = _tokens(text)
    i = 0

    def expect(kind: str, what: str) -> tuple[str, str, int]:
        nonlocal i
        if i >= len(tokens) or tokens[i][0] not in kind.split("|"):
            got = f"{tokens[i][1]!r} at position {tokens[i][2]}" if i < len(tokens) else "the end of the expression"
            raise InvalidArgument(f"filter: expected {what}, got {got} (syntax: field = 'value' [AND field = 'value' ...])")
        i += 1
        return tokens[i - 1]

    while True:
        _, name, _ = expect("word", "a field name")
        _, op, _ = expect("op", "an operator (=, : or >)")
        values: list[tuple[str, str]] = [expect("word|quoted", "a value")[:2]]
        while i < len(tokens) and tokens[i][0] == "comma":
            i += 1
            values.append(expect("word|quoted", "a value after ','")[:2])
        _condition(parsed, name, op, values)
        if i >= len(tokens):
            return parsed
        expect("word", "AND")
        if tokens[i - 1][1].upper() != "AND":
            _, word, position = tokens[i - 1]
            raise InvalidArgument(
                f"filter: expected AND between conditions, got {word!r} at position {position} (use ',' for OR within a field)"
            )


def _condition(parsed: Expression, name: str, op: str, raw: list[tuple[str, str]]) -> None:
    lowered = name.lower()
    if lowered in _DATE_FIELDS:
        if len(raw) != 1:
            raise InvalidArgument(f"filter: {name} takes one timestamp")
        bound = _timestamp(raw[0][1], name)
        current = getattr(parsed, _DATE_FIELDS[lowered])
        setattr(parsed, _DATE_FIELDS[lowered], bound if current is None else max(current, bound))
        return
    if op in {">", ">="}:
        raise InvalidArgument(f"filter: '{op}' applies to createdAfter and updatedAfter only; use '=' for {name}")
    key = _ALIASES.get(lowered, name)
    values: list[str] = []
    for kind, value in raw:
        parts = value.split(",") if kind == "word" or key in _SPLIT_QUOTED else [value]
        values += [p.strip() for p in parts if p.strip()]
    if not values:
        raise InvalidArgument(f"filter: {name} needs at least one non-empty value")
    if key == "displayName":
        parsed.names.append([v.lower() for v in values])
        return
    parsed.equals.append((check_field(key, "filter field"), values))
