"""The per-user back-end that the stdio front-ends of several hosts share (`frontend`): one process holds the
data directory, the model, the index and the package servers, and serves each host's MCP session over a Unix
socket inside the data directory.

Why: a host starts one stdio server per window or instance, and embedded Chroma admits one process per data
directory, so a second host's `ard-mcp serve` exited "data directory ... is in use" (issue #55). Here every
front-end's session is a connection to this one process, each its own MCP session (its own handshake, its own
consent questions, its own host asked), over one registry and one set of running package servers; a write
through one host is in the next search of every other.

Each connection is served as stdio is (one JSON-RPC message a line, `serve_dual_era_loop` with the server's
one lifespan), so a front-end can pass a host's bytes through unread. The socket is the owner's alone (0600,
in a 0700 folder where its path allows). The back-end stops `idle_s` seconds after its last connection ends
(`ARD_MCP_BACKEND_IDLE`, default 60 s: a host restarting its servers finds it warm; nothing lingers for
long), and when it is signalled.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import mcp_types
from anyio.abc import SocketListener, SocketStream, UNIXSocketStream
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp.server.mcpserver import MCPServer
from mcp.server.runner import serve_dual_era_loop
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage

log = logging.getLogger(__name__)
IDLE_S = 60.0
GREETING = b"ard-mcp back-end\n"  # the first line of every connection, read by the front-end, never passed to a host
STOP = b"ard-mcp stop-if-idle"  # a connection's first line (`frontend.stop_idle`), never an MCP message: stop if no host is here
MAX_LINE = 64 << 20  # one message from a host (a whole catalog registered at once stays well under)


async def _session(server: MCPServer[Any], state: Any, connection: SocketStream, stop: Callable[[], bool]) -> None:
    """One host's MCP session over `connection`, until it closes; or, where its first line is `STOP`, the answer
    `stopping PID` (`stop` agreed: no other connection) or `busy`."""
    lowlevel = server._lowlevel_server  # noqa: SLF001 - the sessions share the one lifespan the back-end entered
    reader, read_stream = create_context_streams[SessionMessage | Exception](0)
    write_stream, writer = create_context_streams[SessionMessage](0)
    received = BufferedByteReceiveStream(connection)

    async def read() -> None:
        async with reader:
            with contextlib.suppress(anyio.EndOfStream, anyio.IncompleteRead, anyio.ClosedResourceError, anyio.BrokenResourceError):
                first = True
                while True:
                    line = await received.receive_until(b"\n", MAX_LINE)
                    if first and line == STOP:
                        await connection.send(f"stopping {os.getpid()}\n".encode() if stop() else b"busy\n")
                        return
                    first = False
                    if line.strip():
                        try:
                            await reader.send(SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)))
                        except ValueError as exc:
                            await reader.send(exc)

    async def write() -> None:
        async with writer:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                async for message in writer:
                    await connection.send((message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode())

    async with connection, anyio.create_task_group() as group:
        await connection.send(GREETING)  # the front-end's proof that a live back-end took the connection
        group.start_soon(read)
        group.start_soon(write)
        await serve_dual_era_loop(
            lowlevel, read_stream, write_stream, lifespan_state=state, init_options=lowlevel.create_initialization_options()
        )
        group.cancel_scope.cancel()


def run(server: MCPServer[Any], socket_path: Path | None, idle_s: float = IDLE_S, *, own: socket.socket | None = None) -> int:
    """`serve` from synchronous code (the command line); its exit status."""
    anyio.run(partial(serve, server, socket_path, idle_s, own=own))
    return 0


async def serve(server: MCPServer[Any], socket_path: Path | None, idle_s: float = IDLE_S, *, own: socket.socket | None = None) -> None:
    """Serve `server` to every connection on `socket_path` until `idle_s` seconds pass with none, or a signal.
    The server's lifespan (which claims the data directory) is entered first: a back-end that cannot have the
    directory never listens.

    `own`: the session of the host that started this process, a plain `serve` (`assembly.stdio`: its front-end
    passes the host's stdio through the other end of this socket pair). A plain `serve` that claimed the
    directory first is the back-end the hosts started after it join (their `serve --shared`, or a plain `serve`
    finding it, `frontend.joinable`), where they were refused "in use" (issue #55). It stops when its own host
    leaves, as a host expects of the process it started (the SDK's client kills it 2 s after closing its
    input); the front-ends joined to it then start a back-end of their own (`frontend`, which waits for the
    directory to be let go), a request of theirs in flight answered as lost. No `socket_path`: none joins (with
    a Chroma server each host may have its own)."""
    lowlevel = server._lowlevel_server  # noqa: SLF001 - entered once here, shared by every session
    connected = 1 if own is not None else 0
    changed = anyio.Event()
    asked = False  # to stop, by a command that must claim the data directory

    def stop() -> bool:
        """Agree to stop when the asking connection is the only one; the loop below stops as it closes (after
        the answer is sent)."""
        nonlocal asked
        asked = connected == 1
        return asked

    def moved() -> None:
        nonlocal changed
        changed.set()
        changed = anyio.Event()

    async with lowlevel.lifespan(lowlevel) as state:

        async def one(connection: SocketStream) -> None:
            nonlocal connected
            connected += 1
            moved()
            await own_session(_session(server, state, connection, stop))

        async def own_session(session: Awaitable[None]) -> None:
            """One host's session, counted until it ends."""
            nonlocal connected
            try:
                await session
            except Exception:  # one host's session failing must not stop the others'
                log.exception("ard-mcp back-end: a host's session failed")
            finally:
                connected -= 1
                moved()

        async with _listening(socket_path) as listener, anyio.create_task_group() as group:
            if listener is not None:
                group.start_soon(listener.serve, one)
            if own is not None:

                async def hosted() -> None:
                    await own_session(_session(server, state, await UNIXSocketStream.from_socket(own), stop))
                    group.cancel_scope.cancel()

                group.start_soon(hosted)
            # Serving its own host, this runs beside the front-end's main thread, which reads stdin and is the one
            # signals go to: a signal ends the process as it did the SDK's `run()`.
            with anyio.open_signal_receiver(*(() if own is not None else (signal.SIGTERM, signal.SIGINT))) as signals:
                group.start_soon(_stop_on, signals, group.cancel_scope)
                while True:
                    waiting = changed
                    with anyio.move_on_after(idle_s if connected == 0 else float("inf")):
                        await waiting.wait()
                    if asked or (connected == 0 and not waiting.is_set()):
                        break
                log.info("ard-mcp back-end: %s; stopping", "asked to, with no host" if asked else f"no host for {idle_s:g} s")
                group.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def _listening(socket_path: Path | None) -> AsyncIterator[SocketListener | None]:
    """The owner's listener on `socket_path` (none where there is no path), the socket file removed after."""
    if socket_path is None:
        yield None
        return
    with contextlib.suppress(FileNotFoundError):
        socket_path.unlink()  # one left by a back-end that was killed: this process holds the data directory now
    previous = os.umask(0o077)
    try:
        listener = await anyio.create_unix_listener(socket_path)
    finally:
        os.umask(previous)
    try:
        async with listener:
            yield listener
    finally:
        with contextlib.suppress(FileNotFoundError):
            socket_path.unlink()


async def _stop_on(signals: Any, scope: anyio.CancelScope) -> None:
    async for _ in signals:
        scope.cancel()
        return
