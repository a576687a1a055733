"""The stdio transport to a package server, with every message it sends bounded.

The SDK's stdio client reads a server's stdout into one buffer until a newline comes: a server writing one
endless line would grow the registry's memory until it failed, and with it every other call. Here a message
is read up to `max_message_bytes`; one longer than that ends the server (its session can no longer be read
in step) with `MessageTooLarge` for whoever waits on it. The server's stderr is read by ard-mcp and written to
a file the operator alone can read (0600), with every known secret redacted (a server that printed its key
and exited put it in the tool error, the REST body and the audit log, and the file was world-readable:
issue #53); the file's tail names what went wrong when it crashes, and it is kept under `MAX_LOG_BYTES`
(started again from its last `KEEP_BYTES` when it grows past). Shutting down closes its stdin, then
terminates and kills it after `GRACE_S` seconds each, as the MCP lifecycle asks.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types
from anyio.abc import ByteReceiveStream, Process
from mcp.client._transport import TransportStreams
from mcp.shared.message import SessionMessage

from ard_mcp.packages.sandbox import Command
from ard_mcp.redaction import Redactor

log = logging.getLogger(__name__)
GRACE_S = 2.0
MAX_LOG_BYTES = 4 << 20
KEEP_BYTES = 64 << 10
_CHUNK = 65536


class MessageTooLarge(Exception):
    """A package server sent a message over the size limit; it was stopped."""


def _parsed(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


async def _stopped(process: Process) -> None:
    """Close stdin, then terminate, then kill, `GRACE_S` seconds apart; never raises."""
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        if process.stdin is not None:
            await process.stdin.aclose()
    for stop in (None, process.terminate, process.kill):
        if stop is not None:
            with contextlib.suppress(ProcessLookupError):
                stop()
        with anyio.move_on_after(GRACE_S):
            await process.wait()
            return


class BoundedStdio:
    """The transport (`mcp.Client(BoundedStdio(...))`) to a server started from `argv`; `ended` is set once
    its output ended (it exited, crashed, or was stopped for a message too large). The server is stopped
    when the transport is closed."""

    def __init__(self, command: Command, stderr: Path, max_message_bytes: int, redactor: Redactor) -> None:
        self.ended = anyio.Event()
        # Why it was stopped, when this transport stopped it: the SDK's session drops an exception read from the
        # stream, so the call waiting on the server sees only a closed connection and would report a plain exit.
        self.too_large: str | None = None
        self._opened = self._run(command, stderr, max_message_bytes, redactor)

    async def __aenter__(self) -> TransportStreams:
        return await self._opened.__aenter__()

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._opened.__aexit__(*exc)

    @contextlib.asynccontextmanager
    async def _run(self, command: Command, stderr: Path, max_message_bytes: int, redactor: Redactor) -> AsyncIterator[TransportStreams]:
        try:
            process = await anyio.open_process(command.argv, env=command.environment, pass_fds=command.pass_fds)
        finally:
            command.close()
        read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)

        async def reader() -> None:
            assert process.stdout is not None
            buffer = b""
            async with read_writer:
                with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                    while True:
                        buffer += await process.stdout.receive(_CHUNK)
                        *lines, buffer = buffer.split(b"\n")
                        for line in lines:
                            if line.strip():
                                await read_writer.send(_parsed(line))
                        if len(buffer) > max_message_bytes:
                            self.too_large = f"the server sent a message over the limit of {max_message_bytes} bytes"
                            self.ended.set()
                            with contextlib.suppress(ProcessLookupError):  # first: the send below waits for the session
                                process.kill()
                            await read_writer.send(MessageTooLarge(self.too_large))
                            return
                self.ended.set()

        async def writer() -> None:
            assert process.stdin is not None
            async with write_reader:
                with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                    async for message in write_reader:
                        await process.stdin.send((message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode())

        async with anyio.create_task_group() as group:
            group.start_soon(reader)
            group.start_soon(writer)
            group.start_soon(_logged, process.stderr, stderr, redactor)
            try:
                yield read_stream, write_stream
            finally:
                with anyio.CancelScope(shield=True):
                    await write_stream.aclose()
                    await _stopped(process)
                    await read_stream.aclose()
                group.cancel_scope.cancel()


async def _logged(stream: ByteReceiveStream | None, path: Path, redactor: Redactor) -> None:
    """Write what the server says on `stream` to `path` (0600, secrets redacted, bounded), until it ends."""
    if stream is None:
        return
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    os.fchmod(fd, 0o600)  # a file an earlier ard-mcp left readable by others
    redacting, size, kept = redactor.stream(), 0, b""
    try:
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            async for chunk in stream:
                data = redacting.feed(chunk)
                kept = (kept + data)[-KEEP_BYTES:]
                if size + len(data) > MAX_LOG_BYTES:
                    os.ftruncate(fd, 0)
                    os.lseek(fd, 0, os.SEEK_SET)
                    data, size = kept, 0
                size += os.write(fd, data)
        os.write(fd, redacting.flush())
    finally:
        os.close(fd)


def stderr_tail(path: Path, limit: int = 2000) -> str:
    """The last `limit` bytes of a server's stderr as text (what it said before it failed), or ""."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, 2) - limit))
            return f.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""
