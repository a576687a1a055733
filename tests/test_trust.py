"""Trust manifests (`ard_mcp.trust`, ARD §5) checked end to end: real keys, real signatures, real HTTP.

Keys are generated here (EC P-256, Ed25519, RSA 2048 with `cryptography`), manifests signed with
`sign_manifest`, and key sets and DID documents served by the loopback `tests.web_publisher.Publisher`,
fetched by the crawler's own `Fetcher` (private networks allowed, no politeness delay). The publisher domain
`acme.test` (and its subdomains) is pointed at that server with `KeyStore(origin_for=...)`; key URLs and
reasons keep the publisher's https URLs. A fake clock moves the key cache through its TTL and refetch window.

Covered: verified with each key type and algorithm, by a JWK Set at the well-known URL, at an attestation's
URL and from a did:web document (host and path DIDs); tampering; an unknown key; key rotation (exactly one
refetch, none for known keys within the TTL, unknown `kid`s rate-limited, max-age honoured with a 304);
misaligned and unknown identities; no manifest; no signature; key endpoints down (and the failure cached);
`alg: none`, MACs, non-detached JWS, keys that do not fit; hostile input; JCS against RFC 8785's examples;
the signature format against RFC 7515 Appendix F computed by hand, and PyJWT's RFC 7797 form.
"""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

import anyio
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm
from jwt.api_jws import PyJWS

from ard_mcp.net.fetcher import Fetcher, origin_of
from ard_mcp.net.guard import NetworkPolicy
from ard_mcp.net.limits import FetchLimits
from ard_mcp.trust.canonical import canonical_json, signed_payload
from ard_mcp.trust.keys import KeyStore
from ard_mcp.trust.signatures import SignatureError, b64url, sign_manifest, verify_detached
from ard_mcp.trust.status import TrustResult, aligned, identity_domain
from ard_mcp.trust.verifier import Verifier
from tests.web_publisher import Publisher

pytestmark = pytest.mark.anyio

JWKS_PATH = "/.well-known/jwks.json"
DID_PATH = "/.well-known/did.json"
IDENTIFIER = "urn:air:acme.test:travel:concierge"
PrivateKey = ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey | rsa.RSAPrivateKey


# --- keys, entries and the publisher ----------------------------------------------------------------------------------


@cache
def private_key(kind: str) -> PrivateKey:
    """One key per kind for the whole module (RSA generation is the slow part); `kind` may carry a suffix for another."""
    if kind.startswith("ec"):
        return ec.generate_private_key(ec.SECP256R1())
    if kind.startswith("ed"):
        return ed25519.Ed25519PrivateKey.generate()
    return rsa.generate_private_key(public_exponent=65537, key_size=1024 if kind == "rsa-short" else 2048)


def public_jwk(key: PrivateKey, kid: str | None, **extra: Any) -> dict[str, Any]:
    if isinstance(key, ec.EllipticCurvePrivateKey):
        jwk = ECAlgorithm.to_jwk(key.public_key(), as_dict=True)
    elif isinstance(key, ed25519.Ed25519PrivateKey):
        jwk = OKPAlgorithm.to_jwk(key.public_key(), as_dict=True)
    else:
        jwk = RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
    return {**jwk, **({"kid": kid} if kid else {}), **extra}


def manifest(identity: str = "spiffe://acme.test/travel/concierge", **extra: Any) -> dict[str, Any]:
    return {
        "identity": identity,
        "identityType": identity.split(":", 1)[0],
        "attestations": [{"type": "SOC2-Type2", "uri": "https://trust.acme.test/reports/soc2.pdf"}],
        **extra,
    }


def signed(trust: dict[str, Any], key: PrivateKey, kid: str, alg: str) -> dict[str, Any]:
    return {**trust, "signature": sign_manifest(trust, key, kid, alg)}


def entry(trust: dict[str, Any] | None, identifier: str = IDENTIFIER) -> dict[str, Any]:
    found = {"identifier": identifier, "displayName": "Travel Concierge", "type": "application/a2a-agent-card+json", "url": "https://x"}
    return found if trust is None else {**found, "trustManifest": trust}


class Clock:
    """The key cache's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Trust:
    site: Publisher
    keys: KeyStore
    verifier: Verifier
    clock: Clock

    def publish(self, *jwks: dict[str, Any], path: str = JWKS_PATH, **options: Any) -> None:
        self.site.put(path, {"keys": list(jwks)}, **options)

    async def check(self, trust: dict[str, Any] | None, identifier: str = IDENTIFIER) -> TrustResult:
        return await self.verifier.verify(entry(trust, identifier))


def loopback_origins(site: Publisher) -> Callable[[str], str]:
    """acme.test and its subdomains are the loopback site; any other name goes nowhere."""
    return lambda authority: site.origin if authority == "acme.test" or authority.endswith(".acme.test") else "http://nowhere.invalid"


@pytest.fixture
def site() -> Iterator[Publisher]:
    with Publisher() as publisher:
        yield publisher


@pytest.fixture
async def trust(site: Publisher) -> AsyncIterator[Trust]:
    limits = FetchLimits(connect_timeout=2, read_timeout=5, deadline=10, delay=0)
    async with Fetcher(NetworkPolicy(allow_private=True), limits) as fetcher:
        clock = Clock()
        keys = KeyStore(fetcher, scheme="http", origin_for=loopback_origins(site), clock=clock)
        yield Trust(site, keys, Verifier(keys), clock)


# --- verified -------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "alg"), [("ec", "ES256"), ("ed", "EdDSA"), ("rsa", "RS256"), ("rsa", "PS256")])
async def test_a_manifest_signed_by_the_publishers_key_is_verified(trust: Trust, kind: str, alg: str) -> None:
    key = private_key(kind)
    trust.publish(public_jwk(private_key("ec-other"), "unrelated"), public_jwk(key, "k1"))
    result = await trust.check(signed(manifest(), key, "k1", alg))
    assert (result.status, result.key_id) == ("verified", "k1"), result.reason
    assert "https://acme.test/.well-known/jwks.json" in result.reason
    assert result.checked_at.endswith("Z")
    assert trust.site.count(JWKS_PATH) == 1


async def test_a_jws_without_kid_is_tried_against_the_fitting_keys(trust: Trust) -> None:
    key = private_key("ed")
    trust.publish(public_jwk(private_key("ec"), "ec-key"), public_jwk(key, None))
    payload = signed_payload(manifest())
    token = PyJWS().encode(payload, key, algorithm="EdDSA", headers={"typ": None}).split(".")
    result = await trust.check({**manifest(), "signature": f"{token[0]}..{token[2]}"})
    assert result.status == "verified", result.reason
    assert result.key_id and len(result.key_id) == 43  # the key's RFC 7638 thumbprint: it has no kid


async def test_keys_named_by_an_aligned_attestation_are_used(trust: Trust) -> None:
    key = private_key("ec")
    trust.publish(public_jwk(key, "k1"), path="/spiffe/jwks")
    trust.publish(public_jwk(private_key("ec-other"), "k1"))  # the well-known set has another key under that kid
    attestations = [{"type": "SPIFFE-X509", "uri": "https://keys.acme.test/spiffe/jwks"}]
    result = await trust.check(signed(manifest(attestations=attestations), key, "k1", "ES256"))
    assert result.status == "verified", result.reason
    assert (trust.site.count("/spiffe/jwks"), trust.site.count(JWKS_PATH)) == (1, 0)


async def test_an_attestation_on_another_domain_is_not_where_keys_come_from(trust: Trust) -> None:
    key = private_key("ec")
    trust.publish(public_jwk(key, "k1"))
    attestations = [{"type": "JWKS", "uri": "https://evil.example/jwks.json"}]
    result = await trust.check(signed(manifest(attestations=attestations), key, "k1", "ES256"))
    assert result.status == "verified", result.reason
    assert trust.site.count(JWKS_PATH) == 1


def did_document(did: str, *methods: tuple[str, PrivateKey], assertion: list[Any] | None = None) -> dict[str, Any]:
    document: dict[str, Any] = {
        "@context": ["https://www.w3.org/ns/did/v1"],
        "id": did,
        "verificationMethod": [
            {"id": method_id, "type": "JsonWebKey2020", "controller": did, "publicKeyJwk": public_jwk(key, None)}
            for method_id, key in methods
        ],
    }
    return document if assertion is None else {**document, "assertionMethod": assertion}


@pytest.mark.parametrize(
    ("did", "path", "kid"),
    [
        ("did:web:acme.test", DID_PATH, "did:web:acme.test#key-1"),
        ("did:web:acme.test", DID_PATH, "#key-1"),
        ("did:web:acme.test:teams:travel", "/teams/travel/did.json", "key-1"),
    ],
)
async def test_a_did_web_identity_is_verified_with_its_did_documents_keys(trust: Trust, did: str, path: str, kid: str) -> None:
    key = private_key("ed")
    trust.site.put(
        path,
        did_document(did, ("#other", private_key("ec")), (f"{did}#key-1", key), assertion=["#key-1"]),
        content_type="application/did+json",
    )
    result = await trust.check(signed(manifest(identity=did), key, kid, "EdDSA"))
    assert (result.status, result.key_id) == ("verified", kid), result.reason
    assert trust.site.count(path) == 1 and trust.site.count(JWKS_PATH) == 0


async def test_a_did_key_not_authorised_for_assertions_does_not_verify(trust: Trust) -> None:
    did, key = "did:web:acme.test", private_key("ed")
    trust.site.put(DID_PATH, did_document(did, ("#auth", key), ("#key-1", private_key("ec")), assertion=["#key-1"]))
    result = await trust.check(signed(manifest(identity=did), key, "#auth", "EdDSA"))
    assert result.status == "invalid" and "no key with kid '#auth'" in result.reason


async def test_a_did_document_for_another_did_is_not_used(trust: Trust) -> None:
    key = private_key("ed")
    trust.site.put(DID_PATH, did_document("did:web:evil.example", ("#key-1", key)))
    result = await trust.check(signed(manifest(identity="did:web:acme.test"), key, "#key-1", "EdDSA"))
    assert result.status == "unverified" and "not did:web:acme.test" in result.reason


# --- invalid signatures ------------------------------------------------------------------------------------------------


async def test_a_tampered_manifest_is_invalid(trust: Trust) -> None:
    key = private_key("ec")
    trust.publish(public_jwk(key, "k1"))
    tampered = signed(manifest(), key, "k1", "ES256")
    tampered["attestations"][0]["uri"] = "https://trust.acme.test/reports/forged.pdf"
    result = await trust.check(tampered)
    assert result.status == "invalid" and "does not match the manifest's content" in result.reason


async def test_a_signature_by_a_key_the_publisher_does_not_have_is_invalid(trust: Trust) -> None:
    trust.publish(public_jwk(private_key("ec"), "k1"))
    result = await trust.check(signed(manifest(), private_key("ec-attacker"), "attacker", "ES256"))
    assert result.status == "invalid" and "no key with kid 'attacker'" in result.reason
    assert trust.site.count(JWKS_PATH) == 1  # just fetched: not fetched again for the unknown key


async def test_a_signature_by_another_key_under_a_known_kid_is_invalid(trust: Trust) -> None:
    trust.publish(public_jwk(private_key("ec"), "k1"))
    result = await trust.check(signed(manifest(), private_key("ec-attacker"), "k1", "ES256"))
    assert result.status == "invalid" and "does not match" in result.reason


def forged(header: dict[str, Any], payload: str = "", signature: str = "c2ln") -> str:
    return f"{b64url(json.dumps(header).encode())}.{payload}.{signature}"


@pytest.mark.parametrize(
    ("signature", "expected"),
    [
        (forged({"alg": "none", "kid": "k1"}, signature=""), "alg 'none'"),
        (forged({"alg": "HS256", "kid": "k1"}), "alg 'HS256' is not allowed"),
        (forged({"alg": "ES256", "kid": "k1"}, payload=b64url(b"{}")), "must be detached"),
        (forged({"alg": "ES256", "kid": "k1", "crit": ["exp"], "exp": 1}), "unsupported critical"),
        ("not a jws", "3 dot-separated parts"),
        ("e30..c2ln", "alg None"),
        ("!!!..c2ln", "not base64url"),
    ],
)
async def test_forbidden_or_malformed_signatures_are_invalid_before_any_fetch(trust: Trust, signature: str, expected: str) -> None:
    trust.publish(public_jwk(private_key("ec"), "k1"))
    result = await trust.check({**manifest(), "signature": signature})
    assert result.status == "invalid" and expected in result.reason, result.reason
    assert trust.site.requests == []


async def test_a_non_detached_jws_that_really_verifies_is_still_invalid(trust: Trust) -> None:
    key = private_key("ec")
    trust.publish(public_jwk(key, "k1"))
    attached = PyJWS().encode(signed_payload(manifest()), key, algorithm="ES256", headers={"kid": "k1"})
    result = await trust.check({**manifest(), "signature": attached})
    assert result.status == "invalid" and "detached" in result.reason


@pytest.mark.parametrize(
    ("jwk_extra", "expected"),
    [({"alg": "RS256"}, "declared for alg 'RS256'"), ({"use": "enc"}, "use 'enc'"), ({"key_ops": ["encrypt"]}, "without verify")],
)
async def test_a_key_that_does_not_fit_the_jws_is_not_used(trust: Trust, jwk_extra: dict[str, Any], expected: str) -> None:
    key = private_key("rsa")
    trust.publish(public_jwk(key, "k1", **jwk_extra))
    result = await trust.check(signed(manifest(), key, "k1", "PS256"))
    assert result.status == "invalid" and expected in result.reason, result.reason


async def test_an_rsa_key_under_2048_bits_is_a_broken_key_set_not_a_forgery(trust: Trust) -> None:
    key = private_key("rsa-short")
    trust.publish(public_jwk(key, "k1"))
    with pytest.warns(Warning):  # PyJWT warns when signing with it; we are the publisher here
        trust_manifest = signed(manifest(), key, "k1", "RS256")
    result = await trust.check(trust_manifest)
    assert result.status == "unverified" and "not a usable RS256 key" in result.reason


# --- key rotation and caching --------------------------------------------------------------------------------------------


async def test_key_rotation_costs_exactly_one_refetch(trust: Trust) -> None:
    old, new = private_key("ec"), private_key("ec-new")
    trust.publish(public_jwk(old, "2026-01"))
    by_old = signed(manifest(), old, "2026-01", "ES256")
    assert (await trust.check(by_old)).status == "verified"
    trust.clock.now += 300  # past the refetch window, well within the hour the set is kept
    assert (await trust.check(by_old)).status == "verified"
    assert trust.site.count(JWKS_PATH) == 1  # a known key never refetches the set within its TTL

    trust.publish(public_jwk(new, "2026-02"))  # the publisher rotates: the old key is gone
    by_new = signed(manifest(), new, "2026-02", "ES256")
    result = await trust.check(by_new)
    assert (result.status, result.key_id) == ("verified", "2026-02"), result.reason
    assert trust.site.count(JWKS_PATH) == 2
    assert (await trust.check(by_new)).status == "verified"
    assert (await trust.check(by_old)).status == "invalid"  # revoked: unknown now, and the set was just fetched
    assert trust.site.count(JWKS_PATH) == 2


async def test_unknown_kids_refetch_at_most_once_per_interval(trust: Trust) -> None:
    trust.publish(public_jwk(private_key("ec"), "k1"))
    assert (await trust.check(signed(manifest(), private_key("ec"), "k1", "ES256"))).status == "verified"
    trust.clock.now += 61
    for _ in range(5):
        result = await trust.check(signed(manifest(), private_key("ec-attacker"), secrets.token_hex(4), "ES256"))
        assert result.status == "invalid"
    assert trust.site.count(JWKS_PATH) == 2  # the first unknown kid fetched again; the other four did not


async def test_concurrent_checks_share_one_fetch(trust: Trust) -> None:
    key = private_key("ed")
    trust.publish(public_jwk(key, "k1"), delay=0.2)
    results: list[TrustResult] = []

    async def one() -> None:
        results.append(await trust.check(signed(manifest(), key, "k1", "EdDSA")))

    async with anyio.create_task_group() as group:
        for _ in range(8):
            group.start_soon(one)
    assert [r.status for r in results] == ["verified"] * 8
    assert trust.site.count(JWKS_PATH) == 1


async def test_max_age_is_honoured_and_an_unchanged_set_costs_a_304(trust: Trust) -> None:
    key = private_key("ec")
    trust.publish(public_jwk(key, "k1"), headers={"Cache-Control": "max-age=120"})
    by_key = signed(manifest(), key, "k1", "ES256")
    assert (await trust.check(by_key)).status == "verified"
    trust.clock.now += 100
    assert (await trust.check(by_key)).status == "verified"
    assert trust.site.count(JWKS_PATH) == 1
    trust.clock.now += 30  # past max-age
    assert (await trust.check(by_key)).status == "verified"
    asked = [r for r in trust.site.requests if r.path == JWKS_PATH]
    assert len(asked) == 2 and "if-none-match" in asked[1].headers


async def test_no_cache_still_keeps_keys_for_the_minimum_ttl(trust: Trust) -> None:
    key = private_key("ec")
    trust.publish(public_jwk(key, "k1"), headers={"Cache-Control": "no-cache"})
    for step in (0, 30, 29):
        trust.clock.now += step
        assert (await trust.check(signed(manifest(), key, "k1", "ES256"))).status == "verified"
    assert trust.site.count(JWKS_PATH) == 1


# --- unverified, self-asserted and misaligned ----------------------------------------------------------------------------


async def test_no_trust_manifest_is_self_asserted(trust: Trust) -> None:
    result = await trust.check(None)
    assert result.status == "self-asserted" and result.key_id is None


async def test_an_aligned_identity_without_a_signature_is_unverified(trust: Trust) -> None:
    result = await trust.check(manifest())
    assert result.status == "unverified" and "nothing to check" in result.reason
    assert trust.site.requests == []


@pytest.mark.parametrize("identity", ["spiffe://evil.com/x", "did:web:evil.com", "https://notacme.test/agent", "spiffe://test/x"])
async def test_an_identity_outside_the_publishers_domain_is_invalid(trust: Trust, identity: str) -> None:
    key = private_key("ec")
    trust.publish(public_jwk(key, "k1"))
    result = await trust.check(signed(manifest(identity=identity), key, "k1", "ES256"))
    assert result.status == "invalid" and "does not align with the publisher acme.test" in result.reason
    assert trust.site.requests == []


@pytest.mark.parametrize("identity", ["did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK", "urn:uuid:1234", "mailto:ops@acme.test"])
async def test_an_identity_without_a_checkable_domain_is_unverified(trust: Trust, identity: str) -> None:
    trust_manifest = {**manifest(identity=identity), "identityType": "other"}
    result = await trust.check(signed(trust_manifest, private_key("ec"), "k1", "ES256"))
    assert result.status == "unverified" and "no trust domain" in result.reason


@pytest.mark.parametrize("status", [404, 500])
async def test_a_key_set_that_cannot_be_fetched_is_unverified_and_not_asked_for_again_at_once(trust: Trust, status: int) -> None:
    trust.site.put(JWKS_PATH, "down", content_type="text/plain", status=status)
    trust_manifest = signed(manifest(), private_key("ec"), "k1", "ES256")
    for _ in range(3):
        result = await trust.check(trust_manifest)
        assert result.status == "unverified" and f"HTTP {status}" in result.reason
    assert trust.site.count(JWKS_PATH) == 1
    trust.clock.now += 61
    trust.publish(public_jwk(private_key("ec"), "k1"))
    assert (await trust.check(trust_manifest)).status == "verified"


@pytest.mark.parametrize(
    ("body", "expected"), [("[1, 2]", "not a JWK Set"), ("{", "not JSON"), ({"keys": [{"kty": "EC"}] * 65}, "more than the 64")]
)
async def test_a_key_set_that_is_not_one_is_unverified(trust: Trust, body: Any, expected: str) -> None:
    trust.site.put(JWKS_PATH, body)
    result = await trust.check(signed(manifest(), private_key("ec"), "k1", "ES256"))
    assert result.status == "unverified" and expected in result.reason


async def test_keys_are_fetched_over_https_only(trust: Trust) -> None:
    attestations = [{"type": "JWKS", "uri": "http://acme.test/jwks.json"}]
    result = await trust.check(signed(manifest(attestations=attestations), private_key("ec"), "k1", "ES256"))
    assert result.status == "unverified" and "https://host/... URLs only" in result.reason
    assert trust.site.requests == []


@pytest.mark.parametrize("path", [JWKS_PATH, DID_PATH])
async def test_a_key_set_redirected_to_another_origin_is_not_used(trust: Trust, path: str) -> None:
    """Issue #44: an open redirect at the publisher's key path handed the check the attacker's key, `verified`."""
    attacker = private_key("ec-attacker")
    identity = "did:web:acme.test" if path == DID_PATH else "spiffe://acme.test/travel/concierge"
    with Publisher() as elsewhere:
        if path == DID_PATH:
            elsewhere.put("/keys", did_document(identity, (f"{identity}#k1", attacker)))
        else:
            elsewhere.put("/keys", {"keys": [public_jwk(attacker, "k1")]})
        trust.site.redirect(path, elsewhere.url("/keys"))
        kid = f"{identity}#k1" if path == DID_PATH else "k1"
        result = await trust.check(signed(manifest(identity), attacker, kid, "ES256"))
        assert result.status == "unverified", result.reason
        assert f"redirected to {elsewhere.url('/keys')}, another origin" in result.reason
        assert elsewhere.requests == []  # refused before it was asked


async def test_a_key_set_redirected_within_its_origin_is_used(trust: Trust) -> None:
    key = private_key("ec")
    trust.publish(public_jwk(key, "k1"), path="/keys/current.json")
    trust.site.redirect(JWKS_PATH, "/keys/current.json", status=301)
    result = await trust.check(signed(manifest(), key, "k1", "ES256"))
    assert result.status == "verified", result.reason
    assert "https://acme.test/.well-known/jwks.json" in result.reason


@pytest.mark.parametrize(
    ("first", "then", "same"),
    [
        ("https://acme.test/a", "https://ACME.test:443/b?x=1", True),
        ("http://acme.test/a", "http://acme.test:80/b", True),
        ("https://acme.test/a", "http://acme.test/a", False),  # a downgrade to plain http
        ("https://acme.test/a", "https://acme.test:8443/a", False),
        ("https://acme.test/a", "https://keys.acme.test/a", False),
    ],
)
def test_origins_compare_scheme_host_and_port(first: str, then: str, same: bool) -> None:
    assert (origin_of(first) == origin_of(then)) is same


@pytest.mark.parametrize(
    ("trust_manifest", "expected"),
    [
        ([1, 2], "not a JSON object"),
        ({"signature": "x"}, "identity is missing"),
        ({"identity": 7}, "identity is missing"),
        ({"identity": "spiffe://acme.test/x", "identityType": 3}, "identityType is not a string"),
        ({"identity": "spiffe://acme.test/x", "identityType": "https"}, "contradicts"),
        ({"identity": "spiffe://acme.test:8080/x"}, "not a well-formed SPIFFE ID"),
        ({"identity": "did:web:acme..test"}, "not a well-formed did:web"),
        ({"identity": "spiffe://acme.test/x", "signature": 12}, "signature is not a string"),
        ({"identity": "spiffe://acme.test/x", "signature": "e30..c2ln", "n": float("nan")}, "cannot be canonicalised"),
        ({"identity": "spiffe://acme.test/x", "signature": "e30..c2ln", "s": "\ud800"}, "cannot be canonicalised"),
    ],
)
async def test_a_malformed_manifest_is_invalid_and_never_raises(trust: Trust, trust_manifest: Any, expected: str) -> None:
    result = await trust.verifier.verify({"identifier": IDENTIFIER, "trustManifest": trust_manifest})
    assert result.status == "invalid" and expected in result.reason, result.reason


@pytest.mark.parametrize(
    "bad_entry", [[], "urn:air:acme.test:x", {"trustManifest": manifest()}, {"identifier": "acme", "trustManifest": manifest()}]
)
async def test_a_malformed_entry_is_invalid(trust: Trust, bad_entry: Any) -> None:
    assert (await trust.verifier.verify(bad_entry)).status == "invalid"


async def test_hostile_attestations_are_skipped(trust: Trust) -> None:
    key = private_key("ec")
    trust.publish(public_jwk(key, "k1"))
    trust_manifest = manifest(attestations=[None, 3, {"type": "JWKS"}, {"uri": ["x"]}, {"type": "JWKS", "uri": "https://[::1/jwks.json"}])
    assert (await trust.check(signed(trust_manifest, key, "k1", "ES256"))).status == "verified"


# --- identity rules, JCS and the signature format, without a network ------------------------------------------------------


@pytest.mark.parametrize(
    ("identity", "identity_type", "domain"),
    [
        ("spiffe://acme.com/travel/concierge", "spiffe", "acme.com"),
        ("spiffe://ACME.com/x", None, "acme.com"),
        ("did:web:acme.com", "did", "acme.com"),
        ("did:web:acme.com:user:alice", None, "acme.com"),
        ("did:web:localhost%3A8443", "did", "localhost"),
        ("did:web:acme.com#key-1", None, "acme.com"),
        ("https://api.acme.com/agents/x", "https", "api.acme.com"),
        ("https://api.acme.com:8443/x", None, "api.acme.com"),
        ("did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK", "did", None),
        ("http://acme.com/x", None, None),
        ("spiffe://acme.com/x", "https", None),
        ("did:web:acme.com:..:x", None, None),
        ("https://user@acme.com/x", None, None),
        ("", None, None),
    ],
)
def test_identity_domain(identity: str, identity_type: str | None, domain: str | None) -> None:
    assert identity_domain(identity, identity_type) == domain


@pytest.mark.parametrize(
    ("publisher", "domain", "expected"),
    [
        ("acme.com", "acme.com", True),
        ("api.acme.com", "acme.com", True),
        ("acme.com", "travel.api.acme.com", True),
        ("ACME.com.", "acme.com", True),
        ("evil.com", "acme.com", False),
        ("notacme.com", "acme.com", False),
        ("acme.com", "acme.com.evil.com", False),
        ("acme.com", "com", False),
        ("acme.com", "", False),
    ],
)
def test_alignment(publisher: str, domain: str, expected: bool) -> None:
    assert aligned(publisher, domain) is expected


@pytest.mark.parametrize(
    ("did", "url"),
    [
        ("did:web:acme.com", "https://acme.com/.well-known/did.json"),
        ("did:web:acme.com:user:alice", "https://acme.com/user/alice/did.json"),
        ("did:web:localhost%3A8443", "https://localhost:8443/.well-known/did.json"),
    ],
)
def test_did_web_documents_are_where_the_method_says(did: str, url: str) -> None:
    assert KeyStore.did_web_url(did) == url


def test_jcs_sorts_members_by_utf16_code_units() -> None:
    """RFC 8785 §3.2.3: U+1F600 (a surrogate pair, D83D DE00) sorts before U+FB33, unlike code point order."""
    members = {
        "\u20ac": "Euro Sign",
        "\r": "Carriage Return",
        "\ufb33": "Hebrew",
        "1": "One",
        "\U0001f600": "Emoji",
        "\u0080": "Control",
        "\u00f6": "o",
    }
    order = list(json.loads(canonical_json(members)))
    assert order == ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]


def test_jcs_matches_rfc_8785s_example() -> None:
    """RFC 8785 §3.2.2: numbers in ECMAScript form, strings escaped only where JSON requires it, no whitespace."""
    source = (
        '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],'
        ' "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/", "literals": [null, true, false]}'
    )
    expected = (
        '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
    )
    assert canonical_json(json.loads(source)) == expected.encode()


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0"),
        (-0.0, "0"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (9007199254740992.0, "9007199254740992"),
        (295147905179352830000.0, "295147905179352830000"),
        (1e21, "1e+21"),
        (1e-7, "1e-7"),
        (0.000001, "0.000001"),
        (0.1 + 0.2, "0.30000000000000004"),
        (123e-20, "1.23e-18"),
        (100, "100"),
        (-(2**53), "-9007199254740992"),
        (12345678901234567890, "12345678901234567000"),  # beyond 2**53: the nearest double, as JCS parses it
    ],
)
def test_jcs_numbers_are_written_as_ecmascript_does(value: float, text: str) -> None:
    assert canonical_json(value) == text.encode()


def test_jcs_of_nested_values_and_what_it_refuses() -> None:
    nested = {"b": [{"z": 1, "a": {"y": None, "x": [True, "é\u2028\x7f"]}}], "a": {}}
    assert canonical_json(nested) == '{"a":{},"b":[{"a":{"x":[true,"é\u2028\x7f"],"y":null},"z":1}]}'.encode()
    for refused in (float("inf"), {"s": "\udc00"}, {1: "x"}, {"x": object()}, 10**400):
        with pytest.raises(ValueError):
            canonical_json(refused)


def test_the_signed_payload_leaves_the_signature_out_and_ignores_member_order() -> None:
    shuffled = dict(reversed(list(manifest().items())))
    assert signed_payload({**manifest(), "signature": "x..y"}) == signed_payload(shuffled) == canonical_json(manifest())


def unb64(segment: str) -> bytes:
    return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))


def test_signatures_are_rfc_7515_appendix_f_detached_jws() -> None:
    """Checked by hand with `cryptography`: the signing input is header.BASE64URL(JCS(manifest without signature))."""
    key = private_key("ed")
    assert isinstance(key, ed25519.Ed25519PrivateKey)
    trust_manifest = manifest()
    encoded_header, payload, signature = sign_manifest(trust_manifest, key, "k1", "EdDSA").split(".")
    assert payload == "" and json.loads(unb64(encoded_header)) == {"alg": "EdDSA", "kid": "k1"}
    signing_input = f"{encoded_header}.{b64url(signed_payload(trust_manifest))}".encode()
    key.public_key().verify(unb64(signature), signing_input)  # raises InvalidSignature if it is not that


def test_the_rfc_7797_unencoded_detached_form_is_accepted_too() -> None:
    key = private_key("ec")
    payload = signed_payload(manifest())
    token = PyJWS().encode(payload, key, algorithm="ES256", headers={"kid": "k1"}, is_payload_detached=True)
    assert verify_detached(token, payload, {"keys": [public_jwk(key, "k1")]}) == "k1"
    with pytest.raises(SignatureError) as caught:
        verify_detached(token, payload + b" ", {"keys": [public_jwk(key, "k1")]})
    assert caught.value.problem == "bad-signature"


def test_sign_manifest_refuses_algorithms_a_registry_would_refuse() -> None:
    with pytest.raises(ValueError, match="HS256"):
        sign_manifest(manifest(), private_key("ec"), "k1", "HS256")
