"""Keeping the operator's secrets out of everything ard-mcp says: a known secret value is replaced by
`[redacted]` in text that goes to a host, a REST body, the audit log or a package server's stderr file.

A package server is given its secrets (`packages.environment`) and may print them: one that wrote its key to
stderr and exited put the key in the tool error, in front of the model, in the REST 502 body and in the
audit log (issue #53). The server's own answer may hold it too. So every text an invocation gives back is
passed through the `Redactor` of the secrets the operator configured (the package secrets file, the
`ARD_MCP_PACKAGE_*` values, the agents' credentials file), and a server's stderr is written through a
`StreamRedactor`, whose carry holds back the bytes a secret split across two reads could begin with.

Values shorter than `MIN_LENGTH` characters are not redacted: a value like `1` or `info` (a package setting,
not a secret) would otherwise be cut out of every text, and a secret that short is guessed, not leaked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

REDACTED = "[redacted]"
MIN_LENGTH = 6


class Redactor:
    """Replaces each known secret (the longest first, so one that contains another goes whole)."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        found = sorted({s for s in secrets if len(s) >= MIN_LENGTH}, key=len, reverse=True)
        self.secrets = tuple(found)
        self._text = re.compile("|".join(map(re.escape, found))) if found else None
        self._bytes = re.compile(b"|".join(re.escape(s.encode()) for s in found)) if found else None

    def __bool__(self) -> bool:
        return self._text is not None

    def text(self, text: str) -> str:
        return self._text.sub(REDACTED, text) if self._text is not None else text

    def value(self, value: Any) -> Any:
        """`value` (JSON: dicts, lists, strings, numbers) with every string redacted, keys included."""
        if self._text is None:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(k) if isinstance(k, str) else k: self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value

    def stream(self) -> StreamRedactor:
        return StreamRedactor(self)

    def redact_bytes(self, data: bytes) -> bytes:
        return self._bytes.sub(REDACTED.encode(), data) if self._bytes is not None else data


class StreamRedactor:
    """Redacts a byte stream read in chunks: `feed` returns what can be written now, `flush` the rest."""

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._hold = max((len(s.encode()) for s in redactor.secrets), default=1) - 1
        self._carry = b""

    def feed(self, chunk: bytes) -> bytes:
        data = self._redactor.redact_bytes(self._carry + chunk)
        cut = max(0, len(data) - self._hold)
        self._carry = data[cut:]
        return data[:cut]

    def flush(self) -> bytes:
        data, self._carry = self._redactor.redact_bytes(self._carry), b""
        return data
