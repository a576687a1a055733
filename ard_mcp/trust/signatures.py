"""Detached JWS signatures over trust manifests: checking one against a key set, and making one.

A trust manifest's `signature` is a compact JWS whose payload is left out (`header..signature`, RFC 7515
Appendix F): the payload is the manifest itself, canonicalised (`canonical.signed_payload`), so the
signature travels inside what it signs. Two spellings of "detached" exist and both are accepted, since the
protected header says which one was used and a signature made for one cannot pass as the other:

- RFC 7515 Appendix F (what `sign_manifest` makes): the signing input is `header.BASE64URL(payload)`;
- RFC 7797 unencoded payload (`"b64": false`, `"crit": ["b64"]`, what PyJWT's `is_payload_detached`
  makes): the signing input is `header.payload` with the payload bytes as they are.

What is refused, each with its own `SignatureError.problem` so the verifier can tell a forgery from a
publisher's broken key set: anything but a three-part compact JWS with an empty middle part; `alg: none`,
MACs (a public key must never double as an HMAC secret) and any algorithm outside `ALGORITHMS` (the
ai-catalog allow-list); a key whose type, curve, `alg`, `use` or `key_ops` does not fit the header's `alg`
(the key set, not the attacker's header, decides how a key may be used, RFC 8725 §3.1); RSA keys under
2048 bits. PyJWT does the cryptography.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Mapping
from typing import Any, Literal

from jwt import PyJWK
from jwt.algorithms import AllowedPrivateKeys
from jwt.api_jws import PyJWS
from jwt.exceptions import InvalidKeyError, InvalidSignatureError, PyJWKError, PyJWTError

from ard_mcp.formats.bounded_json import UnreadableJson, read_json
from ard_mcp.trust.canonical import canonical_json, signed_payload

ALGORITHMS: tuple[str, ...] = ("RS256", "PS256", "PS384", "ES256", "ES384", "EdDSA")
MAX_JWS_CHARS = 16 * 1024  # an RSA-4096 signature is 683 characters; anything near this is not a signature
MAX_KEYS_TRIED = 16  # a JWS without `kid` is tried against at most this many keys: each try costs a verification
_KEY_TYPES: dict[str, tuple[str, frozenset[str] | None]] = {  # alg → (kty, curves; None: no curve)
    "RS256": ("RSA", None),
    "PS256": ("RSA", None),
    "PS384": ("RSA", None),
    "ES256": ("EC", frozenset({"P-256"})),
    "ES384": ("EC", frozenset({"P-384"})),
    "EdDSA": ("OKP", frozenset({"Ed25519", "Ed448"})),
}
_THUMBPRINT_MEMBERS = {"RSA": ("e", "kty", "n"), "EC": ("crv", "kty", "x", "y"), "OKP": ("crv", "kty", "x")}
_B64URL = re.compile(r"^[A-Za-z0-9_-]*$")
_VERIFIER = PyJWS(options={"enforce_minimum_key_length": True})

SignatureProblem = Literal["malformed", "not-detached", "algorithm", "unknown-key", "unusable-key", "bad-signature"]


class SignatureError(Exception):
    """A signature that does not verify; `reason` says why in words, `problem` what kind of failure it is:

    - `malformed`, `not-detached`, `algorithm`, `bad-signature`: the signature is wrong (a forgery, a
      tampered manifest, or a publisher's mistake);
    - `unknown-key`: no key in the set matches; the set may be stale (key rotation), so fetch it again;
    - `unusable-key`: the matching key cannot be used (not a valid JWK, too short): the key set is broken.
    """

    def __init__(self, reason: str, problem: SignatureProblem = "bad-signature") -> None:
        super().__init__(reason)
        self.reason = reason
        self.problem: SignatureProblem = problem


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64url(segment: str, what: str) -> bytes:
    if not _B64URL.match(segment) or len(segment) % 4 == 1:
        raise SignatureError(f"the JWS {what} is not base64url", "malformed")
    try:
        return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    except (binascii.Error, ValueError):
        raise SignatureError(f"the JWS {what} is not base64url", "malformed") from None


def jws_header(jws: object) -> dict[str, Any]:
    """The protected header of a detached compact JWS, checked: `SignatureError` if `jws` is not one, is
    not detached, uses an algorithm outside `ALGORITHMS` or a critical extension other than `b64`."""
    if not isinstance(jws, str) or not jws.isascii() or len(jws) > MAX_JWS_CHARS:
        raise SignatureError("the signature is not a compact JWS (an ASCII string header..signature)", "malformed")
    parts = jws.split(".")
    if len(parts) != 3:
        raise SignatureError(f"a compact JWS has 3 dot-separated parts, this one has {len(parts)}", "malformed")
    encoded_header, payload, signature = parts
    try:
        header = read_json(_unb64url(encoded_header, "header"), max_bytes=MAX_JWS_CHARS)
    except UnreadableJson:
        header = None
    if not isinstance(header, dict):
        raise SignatureError("the JWS header is not a JSON object", "malformed")
    if payload:
        raise SignatureError("the JWS carries its payload: a trust manifest signature must be detached (header..signature)", "not-detached")
    alg = header.get("alg")
    if not isinstance(alg, str) or alg.lower() == "none":
        raise SignatureError(f"alg {alg!r}: an unsigned JWS proves nothing", "algorithm")
    if alg not in ALGORITHMS:
        raise SignatureError(f"alg {alg!r} is not allowed (only {', '.join(ALGORITHMS)})", "algorithm")
    if "kid" in header and not isinstance(header["kid"], str):
        raise SignatureError("the JWS kid is not a string", "malformed")
    crit = header.get("crit", [])
    if not isinstance(crit, list) or (("crit" in header) and not crit) or any(c != "b64" or c not in header for c in crit):
        raise SignatureError(f"unsupported critical header parameters {crit!r} (only b64 is understood)", "malformed")
    if header.get("b64", True) is not True and (header.get("b64") is not False or "b64" not in crit):
        raise SignatureError("b64 must be a boolean, and listed in crit when false (RFC 7797)", "malformed")
    if not signature:
        raise SignatureError("the JWS has no signature", "malformed")
    _unb64url(signature, "signature")
    return header


def thumbprint(jwk: Mapping[str, Any]) -> str | None:
    """The RFC 7638 SHA-256 thumbprint of a public key (its required members, sorted, no whitespace: which
    is JCS), to name a key that has no `kid`; None if a required member is missing."""
    members = _THUMBPRINT_MEMBERS.get(str(jwk.get("kty")))
    if members is None or not all(isinstance(jwk.get(m), str) for m in members):
        return None
    return b64url(hashlib.sha256(canonical_json({m: jwk[m] for m in members})).digest())


def _misfit(jwk: Mapping[str, Any], alg: str) -> str | None:
    """Why the key may not verify an `alg` signature, or None if it may."""
    kty, curves = _KEY_TYPES[alg]
    if jwk.get("kty") != kty:
        return f"is a {jwk.get('kty')!r} key, {alg} needs {kty}"
    if curves is not None and jwk.get("crv") not in curves:
        return f"is on curve {jwk.get('crv')!r}, {alg} needs {' or '.join(sorted(curves))}"
    if "alg" in jwk and jwk["alg"] != alg:
        return f"is declared for alg {jwk['alg']!r}, not {alg}"
    if "use" in jwk and jwk["use"] != "sig":
        return f"is declared for use {jwk['use']!r}, not sig"
    ops = jwk.get("key_ops")
    if ops is not None and (not isinstance(ops, list) or "verify" not in ops):
        return f"has key_ops {ops!r}, without verify"
    return None


def _verifies(jws: str, header: Mapping[str, Any], payload: bytes, jwk: Mapping[str, Any], alg: str, name: str) -> bool:
    try:
        key = PyJWK(dict(jwk), algorithm=alg)
    except (PyJWKError, InvalidKeyError) as exc:
        raise SignatureError(f"key {name} is not a usable {alg} key: {exc}", "unusable-key") from None
    try:
        if header.get("b64", True) is False:
            _VERIFIER.decode_complete(jws, key=key, algorithms=[alg], detached_payload=payload)
        else:
            encoded_header, _, signature = jws.split(".")
            _VERIFIER.decode_complete(f"{encoded_header}.{b64url(payload)}.{signature}", key=key, algorithms=[alg])
    except InvalidSignatureError:
        return False
    except InvalidKeyError as exc:  # e.g. an RSA key under 2048 bits
        raise SignatureError(f"key {name} is not a usable {alg} key: {exc}", "unusable-key") from None
    except PyJWTError as exc:
        raise SignatureError(f"the JWS is malformed: {exc}", "malformed") from None
    return True


def verify_detached(jws: str, payload: bytes, jwks: Mapping[str, Any]) -> str:
    """Check the detached JWS `jws` over `payload` against the JWK Set `jwks`; return the id of the key that
    verified it (the header's `kid`, else the key's `kid` or RFC 7638 thumbprint). Without a `kid`, the keys
    that fit the header's `alg` are tried in turn (at most `MAX_KEYS_TRIED`). Raises `SignatureError`."""
    header = jws_header(jws)
    alg = str(header["alg"])
    listed = jwks.get("keys") if isinstance(jwks, Mapping) else None
    keys = [k for k in listed if isinstance(k, Mapping)] if isinstance(listed, list) else []
    kid: str | None = header.get("kid")
    if kid is not None:
        named = [k for k in keys if k.get("kid") == kid]
        if not named:
            raise SignatureError(f"the key set has no key with kid {kid!r}", "unknown-key")
        fitting = [k for k in named if _misfit(k, alg) is None]
        if not fitting:
            raise SignatureError(f"key {kid!r} {_misfit(named[0], alg)}", "algorithm")
        if any(_verifies(jws, header, payload, k, alg, repr(kid)) for k in fitting):
            return kid
        raise SignatureError(f"the signature does not match the manifest's content under key {kid!r} (tampered, or signed by another key)")
    fitting = [k for k in keys if _misfit(k, alg) is None][:MAX_KEYS_TRIED]
    if not fitting:
        raise SignatureError(f"the JWS names no kid and the key set has no {alg} key", "unknown-key")
    for key in fitting:
        name = key.get("kid") if isinstance(key.get("kid"), str) else thumbprint(key)
        if _verifies(jws, header, payload, key, alg, repr(name)):
            return str(name)
    raise SignatureError(f"the JWS names no kid and none of the {len(fitting)} {alg} keys verifies it", "unknown-key")


def sign_manifest(manifest: Mapping[str, Any], private_key: AllowedPrivateKeys | PyJWK | str | bytes, kid: str, alg: str) -> str:
    """A detached compact JWS (`header..signature`, RFC 7515 Appendix F) over `manifest` without its
    `signature` member, for publishers and tests: store it as the manifest's `signature`. `private_key`
    is what PyJWT takes (a `cryptography` private key, a PEM string, a `PyJWK`); `alg` must be one of
    `ALGORITHMS`, since a registry would refuse anything else."""
    if alg not in ALGORITHMS:
        raise ValueError(f"alg {alg!r} is not one of {', '.join(ALGORITHMS)}")
    token = PyJWS().encode(signed_payload(manifest), private_key, algorithm=alg, headers={"kid": kid, "typ": None})
    encoded_header, _, signature = token.split(".")
    return f"{encoded_header}..{signature}"
