"""Whether an entry's trust manifest holds up: identity aligned with the publisher, signature checked.

ARD §5.1 and Appendix C: the `<publisher>` of an entry's `urn:air:` identifier is only a claim; it is
backed when the trust manifest's `identity` lies in the same authority domain and the manifest is signed
by a key that domain serves. The steps, each ending in a `TrustResult` whose `reason` says what was found:

1. no `trustManifest` → `self-asserted`;
2. a manifest that is not one (not an object, no `identity`, a `signature` that is not a string, content
   that is not I-JSON) → `invalid`;
3. the identity's trust domain (`status.identity_domain`): a kind whose domain cannot be established
   (`did:key`, `urn:`, ...) → `unverified`; a SPIFFE ID or https URL that is malformed, or an
   `identityType` that contradicts the identity → `invalid`; a domain that does not align with the
   publisher (`spiffe://evil.com/x` on `urn:air:acme.com:...`) → `invalid`;
4. no `signature` → `unverified` (claims present, nothing to check);
5. the keys, by the identity: a `did:web` identity's DID document; an https identity that is a JWK Set
   URL (`.../jwks.json`); else a JWK Set attestation (its `uri` ends in `jwks.json` or `/jwks`, or its
   `type` names JWKS) on a host aligned with the publisher; else `https://<publisher>/.well-known/jwks.json`.
   Keys that cannot be fetched → `unverified`, with the fetch error;
6. the detached JWS over the manifest's JCS form (`signatures.verify_detached`): a good signature →
   `verified`; a key the set does not have → the set is fetched again once (key rotation) and a key
   still missing → `invalid`; a bad signature, a forbidden algorithm, a non-detached JWS → `invalid`; a
   matching key that is unusable (the publisher's key set is broken) → `unverified`;
7. what the signature covers (`coverage`): a manifest whose `publishedFrom` provenance names another
   entry, or whose digest does not match the entry's data → `invalid`; the reason of a `verified` one says
   what it covers (the manifest alone, unless it names the entry). Whether the entry came from its
   publisher at all is `origin`'s question, answered where the entry was fetched.

Nothing here raises for bad input: every entry gets a result. Network failures are `unverified`, never
`invalid`: a publisher being down is not evidence of forgery.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ard_mcp.formats.identifiers import check_identifier, publisher_of
from ard_mcp.net.fetcher import FetchError
from ard_mcp.trust.canonical import signed_payload
from ard_mcp.trust.coverage import coverage
from ard_mcp.trust.keys import KeyStore
from ard_mcp.trust.signatures import SignatureError, jws_header, verify_detached
from ard_mcp.trust.status import TrustResult, aligned, identity_domain, identity_kind

_KNOWN_TYPES = ("spiffe", "did", "https")


@dataclass(frozen=True)
class _KeySource:
    """Where the keys that must have signed a manifest are (`url`, for reasons) and how to get them."""

    url: str
    load: Callable[[bool], Awaitable[Mapping[str, Any]]]  # refetch → the key set


def _invalid(reason: str) -> TrustResult:
    return TrustResult("invalid", reason)


def _unverified(reason: str) -> TrustResult:
    return TrustResult("unverified", reason)


def _shown(value: object, limit: int = 120) -> str:
    """`value` quoted for a reason, cut short: reasons are stored and shown, and the input is anyone's."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_jwks_url(url: str) -> bool:
    try:
        path = urlsplit(url).path.lower()
    except ValueError:
        return False
    return path.endswith(("jwks.json", "/jwks"))


def _host(url: str) -> str | None:
    try:
        return urlsplit(url).hostname
    except ValueError:
        return None


class Verifier:
    """Checks entries' trust manifests against keys from `keys`; `verify` never raises for bad input."""

    def __init__(self, keys: KeyStore) -> None:
        self.keys = keys

    async def verify(self, entry: Mapping[str, Any]) -> TrustResult:
        """The trust status of one catalog entry (a JSON object as published, see the module docstring)."""
        if not isinstance(entry, Mapping):
            return _invalid("the entry is not a JSON object")
        manifest = entry.get("trustManifest")
        if manifest is None:
            return TrustResult("self-asserted", "no trust manifest: the entry's claims rest on its own word")
        if not isinstance(manifest, Mapping):
            return _invalid("trustManifest is not a JSON object")
        identifier = entry.get("identifier")
        try:
            publisher = publisher_of(check_identifier(identifier)) if isinstance(identifier, str) else None
        except ValueError:
            publisher = None
        if publisher is None:
            return _invalid(f"the identifier {_shown(identifier)} names no publisher domain (urn:air:<publisher>:...)")
        identity, identity_type = manifest.get("identity"), manifest.get("identityType")
        if not isinstance(identity, str) or not identity:
            return _invalid("trustManifest.identity is missing or not a string (ARD §5.1 requires it)")
        if identity_type is not None and not isinstance(identity_type, str):
            return _invalid("trustManifest.identityType is not a string")
        problem = self._identity_problem(identity, identity_type, publisher)
        if problem is not None:
            return problem
        signature = manifest.get("signature")
        if signature is None:
            return _unverified(
                f"identity {_shown(identity)} aligns with the publisher {publisher}, "
                "but the manifest is unsigned: claims present, nothing to check"
            )
        if not isinstance(signature, str):
            return _invalid("trustManifest.signature is not a string (a detached JWS, header..signature)")
        try:
            payload = signed_payload(manifest)
            jws_header(signature)  # a malformed or forbidden JWS is refused before anything is fetched for it
        except ValueError as exc:
            return _invalid(f"the trust manifest cannot be canonicalised for its signature (RFC 8785): {exc}")
        except SignatureError as exc:
            return _invalid(f"signature: {exc.reason}")
        result = await self._check(signature, payload, self._key_source(manifest, identity, publisher))
        if result.status != "verified":
            return result
        mismatch, covers = coverage(entry, manifest)
        if mismatch is not None:
            return _invalid(mismatch)
        return TrustResult("verified", f"{result.reason}; {covers}", key_id=result.key_id)

    @staticmethod
    def _identity_problem(identity: str, identity_type: str | None, publisher: str) -> TrustResult | None:
        """The result when the identity cannot stand for the publisher, or None when it aligns with it."""
        kind = identity_kind(identity)
        if identity_type in _KNOWN_TYPES and kind != identity_type:
            return _invalid(f"identityType {_shown(identity_type)} contradicts the identity {_shown(identity)}")
        domain = identity_domain(identity, identity_type)
        if domain is None:
            if kind in ("spiffe", "https"):
                return _invalid(f"the identity {_shown(identity)} is not a well-formed {'SPIFFE ID' if kind == 'spiffe' else 'https URL'}")
            if kind == "did" and identity.startswith("did:web:"):
                return _invalid(f"the identity {_shown(identity)} is not a well-formed did:web DID")
            return _unverified(
                f"the identity {_shown(identity)} has no trust domain this registry can check "
                "(SPIFFE IDs, did:web DIDs and https URLs have): "
                f"it cannot be tied to the publisher {publisher}"
            )
        if not aligned(publisher, domain):
            return _invalid(
                f"the identity's trust domain {domain} does not align with the publisher {publisher} of the identifier (ARD §5.1): "
                f"anyone can name any publisher, only {publisher}'s own identities can back the claim"
            )
        return None

    def _key_source(self, manifest: Mapping[str, Any], identity: str, publisher: str) -> _KeySource:
        """Where the keys the manifest must be signed with are (see the module docstring, step 5)."""
        keys = self.keys

        def key_set(url: str) -> _KeySource:
            return _KeySource(url, lambda refetch: keys.from_uri(url, refetch=refetch))

        if identity.startswith("did:web:"):
            return _KeySource(keys.did_web_url(identity), lambda refetch: keys.for_did_web(identity, refetch=refetch))
        if identity_kind(identity) == "https" and _is_jwks_url(identity):
            return key_set(identity)
        attestations = manifest.get("attestations")
        for attestation in attestations if isinstance(attestations, list) else []:
            if not isinstance(attestation, Mapping):
                continue
            uri, kind = attestation.get("uri"), attestation.get("type")
            if not isinstance(uri, str) or not (_is_jwks_url(uri) or (isinstance(kind, str) and "jwks" in kind.lower())):
                continue
            host = _host(uri)
            if host is not None and aligned(publisher, host):
                return key_set(uri)
        url = keys.publisher_url(publisher)
        return _KeySource(url, lambda refetch: keys.for_publisher(publisher, refetch=refetch))

    async def _check(self, signature: str, payload: bytes, source: _KeySource) -> TrustResult:
        try:
            jwks = await source.load(False)
        except FetchError as exc:
            return _unverified(f"the signing keys at {source.url} could not be fetched: {exc.reason}")
        try:
            kid = verify_detached(signature, payload, jwks)
        except SignatureError as exc:
            if exc.problem != "unknown-key":
                return self._failed(exc, source)
            try:  # key rotation: the publisher may have added the key since the set was fetched
                jwks = await source.load(True)
            except FetchError as fetch_error:
                return _unverified(f"{exc.reason} at {source.url}, and fetching the keys again failed: {fetch_error.reason}")
            try:
                kid = verify_detached(signature, payload, jwks)
            except SignatureError as again:
                return self._failed(again, source)
        return TrustResult("verified", f"signed by key {kid} from {source.url}", key_id=kid)

    @staticmethod
    def _failed(error: SignatureError, source: _KeySource) -> TrustResult:
        if error.problem == "unusable-key":
            return _unverified(f"signature not checked: {error.reason} (the key set at {source.url} is broken)")
        return _invalid(f"signature: {error.reason} (keys from {source.url})")
