"""A real HTTP server on 127.0.0.1 for crawler tests: publish documents at paths, then watch what the crawler asked for.

Why a real socket server and not a mocked transport: the crawler's timeouts, redirects, size caps, conditional requests
and connection handling are only exercised honestly against bytes on a socket. The stdlib `ThreadingHTTPServer` is
enough for that, starts in milliseconds, and needs no event loop of its own, so synchronous and async tests can share it.

    with Publisher() as site:
        site.put("/.well-known/ai-catalog.json", {"entries": []})
        fetch(site.origin + "/.well-known/ai-catalog.json")
        assert site.count("/.well-known/ai-catalog.json") == 1
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import formatdate, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl

Handler = Callable[[dict[str, str], dict[str, str]], tuple[int, dict[str, str], bytes]]
"""Computes an answer from the query parameters and the (lower-case) request headers: (status, headers, body)."""

_CHUNK = 64 * 1024  # large bodies go out in pieces, so a client that stops reading at its cap stops the transfer


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it; `path` keeps its query string, header names are lower-case."""

    method: str
    path: str
    headers: dict[str, str]


@dataclass(frozen=True)
class _Document:
    body: bytes
    content_type: str | None
    status: int
    headers: dict[str, str]
    delay: float
    etag: str | None  # strong validator, quoted; None when conditional requests are off for this path
    modified: int  # Unix seconds, sent as Last-Modified when `etag` is on
    chunked: bool


@dataclass(frozen=True)
class _Computed:
    fn: Handler


@dataclass
class _State:
    """What the handler threads share with the test; every access holds `lock`."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    routes: dict[str, _Document | _Computed] = field(default_factory=dict)
    requests: list[RecordedRequest] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)


class Publisher:
    """A website on an ephemeral loopback port; use as a context manager so the port and threads are always released."""

    def __init__(self) -> None:
        self._state = _State()
        self._server = _Server(self._state)
        self.port: int = self._server.server_address[1]
        self.origin: str = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> Publisher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop accepting, wake delayed answers, cut open keep-alive connections and wait (bounded) for handlers."""
        self._state.stopping.set()
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(timeout=2)
        self._server.close_connections(timeout=2)
        self._server.server_close()

    def url(self, path: str) -> str:
        """The absolute URL of `path` on this site."""
        return self.origin + path

    def put(
        self,
        path: str,
        body: Mapping[str, Any] | list[Any] | str | bytes,
        *,
        content_type: str | None = "application/json",
        status: int = 200,
        headers: Mapping[str, str] | None = None,
        delay: float = 0.0,
        etag: bool = True,
        chunked: bool = False,
    ) -> None:
        """Serve `body` at `path` (a dict or list is JSON-encoded, a str UTF-8 encoded).

        `path` may carry a query string, which then must match the request's exactly; otherwise a request with any
        query string is served by the bare path. With `etag` the answer has a strong ETag and a Last-Modified, and a
        matching If-None-Match or If-Modified-Since gets 304 with no body; a changed body always gets a later
        Last-Modified, so a re-publish within the same second is still seen as modified. `delay` seconds pass before
        the answer (for timeout tests). `chunked` sends the body without Content-Length, as a size cap must not trust it.
        """
        data = body if isinstance(body, bytes) else body.encode() if isinstance(body, str) else json.dumps(body).encode()
        with self._state.lock:
            old = self._state.routes.get(_checked(path))
            now = int(time.time())
            modified = now
            if isinstance(old, _Document):
                modified = old.modified if old.body == data else max(now, old.modified + 1)
            self._state.routes[path] = _Document(
                body=data,
                content_type=content_type,
                status=status,
                headers=dict(headers or {}),
                delay=delay,
                etag=f'"{hashlib.sha256(data).hexdigest()[:32]}"' if etag else None,
                modified=modified,
                chunked=chunked,
            )

    def redirect(self, path: str, location: str, status: int = 302) -> None:
        """Answer `path` with a redirect to `location` (absolute, or relative to this site)."""
        self.put(path, b"", content_type=None, status=status, headers={"Location": location}, etag=False)

    def handle(self, path: str, fn: Handler) -> None:
        """Compute the answer for `path` on every request, e.g. a paged API that reads `cursor` and `limit`."""
        with self._state.lock:
            self._state.routes[_checked(path)] = _Computed(fn)

    def remove(self, path: str) -> None:
        """Stop serving `path`: it answers 404 from now on."""
        with self._state.lock:
            self._state.routes.pop(path, None)

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, oldest first."""
        with self._state.lock:
            return list(self._state.requests)

    def count(self, path: str) -> int:
        """How many GETs hit `path`; a `path` without a query string counts requests with any query string."""
        exact = "?" in path
        return sum(1 for r in self.requests if r.method == "GET" and (r.path if exact else r.path.split("?", 1)[0]) == path)


def _checked(path: str) -> str:
    if not path.startswith("/"):
        raise ValueError(f"path must start with '/': {path!r}")
    return path


class _Server(ThreadingHTTPServer):
    """Tracks its open connections so `close` can cut idle keep-alive ones instead of waiting for the client."""

    daemon_threads = True
    block_on_close = False  # `close_connections` waits instead, with a bound

    def __init__(self, state: _State) -> None:
        self.state = state
        self._open: set[socket.socket] = set()
        self._open_changed = threading.Condition()
        super().__init__(("127.0.0.1", 0), _RequestHandler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_changed:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        super().shutdown_request(request)
        with self._open_changed:
            self._open.discard(request)
            self._open_changed.notify_all()

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], OSError):  # a client hanging up is normal here; anything else is a bug
            super().handle_error(request, client_address)

    def close_connections(self, timeout: float) -> None:
        with self._open_changed:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)  # wakes a handler blocked reading the next keep-alive request
            self._open_changed.wait_for(lambda: not self._open, timeout=timeout)


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real sites do; every answer has a Content-Length or is chunked
    disable_nagle_algorithm = True  # headers and body are written apart: without this, keep-alive requests wait ~40 ms
    server: _Server

    def do_GET(self) -> None:
        self._answer()

    def do_HEAD(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test reads `Publisher.requests` instead."""

    def _answer(self) -> None:
        state = self.server.state
        headers = {k.lower(): v for k, v in self.headers.items()}
        with state.lock:
            state.requests.append(RecordedRequest(self.command, self.path, headers))
            bare, _, query = self.path.partition("?")
            route = state.routes.get(self.path) or state.routes.get(bare)
        length = int(headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)  # drain a request body so the connection stays usable
        try:
            if route is None:
                self._send(404, {"Content-Type": "text/plain; charset=utf-8"}, b"not found\n")
            elif isinstance(route, _Computed):
                self._computed(route, query, headers)
            elif route.delay and state.stopping.wait(route.delay):
                self.close_connection = True  # shutting down: drop the answer rather than hold the test up
            else:
                self._document(route, headers)
        except OSError:
            self.close_connection = True  # the client stopped reading (e.g. at its size cap), or `close` cut the socket

    def _computed(self, route: _Computed, query: str, headers: dict[str, str]) -> None:
        try:
            status, extra, body = route.fn(dict(parse_qsl(query, keep_blank_values=True)), dict(headers))
        except Exception as exc:  # a broken fake should show up as a 500 in the test, not a hung connection
            status, extra, body = 500, {"Content-Type": "text/plain; charset=utf-8"}, f"handler failed: {exc!r}\n".encode()
        self._send(status, {"Content-Type": "application/json", **extra}, body)

    def _document(self, doc: _Document, request_headers: dict[str, str]) -> None:
        out: dict[str, str] = {"Content-Type": doc.content_type} if doc.content_type else {}
        if doc.etag:
            out |= {"ETag": doc.etag, "Last-Modified": formatdate(doc.modified, usegmt=True)}
        out |= doc.headers
        if doc.etag and doc.status == 200 and _not_modified(doc, request_headers):
            self._send(304, out, b"", has_body=False)
        else:
            self._send(doc.status, out, doc.body, chunked=doc.chunked)

    def _send(self, status: int, headers: dict[str, str], body: bytes, *, has_body: bool = True, chunked: bool = False) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        if has_body:
            self.send_header("Transfer-Encoding" if chunked else "Content-Length", "chunked" if chunked else str(len(body)))
        self.end_headers()
        if self.command == "HEAD" or not has_body:
            return
        for start in range(0, len(body), _CHUNK):
            piece = body[start : start + _CHUNK]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
        if chunked:
            self.wfile.write(b"0\r\n\r\n")


def _not_modified(doc: _Document, headers: dict[str, str]) -> bool:
    """RFC 9110 §13.1: If-None-Match (weak comparison) decides when present; otherwise If-Modified-Since."""
    if "if-none-match" in headers:
        tags = [t.strip().removeprefix("W/") for t in headers["if-none-match"].split(",")]
        return "*" in tags or doc.etag in tags
    if "if-modified-since" in headers:
        try:
            return doc.modified <= parsedate_to_datetime(headers["if-modified-since"]).timestamp()
        except (TypeError, ValueError):
            return False  # an unparsable date is ignored, as the RFC says
    return False
