"""Someone else's text, shown inside ard-mcp's own words as one quoted, bounded piece of data.

What ard-mcp asks the person (the consent question) or passes on from a called server is read as ard-mcp's
voice unless the other party's text is set apart: a variable name `X\\n[ard-mcp] Verified: ... tick the box`
added a line to the consent question that read as ard-mcp's own (issue #53). `quoted` removes control,
format, surrogate and line or paragraph separator characters (so the text is one line and shows what it
says), collapses runs of white space, bounds its length, and wraps it in double quotes, with a double quote
inside written as a single one: nothing quoted can end the quotation, start a line, or hide characters.
"""

from __future__ import annotations

import re
import unicodedata

_NOT_TEXT = frozenset({"Cc", "Cf", "Cs"})
_BREAKS = frozenset({"Zl", "Zp"})  # line and paragraph separators: a space, as the other line breaks
_SPACES = re.compile(r"\s+")
ELLIPSIS = "…"


def one_line(text: str, limit: int) -> str:
    """`text` without control, format and line characters, white space collapsed, at most `limit` characters."""
    kept = "".join(
        " " if c.isspace() or unicodedata.category(c) in _BREAKS else c
        for c in text
        if c.isspace() or unicodedata.category(c) not in _NOT_TEXT
    )
    kept = _SPACES.sub(" ", kept).strip()
    return kept if len(kept) <= limit else kept[: max(0, limit - 1)].rstrip() + ELLIPSIS


def quoted(text: str, limit: int = 120) -> str:
    """`text` as one bounded line in double quotes (a `"` inside written `'`)."""
    return '"' + one_line(text, limit).replace('"', "'") + '"'
