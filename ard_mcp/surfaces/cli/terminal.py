"""`ard-mcp serve` over stdio when a person runs it in a terminal rather than an MCP host starting it.

A host talks JSON-RPC on stdin; a person who types `ard-mcp serve` sees a process that says nothing and
waits. So when stdin is a terminal the server says, on stderr, what it waits for and how to reach it over
HTTP instead, and stops on the first Ctrl-C.

Stopping is the hard part: the MCP SDK reads stdin in a worker thread, and a thread blocked reading a
terminal cannot be cancelled. With Python's own handling the first Ctrl-C cancelled the server and then
waited for that read (nothing visible happened), the second raised a 25-line `KeyboardInterrupt`
traceback, and the process still waited for Enter. Here the first SIGINT (or SIGTERM) cancels the server,
whose lifespan closes the registry as usual (`build_server(closed=...)` says when that is done), and the
process then exits without waiting for the read that will never finish: status 130 for Ctrl-C (128 +
SIGINT, what shells report for an interrupted command), 143 for SIGTERM. End of input (Ctrl-D) stops it
the ordinary way, with status 0.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

import anyio

from ard_mcp.surfaces.sharing.frontend import no_input

CLOSE_WAIT = 10.0  # seconds the registry may take to close after a Ctrl-C (a write in flight finishes first)
WAITING = (
    "ard-mcp: waiting for an MCP client on stdin (an MCP host starts `ard-mcp serve` and talks JSON-RPC to it). "
    "To try it by hand, run `ard-mcp serve --transport streamable-http` instead: MCP at http://127.0.0.1:8000/mcp, the web "
    'page at http://127.0.0.1:8000/, REST as POST http://127.0.0.1:8000/search with a JSON body such as {"text": "..."}. '
    "Ctrl-C stops."
)


NO_INPUT = (
    "ard-mcp: standard input is closed or empty, so no MCP host can talk to this server: an MCP host starts "
    "`ard-mcp serve` with a pipe on stdin and stdout (see `ard-mcp host-config`). Nothing was served."
)


def run_stdio(build: Callable[[Callable[[], None]], Any]) -> int:
    """Serve MCP over stdio to a terminal; `build(closed)` makes the server (`mcp.server.build_server` with
    `closed`). A host's stdio is served through the front-end (`assembly.stdio`); with nothing on stdin this
    says so and stops: it once exited 0 without a word (issue #55)."""
    if no_input():
        print(NO_INPUT, file=sys.stderr, flush=True)
        return 0
    closed = threading.Event()
    return int(anyio.run(_until_stopped, build(closed.set), closed))


async def _until_stopped(server: Any, closed: threading.Event) -> int:
    stopped_by: list[int] = []
    async with anyio.create_task_group() as group:
        serving = anyio.CancelScope()

        async def serve() -> None:
            with serving:
                await server.run_stdio_async()
            if not stopped_by:  # the client went away (end of input): everything has unwound, nothing is stuck
                group.cancel_scope.cancel()

        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            group.start_soon(serve)
            print(WAITING, file=sys.stderr, flush=True)  # once Ctrl-C is ours: one pressed after reading this stops cleanly
            async for signum in signals:
                stopped_by.append(signum)
                break
        print("\nard-mcp: stopping", file=sys.stderr, flush=True)
        serving.cancel()
        await anyio.to_thread.run_sync(closed.wait, CLOSE_WAIT)
        os._exit(128 + stopped_by[0])  # stdin's reader thread is blocked on the terminal: do not wait for it
    return 0
