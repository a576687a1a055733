"""How every MCP tool and resource answers: compact JSON text (beside the same object as structured content,
for a tool).

The SDK's own text mirror is indented, and a host model pays for every run of spaces in tokens (+25-30% on
a search page; an entry read as the `ard://agents/{identifier}` resource was 12,269 characters indented
against 7,071 from `get_agent`)."""

from __future__ import annotations

import json
from typing import Any

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel


def compact_result(result: BaseModel, is_error: bool = False) -> CallToolResult:
    """A result as compact JSON text and the same object as structured content (a CallToolResult passes
    through the SDK, which still checks its structured content against the output schema unless `is_error`)."""
    structured = result.model_dump(mode="json", by_alias=True)
    text = TextContent(type="text", text=compact_json(structured))
    return CallToolResult(content=[text], structured_content=structured, is_error=is_error)


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
