"""How the HTTP guard hands a rate-limit refusal to the operation it refuses, instead of answering it itself.

Over MCP, a 429 on the transport reached the host as `-32603 Server returned an error response`: the host
could not tell the limit from a failure, nor when to retry. And an invocation the limit refused left no line
in the audit log. So an MCP tool call, and an invocation on any surface, is let through with the refusal in a
header of the registry's own (one a client sends is dropped first): the MCP tool answers a tool error naming
the limit and the retry time, the invoker audits the refusal, the REST route answers 429 with `Retry-After`.
"""

from __future__ import annotations

from collections.abc import Mapping

from ard_mcp.errors import RateLimited

HEADER = "ard-mcp-over-limit"
_RAW = HEADER.encode()


def without_marker(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """A request's headers without the marker: only the guard sets it."""
    return [(k, v) for k, v in headers if k.lower() != _RAW]


def marked(headers: list[tuple[bytes, bytes]], refusal: RateLimited) -> list[tuple[bytes, bytes]]:
    """The headers with the refusal added: `SECONDS REASON`."""
    return [*without_marker(headers), (_RAW, f"{refusal.retry_after} {refusal.reason}".encode("ascii", "replace"))]


def refusal(headers: Mapping[str, str] | None) -> RateLimited | None:
    """The refusal the guard marked the request with, or None (stdio and the command line have no headers)."""
    value = headers.get(HEADER) if headers is not None else None
    if not value:
        return None
    seconds, _, reason = value.partition(" ")
    return RateLimited(reason, int(seconds)) if seconds.isdigit() else None
