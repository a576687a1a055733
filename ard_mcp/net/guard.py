"""Which addresses the crawler may connect to, checked where the connection is made.

A registry that fetches URLs third parties give it (catalog entries, redirects, DNS answers) can be turned
against the network it runs in: cloud metadata at 169.254.169.254, an admin port on localhost, a database
on 10.0.0.5. Checking a URL's host before fetching is not enough, because the name can resolve to another
address by the time the socket opens (DNS rebinding) and a redirect can point anywhere. So the check sits
in the connection layer: every TCP connection, the first one and each redirect's, resolves the host
itself, refuses it if any of its addresses is not a public unicast one, and connects to the address it
checked. `allow_private` lifts the rule (tests on loopback, a registry for a private network), but for
the addresses no URL may point to (`urls.refused_kind`: link-local and cloud metadata), which are never
connected to. A host is read as the URL Standard reads it (`urls.address_of`): `2852039166` or
`0251.0376.0251.0376` is an address, judged without asking DNS, whose answer for such a name differs from
one resolver to another. The transport every fetch, federated search and agent call goes through also
refuses a redirect to a URL httpx cannot read, before httpx's client reads it (`_readable_redirect`).
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import logging
import socket
import ssl
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urljoin

import anyio
import httpcore
import httpx

from ard_mcp.net.urls import Address, RefusedUrl, address_of, carried, check_url, refused_kind, unreadable

log = logging.getLogger(__name__)
_SHOWN = 200  # the most of a URL a server named quoted in an error


class BlockedAddress(Exception):
    """A connection the network policy refuses; the message says which host, which address and why."""


class Resolver(Protocol):
    async def addresses(self, host: str) -> list[str]: ...


class SystemResolver:
    """The operating system's resolver (hosts file included), as every other client on the machine sees names."""

    async def addresses(self, host: str) -> list[str]:
        infos = await anyio.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        return list(dict.fromkeys(str(info[4][0]) for info in infos))


def why_blocked(address: Address) -> str | None:
    """Why an address is not a public unicast one, or None when it is."""
    if carried(address) != address:  # an IPv4 address inside an IPv6 one is judged as itself
        return why_blocked(carried(address))
    if isinstance(address, ipaddress.IPv6Address) and address.is_site_local:
        return "a site-local address"
    for reason, flag in (
        ("a loopback address", address.is_loopback),
        ("a link-local address", address.is_link_local),
        ("a multicast address", address.is_multicast),
        ("an unspecified address", address.is_unspecified),
        ("a private address", address.is_private),
        ("a reserved address", address.is_reserved),
    ):
        if flag:
            return reason
    return None if address.is_global else "not a public address"


@dataclass(frozen=True)
class NetworkPolicy:
    """`allow_private`: connect to loopback, private and reserved addresses too (never to link-local or cloud metadata ones).
    `purpose` ends the refusal's advice: what the operator's --allow-private-networks would let this connection do."""

    allow_private: bool = False
    purpose: str = "crawl private networks"

    def check(self, host: str, addresses: Iterable[str]) -> list[str]:
        """The addresses to connect to; raises `BlockedAddress` if any of them is refused (a name with
        one public and one private address is refused: the resolver decides which one a client gets)."""
        checked = [ipaddress.ip_address(a.split("%", 1)[0]) for a in addresses]
        if not checked:
            raise BlockedAddress(f"{host} has no address")
        for address in checked:
            kind = refused_kind(address)
            if kind is not None:
                raise BlockedAddress(f"{host} resolves to {address}, {kind}, which the registry refuses")
        if not self.allow_private:
            for address in checked:
                reason = why_blocked(address)
                if reason is not None:
                    raise BlockedAddress(
                        f"{host} resolves to {address}, {reason}: refused (pass --allow-private-networks to {self.purpose})"
                    )
        return [str(a) for a in checked]


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's anyio backend, connecting only to addresses the policy allows (TLS still verifies the host name)."""

    def __init__(self, policy: NetworkPolicy, resolver: Resolver) -> None:
        self._policy = policy
        self._resolver = resolver
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        literal = address_of(host)
        try:
            with anyio.fail_after(timeout):
                resolved = [str(literal)] if literal is not None else await self._resolver.addresses(host)
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"{host}: no DNS answer in time") from None
        except OSError as exc:  # no such name: a failed connection, as for any client
            raise httpcore.ConnectError(f"{host}: {exc}") from None
        addresses = self._policy.check(host, resolved)
        last: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(address, port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None
    ) -> httpcore.AsyncNetworkStream:
        raise BlockedAddress("unix sockets are not crawled")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


_ERRORS: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.ProxyError, httpx.ProxyError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.ProtocolError, httpx.ProtocolError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.TimeoutException, httpx.TimeoutException),
)


@contextlib.contextmanager
def _as_httpx_errors() -> Iterator[None]:
    """httpcore's errors as httpx's, as httpx's own transport maps them (its mapping is private)."""
    try:
        yield
    except httpcore.ConnectError as exc:  # all addresses failed: say so plainly
        raise httpx.ConnectError(str(exc) or "connection failed") from exc
    except Exception as exc:
        for theirs, ours in _ERRORS:
            if isinstance(exc, theirs):
                raise ours(str(exc) or type(exc).__name__) from exc
        raise


class _Body(httpx.AsyncByteStream):
    """httpcore's response stream as httpx reads it (closing it returns the connection to the pool)."""

    def __init__(self, stream: AsyncIterable[bytes]) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _as_httpx_errors():
            async for chunk in self._stream:
                yield chunk

    async def aclose(self) -> None:
        close = getattr(self._stream, "aclose", None)
        if close is not None:
            await close()


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One TLS context for every pool: making one loads the CA bundle, about 60 ms, which a transport made
    per call (`invocation`) paid on each call (through the registry an MCP tool call took 112 ms, 48 ms with
    this; `bench/invocation.py`). A context is safe to share between connections."""
    return httpx.create_ssl_context()


def _points_to_refused(url: str) -> bool:
    """Whether the URL check refuses `url` for the address it points to (`0251.0376.0251.0376` is cloud
    metadata, and httpx cannot read it either): the fetcher says "points to 169.254.169.254", which is the
    reason a person needs."""
    try:
        check_url(url)
    except RefusedUrl as exc:
        return exc.points_to is not None
    return False


async def _readable_redirect(request: httpx.Request, response: httpx.Response) -> None:
    """Refuse a redirect whose Location httpx cannot read, as httpx refuses one it cannot parse
    (`RemoteProtocolError`): httpx's client reads the host of every Location to build the next request,
    followed or not, and an `xn--` host that is not valid IDNA (`urls.unreadable`) raises an `idna` error
    there, which no caller expects (a third party's redirect failed a whole federated search with it). Here,
    before any client reads it, every client's caller gets the transport error it already handles."""
    moved = urljoin(str(request.url), response.headers["location"])
    reason = unreadable(moved)
    if reason is not None and not _points_to_refused(moved):  # that one the caller's own redirect check names better
        await response.aclose()
        raise httpx.RemoteProtocolError(f"a redirect to {ascii(moved)[:_SHOWN]}, which {reason}", request=request)


class GuardedTransport(httpx.AsyncBaseTransport):
    """An httpx transport over a connection pool whose every connection goes through `GuardedBackend`."""

    def __init__(self, policy: NetworkPolicy, resolver: Resolver, max_connections: int = 20) -> None:
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=_ssl_context(),
            max_connections=max_connections,
            network_backend=GuardedBackend(policy, resolver),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.AsyncByteStream)
        url = request.url
        with _as_httpx_errors():
            response = await self._pool.handle_async_request(
                httpcore.Request(
                    method=request.method,
                    url=httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
                    headers=request.headers.raw,
                    content=request.stream,
                    extensions=request.extensions,
                )
            )
        assert isinstance(response.stream, AsyncIterable)
        answer = httpx.Response(
            status_code=response.status, headers=response.headers, stream=_Body(response.stream), extensions=response.extensions
        )
        if answer.has_redirect_location:
            await _readable_redirect(request, answer)
        return answer

    async def aclose(self) -> None:
        await self._pool.aclose()
