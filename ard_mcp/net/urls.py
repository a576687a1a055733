"""Where a URL really points: the one check for every URL the registry stores, serves, fetches or calls.

Clients do not read a host as it is written. The WHATWG URL Standard, which browsers, Node and most agent
runtimes follow, reads `2852039166`, `0xa9fea9fe`, `0251.0376.0251.0376`, `169.254.43518`,
`169.254.169.254.` and `%31%36%39.254.169.254` all as 169.254.169.254, and the C resolver behind most
other clients reads the numeric ones alike. Registration once compared the text with the dotted spelling,
refusing one way of writing cloud metadata and storing the others for every client that searched. So a
host is read here as the URL Standard reads it, by ada (the parser Node uses, through `ada-url`), and an
IPv4 address carried inside an IPv6 one (`::ffff:a9fe:a9fe`, the deprecated IPv4-compatible
`::169.254.169.254`, 6to4, NAT64) is judged as itself.

Python's parsers (urllib, httpx) read some URLs differently: `http://evil.com\\@169.254.169.254/` is
evil.com to a browser and 169.254.169.254 to httpx. Both readings are judged, and the URL is refused if
either points somewhere refused.

An http(s) URL must also be one the registry's own HTTP client can read, since it is what fetches and
calls. httpx reads a host by IDNA 2008 (`idna`) where the URL Standard reads it by the more lenient UTS 46:
`https://ex\u2615ample.com/` is `xn--example-f36d.com` to a browser and an `InvalidURL` to httpx, and
`https://xn--pi-7ld.example.com/` (a label breaking IDNA's bidi rule, `XN--` alike) parses, then raises a
`UnicodeError` the moment anything reads its host. Stored, such an endpoint was called and failed with an
error no caller was told of and no audit line recorded; it is refused here instead, as a URL the registry
cannot use. (The MCP SDK's `httpx2` reads hosts as httpx does, or more leniently.) Hosts httpx reads but
DNS never could (an empty label, a label over 63 characters, a bad `xn--` label after the first, which httpx
leaves undecoded) are not refused here: the resolver finds no such name, and a call to one fails as
unreachable.

Refused everywhere, whatever else is allowed: link-local addresses (169.254.0.0/16, fe80::/10), where cloud
instance metadata and its credentials live, the metadata services outside them and the names clouds give
them (`metadata.google.internal`, and the bare `metadata` and `instance-data` a cloud's search domain
completes), and the unspecified address: `http://0/` is 0.0.0.0 to a browser, and a client that connects to
0.0.0.0 or `::` reaches its own machine, under a spelling that checks for loopback miss (browsers have
been closing that hole too). It names no machine a publisher could mean (it is where a server listens on
every interface), so it is refused, with the refusal saying so; a local agent is `localhost` or
127.0.0.1. Loopback and private addresses are not refused here: a registry for a private network stores
and serves them, and whether one is fetched is the connection guard's decision (`guard.NetworkPolicy`,
which also resolves names).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

import ada_url
import httpx

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052: a NAT64 gateway connects to the IPv4 address in the low bits
_COMPATIBLE = ipaddress.IPv6Network("::/96")  # RFC 4291 §2.5.5.1, deprecated: ::a.b.c.d, read as a.b.c.d by some stacks
_METADATA_ADDRESSES = frozenset(
    {
        ipaddress.ip_address("fd00:ec2::254"),  # AWS's instance metadata over IPv6 (a unique-local address, not link-local)
        ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud's (shared address space)
    }
)
# GCP's names for 169.254.169.254 (the bare one resolves through the instance's search domain), and EC2's
_METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata", "instance-data"})
_SCHEME = re.compile(r"^\s*([A-Za-z][A-Za-z0-9+.-]*):")
WEB_SCHEMES = ("http", "https")


class RefusedUrl(ValueError):
    """A URL the registry does not store, serve, fetch or call. `reason` says why; `points_to` is the
    refused address (or metadata host) it really points to, None when the URL itself is unusable."""

    def __init__(self, where: str, url: str, reason: str, points_to: str | None = None) -> None:
        super().__init__(f"{where}: {url} {reason}" if points_to else f"{where}: {reason}")
        self.reason = reason
        self.points_to = points_to


@dataclass(frozen=True)
class Target:
    """Where a URL points as a browser reads it: the host in canonical form (lower case, punycode, IPv4
    dotted, IPv6 without brackets) and, when the host is an address, that address."""

    host: str
    address: Address | None


def carried(address: Address) -> Address:
    """The IPv4 address an IPv6 one carries (IPv4-mapped, IPv4-compatible, 6to4, NAT64), which is where it
    connects; else itself. `::` and `::1` are themselves (unspecified and loopback), not 0.0.0.0 and 0.0.0.1."""
    if isinstance(address, ipaddress.IPv6Address):
        if address in _NAT64 or (address in _COMPATIBLE and int(address) > 1):
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        return address.ipv4_mapped or address.sixtofour or address
    return address


def refused_kind(address: Address) -> str | None:
    """What kind of refused address this is ("a link-local (cloud metadata) address"), or None when it is not one."""
    inner = carried(address)
    if inner in _METADATA_ADDRESSES:
        return "a cloud metadata address"
    if inner.is_unspecified:
        return "the unspecified address (a client that connects to it reaches its own machine; a local agent is localhost)"
    if inner.is_link_local:
        return "a link-local (cloud metadata) address" if inner.version == 4 else "a link-local address"
    return None


def address_of(host: str) -> Address | None:
    """The address a host names as the URL Standard reads it (a URL's host or a socket's, brackets and IPv6
    zone optional), or None for a domain name or a host no browser would read."""
    bare = host.removeprefix("[").removesuffix("]")
    try:
        return ipaddress.ip_address(bare)
    except ValueError:
        pass
    try:
        parsed = ada_url.parse_url(f"http://[{bare}]/" if ":" in bare else f"http://{bare}/", ("hostname", "host_type"))
    except ValueError:
        return None
    if parsed["host_type"] == ada_url.HostType.DEFAULT:
        return None
    return ipaddress.ip_address(parsed["hostname"].removeprefix("[").removesuffix("]"))


def check_url(url: str, where: str = "url", any_scheme: bool = False) -> Target:
    """Where `url` points; raises `RefusedUrl` (naming `where`) for a URL that is not http(s), that
    browsers cannot read, or that points, as browsers or Python's parsers read it, at a refused address.
    `any_scheme` takes any scheme and judges the host if there is one (an endpoint may be ws: or grpc:)."""
    try:
        parsed = ada_url.parse_url(url, ("protocol", "hostname"))
    except ValueError:
        written = _SCHEME.match(url)
        if not any_scheme and (written is None or written[1].lower() not in WEB_SCHEMES):
            raise RefusedUrl(where, url, _wrong_scheme(written[1].lower() if written else "no scheme")) from None
        raise RefusedUrl(where, url, "is not a URL browsers can read (the URL Standard refuses it)") from None
    scheme = parsed["protocol"].removesuffix(":")
    if not any_scheme and (scheme not in WEB_SCHEMES or not parsed["hostname"]):
        raise RefusedUrl(where, url, _wrong_scheme(scheme))
    target = Target(parsed["hostname"].removeprefix("[").removesuffix("]"), address_of(parsed["hostname"]))
    _judge(where, url, target.host, target.address, "")
    try:
        python_host = urlsplit(url).hostname or ""  # the host urllib, and httpx, which reads authorities alike, connect to
    except ValueError as exc:
        raise RefusedUrl(where, url, f"is not a URL Python's URL parsers can read ({exc})") from None
    if python_host != target.host:
        _judge(where, url, python_host, address_of(python_host), f" as Python's URL parsers read it (browsers read {target.host})")
    if scheme in WEB_SCHEMES and (reason := unreadable(url)) is not None:
        raise RefusedUrl(where, url, reason)
    return target


def unreadable(url: str) -> str | None:
    """Why httpx, the registry's HTTP client, cannot read `url`, or None when it can: a Unicode host IDNA 2008
    refuses (`InvalidURL`), or an `xn--` host that does not decode (`URL.host` decodes it, raising `idna`'s
    errors, which are `UnicodeError`s and no httpx error, wherever httpx reads the host: building a request,
    or the next request of a redirect it was not even asked to follow)."""
    try:
        httpx.URL(url).host  # noqa: B018 (reading the host is what decodes, and so checks, an `xn--` name)
    except (httpx.InvalidURL, UnicodeError) as exc:
        return f"is not a URL the registry's HTTP client can read ({exc})"
    return None


def _wrong_scheme(got: str) -> str:
    return f"must be an http or https URL (got {got})"


def _judge(where: str, url: str, host: str, address: Address | None, reading: str) -> None:
    """Refuse what `host` (an `address`, or a name) is when it is refused; `reading` says whose reading it is."""
    if address is not None:
        kind = refused_kind(address)
        if kind is not None:
            inner = carried(address)
            raise RefusedUrl(where, url, f"points to {inner}{reading}, {kind}, which the registry refuses", str(inner))
    elif host.rstrip(".") in _METADATA_HOSTS:
        raise RefusedUrl(where, url, f"points to {host}{reading}, a cloud metadata host, which the registry refuses", host)
