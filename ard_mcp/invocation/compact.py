"""An agent's tools as a host reads them first: one line each, not the manual.

A 20-tool MCP server's full `tools/list` runs to several thousand tokens, most of them parameter
descriptions and nested schemas a host needs only for the tool it settles on; even its schemas cut to the
top-level properties cost 100-150 tokens a tool as JSON (`bench/invocation.py`). A listed tool is its name,
the first sentence of its description (at most `MAX_LINE` characters) and its arguments as one signature
line, `city: string, days?: integer, unit?: celsius|fahrenheit`; `get_agent_tools(identifier, tool=NAME)`
answers one tool with its whole description and full input schema.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ard_mcp.invocation.calls import ToolSummary

MAX_LINE = 100
MAX_ENUM = 6
_SENTENCE = re.compile(r"(?<=[.!?])\s")


def one_line(text: str | None) -> str | None:
    """The first sentence (or line) of a description, at most `MAX_LINE` characters."""
    if not text or not text.strip():
        return None
    line = _SENTENCE.split(text.strip().splitlines()[0], maxsplit=1)[0]
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 1].rstrip() + "…"


def _type(schema: Any) -> str:
    """One property's type in a word: its short enum, `array of T`, or the JSON type(s)."""
    if not isinstance(schema, Mapping):
        return "any"
    enum = schema.get("enum")
    if isinstance(enum, list) and 0 < len(enum) <= MAX_ENUM:
        return "|".join(str(v) for v in enum)
    kind = schema.get("type")
    if kind == "array" and isinstance(schema.get("items"), Mapping):
        return f"{_type(schema['items'])}[]"
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    return str(kind) if isinstance(kind, str) else "any"


def signature(schema: Mapping[str, Any] | None) -> str | None:
    """`name: type` for each top-level property of an input schema, optional ones marked `?`."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping):
        return None
    required = schema.get("required") if isinstance(schema, Mapping) else None
    needed = set(required) if isinstance(required, list) else set()
    return ", ".join(f"{name}{'' if name in needed else '?'}: {_type(value)}" for name, value in properties.items())


def compact(tool: ToolSummary) -> ToolSummary:
    return ToolSummary(name=tool.name, description=one_line(tool.description), arguments=signature(tool.inputSchema))
