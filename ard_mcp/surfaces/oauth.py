"""Bearer JWTs from an OAuth authorization server, for hosted registries where a static token file does
not scale: verified against the issuer's signing keys (JWKS), its `iss`, this registry's audience and
`exp`, and turned into the `Principal` the token file's lines give, so REST routes and MCP tools check
writes the same way whichever kind of token a caller brings.

Scopes name the publishers a token may write: `ard:publish:example.com`, `ard:publish:*.example.org`,
`ard:publish:*` for an operator (read from `scope`, space-separated, or `scp`, a list). A valid token
without them identifies its caller (Xu `detail=full`) and may write nothing.

`TokenStore`, which asks this for the tokens its file does not name, is the MCP SDK's `TokenVerifier`.
Keys are fetched with httpx from `jwks_uri` (found through the issuer's OpenID / OAuth metadata unless
given) and kept; a token signed with a key not yet seen refetches them, at most once a minute, so random
`kid`s cannot make the registry hammer the issuer.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import jwt

from ard_mcp.formats.bounded_json import read_json
from ard_mcp.invocation.policy import INVOKE_SCOPE
from ard_mcp.surfaces.auth import SCOPE_PREFIX, Principal, parse_publishers

log = logging.getLogger(__name__)

ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA")
REFETCH_AFTER = 60.0  # seconds between JWKS fetches triggered by an unknown key
_TIMEOUT = 5.0
_MAX_DOCUMENT_BYTES = 1024 * 1024  # an issuer's metadata or key set: a few KB
_METADATA = ("/.well-known/openid-configuration", "/.well-known/oauth-authorization-server")


@dataclass
class JwtVerifier:
    issuer: str
    audience: str
    jwks_url: str | None = None  # None: from the issuer's metadata
    leeway: float = 30.0  # clock skew allowed on exp / nbf / iat
    _keys: dict[str, Any] = field(default_factory=dict)
    _fetched: float = float("-inf")
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def principal(self, token: str) -> Principal | None:
        """The caller a valid token names; None for anything else (bad signature, issuer, audience, expired)."""
        claims = self.claims(token)
        if claims is None:
            return None
        return Principal(f"oauth:{claims['sub']}", publishers_of(claims), invoke=INVOKE_SCOPE in _scopes(claims))

    def claims(self, token: str) -> dict[str, Any] | None:
        try:
            header = jwt.get_unverified_header(token)
            key = self._key(header.get("kid"))
            if key is None:
                return None
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=list(ALGORITHMS),
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway,
                options={"require": ["exp", "iss", "sub", "aud"]},
            )
        except jwt.PyJWTError as exc:
            log.info("bearer JWT refused: %s", exc)
            return None
        return claims

    def prefetch(self) -> None:
        """Fetch the signing keys now (at start), not on the first write: a fetch blocks its caller."""
        with self._lock:
            self._fetch()
        if not self._keys:
            raise ValueError(f"no signing keys could be fetched for the issuer {self.issuer}")

    def _key(self, kid: str | None) -> Any:
        with self._lock:
            if self._find(kid) is None and time.monotonic() - self._fetched >= REFETCH_AFTER:
                self._fetch()
            return self._find(kid)

    def _find(self, kid: str | None) -> Any:
        """The key a token names by `kid`; a token naming none can only mean the issuer's one key."""
        if kid is not None:
            return self._keys.get(kid)
        return next(iter(self._keys.values())) if len(self._keys) == 1 else None

    def _fetch(self) -> None:
        self._fetched = time.monotonic()
        try:
            url = self.jwks_url or self._discover()
            response = httpx.get(url, timeout=_TIMEOUT, follow_redirects=False)
            response.raise_for_status()
            document = read_json(response.content, max_bytes=_MAX_DOCUMENT_BYTES)
            if not isinstance(document, dict):  # PyJWT would fail on it with an AttributeError
                raise ValueError(f"{url} is not a JWK Set (a JSON object with keys)")
            keys = jwt.PyJWKSet.from_dict(document).keys
        except (httpx.HTTPError, ValueError, jwt.PyJWTError) as exc:
            log.warning("could not fetch the signing keys of %s: %s", self.issuer, exc)
            return
        self._keys = {str(k.key_id or f"#{i}"): k for i, k in enumerate(keys)}

    def _discover(self) -> str:
        """`jwks_uri` from the issuer's metadata (OpenID Connect discovery, then RFC 8414)."""
        for path in _METADATA:
            response = httpx.get(self.issuer.rstrip("/") + path, timeout=_TIMEOUT, follow_redirects=False)
            if response.status_code == 200:
                metadata = read_json(response.content, max_bytes=_MAX_DOCUMENT_BYTES)
                uri = metadata.get("jwks_uri") if isinstance(metadata, dict) else None
                if isinstance(uri, str):
                    self.jwks_url = uri
                    return uri
        raise ValueError(f"{self.issuer} publishes no jwks_uri in its metadata; pass --oauth-jwks-url")


def _scopes(claims: dict[str, Any]) -> list[str]:
    scope = claims.get("scope")
    scp = claims.get("scp")
    found = scope.split() if isinstance(scope, str) else []
    found += [s for s in scp if isinstance(s, str)] if isinstance(scp, list) else []
    return found


def publishers_of(claims: dict[str, Any]) -> tuple[str, ...]:
    """The publisher patterns a token's `ard:publish:` scopes grant; invalid ones are ignored and logged."""
    found: list[str] = []
    for scope in _scopes(claims):
        if scope.startswith(SCOPE_PREFIX):
            try:
                found += parse_publishers(scope.removeprefix(SCOPE_PREFIX), f"scope {scope!r}")
            except ValueError as exc:
                log.info("ignoring %s", exc)
    return tuple(found)
