"""An agent's tools as a host reads them first: one line each and the shape of the input, not its prose.

A 20-tool MCP server's full `tools/list` runs to several thousand tokens, most of them parameter
descriptions and nested schemas a host needs only for the tool it settles on. The list keeps each tool's
name, the first sentence of its description (at most `MAX_LINE` characters) and an input schema cut to
its top-level properties with their types, enums and `required`; `get_agent_tools(identifier, tool=NAME)`
answers one tool with its full schema.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ard_mcp.invocation.calls import ToolSummary

MAX_LINE = 120
MAX_ENUM = 8
_SENTENCE = re.compile(r"(?<=[.!?])\s")


def one_line(text: str | None) -> str | None:
    """The first sentence (or line) of a description, at most `MAX_LINE` characters."""
    if not text or not text.strip():
        return None
    line = _SENTENCE.split(text.strip().splitlines()[0], maxsplit=1)[0]
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 1].rstrip() + "…"


def _shape(schema: Any) -> dict[str, Any]:
    """One property's type, and its enum (or its items' type) where short."""
    if not isinstance(schema, Mapping):
        return {}
    found: dict[str, Any] = {k: schema[k] for k in ("type", "format") if isinstance(schema.get(k), str | list)}
    enum = schema.get("enum")
    if isinstance(enum, list) and len(enum) <= MAX_ENUM:
        found["enum"] = enum
    items = schema.get("items")
    if isinstance(items, Mapping) and isinstance(items.get("type"), str):
        found["items"] = {"type": items["type"]}
    return found


def compact_schema(schema: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not isinstance(schema, Mapping):
        return None
    properties = schema.get("properties")
    found: dict[str, Any] = {"type": schema.get("type", "object")}
    if isinstance(properties, Mapping):
        found["properties"] = {str(name): _shape(value) for name, value in properties.items()}
    required = schema.get("required")
    if isinstance(required, list) and required:
        found["required"] = required
    return found


def compact(tool: ToolSummary) -> ToolSummary:
    return ToolSummary(name=tool.name, description=one_line(tool.description), inputSchema=compact_schema(tool.inputSchema))
