"""A time limit on a request's headers, on the one HTTP server every HTTP surface runs in (REST, MCP over
streamable HTTP or SSE, the web page).

uvicorn bounds a connection idle between requests (`timeout_keep_alive`) and the guard a body that does
not arrive in time (408, `--body-timeout`), but nothing bounded the headers: 100 connections trickling a
header line every 5 s, a half-sent request and a connection that sent nothing were all still open after
100 s (issue #44), so a few clients could hold every file descriptor the server has. Here a clock starts
when a connection opens, and again when the first byte of a later request arrives on a kept-alive one, and
stops when the request's headers are complete; when it runs out the connection is closed, after a 408 when
part of a request had arrived and no answer is going out on that connection. Trickling does not reset it:
the limit is on the whole header, not on the gap between its bytes.

It is uvicorn's httptools protocol with the parser's own callbacks for where a request begins and where its
headers end, so the rule sits where the bytes are parsed and needs nothing of the app.
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class HeaderDeadlineProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol that closes a connection whose request headers take longer than
    `header_timeout` seconds (set by `with_header_timeout`, which makes the class uvicorn runs)."""

    header_timeout: float
    _header_clock: asyncio.TimerHandle | None = None
    _request_begun = False  # a request's first byte arrived and its headers are not complete

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_header_clock()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_header_clock()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._request_begun = True
        if self._header_clock is None:  # a later request on a kept-alive connection: its own clock
            self._start_header_clock()

    def on_headers_complete(self) -> None:
        self._request_begun = False
        self._stop_header_clock()
        super().on_headers_complete()

    def _start_header_clock(self) -> None:
        self._header_clock = self.loop.call_later(self.header_timeout, self._headers_too_slow)

    def _stop_header_clock(self) -> None:
        if self._header_clock is not None:
            self._header_clock.cancel()
            self._header_clock = None

    def _headers_too_slow(self) -> None:
        self._header_clock = None
        if self.transport.is_closing():
            return
        answering = self.cycle is not None and not self.cycle.response_complete  # a 408 now would land inside that answer
        if self._request_begun and not answering:
            message = f"request headers not received within {self.header_timeout:g} s".encode()
            self.transport.write(
                b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
                + b"content-length: %d\r\n\r\n" % len(message)
                + message
            )
        self.transport.close()


def with_header_timeout(seconds: float) -> type[HeaderDeadlineProtocol]:
    """The protocol class uvicorn runs (its `http` setting) with a header limit of `seconds`."""

    class Limited(HeaderDeadlineProtocol):
        header_timeout = seconds

    return Limited
