"""What a trust check concludes, and the identity rules it rests on (ARD §5.1, Appendix C).

An entry's `urn:air:<publisher>:...` identifier is only a claim until the trust manifest's `identity`, a
cryptographic workload identifier, is shown to belong to the same authority: "the cryptographic trust
domain inside this identity MUST align with the authority domain root embedded in the discovery identifier".
This module reads the trust domain out of the identity kinds a registry can check (SPIFFE IDs, `did:web`
DIDs, https URLs) and decides alignment; `verifier` adds the signature. Both are pure: no network here.

Statuses, from most to least trust:

- `verified`: the identity aligns with the publisher and the manifest's signature checks against the
  publisher's keys;
- `unverified`: there are claims, but nothing could be checked (no signature, an identity kind we cannot
  resolve, or the keys could not be fetched) — not evidence of anything either way;
- `self-asserted`: the entry carries no trust manifest, so all it has is its own word;
- `invalid`: something was checked and failed (misaligned identity, bad or unknown-key signature, a
  malformed manifest); clients should treat the entry's claims as false.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Literal
from urllib.parse import unquote, urlsplit

from ard_mcp.formats.messages import TrustStatus
from ard_mcp.formats.timestamps import utc_text

IdentityKind = Literal["spiffe", "did", "https"]

_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_HOST = re.compile(rf"^{_LABEL}(?:\.{_LABEL})*$")  # DNS names (SPIFFE trust domains may hold `_` too)
_PORT = re.compile(r"^[0-9]{1,5}$")
_DID_SEGMENT = re.compile(r"^(?:[A-Za-z0-9._~!$&'()*+,;=@-]|%[0-9A-Fa-f]{2})+$")  # RFC 3986 pchar, without `:`


def now_iso() -> str:
    """The current UTC time as an RFC 3339 string with a `Z`, to the second (what `checked_at` holds)."""
    return utc_text(datetime.now(UTC))


@dataclass(frozen=True)
class TrustResult:
    """The outcome of one check: `reason` says in words why (it is shown to users and operators), and
    `key_id` names the key that verified the signature (`verified` only)."""

    status: TrustStatus
    reason: str
    checked_at: str = field(default_factory=now_iso)
    key_id: str | None = None

    def to_dict(self) -> dict[str, str | None]:
        """A JSON-ready copy, e.g. to store beside an entry."""
        return asdict(self)


def _host(text: str) -> str | None:
    """`text` as a lower-case DNS host name, or None if it is not one (an empty label, a space, ...)."""
    host = text.lower().rstrip(".")
    return host if _HOST.match(host) else None


def did_web_location(did: str) -> tuple[str, list[str]] | None:
    """The parts of a `did:web` DID the document is fetched from: the authority (`host` or `host:port`,
    the port percent-encoded in the DID as `%3A`) and the decoded path segments (`did:web:acme.com:user:alice`
    → `("acme.com", ["user", "alice"])`). None when `did` is not a well-formed `did:web` (a fragment or a
    query is dropped first: `did:web:acme.com#key-1` names the same DID). A segment that would change the path
    when decoded (`/`, `..`) is refused, so a DID cannot point at another document on the host."""
    bare = did.split("#", 1)[0].split("?", 1)[0]
    if not bare.startswith("did:web:"):
        return None
    domain, *path = bare[len("did:web:") :].split(":")
    host, colon, port = unquote(domain).partition(":")
    if not _host(host) or (colon and not _PORT.match(port)):
        return None
    segments: list[str] = []
    for raw in path:
        segment = unquote(raw)
        if not _DID_SEGMENT.match(raw) or "/" in segment or segment in (".", ".."):
            return None
        segments.append(segment)
    authority = f"{_host(host)}:{port}" if colon else str(_host(host))
    return authority, segments


def identity_kind(identity: str) -> IdentityKind | None:
    """What kind of identity `identity` is by its scheme: `spiffe`, `did` (any method) or `https`; None otherwise."""
    scheme = identity.partition(":")[0].lower()
    if scheme in ("spiffe", "https"):
        return "spiffe" if scheme == "spiffe" else "https"
    return "did" if scheme == "did" else None


def identity_domain(identity: str, identity_type: str | None = None) -> str | None:
    """The trust domain an identity belongs to: the SPIFFE trust domain (`spiffe://acme.com/x` → `acme.com`),
    the host of a `did:web` (`did:web:localhost%3A8443` → `localhost`) or of an https URL. None for anything
    whose domain we cannot establish: other DID methods (`did:key` has no domain), other schemes, a
    malformed identity, or an `identityType` hint that contradicts the identity (`spiffe` on an https URL:
    the publisher's own description disagrees with itself, so neither reading is trusted)."""
    kind = identity_kind(identity)
    if kind is None or (identity_type in ("spiffe", "did", "https") and identity_type != kind):
        return None
    if kind == "did":
        location = did_web_location(identity)
        return location[0].partition(":")[0] if location else None
    try:
        parts = urlsplit(identity)
        _ = parts.port  # raises ValueError for a malformed port
    except ValueError:
        return None
    if parts.username is not None or parts.password is not None or not parts.hostname:
        return None
    if kind == "spiffe" and (parts.port is not None or parts.query or parts.fragment):
        return None  # the SPIFFE ID format allows none of these
    return _host(parts.hostname)


def aligned(publisher: str, domain: str) -> bool:
    """Whether an identity's trust domain aligns with the URN publisher (ARD §5.1): the same domain, or one
    inside the other (`api.acme.com` and `acme.com`, either way round), compared label by label so that
    `notacme.com` is not inside `acme.com`. The shorter name must have at least two labels: `com` contains
    every `.com` publisher, and no single organisation is its authority. (Registrable suffixes such as
    `github.io` cannot be told apart without the Public Suffix List; alignment is necessary, not enough:
    the signature must still check against keys served from the aligned domain.)"""
    a, b = _host(publisher), _host(domain)
    if a is None or b is None:
        return False
    if a == b:
        return True
    shorter, longer = sorted((a, b), key=len)
    return "." in shorter and longer.endswith("." + shorter)
