"""Text for a terminal: control characters shown as escapes, never sent raw.

What the command line prints is largely other people's text: identifiers and tool names callers sent (the
invocation log keeps refused calls too), entries publishers wrote, URLs and reasons a crawl met. A terminal
acts on control characters: `\\x1b]0;PWNED\\x07\\x1b[2J` in an identifier retitled the window and cleared
the screen of the operator running `ard-mcp invocations` (issue #44); a bidirectional override makes a line
read as something else; a line break forges a row. So everything printed to a terminal goes through
`shown` (plain text) or `shown_json` (a JSON document), and the characters that are not text -- controls
(C0, DEL, C1), format characters (bidirectional overrides, zero-width characters, tags), line and paragraph
separators, lone surrogates -- are written as escapes: `\\x1b`, `\\u202e`. `shown_json` writes them as
JSON's `\\u` escapes, so the document is the same JSON and a program reading it gets the same strings.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

_NOT_TEXT = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_JSON_WHITESPACE = frozenset("\n\r\t")  # raw in JSON text only between tokens: json escapes them inside strings


def shown(text: str) -> str:
    """`text` with every character that is not text written as a Python-style escape (`\\x1b`, `\\u202e`)."""
    return _escaped(text, frozenset(), _python_escape)


def shown_json(text: str) -> str:
    """A JSON document with every character that is not text written as a JSON escape (`\\u001b`); the
    line breaks and indentation between its tokens stay."""
    return _escaped(text, _JSON_WHITESPACE, _json_escape)


def _escaped(text: str, keep: frozenset[str], escape: Callable[[int], str]) -> str:
    if text.isprintable():  # the common case, checked at C speed: nothing to escape
        return text
    return "".join(escape(ord(c)) if c not in keep and unicodedata.category(c) in _NOT_TEXT else c for c in text)


def _python_escape(code: int) -> str:
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _json_escape(code: int) -> str:
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # a UTF-16 surrogate pair: the only way JSON escapes a character beyond the BMP
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
