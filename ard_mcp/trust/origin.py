"""Origin binding: whether a crawled entry came from the publisher its identifier names.

An identifier `urn:air:alpha.test:...` is a claim anyone can write into a catalog. What a crawler can check
is where the catalog came from: the entry is *publisher-served* when the document's host is the publisher
domain or a subdomain of it, or when the publisher delegated to that host by something only the publisher
controls (its own catalog nesting the document, its robots.txt Agentmap, a `<link rel="ai-catalog">` on its
home page, its DNS records). Anything else is a *third-party claim*: it is stored with the status
`third-party` and the serving host in the reason, never replaces or blocks the publisher's own entry, and
is never `verified`, since ARD §5.1 signs the trust manifest alone and a copied manifest verifies anywhere
(issue #31: an impostor crawled first held `urn:air:alpha.test:agent:weather`, and alpha's genuine manifest
copied onto evil.test's entry was reported verified). `docs/trust.md` sets out the rule.

Registrations need no such check: a credential may only write the publishers it is scoped to (`auth`), and
the local operator (stdio, the command line, an open loopback registry) vouches for what it registers.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from ard_mcp.formats.identifiers import within
from ard_mcp.trust.status import TrustResult

DNS_PREFIX = "dns:"


def host_of(reference: str | None) -> str | None:
    """The host a crawl reference names: a URL, `dns:<name>` (a DNS record of that name) or `domain[:port]`."""
    if not reference:
        return None
    if reference.startswith(DNS_PREFIX):
        return reference[len(DNS_PREFIX) :].lower().rstrip(".") or None
    try:
        host = urlsplit(reference if "://" in reference else f"//{reference}").hostname
    except ValueError:
        return None
    return host.rstrip(".") if host else None


def bound(publisher: str, authorities: Iterable[str]) -> bool:
    """Whether one of the hosts a document speaks for is the publisher domain or a name under it."""
    return any(within(host, publisher) for host in authorities)


def third_party(result: TrustResult, publisher: str, host: str) -> TrustResult:
    """What a check of a third-party claim concludes, whatever its manifest: the serving host and, when the
    manifest's signature checked out, that the signature does not reach the entry."""
    claim = f"served by {host}, which is neither {publisher} nor a host {publisher} delegates to: a third-party claim"
    if result.status == "verified":
        note = "its trust manifest's signature is valid, but it covers only the manifest (ARD §5.1), not this entry's text or url"
    else:
        note = f"trust manifest: {result.status} ({result.reason})"
    return TrustResult("third-party", f"{claim}; {note}", checked_at=result.checked_at)
