"""How every MCP tool answers: compact JSON text beside the same object as structured content.

The SDK's own text mirror is indented, and a host model pays for every run of spaces in tokens (+25-30% on
a search page)."""

from __future__ import annotations

import json

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel


def compact_result(result: BaseModel) -> CallToolResult:
    """A result as compact JSON text and the same object as structured content (a CallToolResult passes
    through the SDK, which still checks its structured content against the output schema)."""
    structured = result.model_dump(mode="json", by_alias=True)
    text = TextContent(type="text", text=json.dumps(structured, ensure_ascii=False, separators=(",", ":")))
    return CallToolResult(content=[text], structured_content=structured)
