"""An agent's tools as a host reads them first: one line each, not the manual.

A 20-tool MCP server's full `tools/list` runs to several thousand tokens, most of them parameter
descriptions and nested schemas a host needs only for the tool it settles on; even its schemas cut to the
top-level properties cost 100-150 tokens a tool as JSON (`bench/invocation.py`). A listed tool is its name,
the first sentence of its description (at most `MAX_LINE` characters, cut at a word) and its arguments as one
signature line, `city: string, days?: integer, unit?: celsius|fahrenheit`: the required ones all, the first
`MAX_OPTIONAL` optional ones and a count of the rest; an enum of more than `MAX_ENUM` values or of long ones
shows a few of its values and a count, a nullable type (`anyOf` with null) its other type.
`get_agent_tools(identifier, tool=NAME)` answers one tool with its whole description and full input schema.

Measured on the benchmark catalogs' largest servers (`bench/invocation.py`, bundled tokenizer): the 35-tool
office-powerpoint server took 2,700 tokens and the 25-tool mcp-server-chart 2,120 with every argument and a
100-character line, 1,540 and 1,700 per 20 tools; with these bounds 2,400 and 1,920, 1,370 and 1,540 per 20
tools. The 22-tool opgg server grew from 1,200 to 1,440: its enums of 18 to 170 values read `string` before.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ard_mcp.invocation.calls import ToolSummary

MAX_LINE = 80
MAX_ENUM = 6  # an enum of this many values at most is shown whole, where they fit in MAX_ENUM_CHARS
MAX_ENUM_CHARS = 40
ENUM_SAMPLE = 3  # of a longer one, this many values at most, in SAMPLE_CHARS, and a count of the rest
SAMPLE_CHARS = 24
MAX_OPTIONAL = 5  # optional arguments listed before "+N optional"
_SENTENCE = re.compile(r"(?<=[.!?])\s")


def one_line(text: str | None) -> str | None:
    """The first sentence (or line) of a description, at most `MAX_LINE` characters."""
    if not text or not text.strip():
        return None
    line = _SENTENCE.split(text.strip().splitlines()[0], maxsplit=1)[0]
    return line if len(line) <= MAX_LINE else _cut(line, MAX_LINE)


def _cut(text: str, limit: int) -> str:
    """`text` cut to `limit` characters with an ellipsis, at a word where one ends in the second half."""
    head = text[: limit - 1]
    space = head.rfind(" ")
    return (head[:space] if space > limit // 2 else head).rstrip(" ,;:") + "…"


def _enum(values: list[Any]) -> str:
    """`a|b|c`, or its first values and how many more: `a|b|c|…(+12)`."""
    texts = [str(v) for v in values]
    if len(texts) <= MAX_ENUM and len("|".join(texts)) <= MAX_ENUM_CHARS:
        return "|".join(texts)
    shown: list[str] = []
    for text in texts[:ENUM_SAMPLE]:
        if len("|".join([*shown, text])) > SAMPLE_CHARS:
            break
        shown.append(text)
    if not shown:
        shown = [_cut(texts[0], SAMPLE_CHARS)]
    rest = len(values) - len(shown)
    return "|".join(shown) + (f"|…(+{rest})" if rest else "")


def _type(schema: Any) -> str:
    """One property's type in a word: its enum (`_enum`), `T[]` for an array, the type of a nullable one, or
    the JSON type(s)."""
    if not isinstance(schema, Mapping):
        return "any"
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return _enum(enum)
    choices = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(choices, list):
        kinds = list(dict.fromkeys(_type(c) for c in choices if not (isinstance(c, Mapping) and c.get("type") == "null")))
        return "|".join(kinds) if kinds else "null"
    kind = schema.get("type")
    if kind == "array" and isinstance(schema.get("items"), Mapping):
        return f"{_type(schema['items'])}[]"
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    return str(kind) if isinstance(kind, str) else "any"


def signature(schema: Mapping[str, Any] | None) -> str | None:
    """`name: type` for each required top-level property of an input schema, then the first `MAX_OPTIONAL`
    optional ones marked `?` and how many more there are; None where the schema has no properties."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping) or not properties:
        return None
    required = schema.get("required") if isinstance(schema, Mapping) else None
    needed = set(required) if isinstance(required, list) else set()
    optional = [name for name in properties if name not in needed]
    shown = [f"{name}: {_type(value)}" for name, value in properties.items() if name in needed]
    shown += [f"{name}?: {_type(properties[name])}" for name in optional[:MAX_OPTIONAL]]
    rest = len(optional) - MAX_OPTIONAL
    return ", ".join(shown + ([f"+{rest} optional"] if rest > 0 else []))


def compact(tool: ToolSummary) -> ToolSummary:
    return ToolSummary(name=tool.name, description=one_line(tool.description), arguments=signature(tool.inputSchema))
