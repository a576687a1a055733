"""Who may write: bearer tokens from a token file, checked the same way for REST routes and MCP write tools.

The file has one token per line, optionally preceded by a name (`ci-publisher 3f9c...`); blank lines and
`#` comments are ignored. A request proves itself with `Authorization: Bearer <token>` and is answered
with the `Principal` the token names. Today any principal may write any entry; per-publisher ownership
will attach publisher domains to principals and pass the principal to the registry's write methods,
without changing how tokens are read or checked.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ard_mcp.errors import Unauthenticated

log = logging.getLogger(__name__)

MIN_TOKEN_CHARS = 16
ANONYMOUS = "anonymous"


@dataclass(frozen=True)
class Principal:
    """The caller a valid token names (`anonymous` when the registry has no tokens)."""

    name: str


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class TokenStore:
    """Token digests and the principals they name; only digests are kept in memory."""

    def __init__(self, tokens: Mapping[str, str] | None = None) -> None:
        """`tokens` maps each token to its principal's name."""
        self._entries = [(_digest(token), Principal(name)) for token, name in (tokens or {}).items()]

    @classmethod
    def load(cls, path: Path) -> TokenStore:
        """Read a token file; a missing, empty or weak file is an error, never "no tokens"."""
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"token file {path}: {exc.strerror or exc}") from None
        if path.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            log.warning("token file %s is readable by other users; chmod 600 it", path)
        tokens: dict[str, str] = {}
        for number, line in enumerate(text.splitlines(), 1):
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            if len(fields) > 2:
                raise ValueError(f"token file {path}, line {number}: expected '[name] token'")
            name, token = (fields[0], fields[1]) if len(fields) == 2 else (f"token-{number}", fields[0])
            if len(token) < MIN_TOKEN_CHARS:
                raise ValueError(f"token file {path}, line {number}: tokens must be at least {MIN_TOKEN_CHARS} characters")
            tokens[token] = name
        if not tokens:
            raise ValueError(f"token file {path} holds no tokens")
        return cls(tokens)

    @property
    def configured(self) -> bool:
        return bool(self._entries)

    def principal(self, headers: Mapping[str, str] | None) -> Principal | None:
        """The principal a request's bearer token names; None without a valid one (or with no tokens)."""
        if headers is None:
            return None
        value = headers.get("authorization") or headers.get("Authorization") or ""
        scheme, _, token = value.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        digest = _digest(token.strip())
        found = None
        for known, principal in self._entries:  # compare with every token: timing says nothing about which
            if hmac.compare_digest(known, digest):
                found = principal
        return found

    def writer(self, headers: Mapping[str, str] | None) -> Principal:
        """The principal allowed to write, or `Unauthenticated` (401) when tokens are configured and none is valid."""
        if not self.configured:
            return Principal(ANONYMOUS)
        principal = self.principal(headers)
        if principal is None:
            raise Unauthenticated("this registry requires 'Authorization: Bearer <token>' for writes; the request had no valid token")
        return principal

    def may_see_everything(self, headers: Mapping[str, str] | None) -> bool:
        """Whether Xu `detail=full` may include authentication details: always on an open registry."""
        return not self.configured or self.principal(headers) is not None
