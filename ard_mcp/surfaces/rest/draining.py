"""Restarts nobody notices: what `serve` does between SIGTERM and its exit.

uvicorn on its own, on SIGTERM, closed its listening socket and every idle kept-alive connection at once, then
waited for the requests in flight. Behind nginx that lost requests (issue #57): a connection nginx keeps open
to a process is reused for the next request, so a POST written on one the process was closing at that moment
failed with no answer, and nginx does not send a POST again once a process may have had it. Through a rolling
restart under 10 clients that was 1 failed request with the page's old procedure and an 11 s wait.

So a SIGTERM starts a drain, in three steps:

1. At once, `/readyz` answers 503 ("shutting down"), and every answer carries `Connection: close`: a client or
   proxy that gets one does not send on that connection again, and the process closes it after the answer,
   so kept-alive connections end between requests, where nothing can be lost. The process still accepts and
   answers everything for `ARD_MCP_DRAIN_SECONDS` (2 s by default): time for a proxy that asks `/readyz` to
   stop sending here (one that asks every second with two failures to mark it down), and for the
   connections nginx keeps to be used once more and closed.
2. Then the listening socket is closed: a new connection is refused, which nginx's passive checks take as
   this process being down (the request goes to the other process, a POST too, since none of it was sent),
   and for `LINGER_SECONDS` (1 s) connections still open are answered, and closed, as in step 1.
3. Then uvicorn's own shutdown: idle connections are closed, requests in flight are finished (for at most
   `GRACE_SECONDS`, then cancelled), the registry is closed, and the process exits.

A second SIGTERM, or SIGINT (Ctrl-C at a terminal), skips what is left of the drain; `ARD_MCP_DRAIN_SECONDS=0`
skips it all. The whole lasts about
3 s plus the longest request in flight, under the unit's TimeoutStopSec=30s. tests/test_rolling_restart.py
measures it behind nginx: the documented rolling restart under 10 clients, at most 1 failed request.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Callable
from types import FrameType

import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)

DRAIN_SECONDS = 2.0  # ARD_MCP_DRAIN_SECONDS: answering, with Connection: close, before the listener closes
LINGER_SECONDS = 1.0  # open connections still answered after the listener closed, while nginx sees refusals
GRACE_SECONDS = 20.0  # requests in flight at the end (a crawl or an agent call may take minutes): then cancelled


class Drain:
    """Whether this process is shutting down, and since when; set from the signal handler (one assignment)."""

    def __init__(self) -> None:
        self.since: float | None = None

    @property
    def active(self) -> bool:
        return self.since is not None

    def begin(self) -> None:
        if self.since is None:
            self.since = time.monotonic()

    def elapsed(self) -> float:
        return 0.0 if self.since is None else time.monotonic() - self.since


def drain_seconds(environ: dict[str, str] | None = None) -> float:
    """`ARD_MCP_DRAIN_SECONDS`, or the default; 0 turns the drain off: uvicorn's own shutdown at once, as the
    test suite's servers run (each of its dozens of stops would otherwise take 3 s more)."""
    raw = (os.environ if environ is None else environ).get("ARD_MCP_DRAIN_SECONDS", "").strip()
    if not raw:
        return DRAIN_SECONDS
    try:
        seconds = float(raw)
    except ValueError:
        raise ValueError(f"ARD_MCP_DRAIN_SECONDS={raw!r} is not a number of seconds") from None
    if not 0 <= seconds <= 600:
        raise ValueError(f"ARD_MCP_DRAIN_SECONDS={raw!r} must be between 0 and 600")
    return seconds


def close_when_draining(app: ASGIApp, drain: Drain) -> ASGIApp:
    """`app` whose HTTP answers carry `Connection: close` once the drain began. Decided when the answer
    starts, not when the request came, so a request in flight at the SIGTERM is told too."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start" and drain.active:
                message = {**message, "headers": [*message.get("headers", ()), (b"connection", b"close")]}
            await send(message)

        await app(scope, receive, sending)

    return wrapped


class DrainingServer(uvicorn.Server):
    """uvicorn's server with the drain above between the SIGTERM and its own shutdown."""

    def __init__(self, config: uvicorn.Config, drain: Drain, *, seconds: float, on_drain: Callable[[], None]) -> None:
        super().__init__(config)
        self.drain = drain
        self.seconds = seconds
        self.on_drain = on_drain
        self._listening = True
        self._told = False

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """A signal handler: only flags are set here (logging could deadlock on a lock the loop holds)."""
        self.on_drain()
        if sig != signal.SIGTERM or self.drain.active or self.should_exit or self.seconds <= 0:  # a second one ends the drain
            super().handle_exit(sig, frame)
            return
        self.drain.begin()

    async def on_tick(self, counter: int) -> bool:
        if self.drain.active and not self.should_exit:
            elapsed = self.drain.elapsed()
            if not self._told:
                self._told = True
                log.info("SIGTERM: not ready, answering with Connection: close for %g s, then closing the listener", self.seconds)
            if self._listening and elapsed >= self.seconds:
                self._listening = False
                for server in getattr(self, "servers", []):
                    server.close()  # no new connections; the open ones stay (asyncio closes listeners only)
                log.info("draining: the listener is closed; open connections are answered for %g s more", LINGER_SECONDS)
            if elapsed >= self.seconds + LINGER_SECONDS:
                super().handle_exit(signal.SIGTERM, None)  # uvicorn's shutdown, and its SIGTERM exit status
        return await super().on_tick(counter)
