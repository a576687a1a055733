"""Who may write: bearer tokens from a token file, checked the same way for REST routes and MCP write tools.

The file has one token per line: `[name] token [publishers [invoke]]`, blank lines and `#` comments ignored.
`publishers` is a comma-separated list of the publisher domains the token may create, update and delete
entries of (`example.com,*.example.org`; `*` for an operator; `-` for none); a line without it may write
every publisher's entries, as before scoping existed, and is warned about at start. A fourth column
`invoke` lets the token call agents through the registry (`ard_mcp.invocation.policy`). A request proves itself
with `Authorization: Bearer <token>` and is answered with the `Principal` the token names, whose
`may_write` the registry's write methods check against the entry's publisher (an adversarial test found
any token could overwrite or delete any publisher's entry).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import anyio

from ard_mcp.errors import Unauthenticated
from ard_mcp.formats.identifiers import is_publisher_domain
from ard_mcp.invocation.policy import INVOKE_SCOPE, Caller
from ard_mcp.search.visibility import ANONYMOUS as NOBODY
from ard_mcp.search.visibility import EVERYONE, Viewer
from ard_mcp.secret_files import read_secrets

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken

log = logging.getLogger(__name__)

MIN_TOKEN_CHARS = 16
ANONYMOUS = "anonymous"


EVERY_PUBLISHER = ("*",)
SCOPE_PREFIX = "ard:publish:"  # an OAuth scope naming a publisher pattern a token may write
INVOKE = "invoke"  # the token file's fourth column


@dataclass(frozen=True)
class Principal:
    """The caller a valid token names (`anonymous` when the registry has no tokens), and the publisher
    domains it may write: `example.com` itself, `*.example.org` its subdomains, `*` every publisher."""

    name: str
    publishers: tuple[str, ...] = EVERY_PUBLISHER
    invoke: bool = False  # may call agents through the registry (token file column `invoke`, OAuth scope `ard:invoke`)

    def may_write(self, publisher: str) -> bool:
        publisher = publisher.lower()
        return any(p in ("*", publisher) or (p.startswith("*.") and publisher.endswith(p[1:])) for p in self.publishers)


def parse_publishers(text: str, where: str) -> tuple[str, ...]:
    """A token's third column: `*`, or domains and `*.`-prefixed domains, comma-separated; `-` for none."""
    if text.strip() == "-":
        return ()
    found = tuple(p.strip().lower() for p in text.split(",") if p.strip())
    for pattern in found:
        if pattern != "*" and not is_publisher_domain(pattern.removeprefix("*.")):
            raise ValueError(f"{where}: {pattern!r} is not a publisher domain (example.com, *.example.org or *)")
    if not found:
        raise ValueError(f"{where}: the publishers column is empty")
    return found


class BearerVerifier(Protocol):
    """Another source of principals: a bearer token no line of the file names (`oauth.JwtVerifier`)."""

    def principal(self, token: str) -> Principal | None: ...


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class TokenStore:
    """Token digests and the principals they name; only digests are kept in memory."""

    def __init__(self, tokens: Mapping[str, str | Principal] | None = None, verifier: BearerVerifier | None = None) -> None:
        """`tokens` maps each token to its principal (or just its name: then it may write every publisher);
        `verifier` answers for the other bearer tokens (JWTs from an OAuth issuer)."""
        self._entries = [(_digest(t), p if isinstance(p, Principal) else Principal(p)) for t, p in (tokens or {}).items()]
        self._verifier = verifier

    @classmethod
    def load(cls, path: Path) -> TokenStore:
        """Read a token file; a missing, empty or weak file is an error, never "no tokens"."""
        tokens: dict[str, str | Principal] = {}
        for number, line in enumerate(read_secrets(path, "token file").splitlines(), 1):
            fields = line.split("#", 1)[0].split()
            where = f"token file {path}, line {number}"
            if not fields:
                continue
            if len(fields) > 4 or (len(fields) == 4 and fields[3] != INVOKE):
                raise ValueError(f"{where}: expected '[name] token [publisher domains [invoke]]'")
            name, token = (fields[0], fields[1]) if len(fields) >= 2 else (f"token-{number}", fields[0])
            if len(token) < MIN_TOKEN_CHARS:
                raise ValueError(f"{where}: tokens must be at least {MIN_TOKEN_CHARS} characters")
            if len(fields) >= 3:
                tokens[token] = Principal(name, parse_publishers(fields[2], where), invoke=len(fields) == 4)
            else:
                log.warning("%s: %s may write the entries of every publisher; add a third column (example.com,*.example.org)", where, name)
                tokens[token] = name
        if not tokens:
            raise ValueError(f"token file {path} holds no tokens")
        return cls(tokens)

    def with_verifier(self, verifier: BearerVerifier) -> TokenStore:
        store = TokenStore(verifier=verifier)
        store._entries = self._entries
        return store

    @property
    def configured(self) -> bool:
        return bool(self._entries) or self._verifier is not None

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
        if found is None and self._verifier is not None and token.count(".") == 2:  # a JWT: header.payload.signature
            found = self._verifier.principal(token.strip())
        return found

    def writer(self, headers: Mapping[str, str] | None, needed_for: str = "writes") -> Principal:
        """The principal allowed to write, or to do what else needs a credential, or `Unauthenticated` (401)
        when tokens are configured and none is valid. `needed_for` names what was refused: a read of the
        invocation log told it required a token "for writes" sent its caller looking for the wrong thing."""
        if not self.configured:
            return Principal(ANONYMOUS)
        principal = self.principal(headers)
        if principal is None:
            raise Unauthenticated(
                f"this registry requires 'Authorization: Bearer <token>' for {needed_for}; the request had no valid token"
            )
        return principal

    async def verify_token(self, token: str) -> AccessToken | None:
        """The MCP SDK's `TokenVerifier`, for an MCP endpoint that demands a token (`--mcp-requires-token`):
        token-file tokens and JWTs alike, their publishers as `ard:publish:` scopes."""
        from mcp.server.auth.provider import AccessToken

        principal = await anyio.to_thread.run_sync(self.principal, {"authorization": f"Bearer {token}"})
        if principal is None:
            return None
        scopes = [SCOPE_PREFIX + p for p in principal.publishers] + ([INVOKE_SCOPE] if principal.invoke else [])
        return AccessToken(token=token, client_id=principal.name, scopes=scopes)

    def caller(self, headers: Mapping[str, str] | None) -> Caller:
        """Who calls an agent, for the invocation policy: on a registry without credentials the local caller
        of an open registry (the policy's `--allow-invocation` decides); else the token's principal, or
        `Unauthenticated` (401) without a valid one."""
        return self.caller_for(self.writer(headers, "calling agents"))

    def caller_for(self, principal: Principal) -> Caller:
        """The caller `principal` is, however it proved itself (a bearer token, the web page's sign-in)."""
        return Caller(principal.name, principal.invoke or not self.configured)

    def viewer(self, headers: Mapping[str, str] | None) -> Viewer:
        """Who may see what (`metadata.visibleTo`): the token's principal; anonymous without a valid one; on
        a registry without credentials everyone, since nobody could prove to be anyone."""
        return self.viewer_for(self.principal(headers))

    def viewer_for(self, principal: Principal | None) -> Viewer:
        """What `principal` may see, however it proved itself (a bearer token, the web page's sign-in)."""
        if not self.configured:
            return EVERYONE
        return NOBODY if principal is None else Viewer(principal.name, principal.may_write)

    def may_see_everything(self, headers: Mapping[str, str] | None) -> bool:
        """Whether Xu `detail=full` may include authentication details: always on an open registry."""
        return not self.configured or self.principal(headers) is not None
