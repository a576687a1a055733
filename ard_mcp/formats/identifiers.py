"""ARD identifiers: the `urn:ai:` form every entry is keyed by (§4.2.1), and the identifiers derived for
agents registered in formats whose ids are not such URNs (Xu profile, AIDIP).

Input may use the later `urn:air:` form; it is stored and emitted in the v0.5 `urn:ai:` form. The Xu
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

IDENTIFIER_RULE = "must be urn:ai:<publisher-domain>:...:<name>"
_URN = re.compile(r"^urn:ai:(?P<publisher>[a-zA-Z0-9.-]+)(?::[a-zA-Z0-9._-]+)+$")
_DOMAIN = re.compile(r"^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+[a-zA-Z][a-zA-Z0-9-]{0,62}$|^localhost$")
_UNSAFE = re.compile(r"[^a-zA-Z0-9._-]+")
_NAMESPACE = uuid.UUID("6f1d7c2e-5b1a-4c8e-9a57-3c2f0f4d9b11")  # fixed: assigned ids must be stable across versions


def normalize_identifier(identifier: str) -> str:
    """Map the v0.9 `urn:air:` form onto v0.5 `urn:ai:` so both name the same stored entry."""
    if identifier[:8].lower() == "urn:air:":
        return "urn:ai:" + identifier[8:]
    if identifier[:7].lower() == "urn:ai:":
        return "urn:ai:" + identifier[7:]
    return identifier


def check_identifier(identifier: str) -> str:
    """Return the normalised identifier or raise `ValueError` with the rule it breaks."""
    identifier = normalize_identifier(identifier)
    match = _URN.match(identifier)
    if not match or not _DOMAIN.match(match["publisher"]):
        raise ValueError(IDENTIFIER_RULE)
    return identifier


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
    try:
        check_identifier(f"urn:ai:{host}:x")
    except ValueError:
        return None
    return host


def _host(url: str) -> str | None:
    parts = urlsplit(url)
    return parts.hostname if parts.scheme and parts.netloc else None


def assigned_id(name: str, endpoints: Iterable[str]) -> str:
    """The id a registry assigns to an agent that brought none: stable for the same name and endpoint."""
    return str(uuid.uuid5(_NAMESPACE, "\n".join([name, *endpoints])))


def derive_identifier(source_id: str, endpoints: Iterable[str], field: str = "id") -> str:
    """`urn:ai:` ids are used as they are; a URL id becomes `urn:ai:<host>:<path segments>`; any other id
    is anchored to the domain of the first endpoint (`urn:ai:<endpoint host>:<id segments>`)."""
    lowered = source_id[:8].lower()
    if lowered.startswith(("urn:ai:", "urn:air:")):
        try:
            return check_identifier(source_id)
        except ValueError as exc:
            raise InvalidArgument(f"{field}: {exc}") from None
    domain = _domain(_host(source_id))
    if domain is not None:
        parts = urlsplit(source_id)
        rest = _segments(parts.path + ("?" + parts.query if parts.query else "") + ("#" + parts.fragment if parts.fragment else ""))
        return f"urn:ai:{domain}:{':'.join(rest or ['agent'])}"
    if _domain(source_id) is not None:  # a DNS-based name
        return f"urn:ai:{source_id.lower().rstrip('.')}:agent"
    for endpoint in endpoints:
        domain = _domain(_host(endpoint))
        if domain is not None:
            return f"urn:ai:{domain}:{':'.join(_segments(source_id) or ['agent'])}"
    raise InvalidArgument(
        f"{field}: {source_id!r} is not a urn:ai: identifier or a URL, and no endpoint has a domain name to anchor it to; "
        f"use an id such as urn:ai:<your-domain>:<name> or https://<your-domain>/<name>"
    )
