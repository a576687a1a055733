"""The only way out for an installer: a forward proxy on loopback, run for one installer process, that lets
through requests to the registries the operator allows and refuses every other, saying what it refused.

Why: measured, pip follows a dependency's `Requires-Dist: x @ http://host/x.whl` to whatever host it names,
and npm a dependency on a tarball URL, as root and during resolution, before any check of the result could
run (a blind request from this machine to anywhere, loopback and the cloud's metadata address included).
Both send every request through the proxy they are given (`--proxy`): https as `CONNECT host:port`, plain
http as an absolute-form request (`GET http://host:port/path`). So the one place that sees every request
is a proxy of our own, and it decides by the (host, port) a request goes to:

- `CONNECT host:port` is answered `200` and tunnelled when (host, port) is allowed, `403` otherwise;
- `GET http://host:port/path` to an allowed origin is sent on in origin-form with `Connection: close` (one
  request per connection, so no second request can follow the first to another host), its answer passed
  back with `Connection: close` too; to any other origin, `403`;
- anything else (another scheme, a chunked request body, a request line that cannot be read) is refused.

What was refused is kept (`Egress.refused`), so the installer's refusal can name it. Where the operator's
environment names a proxy for its own traffic (`HTTPS_PROXY`, `HTTP_PROXY`, either case, with `NO_PROXY`),
allowed requests are sent on through it, as the installer itself would have sent them.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from urllib.parse import SplitResult, unquote, urlsplit
from urllib.request import getproxies_environment, proxy_bypass

import anyio
from anyio.abc import ByteReceiveStream, ByteStream, SocketAttribute, TaskGroup
from anyio.streams.buffered import BufferedByteReceiveStream

HEAD_LIMIT = 64 * 1024  # a request or response head: npm's and pip's are well under 2 KiB
CONNECT_TIMEOUT_S = 30.0
_DEFAULT_PORTS = {"http": 80, "https": 443}
_HOP_BY_HOP = frozenset(
    ("connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate", "te", "trailer", "upgrade", "host")
)
# what ends one connection (a client or server gone, a timeout, a head past HEAD_LIMIT, a Content-Length that is
# not a number), never the proxy and the other connections
_BROKEN = (
    OSError,
    ValueError,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    anyio.EndOfStream,
    anyio.IncompleteRead,
    anyio.DelimiterNotFound,
)


def origin(url: str) -> tuple[str, int]:
    """(host, port) of an http(s) URL, the host lowercased and without brackets; ValueError for other URLs."""
    parts = urlsplit(url)
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise ValueError(f"{url} is not an http or https URL")
    return parts.hostname, parts.port or _DEFAULT_PORTS[parts.scheme]


@dataclass
class Egress:
    url: str  # http://127.0.0.1:PORT, what the installer is given as its proxy
    allowed: frozenset[tuple[str, int]]
    refused: list[str] = field(default_factory=list)  # "CONNECT host:port", "GET http://host:port/path", in order

    def environment(self) -> dict[str, str]:
        """The proxy variables an installer (and anything it starts) runs with: this proxy, and no exceptions."""
        return dict.fromkeys(("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"), self.url) | {"NO_PROXY": "", "no_proxy": ""}

    def said(self) -> str:
        """What was refused, for a message ("" when nothing was)."""
        return ", ".join(dict.fromkeys(self.refused))


@dataclass(frozen=True)
class _Upstream:
    """The operator's own proxy: where it is, and the Proxy-Authorization its URL's user and password make."""

    url: SplitResult
    authorization: str | None

    @staticmethod
    def of(url: str) -> _Upstream:
        parts = urlsplit(url if "://" in url else f"http://{url}")
        if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
            raise ValueError(f"the proxy {url} is not an http or https URL")
        user = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
        return _Upstream(parts, f"Basic {base64.b64encode(user.encode()).decode()}" if parts.username else None)

    async def connect(self) -> ByteStream:
        host, port = self.url.hostname or "", self.url.port or _DEFAULT_PORTS[self.url.scheme]
        if self.url.scheme == "https":
            return await anyio.connect_tcp(host, port, tls=True, tls_hostname=host)
        return await anyio.connect_tcp(host, port)


def _upstream(scheme: str, host: str, port: int) -> _Upstream | None:
    """The operator's proxy for a request to (host, port) by `scheme`, or None to connect directly."""
    proxies = getproxies_environment()
    chosen = proxies.get(scheme)
    if not chosen or proxy_bypass(f"{host}:{port}", proxies) or proxy_bypass(host, proxies):  # NO_PROXY, as urllib reads it
        return None
    return _Upstream.of(chosen)


@contextlib.asynccontextmanager
async def proxy(urls: Iterable[str]) -> AsyncIterator[Egress]:
    """A proxy on a loopback port that lets through requests to the origins of `urls` only, for the `with`;
    ValueError when a URL, or the operator's proxy, is not http(s)."""
    allowed = frozenset(origin(url) for url in urls)
    for scheme in _DEFAULT_PORTS:  # the operator's proxy settings, read once now: one that cannot be used is said at once
        if chosen := getproxies_environment().get(scheme):
            _Upstream.of(chosen)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    egress = Egress(f"http://127.0.0.1:{listener.extra(SocketAttribute.local_port)}", allowed)

    async def serve(client: ByteStream) -> None:
        async with client:
            with contextlib.suppress(*_BROKEN):
                await _handle(egress, client)

    failed: BaseException | None = None
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, serve)
        try:
            yield egress
        except BaseException as exc:  # raised as it is once the proxy is gone, not inside the task group's ExceptionGroup
            failed = exc
        finally:
            group.cancel_scope.cancel()
    if failed is not None:
        raise failed


async def _handle(egress: Egress, client: ByteStream) -> None:
    received = BufferedByteReceiveStream(client)
    line, *header_lines = (await received.receive_until(b"\r\n\r\n", HEAD_LIMIT)).decode("latin-1").split("\r\n")
    method, _, rest = line.partition(" ")
    target, _, version = rest.partition(" ")
    headers = [(name.strip(), value.strip()) for name, _, value in (h.partition(":") for h in header_lines if h)]
    if not method or not target or not version.startswith("HTTP/"):
        await _answer(client, 400, "not an HTTP request")
    elif method == "CONNECT":
        await _tunnel(egress, client, received, target)
    else:
        await _forward(egress, client, received, method, target, headers)


async def _allowed(egress: Egress, client: ByteStream, url: str, request: str, target: str) -> tuple[str, int] | None:
    """The (host, port) `url` goes to, where the operator allows it; else None, the request refused (403) and recorded."""
    try:
        found = origin(url)
    except ValueError:
        found = ("", 0)
    if found in egress.allowed:
        return found
    egress.refused.append(request)
    await _answer(client, 403, f"{target} is not on a registry the operator allows")
    return None


async def _tunnel(egress: Egress, client: ByteStream, received: BufferedByteReceiveStream, target: str) -> None:
    allowed = await _allowed(egress, client, f"https://{target}", f"CONNECT {target}", target)
    if allowed is None:
        return
    host, port = allowed
    upstream = _upstream("https", host, port)
    server = await _connect(client, host, port, upstream)
    if server is None:
        return
    async with server:
        if upstream is not None:
            authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            auth = f"Proxy-Authorization: {upstream.authorization}\r\n" if upstream.authorization else ""
            await server.send(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n{auth}\r\n".encode("latin-1"))
            answer = BufferedByteReceiveStream(server)
            status = (await answer.receive_until(b"\r\n\r\n", HEAD_LIMIT)).split(b" ", 2)[1:2]
            if status != [b"200"]:
                await _answer(client, 502, f"the proxy {upstream.url.hostname} refused CONNECT {authority}")
                return
            from_server: ByteReceiveStream = answer
        else:
            from_server = server
        await client.send(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await _splice(received, client, from_server, server)


async def _forward(
    egress: Egress, client: ByteStream, received: BufferedByteReceiveStream, method: str, target: str, headers: list[tuple[str, str]]
) -> None:
    url = urlsplit(target)
    allowed = await _allowed(egress, client, target if url.scheme == "http" else "", f"{method} {target}", target)
    if allowed is None:
        return
    host, port = allowed
    if any(name.lower() == "transfer-encoding" for name, _ in headers):
        egress.refused.append(f"{method} {target} (a chunked body)")
        await _answer(client, 501, "a request body must have a Content-Length")
        return
    length = int(next((value for name, value in headers if name.lower() == "content-length"), "0"))
    upstream = _upstream("http", host, port)
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    kept = "".join(f"{name}: {value}\r\n" for name, value in headers if name.lower() not in _HOP_BY_HOP)
    auth = f"Proxy-Authorization: {upstream.authorization}\r\n" if upstream and upstream.authorization else ""
    authority = url.netloc.rpartition("@")[2]
    head = f"{method} {target if upstream else path} HTTP/1.1\r\nHost: {authority}\r\n{kept}{auth}Connection: close\r\n\r\n"
    server = await _connect(client, host, port, upstream)
    if server is None:
        return
    async with server:
        await server.send(head.encode("latin-1"))
        if length:
            await server.send(await received.receive_exactly(length))
        answer = BufferedByteReceiveStream(server)
        status, *answer_headers = (await answer.receive_until(b"\r\n\r\n", HEAD_LIMIT)).decode("latin-1").split("\r\n")
        kept = "".join(f"{h}\r\n" for h in answer_headers if h and h.partition(":")[0].strip().lower() not in _HOP_BY_HOP)
        await client.send(f"{status}\r\n{kept}Connection: close\r\n\r\n".encode("latin-1"))
        async for chunk in answer:
            await client.send(chunk)


async def _connect(client: ByteStream, host: str, port: int, upstream: _Upstream | None) -> ByteStream | None:
    """A connection to (host, port), or to the operator's proxy for it; None, once the client is told why, when
    neither can be reached."""
    try:
        with anyio.fail_after(CONNECT_TIMEOUT_S):
            return await (upstream.connect() if upstream else anyio.connect_tcp(host, port))
    except OSError as exc:
        through = f" through the proxy {upstream.url.hostname}" if upstream else ""
        await _answer(client, 502, f"{host}:{port} cannot be reached{through}: {exc or type(exc).__name__}")
        return None


async def _splice(from_client: ByteReceiveStream, client: ByteStream, from_server: ByteReceiveStream, server: ByteStream) -> None:
    """Copy both ways until either side ends its stream, then end both."""

    async def copy(source: ByteReceiveStream, sink: ByteStream, group: TaskGroup) -> None:
        with contextlib.suppress(*_BROKEN):
            async for chunk in source:
                await sink.send(chunk)
        group.cancel_scope.cancel()

    async with anyio.create_task_group() as group:
        group.start_soon(copy, from_client, server, group)
        group.start_soon(copy, from_server, client, group)


async def _answer(client: ByteStream, status: int, reason: str) -> None:
    body = f"ard-mcp: {reason}\n".encode()
    phrase = {400: "Bad Request", 403: "Forbidden", 501: "Not Implemented", 502: "Bad Gateway"}[status]
    head = f"HTTP/1.1 {status} {phrase}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
    await client.send(f"{head}Connection: close\r\n\r\n".encode("latin-1") + body)
