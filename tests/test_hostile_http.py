"""Hostile connections to the HTTP server (issue #44): a client that never finishes its request headers, or
sends nothing at all, is cut off within `--header-timeout`, on every HTTP surface (`serve` over streamable
HTTP and over SSE, which also carry REST and the web page). Real `ard-mcp serve` processes on loopback and
real sockets; every wait is bounded by the socket's own timeout."""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.processes import serving

pytestmark = pytest.mark.slow

LIMIT = 1.0  # --header-timeout in these tests
SLACK = 4.0  # seconds beyond the limit a loaded two-core machine may take to close
BOUND = 15.0  # no socket read here waits longer: an open connection fails the test, it does not hang it


@pytest.fixture(params=["streamable-http", "sse"])
def base(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with serving(tmp_path / "data", "--transport", request.param, "--header-timeout", str(LIMIT)) as url:
        yield url


def connect(base: str) -> socket.socket:
    parts = urlsplit(base)
    return socket.create_connection((parts.hostname, parts.port), timeout=BOUND)


def until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection; fails if it stays open for `BOUND` s."""
    received = b""
    while True:
        try:
            chunk = sock.recv(4096)
        except ConnectionResetError:
            return received
        except TimeoutError:
            pytest.fail(f"the connection was still open after {BOUND} s")
        if not chunk:
            return received
        received += chunk


def test_a_connection_that_sends_nothing_is_closed(base: str) -> None:
    with connect(base) as sock:
        started = time.monotonic()
        assert until_closed(sock) == b""  # no request, no answer
        assert time.monotonic() - started < LIMIT + SLACK


def test_a_half_sent_request_gets_408_and_is_closed(base: str) -> None:
    with connect(base) as sock:
        started = time.monotonic()
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        answer = until_closed(sock)
        assert time.monotonic() - started < LIMIT + SLACK
    assert answer.startswith(b"HTTP/1.1 408 ") and answer.endswith(f"request headers not received within {LIMIT:g} s".encode())


def test_headers_trickled_a_line_at_a_time_are_cut_off_at_the_limit(base: str) -> None:
    """Each line arrives well within the limit; the whole header does not."""
    with connect(base) as sock:
        started = time.monotonic()
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")
        lines = 0
        while not select.select([sock], [], [], LIMIT / 4)[0]:  # until the server answers or closes
            assert time.monotonic() - started < LIMIT + SLACK, f"still open after {lines} trickled lines"
            sock.sendall(b"X-Trickle: %d\r\n" % lines)
            lines += 1
        answer = until_closed(sock)  # the 408, unless a line crossed the close (the reset then discards it)
        assert time.monotonic() - started < LIMIT + SLACK
    assert lines >= 3  # it kept trickling for most of the limit before it was cut off
    assert answer == b"" or answer.startswith(b"HTTP/1.1 408 ")


def response(sock: socket.socket) -> bytes:
    """One whole response (its head and its Content-Length of body), however the segments fall."""
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(4096)
        assert chunk, f"closed mid-response: {received[:200]!r}"
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")))
    while len(body) < length:
        chunk = sock.recv(4096)
        assert chunk, "closed mid-body"
        body += chunk
    return head + b"\r\n\r\n" + body


def test_complete_requests_are_answered_and_a_kept_alive_connection_may_idle_past_the_header_limit(base: str) -> None:
    request = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with connect(base) as sock:
        for _ in range(2):
            sock.sendall(request)
            answer = response(sock)
            assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b'"agents":0}'), answer[:300]
            time.sleep(LIMIT * 2)  # idle between requests: the keep-alive limit's business, not the header limit's
