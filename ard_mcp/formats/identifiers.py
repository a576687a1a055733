"""ARD identifiers: the `urn:air:<publisher>:<namespace...>:<name>` form every entry is keyed by (ARD v0.9,
ADR 0009), and the identifiers derived for agents registered in formats whose ids are not such URNs (Xu
profile, AIDIP).

The v0.5 form `urn:ai:` is accepted as input and names the same entry: every identifier is put in one
canonical spelling, `urn:air:` with the publisher domain in lower case (DNS names compare
case-insensitively, so `Victim.Example.Org` cannot register beside `victim.example.org`) and segment
characters RFC 8141 allows but the v0.9 schema does not (`~`, `+`, `@`, ...) read as `-`, so what is
served validates; `agent~v2` and `agent-v2` of one publisher are then one entry, which only that
publisher can cause. The Xu
profile allows any stable id (a URL, a DNS name, a registry-local name) and AIDIP a UUID or "a similarly
unique value". The URN is derived so that the same id always gives the same URN (registration stays an
idempotent upsert), and the publisher's own id is kept in `metadata.sourceId` so clients can keep using it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from urllib.parse import urlsplit

from ard_mcp.errors import InvalidArgument

NID = "urn:air:"
IDENTIFIER_RULE = "must be urn:air:<publisher-domain>:...:<name> (urn:ai: is accepted too)"
_URN = re.compile(r"^urn:air:(?P<publisher>[a-zA-Z0-9.-]+)(?::[a-zA-Z0-9._-]+)+$")
_LEGACY = re.compile(r"^urn:(?:air|ai):", re.IGNORECASE)
_DOMAIN = re.compile(r"^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+[a-zA-Z][a-zA-Z0-9-]{0,62}$|^localhost$")
_UNSAFE = re.compile(r"[^a-zA-Z0-9._-]+")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_RFC8141_NAMES = re.compile(r"^[A-Za-z0-9._~!$&'()*+,;=@:-]+$")  # RFC 8141 NSS characters, escapes decoded
_RFC8141_EXTRA = re.compile(r"[~!$&'()*+,;=@]")
_NAMESPACE = uuid.UUID("6f1d7c2e-5b1a-4c8e-9a57-3c2f0f4d9b11")  # fixed: assigned ids must be stable across versions


def _schema_segments(rest: str) -> str:
    """Name segments in the v0.9 schema's characters: RFC 8141 allows `~`, `+`, `!`, `@`, ... and
    percent-escapes that the schema's `[a-zA-Z0-9._-]` does not; each such character (an escape is
    decoded first) reads as `-`, the schema's own separator. Anything else is left for the check to refuse."""
    decoded = _ESCAPE.sub(lambda m: chr(int(m[1], 16)) if chr(int(m[1], 16)).isascii() else m[0], rest)
    return _RFC8141_EXTRA.sub("-", decoded) if _RFC8141_NAMES.match(decoded) else rest


def normalize_identifier(identifier: str) -> str:
    """The canonical spelling of an ARD identifier (`urn:air:`, publisher in lower case, segments in the
    schema's characters), so every spelling of it names the same stored entry; anything that is not one
    is returned as it is."""
    prefix = _LEGACY.match(identifier)
    if prefix is None:
        return identifier
    publisher, colon, rest = identifier[prefix.end() :].partition(":")
    return f"{NID}{publisher.lower()}{colon}{_schema_segments(rest)}"


def is_identifier(reference: str) -> bool:
    """Whether `reference` is spelled as an ARD identifier (`urn:air:` or `urn:ai:`, any case)."""
    return _LEGACY.match(reference) is not None


def is_publisher_domain(host: str) -> bool:
    """Whether `host` can be the `<publisher>` of an identifier: a DNS name, not an IP address."""
    return _DOMAIN.match(host) is not None


def check_identifier(identifier: str) -> str:
    """Return the normalised identifier or raise `ValueError` with the rule it breaks."""
    identifier = normalize_identifier(identifier)
    match = _URN.match(identifier)
    if not match or not is_publisher_domain(match["publisher"]):
        raise ValueError(IDENTIFIER_RULE)
    return identifier


def within(host: str, domain: str) -> bool:
    """Whether `host` is `domain` or a name under it (case and a trailing dot aside): `agents.acme.com` is
    within `acme.com`, `notacme.com` is not."""
    host, domain = host.lower().rstrip("."), domain.lower().rstrip(".")
    return host == domain or host.endswith("." + domain)


def publisher_of(identifier: str) -> str:
    """The `<publisher>` segment of an identifier (ARD §7.1 derives the `publisher` filter key from it)."""
    return identifier.split(":", 3)[2].lower()


def _segments(text: str) -> list[str]:
    return [s for s in (_UNSAFE.sub("-", part).strip("-") for part in re.split(r"[:/?#&=]+", text)) if s]


def _domain(host: str | None) -> str | None:
    """The host if it can be an ARD publisher (a DNS name, not an IP address or a bare word)."""
    if not host:
        return None
    host = host.lower().rstrip(".")
    return host if is_publisher_domain(host) else None


def _host(url: str) -> str | None:
    parts = urlsplit(url)
    return parts.hostname if parts.scheme and parts.netloc else None


def registry_identifier(url: str, publisher: str) -> str:
    """An identifier for a registry known only by its URL (a configured upstream, referred to a client):
    anchored to its host when that is a domain name (`https://r.example.com:8443/ard` →
    `urn:air:r.example.com:registry:8443:ard`), else to `publisher`, the naming registry's own (an IP
    address or `localhost` cannot be a publisher: `urn:air:<publisher>:registry:127.0.0.1:8001`)."""
    parts = urlsplit(url)
    domain = _domain(parts.hostname)
    own = domain is not None and domain != "localhost"
    name = ([] if own else _segments(parts.hostname or "")) + _segments(f"{parts.port or ''}/{parts.path}")
    return f"{NID}{domain if own else publisher}:registry" + "".join(f":{segment}" for segment in name)


def assigned_id(name: str, endpoints: Iterable[str]) -> str:
    """The id a registry assigns to an agent that brought none: stable for the same name and endpoint."""
    return str(uuid.uuid5(_NAMESPACE, "\n".join([name, *endpoints])))


def derive_identifier(source_id: str, endpoints: Iterable[str], field: str = "id") -> str:
    """ARD ids are used as they are; a URL id becomes `urn:air:<host>:<path segments>`; any other id is
    anchored to the domain of the first endpoint (`urn:air:<endpoint host>:<id segments>`)."""
    if is_identifier(source_id):
        try:
            return check_identifier(source_id)
        except ValueError as exc:
            raise InvalidArgument(f"{field}: {exc}") from None
    domain = _domain(_host(source_id))
    if domain is not None:
        parts = urlsplit(source_id)
        rest = _segments(parts.path + ("?" + parts.query if parts.query else "") + ("#" + parts.fragment if parts.fragment else ""))
        return f"{NID}{domain}:{':'.join(rest or ['agent'])}"
    if _domain(source_id) is not None:  # a DNS-based name
        return f"{NID}{source_id.lower().rstrip('.')}:agent"
    for endpoint in endpoints:
        domain = _domain(_host(endpoint))
        if domain is not None:
            return f"{NID}{domain}:{':'.join(_segments(source_id) or ['agent'])}"
    raise InvalidArgument(
        f"{field}: {source_id!r} is not a urn:air: identifier or a URL, and no endpoint has a domain name to anchor it to; "
        f"use an id such as urn:air:<your-domain>:<name> or https://<your-domain>/<name>"
    )
