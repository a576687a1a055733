"""MCP servers as the crawler finds them, mapped to ARD catalog entries: records of the official MCP registry
(`GET /v0/servers`, `/v0.1/servers`), `server.json` files (the 2025-12-11 schema and the registry's older
shape with `version_detail` and `packages[].registry_name`), and server cards served by a server itself
(SEP-1649 `/.well-known/mcp.json`: `serverInfo`, `description`, `tools`, `transport`).

Why a format of its own: these documents name a server `<reverse-DNS namespace>/<name>` and keep what a
registry needs (latest version, status, update time) beside the server, not in it. Each one is stored as
an `application/mcp-server-card+json` entry whose `data` is the document as it came, so its `tools` are
indexed as examples (`ard_mcp.index.example_texts`) and tool names become `capabilities`.

Identity: `io.github.alice/weather` is published by `alice.github.io` (the namespace read back as a DNS
name, which is how the registry verified it), so it is `urn:air:alice.github.io:server:weather`, and the
name itself is kept in `metadata.sourceId` (two names that map to one identifier are then refused, not
merged). A card with no namespace is anchored to the host it was fetched from (`origin_host`); a card whose
namespace is not that host or a parent of it is anchored to the host too, so a host can only publish under
its own name, as an A2A card is anchored to its interface's host.

A catalog entry holds exactly one of `url` and `data` (ARD §3.4), and `url` is where the artifact is, not
where the server answers: the server's first remote endpoint goes to `metadata.remoteUrl` (and its
transport to `metadata.remoteTransport`) so the document itself stays in `data`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urljoin, urlsplit

from ard_mcp.errors import InvalidArgument
from ard_mcp.formats import a2a
from ard_mcp.formats.entry_facts import REMOTE_TRANSPORT_KEY, REMOTE_URL_KEY, SOURCE_ID_KEY, servable_url
from ard_mcp.formats.identifiers import derive_identifier, is_publisher_domain, within
from ard_mcp.formats.limits import MAX_ITEMS, MAX_LONG_TEXT, MAX_SHORT_TEXT, check_json
from ard_mcp.formats.media_types import MCP_SERVER_CARD
from ard_mcp.formats.timestamps import parse_timestamp, utc_text
from ard_mcp.net.urls import carried

OFFICIAL = "io.modelcontextprotocol.registry/official"
"""The key of the official registry's own metadata in `_meta` (status, isLatest, publishedAt, updatedAt)."""
PUBLISHER_PROVIDED = "io.modelcontextprotocol.registry/publisher-provided"
REGISTRY_STATUS_KEY = "registryStatus"  # metadata.registryStatus: active | deprecated | deleted
PACKAGE_REGISTRY_KEY = "packageRegistry"  # metadata.packageRegistry: npm | pypi | oci | nuget | mcpb | ...
NAMESPACE = "server"  # urn:air:<publisher>:server:<name>

_REVERSE_DNS_NAME = re.compile(r"^[a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)+/[^/\s]+$")
_SERVER_SCHEMA = "server.schema.json"
_CARD_SCHEMAS = ("server-card", "mcp-server-card")
_FOREIGN_KEYS = ("bindings", "endpoint", "operations", "skills")  # Xu, AIDIP and A2A fields no server.json has
_CARD_ENDPOINT_KEYS = ("transport", "endpoint", "remotes", "url")
_NOT_A_PACKAGE_REGISTRY = ("", "unknown")


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: Any) -> str | None:
    """A non-blank string, stripped; anything else is None."""
    return (value.strip() or None) if isinstance(value, str) else None


def _foreign(document: Mapping[str, Any]) -> str | None:
    """What `document` is when it is another format this registry reads (checked first, so never claimed)."""
    if "identifier" in document:
        return "an ARD catalog entry (it has identifier)"
    if "entries" in document:
        return "an ARD catalog manifest (it has entries)"
    if a2a.is_agent_card(document):
        return "an A2A agent card"
    return None


def _schema_mentions(document: Mapping[str, Any], *names: str) -> bool:
    schema = document.get("$schema")
    return isinstance(schema, str) and any(name in schema for name in names)


def _old_registry_shape(document: Mapping[str, Any]) -> bool:
    packages = _list(document.get("packages"))
    return isinstance(document.get("version_detail"), Mapping) or any(isinstance(p, Mapping) and "registry_name" in p for p in packages)


def is_server_json(document: Any) -> bool:
    """A `server.json` (current schema or the registry's older shape). `$schema`, `version_detail` and
    `packages[].registry_name` say so alone; otherwise a reverse-DNS `name` with `version` and `description`
    does, or one with `packages` or `remotes`, unless the document has fields only Xu, AIDIP or A2A documents have."""
    if not isinstance(document, Mapping) or _foreign(document) is not None:
        return False
    if _schema_mentions(document, _SERVER_SCHEMA) or _old_registry_shape(document):
        return True
    name = document.get("name")
    if not isinstance(name, str) or not _REVERSE_DNS_NAME.match(name) or any(key in document for key in _FOREIGN_KEYS):
        return False
    return ("version" in document and "description" in document) or any(isinstance(document.get(k), list) for k in ("packages", "remotes"))


def is_server_card(document: Any) -> bool:
    """An MCP server card: `serverInfo` with a name, a server-card `$schema`, or a `name` with a `tools`
    list and somewhere to connect to (`transport`, `endpoint`, `remotes` or `url`)."""
    if not isinstance(document, Mapping) or _foreign(document) is not None:
        return False
    if isinstance(_mapping(document.get("serverInfo")).get("name"), str) or _schema_mentions(document, *_CARD_SCHEMAS):
        return True
    has_tools = isinstance(document.get("tools"), list) and "skills" not in document
    return isinstance(document.get("name"), str) and has_tools and any(key in document for key in _CARD_ENDPOINT_KEYS)


# -- reading the document ------------------------------------------------------------------------------------


def _server_name(document: Mapping[str, Any]) -> tuple[str, str]:
    """The server's name and the field it came from: `serverInfo.name` on a card, else `name`."""
    info = document.get("serverInfo")
    if isinstance(info, Mapping):
        name, field = info.get("name"), "server.serverInfo.name"
    else:
        name, field = document.get("name"), "server.name"
    text = _text(name)
    if text is None:
        raise InvalidArgument(f"{field}: required, a non-empty string such as io.github.owner/server (got {name!r})")
    return text, field


def _host_of(origin_host: str | None) -> str | None:
    """The DNS name of `origin_host` (a host, host:port or URL), or None when it is not one (an IP address)."""
    if not origin_host:
        return None
    host = urlsplit(origin_host if "://" in origin_host else f"//{origin_host}").hostname
    host = (host or "").rstrip(".")
    return host if is_publisher_domain(host) else None


def _namespace_domain(namespace: str) -> str | None:
    """`io.github.alice` → `alice.github.io`: a reverse-DNS namespace read as the domain it names."""
    domain = ".".join(reversed(namespace.lower().split(".")))
    return domain if is_publisher_domain(domain) else None


def _publisher_and_name(name: str, field: str, origin_host: str | None) -> tuple[str, str]:
    """The publisher domain and the local name the identifier is made of (see the module docstring)."""
    namespace, slash, local = name.partition("/")
    domain = _namespace_domain(namespace) if slash else None
    host = _host_of(origin_host)
    if domain is not None and (host is None or within(host, domain)):
        return domain, local
    if host is not None:
        return host, local if domain is not None else name
    if slash:
        raise InvalidArgument(f"{field}: the namespace of {name!r} is not a reverse-DNS name such as io.github.owner or com.example")
    raise InvalidArgument(
        f"{field}: {name!r} has no reverse-DNS namespace (such as com.example/{name}) and no origin host was given to anchor it to"
    )


def _identifier(name: str, field: str, origin_host: str | None) -> str:
    publisher, local = _publisher_and_name(name, field, origin_host)
    if not re.search(r"[a-zA-Z0-9]", local):
        raise InvalidArgument(f"{field}: {name!r} has no letters or digits after its namespace to name the server by")
    return derive_identifier(f"{NAMESPACE}:{local}", [f"https://{publisher}/"], field)


def _official(document: Mapping[str, Any], registry_meta: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The official registry's metadata of the record: from the API's `_meta` beside the server, else the
    `_meta` inside it (the older API)."""
    meta = registry_meta if registry_meta is not None else _mapping(document.get("_meta"))
    return _mapping(meta.get(OFFICIAL))


def _first(mapping: Mapping[str, Any], *keys: str) -> Any:
    return next((mapping[key] for key in keys if mapping.get(key) is not None), None)


def _timestamp(value: Any) -> str | None:
    """An RFC 3339 UTC timestamp, or None when `value` is not a date-time (a bad stamp loses the stamp,
    not the server). One without a zone is read as UTC."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return utc_text(parse_timestamp(value, naive_is_utc=True), "auto")
    except ValueError:
        return None


def _updated_at(document: Mapping[str, Any], official: Mapping[str, Any]) -> str | None:
    stamp = _first(official, "updatedAt", "updated_at", "publishedAt", "published_at")
    return _timestamp(stamp if stamp is not None else _mapping(document.get("version_detail")).get("release_date"))


def _version(document: Mapping[str, Any]) -> str | None:
    """The server's version. A card's top-level `version` is the card format's, so its `serverInfo` wins."""
    info = document.get("serverInfo")
    value = _mapping(info).get("version") if isinstance(info, Mapping) else document.get("version")
    return _text(value) or _text(_mapping(document.get("version_detail")).get("version"))


def _short_texts(values: list[Any]) -> list[str]:
    """Distinct non-blank strings within the catalog's limits on tags and capabilities."""
    texts = [t for t in (_text(v) for v in values) if t is not None and len(t) <= MAX_SHORT_TEXT]
    return list(dict.fromkeys(texts))[:MAX_ITEMS]


def _tool_names(document: Mapping[str, Any]) -> list[str]:
    """Tool names of a card: a `tools` list of objects or of names (a card may also say `"dynamic"`)."""
    return _short_texts([t.get("name") if isinstance(t, Mapping) else t for t in _list(document.get("tools"))])


def _keywords(document: Mapping[str, Any]) -> list[str]:
    provided = _mapping(_mapping(document.get("_meta")).get(PUBLISHER_PROVIDED))
    sources = (document, _mapping(document.get("serverInfo")), provided)
    return _short_texts([k for source in sources for key in ("keywords", "tags") for k in _list(source.get(key))])


def _package_registry(document: Mapping[str, Any]) -> str | None:
    packages = _list(document.get("packages"))
    first = _mapping(packages[0]) if packages else {}
    value = _text(_first(first, "registryType", "registry_type", "registry_name"))
    return value.lower() if value is not None and value.lower() not in _NOT_A_PACKAGE_REGISTRY else None


def _usable_url(url: str) -> bool:
    """An http(s) URL a client elsewhere can reach: one `check_url` takes (not link-local, not cloud
    metadata, in any spelling) whose host is not a template (`{tenant}`) or loopback (old records list
    `http://localhost:8000/sse`, which is how to run it, not where it runs)."""
    target = servable_url(url)
    if target is None:
        return False
    if target.host == "localhost" or target.host.endswith(".localhost"):
        return False
    address = None if target.address is None else carried(target.address)
    return address is None or not (address.is_loopback or address.is_unspecified)


def _endpoints(document: Mapping[str, Any]) -> list[tuple[Any, Any]]:
    """(url, transport type) candidates: `remotes` (old records say `transport_type`), then a card's
    `transport` object or name, `endpoint` and `url`."""
    found = [(r.get("url"), _first(r, "type", "transport_type")) for r in map(_mapping, _list(document.get("remotes")))]
    transport = document.get("transport")
    if isinstance(transport, Mapping):
        found.append((_first(transport, "url", "endpoint"), transport.get("type")))
    kind = transport if isinstance(transport, str) else None
    found += [(document.get("endpoint"), kind), (document.get("url"), kind)]
    return found


def _remote(document: Mapping[str, Any], origin_host: str | None) -> tuple[str, str | None] | None:
    """The first remote endpoint a client can reach; a card's relative endpoint (`/mcp`) is on its host."""
    host = _host_of(origin_host)
    for url, kind in _endpoints(document):
        if not isinstance(url, str) or not url.strip():
            continue
        absolute = urljoin(f"https://{host}/", url.strip()) if host and "://" not in url else url.strip()
        if _usable_url(absolute):
            return absolute, _text(kind)
    return None


def _metadata(document: Mapping[str, Any], name: str, official: Mapping[str, Any], origin_host: str | None) -> dict[str, Any]:
    metadata: dict[str, Any] = {SOURCE_ID_KEY: name}
    status = _text(official.get("status"))
    if status is not None:
        metadata[REGISTRY_STATUS_KEY] = status.lower()
    package_registry = _package_registry(document)
    if package_registry is not None:
        metadata[PACKAGE_REGISTRY_KEY] = package_registry
    remote = _remote(document, origin_host)
    if remote is not None:
        metadata[REMOTE_URL_KEY] = remote[0]
        if remote[1] is not None:
            metadata[REMOTE_TRANSPORT_KEY] = remote[1]
    return metadata


def _display_name(document: Mapping[str, Any], name: str) -> str:
    title = _text(document.get("title")) or _text(_mapping(document.get("serverInfo")).get("title"))
    return (title or name)[:MAX_SHORT_TEXT]


def _description(document: Mapping[str, Any], name: str) -> str:
    text = _text(document.get("description")) or _text(_mapping(document.get("serverInfo")).get("description"))
    return (text or name)[:MAX_LONG_TEXT]


def to_entry(document: Any, *, registry_meta: Mapping[str, Any] | None = None, origin_host: str | None = None) -> dict[str, Any]:
    """An ARD catalog entry (raw, for `Indexer.register`) from a server.json, a registry record's server or
    a server card. `registry_meta` is the `_meta` the registry API sends beside the server; `origin_host` the
    host a card was fetched from (pass it only for documents a server's own host served)."""
    if not isinstance(document, Mapping):
        raise InvalidArgument("server: must be a JSON object (a server.json, a registry record's server or a server card)")
    foreign = _foreign(document)
    if foreign is not None:
        raise InvalidArgument(f"server: this is {foreign}, not an MCP server description; register it in its own format")
    check_json(document, "server")
    name, field = _server_name(document)
    official = _official(document, registry_meta)
    entry: dict[str, Any] = {
        "identifier": _identifier(name, field, origin_host),
        "displayName": _display_name(document, name),
        "type": MCP_SERVER_CARD,
        "data": dict(document),
        "description": _description(document, name),
        "metadata": _metadata(document, name, official, origin_host),
    }
    for ard, value in (
        ("version", _version(document)),
        ("updatedAt", _updated_at(document, official)),
        ("tags", _keywords(document)),
        ("capabilities", _tool_names(document)),
    ):
        if value and (ard != "version" or len(value) <= MAX_SHORT_TEXT):
            entry[ard] = value
    return entry


# -- registry pages ------------------------------------------------------------------------------------------


def _is_latest(server: Mapping[str, Any], official: Mapping[str, Any]) -> bool:
    """False only when the registry says so: `isLatest` (`is_latest` in the older API, and in the older
    records' `version_detail`)."""
    flag = _first(official, "isLatest", "is_latest")
    if flag is None:
        flag = _mapping(server.get("version_detail")).get("is_latest")
    return flag is not False


def _record(item: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(server, registry _meta) of one item: `{"server": {...}, "_meta": {...}}`, or the older API's
    server.json with its `_meta` inside."""
    nested = item.get("server")
    server = nested if isinstance(nested, Mapping) else item
    meta = item.get("_meta") if isinstance(item.get("_meta"), Mapping) else server.get("_meta")
    return dict(server), dict(meta) if isinstance(meta, Mapping) else None


def _next_cursor(page: Mapping[str, Any]) -> str | None:
    cursor = _first(_mapping(page.get("metadata")), "nextCursor", "next_cursor")
    return cursor if isinstance(cursor, str) and cursor else None


def registry_records(page: Any) -> tuple[list[tuple[dict[str, Any], dict[str, Any] | None]], str | None]:
    """The (server, registry _meta) records of one page of `GET /v0/servers` or `/v0.1/servers`, latest
    versions only, and the cursor of the next page (None on the last). Items that are not objects are
    skipped; each record's own problems are `to_entry`'s to report."""
    if not isinstance(page, Mapping):
        raise InvalidArgument("page: must be a JSON object, a page of GET /v0/servers")
    servers = page.get("servers")
    if not isinstance(servers, list):
        raise InvalidArgument('page.servers: must be a list (a page of GET /v0/servers is {"servers": [...], "metadata": {...}})')
    records: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
    for item in servers:
        if isinstance(item, Mapping):
            server, meta = _record(item)
            if _is_latest(server, _mapping(_mapping(meta).get(OFFICIAL))):
                records.append((server, meta))
    return records, _next_cursor(page)
