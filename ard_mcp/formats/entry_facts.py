"""What a stored catalog entry says about itself, whichever format it was registered in.

Entries registered as Xu Agent Metadata or AIDIP agent metadata are stored as ARD catalog entries whose
`data` is the original document (`type` names the format), with the discovery facts copied to ARD fields
and scalar `metadata` keys so the §7.1 filters and facets see them. The Xu discovery filters and the AIDIP
views need a few facts no ARD field carries (bindings, protocols, languages, regions); they are read here,
in one place, so every surface answers the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from ard_mcp.formats import media_types
from ard_mcp.formats.reserved_metadata import EXPIRES_KEY
from ard_mcp.formats.timestamps import stored_timestamp
from ard_mcp.net.urls import RefusedUrl, Target, check_url

XU_TYPE = "application/agent-discovery-metadata+json"
"""Media type of an entry whose `data` is Xu profile Agent Metadata (the draft names none; ours)."""
AIDIP_TYPE = "application/aidip-agent+json"
"""Media type of an entry whose `data` is AIDIP agent metadata (the draft names none; ours)."""

STATUS_KEY = "status"  # metadata.status: Xu / AIDIP operational status; absent means active
SOURCE_ID_KEY = "sourceId"  # metadata.sourceId: the id the publisher used when it was not a urn:air: identifier
PUBLISHER_KEY = "publisher"  # metadata.publisher: AIDIP's publisher name
REGION_KEY = "region"  # metadata.region: a scalar region constraint
REMOTE_URL_KEY = "remoteUrl"  # metadata.remoteUrl: the first http(s) endpoint of a remote MCP server (`surfaces.mcp.server`)
REMOTE_TRANSPORT_KEY = "remoteTransport"  # metadata.remoteTransport: streamable-http | sse | ...
# Provenance of a crawled entry (`ard_mcp.web`): the document it came from, how that was found, and when and
# with which HTTP validators this version of the entry was fetched. Scalar, so filterable and facetable.
CRAWL_SOURCE_KEY = "crawlSource"
CRAWL_VIA_KEY = "crawlVia"
CRAWL_FETCHED_KEY = "crawlFetchedAt"
CRAWL_ETAG_KEY = "crawlEtag"
CRAWL_MODIFIED_KEY = "crawlLastModified"
# The bundled snapshot that added an entry (`ard_mcp.index.snapshot`): a stand-in for what the catalogs said then,
# so any crawl replaces it (`web.holdings`) and `ard-mcp snapshot remove` finds what is still the snapshot's.
SNAPSHOT_KEY = "snapshot"
# When the registry first saw the tool list it keeps in an MCP server's `data.tools` (`Indexer.observe_tools`):
# the server described none, and what it answered to tools/list when called is indexed as if it had.
TOOLS_OBSERVED_KEY = "toolsObservedAt"
VOLATILE_KEYS = frozenset({CRAWL_FETCHED_KEY, CRAWL_ETAG_KEY, CRAWL_MODIFIED_KEY, TOOLS_OBSERVED_KEY})
# What the registry found about an entry's trust manifest (`ard_mcp.trust`), kept as filter values beside the
# entry, never in it: `trust.status` is filterable and facetable; the `~` fields (reason, time) no caller can
# filter on. An entry no verifier has seen is `self-asserted` without a manifest, `unverified` with one.
TRUST_STATUS = "trust.status"
TRUST_REASON = "~trust.reason"
TRUST_CHECKED = "~trust.checkedAt"
TRUST_FIELDS = (TRUST_STATUS, TRUST_REASON, TRUST_CHECKED)
"""Metadata that says when an entry was seen, not what it is: left out of its content hash, so a re-fetched
entry that did not change is "unchanged" (not re-written, not re-embedded) and keeps the time it was first
fetched in this version."""

# Protocols implied by the ARD media types a registry commonly holds (keyed by `canonical_type`).
_TYPE_PROTOCOLS = {
    media_types.MCP_SERVER_CARD: "mcp",
    media_types.A2A_AGENT_CARD: "a2a",
    media_types.AGENT_CARD: "a2a",
    media_types.AI_REGISTRY: "ard",
    "application/ai-registry": "ard",
    media_types.AI_CATALOG: "ai-catalog",
    media_types.AGENT_SKILLS_ZIP: "skill",
    media_types.AGENT_SKILLS_GZIP: "skill",
    media_types.AGENT_SKILLS_MARKDOWN: "skill",
    "application/ai-skill": "skill",
    AIDIP_TYPE: "aidip",
}


def _metadata(entry: Mapping[str, Any]) -> Mapping[str, Any]:
    value = entry.get("metadata")
    return value if isinstance(value, Mapping) else {}


def _data(entry: Mapping[str, Any]) -> Mapping[str, Any]:
    value = entry.get("data")
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def origin(entry: Mapping[str, Any]) -> str:
    """`xu`, `aidip` or `ard`: the format the entry was registered in."""
    return {XU_TYPE: "xu", AIDIP_TYPE: "aidip"}.get(str(entry.get("type")), "ard")


def status_of(entry: Mapping[str, Any]) -> str:
    value = _metadata(entry).get(STATUS_KEY)
    return value.lower() if isinstance(value, str) and value else "active"


def source_id_of(entry: Mapping[str, Any]) -> str:
    """The id a Xu or AIDIP client knows the entry by: the publisher's own id, else the identifier."""
    value = _metadata(entry).get(SOURCE_ID_KEY)
    return value if isinstance(value, str) and value else str(entry["identifier"])


def expiry_of(entry: Mapping[str, Any]) -> datetime | None:
    """When the entry stops being returned; None when it never expires or the value is not a timestamp."""
    return stored_timestamp(_metadata(entry).get(EXPIRES_KEY))


def tags_of(entry: Mapping[str, Any]) -> set[str]:
    return {t.lower() for t in _strings(entry.get("tags"))}


def capabilities_of(entry: Mapping[str, Any]) -> set[str]:
    return {c.lower() for c in _strings(entry.get("capabilities"))}


def languages_of(entry: Mapping[str, Any]) -> set[str]:
    """AIDIP `supported_languages`, Xu example `language` tags and ARD `metadata.language`."""
    data = _data(entry)
    found = _strings(data.get("supported_languages")) + _strings(_metadata(entry).get("language"))
    if origin(entry) == "xu":
        for example in data.get("examples") or []:
            if isinstance(example, Mapping):
                found += _strings(example.get("language"))
    return {lang.lower() for lang in found}


def regions_of(entry: Mapping[str, Any]) -> set[str]:
    """Where the agent may be used: `metadata.region` and Xu `constraints.region`; empty means unrestricted."""
    found = _strings(_metadata(entry).get(REGION_KEY))
    constraints = _data(entry).get("constraints")
    if isinstance(constraints, Mapping):
        found += _strings(constraints.get("region"))
    return {r.lower() for r in found}


def card_interfaces(card: Mapping[str, Any]) -> list[dict[str, str]]:
    """The `{url, protocolBinding}` of each interface of an A2A agent card, preferred first, whichever the
    version: v1.0 lists `supportedInterfaces`; v0.3 has `url` with `preferredTransport`, and `additionalInterfaces`."""
    found: dict[str, dict[str, str]] = {}
    v03 = {"url": card.get("url"), "transport": card.get("preferredTransport")}
    for item in [*_list(card.get("supportedInterfaces")), v03, *_list(card.get("additionalInterfaces"))]:
        if isinstance(item, Mapping) and isinstance(item.get("url"), str) and item["url"]:
            binding = item.get("protocolBinding") or item.get("transport")
            found.setdefault(item["url"], {"url": item["url"], "protocolBinding": binding if isinstance(binding, str) else "JSONRPC"})
    return list(found.values())


def _scheme(endpoint: str) -> str | None:
    parts = urlsplit(endpoint)
    return parts.scheme.lower() if parts.scheme and parts.netloc else None


def servable_url(url: str) -> Target | None:
    """Where a remote a server description lists points, if it can be served as a binding: a URL, not a
    template (`{tenant}`), and nowhere `check_url` refuses (an entry is refused for an endpoint it binds to,
    not for what it lists); None if it cannot."""
    if "{" in url or any(c.isspace() for c in url):
        return None
    try:
        return check_url(url)
    except RefusedUrl:
        return None


def mcp_remotes(entry: Mapping[str, Any]) -> list[tuple[str, str | None]]:
    """The absolute http(s) endpoints an MCP server entry names, with the transport each says (or None), in the
    order to try them: its inline server.json or card's `remotes`, `transport`, `endpoint` and `url`, then the
    remote the registry recorded when it read one (`metadata.remoteUrl`). Nothing for a server that only runs
    from its package."""
    data = _data(entry)
    candidates = [(r.get("url"), r.get("type") or r.get("transport_type")) for r in _list(data.get("remotes")) if isinstance(r, Mapping)]
    transport = data.get("transport")
    if isinstance(transport, Mapping):
        candidates.append((transport.get("url") or transport.get("endpoint"), transport.get("type")))
    kind = transport if isinstance(transport, str) else None
    candidates += [(data.get("endpoint"), kind), (data.get("url"), kind)]
    metadata = _metadata(entry)
    candidates.append((metadata.get(REMOTE_URL_KEY), metadata.get(REMOTE_TRANSPORT_KEY)))
    return [
        (url, how if isinstance(how, str) else None)
        for url, how in candidates
        if isinstance(url, str) and _scheme(url) in ("http", "https")
    ]


def bindings_of(entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Xu-style protocol bindings (§4.6: how the agent "can be contacted or invoked after discovery"): stored
    ones for Xu entries, derived ones for AIDIP and ARD entries, media types in their v0.9 spelling.

    An ARD entry with a `url` is bound to it. An inline MCP server is bound to each remote endpoint its server
    description names, and has no binding when it names none (it runs from its package: nothing is callable,
    and its URN is no endpoint). Other inline entries (a nested catalog, a skill) are reached through this
    registry, so their endpoint is their identifier (`GET /agents/{id}`, the `ard://agents/{identifier}` resource)."""
    kind = origin(entry)
    data = _data(entry)
    if kind == "xu":
        return [dict(b) for b in data.get("bindings") or [] if isinstance(b, Mapping)]
    if kind == "aidip":
        endpoint = data.get("endpoint")
        if not isinstance(endpoint, str):
            return []
        return [
            {
                "protocol": _scheme(endpoint) or "aidip",
                "endpoint": endpoint,
                "media_types": ["application/json"],
                "interaction_model": "request-response",
            }
        ]
    media_type = media_types.served_type(str(entry.get("type")))
    protocol = _TYPE_PROTOCOLS.get(media_types.canonical_type(media_type))
    if protocol == "a2a" and data:
        cards = card_interfaces(data)
        if cards:
            return [
                {"protocol": "a2a", "endpoint": i["url"], "media_types": [media_type], "protocol_binding": i["protocolBinding"]}
                for i in cards
            ]
    url = entry.get("url")
    if protocol == "mcp" and not isinstance(url, str):
        remotes = dict.fromkeys(remote for remote, _ in mcp_remotes(entry) if servable_url(remote) is not None)
        return [{"protocol": "mcp", "endpoint": remote, "media_types": [media_type]} for remote in remotes]
    endpoint = url if isinstance(url, str) else str(entry["identifier"])
    protocol = protocol or (_scheme(endpoint) if isinstance(url, str) else None) or "ard"
    return [{"protocol": protocol, "endpoint": endpoint, "media_types": [media_type]}]


def protocols_of(entry: Mapping[str, Any]) -> set[str]:
    """Every protocol a client could use: binding protocols, their URL schemes and the type's protocol."""
    found: set[str] = set()
    for binding in bindings_of(entry):
        if isinstance(binding.get("protocol"), str):
            found.add(binding["protocol"].lower())
        if isinstance(binding.get("endpoint"), str) and (scheme := _scheme(binding["endpoint"])):
            found.add(scheme)
    implied = _TYPE_PROTOCOLS.get(media_types.canonical_type(str(entry.get("type"))))
    if implied:
        found.add(implied)
    return found


def trust_values(status: str, reason: str, checked_at: str | None = None) -> set[tuple[str, str]]:
    """The filter values that record a trust finding."""
    found = {(TRUST_STATUS, status), (TRUST_REASON, reason)}
    return found | {(TRUST_CHECKED, checked_at)} if checked_at else found


def unchecked_trust(entry: Mapping[str, Any]) -> set[tuple[str, str]]:
    """The trust finding of an entry no verifier has seen (registered from a file, or before trust checks existed)."""
    if entry.get("trustManifest") is None:
        return trust_values("self-asserted", "no trust manifest: the publisher in the identifier is a claim nobody checked")
    return trust_values("unverified", "a trust manifest that was not checked (the entry did not come through a verifier)")
