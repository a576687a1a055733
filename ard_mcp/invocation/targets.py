"""Where and how a stored entry is called, read from the entry alone (no network).

- an MCP server (`application/mcp-server-card+json`): the first remote of its inline server.json or card
  (`remotes`, `transport`, `endpoint`, `url`), else the remote the registry recorded when it read one
  (`metadata.remoteUrl`); streamable HTTP unless the remote says SSE; without a remote, the npm or PyPI
  package it can be started from, over stdio (`ard_mcp.packages`: installed and started once consented to);
- an A2A agent card: its first interface (`supportedInterfaces`, or v0.3 `url`), its skills as the tools;
- AIDIP agent metadata: its `endpoint`, its `operations` as the tools;
- Xu agent metadata: its first http(s) binding, called like an AIDIP agent.

Anything else, or a card only referenced by `url` (the artifact is elsewhere, not inline), is offline: the
answer says why, so a host can tell the person what to configure instead. Every endpoint must pass the one
URL check (`net.urls.check_url`: no link-local or cloud-metadata address in any spelling, nothing the HTTP
client cannot read) before it counts, and an entry offline for want of one names the first it refused and why.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ard_mcp.formats import entry_facts, media_types
from ard_mcp.invocation.calls import Protocol_, Target
from ard_mcp.invocation.policy import Limits
from ard_mcp.net.urls import RefusedUrl, check_url
from ard_mcp.packages.specs import PackageSpec, Unusable, package_of

_SSE = ("sse", "http+sse")
_WEB = ("http://", "https://")
_SHOWN = 200  # the most of a refused URL an offline reason quotes


@dataclass(frozen=True)
class Offline:
    reason: str


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _http(url: Any) -> str | None:
    """`url` if it is an absolute http(s) URL the URL check accepts."""
    if not isinstance(url, str) or not url.lower().startswith(_WEB):
        return None
    try:
        check_url(url)
    except RefusedUrl:
        return None
    return url


def _refused(urls: Iterable[Any]) -> str:
    """` (<url> <why>)` for the first http(s) URL among `urls` the URL check refuses, else "": an offline
    entry's reason names what to fix (a metadata address, a host the registry's HTTP client cannot read)."""
    for url in urls:
        if isinstance(url, str) and url.lower().startswith(_WEB):
            try:
                check_url(url)
            except RefusedUrl as exc:
                return f" ({ascii(url)[:_SHOWN]} {exc.reason})"
    return ""


def _on_the_publishers_machine(url: str) -> bool:
    """Whether `url` names a loopback, private or unspecified address (`http://localhost:3001/sse`): in a server
    description that also lists a package, how its publisher runs it on their own machine, not a service to
    call. The package is started instead: the remote was tried and refused by the network policy, and the
    package never was (bench/package_sample.py, template-mcp-server)."""
    host = (urlsplit(url).hostname or "").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local or address.is_unspecified


def _mcp(entry: Mapping[str, Any]) -> tuple[str, str] | None:
    for url, how in entry_facts.mcp_remotes(entry):
        if (found := _http(url)) is not None:
            return found, "sse" if str(how or "").lower() in _SSE else "streamable-http"
    return None


def target_of(entry: Mapping[str, Any], limits: Limits) -> Target | Offline:
    """The entry's `Target` (without a credential: `service` adds the operator's), or why it cannot be called."""
    data = _mapping(entry.get("data"))
    kind = entry_facts.origin(entry)
    media_type = media_types.canonical_type(str(entry.get("type")))
    protocol: Protocol_
    operations: tuple[Mapping[str, Any], ...] = ()
    transport: str | None = None
    if kind in ("aidip", "xu"):
        listed = entry_facts.bindings_of(entry)
        bindings = [b for b in listed if _http(b.get("endpoint")) is not None]
        if not bindings:
            return Offline("its metadata names no http(s) endpoint this registry may call" + _refused(b.get("endpoint") for b in listed))
        protocol, url = "http", str(bindings[0]["endpoint"])
        operations = tuple(_mapping(o) for o in data.get("operations") or [] if isinstance(o, Mapping))
    elif media_type == media_types.MCP_SERVER_CARD:
        remote = _mcp(entry)
        if remote is None or (_on_the_publishers_machine(remote[0]) and isinstance(package_of(entry), PackageSpec)):
            package = package_of(entry)
            if isinstance(package, Unusable):
                refused = _refused(url for url, _ in entry_facts.mcp_remotes(entry))
                remotes = f"no remote MCP endpoint this registry may call in its server description{refused}"
                return Offline(f"{remotes}, and no package to start it from: {package.reason}")
            return Target("mcp", package.key(), "stdio", limits=limits, package=package)
        (url, transport), protocol = remote, "mcp"
    elif media_type in (media_types.A2A_AGENT_CARD, media_types.AGENT_CARD):
        listed = entry_facts.card_interfaces(data)
        interfaces = [i for i in listed if _http(i.get("url")) is not None]
        if not interfaces:
            return Offline("its agent card is not inline or names no http(s) interface" + _refused(i.get("url") for i in listed))
        protocol, url, transport = "a2a", interfaces[0]["url"], interfaces[0].get("protocolBinding")
        operations = tuple(_mapping(s) for s in data.get("skills") or [] if isinstance(s, Mapping))
    else:
        return Offline(f"a {entry.get('type')} entry has no invocation interface this registry speaks (MCP, A2A, AIDIP, Xu https)")
    card = data if protocol == "a2a" else None
    return Target(protocol, url, transport, operations, card, None, limits)
