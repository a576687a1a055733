"""Publishers' signing keys, fetched through the network layer's `Fetcher` and kept for as long as they say.

Where keys come from: a publisher's JWK Set at `https://<publisher>/.well-known/jwks.json`, a JWK Set at a
URL the trust manifest names, or a `did:web` DID document (`https://<host>/.well-known/did.json`, or
`https://<host>/<path>/did.json` for a DID with a path), whose verification methods' `publicKeyJwk`s are
turned into a JWK Set. Every fetch goes through `ard_mcp.net.fetcher.Fetcher`, so the crawler's network
rules hold here too (no private addresses unless allowed, size caps, timeouts, robots.txt): key URLs come
from documents third parties write, which makes them as dangerous as any other URL the crawler is given.
Key URLs are https: a key fetched over plain http proves nothing about who served it. Nor does one another
origin served: a redirect is followed only within the key URL's origin, so an open redirect on the
publisher's host cannot hand the check an attacker's key (nor one sent over plain http), and the
verification fails with a reason naming where the redirect pointed.

How long keys are kept: `Cache-Control: max-age` when the publisher sends it, else an hour, within
[`min_ttl`, `max_ttl`], and an expired set is asked for again with its ETag / Last-Modified, so an
unchanged one costs a 304. Key rotation: a signature by a key the cached set does not have asks for the set
again (`refetch=True`) — unless it was fetched less than `refetch_interval` ago, so entries naming random
`kid`s cannot make the registry hammer a publisher (and a set just fetched is not fetched twice). A failed
fetch is remembered for `failure_ttl` for the same reason, and one fetch of a URL serves every check waiting
for it.

`origin_for` maps an authority (`host` or `host:port`) to the origin actually fetched; by default
`<scheme>://<authority>`. Tests point `acme.test` at a loopback server with it; the URLs keys are looked up
and reported by stay the publisher's.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anyio

from ard_mcp.formats.bounded_json import UnreadableJson, read_json
from ard_mcp.formats.identifiers import is_publisher_domain
from ard_mcp.net.fetcher import JSON, Fetcher, FetchError
from ard_mcp.trust.status import did_web_location

MAX_KEYS = 64  # keys (or DID verification methods) one document may hold; a real key set has a handful
_PRIVATE_MEMBERS = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth", "k"})  # never needed to verify

OriginFor = Callable[[str], str]
"""Maps an authority (`acme.com`, `acme.com:8443`) to the origin to fetch from (`https://acme.com`)."""
Reader = Callable[[Any, str], dict[str, Any]]


@dataclass(frozen=True)
class CachePolicy:
    """How long key sets are kept, in seconds (see the module docstring)."""

    default_ttl: float = 3600.0  # when the publisher sends no max-age
    min_ttl: float = 60.0  # a no-cache or max-age=0 key set is still kept this long
    max_ttl: float = 86400.0  # revoked keys stop verifying within a day whatever max-age said
    refetch_interval: float = 60.0  # an unknown key fetches a set again only if it was not fetched this recently
    failure_ttl: float = 60.0  # a failed fetch is not retried sooner
    max_sets: int = 1024  # key sets kept at once (the least recently stored go first)


@dataclass
class _Cached:
    jwks: dict[str, Any] | None  # None: the last fetch failed with `error`
    error: FetchError | None
    expires: float
    etag: str | None = None
    last_modified: str | None = None
    fetched: float = -math.inf  # when it was last asked for over the network


def _public(jwk: Mapping[str, Any]) -> dict[str, Any]:
    """The key without private members: a publisher who publishes its private key by mistake still only
    gets the public half used (and PyJWT would otherwise build a private key that cannot verify)."""
    return {k: v for k, v in jwk.items() if k not in _PRIVATE_MEMBERS}


def read_jwks(document: Any, url: str) -> dict[str, Any]:
    """A fetched JWK Set (RFC 7517 §5), its keys' public members only; `FetchError` if it is not one."""
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise FetchError(url, "not a JWK Set (a JSON object with a keys array)")
    keys = [_public(k) for k in document["keys"] if isinstance(k, dict)]
    if len(keys) > MAX_KEYS:
        raise FetchError(url, f"{len(keys)} keys: more than the {MAX_KEYS} a key set may hold here")
    return {"keys": keys}


def read_did_document(did: str) -> Reader:
    """A reader of `did`'s DID document: its `publicKeyJwk` verification methods as a JWK Set.

    Only methods the document authorises for assertions count when it has an `assertionMethod` list (a DID
    document may hold keys for authentication or key agreement that must not sign claims); a document
    without one offers all its methods. Each key is listed under every name a JWS may give it: the method's
    absolute id (`did:web:acme.com#key-1`), `#key-1`, `key-1` and the JWK's own `kid`. Methods with other key
    formats (`publicKeyMultibase`, ...) are skipped. The document's `id` must be the DID itself, as did:web
    requires, so one DID cannot borrow another's document."""
    bare = did.split("#", 1)[0]

    def absolute(ref: str) -> str:
        return bare + ref if ref.startswith("#") else ref

    def read(document: Any, url: str) -> dict[str, Any]:
        if not isinstance(document, dict):
            raise FetchError(url, "not a DID document (a JSON object)")
        if document.get("id") != bare:
            raise FetchError(url, f"the DID document is for {document.get('id')!r}, not {bare}")
        listed = document.get("verificationMethod")
        methods = {
            absolute(m["id"]): m["publicKeyJwk"]
            for m in (listed if isinstance(listed, list) else [])
            if isinstance(m, dict) and isinstance(m.get("id"), str) and isinstance(m.get("publicKeyJwk"), dict)
        }
        assertion = document.get("assertionMethod")
        if isinstance(assertion, list):
            allowed: dict[str, Any] = {}
            for ref in assertion:
                if isinstance(ref, str) and absolute(ref) in methods:
                    allowed[absolute(ref)] = methods[absolute(ref)]
                elif isinstance(ref, dict) and isinstance(ref.get("id"), str) and isinstance(ref.get("publicKeyJwk"), dict):
                    allowed[absolute(ref["id"])] = ref["publicKeyJwk"]
            methods = allowed
        if len(methods) > MAX_KEYS:
            raise FetchError(url, f"{len(methods)} verification methods: more than the {MAX_KEYS} a document may hold here")
        keys: list[dict[str, Any]] = []
        for method_id, jwk in methods.items():
            fragment = method_id.partition("#")[2]
            names = [method_id, f"#{fragment}" if fragment else "", fragment, jwk.get("kid")]
            keys += [{**_public(jwk), "kid": name} for name in dict.fromkeys(names) if isinstance(name, str) and name]
        return {"keys": keys}

    return read


class KeyStore:
    """Key sets by URL, fetched with `fetcher` and cached (see the module docstring). The sets returned are
    shared: read them, do not change them."""

    def __init__(
        self,
        fetcher: Fetcher,
        *,
        scheme: str = "https",
        origin_for: OriginFor | None = None,
        policy: CachePolicy | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.fetcher = fetcher
        self.scheme = scheme
        self.origin_for: OriginFor = origin_for or (lambda authority: f"{self.scheme}://{authority}")
        self.policy = policy or CachePolicy()
        self._clock = clock
        self._cache: dict[str, _Cached] = {}
        self._locks: dict[str, anyio.Lock] = {}

    # -- where keys are ------------------------------------------------------------------------------------
    @staticmethod
    def publisher_url(publisher: str) -> str:
        """The well-known JWK Set of a publisher domain."""
        return f"https://{publisher}/.well-known/jwks.json"

    @staticmethod
    def did_web_url(did: str) -> str:
        """Where a `did:web` DID's document is (the did:web method specification); `ValueError` if `did`
        is not a well-formed did:web DID."""
        location = did_web_location(did)
        if location is None:
            raise ValueError(f"{did!r} is not a did:web DID")
        authority, path = location
        return f"https://{authority}/{'/'.join(path)}/did.json" if path else f"https://{authority}/.well-known/did.json"

    # -- key sets --------------------------------------------------------------------------------------------
    async def for_publisher(self, publisher: str, *, refetch: bool = False) -> Mapping[str, Any]:
        """The JWK Set at `https://<publisher>/.well-known/jwks.json`; `FetchError` when it cannot be had."""
        url = self.publisher_url(publisher)
        if not is_publisher_domain(publisher):
            raise FetchError(url, f"{publisher!r} is not a domain name")
        return await self._keys(url, read_jwks, refetch)

    async def from_uri(self, uri: str, *, refetch: bool = False) -> Mapping[str, Any]:
        """The JWK Set at `uri` (an https URL); `FetchError` when it cannot be had."""
        return await self._keys(uri, read_jwks, refetch)

    async def for_did_web(self, did: str, *, refetch: bool = False) -> Mapping[str, Any]:
        """The keys of a `did:web` DID's document, as a JWK Set; `FetchError` when they cannot be had."""
        try:
            url = self.did_web_url(did)
        except ValueError as exc:
            raise FetchError(did, str(exc)) from None
        return await self._keys(url, read_did_document(did), refetch)

    # -- fetching and caching ----------------------------------------------------------------------------------
    def _location(self, url: str) -> str:
        """The URL actually fetched for the key URL `url` (its origin through `origin_for`)."""
        try:
            parts = urlsplit(url)
        except ValueError:
            raise FetchError(url, "not a URL") from None
        if parts.scheme.lower() != "https" or not parts.netloc or "@" in parts.netloc:
            raise FetchError(url, "keys are fetched from https://host/... URLs only (plain http proves nothing about who served them)")
        return self.origin_for(parts.netloc.lower()) + (parts.path or "/") + (f"?{parts.query}" if parts.query else "")

    async def _keys(self, url: str, read: Reader, refetch: bool) -> Mapping[str, Any]:
        location = self._location(url)
        lock = self._locks.setdefault(url, anyio.Lock())
        async with lock:  # one fetch per URL at a time; whoever waited gets its result from the cache
            now = self._clock()
            cached = self._cache.get(url)
            # an unknown key: the set may have changed (rotation), so ask again unless it was asked for lately
            stale = refetch and cached is not None and now - cached.fetched >= self.policy.refetch_interval
            if cached is not None and now < cached.expires and not stale:
                if cached.jwks is None:
                    assert cached.error is not None
                    error = cached.error  # a new exception each time: one raised again and again keeps growing its traceback
                    raise FetchError(error.url, error.reason, error.status, error.blocked)
                return cached.jwks
            return await self._fetch(url, location, read, cached, now)

    async def _fetch(self, url: str, location: str, read: Reader, cached: _Cached | None, now: float) -> dict[str, Any]:
        usable = cached if cached is not None and cached.jwks is not None else None
        try:
            etag, modified = (usable.etag, usable.last_modified) if usable else (None, None)
            got = await self.fetcher.get(location, JSON, etag, modified, same_origin=True)
            if got.not_modified and usable is not None and usable.jwks is not None:
                jwks = usable.jwks
            else:
                try:
                    document = read_json(got.body, max_bytes=len(got.body))
                except UnreadableJson as exc:
                    raise FetchError(location, f"not JSON this registry reads: {exc}") from None
                jwks = read(document, url)
        except FetchError as exc:
            if usable is not None and now < usable.expires:
                usable.fetched = now  # a forced fetch that failed leaves the set that is still fresh in place,
                raise  # and counts as a fetch: an outage must not turn unknown keys into a request each
            self._store(url, _Cached(None, exc, now + self.policy.failure_ttl, fetched=now))
            raise
        self._store(url, _Cached(jwks, None, now + self._ttl(got.max_age), got.etag, got.last_modified, now))
        return jwks

    def _ttl(self, max_age: int | None) -> float:
        ttl = self.policy.default_ttl if max_age is None else float(max_age)
        return min(max(ttl, self.policy.min_ttl), self.policy.max_ttl)

    def _store(self, url: str, entry: _Cached) -> None:
        self._cache.pop(url, None)
        self._cache[url] = entry
        while len(self._cache) > self.policy.max_sets:
            oldest = next(iter(self._cache))
            del self._cache[oldest]
            lock = self._locks.get(oldest)
            if lock is not None and not lock.locked():
                del self._locks[oldest]
