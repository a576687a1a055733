"""A host's session through the back-end (`frontend`): its lines passed through to the back-end's socket and
back, the handshake replayed to a back-end started again, and the first answers a host waits for given at once.

Why the last: a host's first `tools/list` took 0.8-1.1 s through a front-end whose back-end had to start
(its imports alone, the MCP SDK's above all, take 0.6 s), where issue #55 asks for 0.5 s. What the back-end
answers to `initialize` or `server/discover` (the 2026 protocol's first request) and to a first page of
`tools/list` depends only on the ard-mcp version, its settings (the socket's name holds their digest) and
what the host asked, less the host's name (its protocol version and capabilities). So those answers are kept
beside the socket and for the user's other data directories (`Hello`) and given at once the next time, while
the back-end starts in the background;
an `initialize` answered so is replayed to the back-end with `notifications/initialized`, as to a back-end
started again, its answer dropped. Every other request waits for the back-end. Once it is there, the
`tools/list` answered so is sent to it again, and where its answer is not the one given (ard-mcp upgraded in
place, its version unchanged) the host is sent `notifications/tools/list_changed` and the kept answer
replaced. Standard library only, as `frontend`.

The very first start of an install (no back-end of its settings ever answered) has nothing kept, and nothing
cheaper than the back-end can answer it exactly: the answers are the MCP SDK's serialisation of the server's
tools (pydantic schemas of their signatures and results), and `import mcp.server.mcpserver` alone takes 0.5 s of
CPU here; a copy shipped with the package would be one that drifts from the code. So `ard-mcp host-config`,
which a person runs before their host's first start, asks a back-end these questions for every protocol
version (`warm`), and the host's first start is answered from what it kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ard_mcp import __version__

START_S = 60.0  # the back-end's start: imports, the data directory claimed, the socket made (about 1 s here)
POLL_S = 0.05
_ANSWER = re.compile(rb'^\{"jsonrpc":"2\.0","id":("(?:[^"\\]|\\.)*"|-?\d+),"(?:result|error)"')  # the back-end's answers, as it writes them
LOST = -32001  # the error code of a request the back-end stopped during (JSON-RPC's server-defined range)
_CHECK = "ard-mcp-front-end-tools"  # the id of the front-end's own tools/list, never passed to the host
_CHECK_ID = json.dumps(_CHECK)  # as the answers' ids are noted
_MAX_HELLO = 1 << 20
_KEPT = ("initialize", "server/discover", "tools/list")
PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"  # where a 2026-era request names its version


class Hello:
    """The back-end's answers to the requests `key` names, in one file beside the socket (in the data directory,
    or the owner's runtime folder), and in `machine`: the same answers for this install and these settings on
    any data directory of the user's. Why the second: they depend on the ard-mcp version and install, its
    settings (the socket's name holds their digest) and what the host asked, never on the data directory (no
    tool, nor the handshake, reads it), so a host's first start on a new data directory is answered at once
    too once any back-end of these settings has answered (0.05 s, against 0.8-1.2 s for the back-end's start
    on the 2-core machine: its MCP SDK imports alone take 0.5 s of CPU). A file that cannot be read is no answer."""

    def __init__(self, path: Path, machine: Path | None = None) -> None:
        self.path, self.machine = path, machine

    @staticmethod
    def key(message: dict[str, object]) -> str | None:
        """What a kept answer to `message` is found by, where it may have one: `initialize`, `server/discover`,
        a first page of `tools/list`, by the protocol version asked for (legacy `initialize`'s `protocolVersion`,
        a 2026-era request's in `_meta`) and nothing else of the host's: the MCP SDK answers these from its
        server's options and the version alone (`ServerRunner._handle_initialize`, `Server._handle_discover`;
        ard-mcp's tool list reads no client capability), so hosts that differ in name or capabilities share them,
        and `ard-mcp host-config --write` can ask them ahead of every host (`warm`)."""
        method, params = message.get("method"), message.get("params")
        params = params if isinstance(params, dict) else {}
        if method not in _KEPT or (method == "tools/list" and "cursor" in params):
            return None
        meta = params.get("_meta")
        version = params.get("protocolVersion", meta.get(PROTOCOL_VERSION) if isinstance(meta, dict) else None)
        return hashlib.sha256(json.dumps([__version__, method, version]).encode()).hexdigest()

    @staticmethod
    def _all(path: Path) -> dict[str, object]:
        with contextlib.suppress(OSError, ValueError):
            if path.stat().st_size <= _MAX_HELLO:
                found = json.loads(path.read_text(encoding="utf-8"))
                return found if isinstance(found, dict) else {}
        return {}

    def get(self, key: str) -> dict[str, object] | None:
        """The answer kept for `key`: this directory's, else the machine's (kept as this directory's from now on)."""
        kept = self._all(self.path).get(key)
        if not isinstance(kept, dict) and self.machine is not None:
            kept = self._all(self.machine).get(key)
            if isinstance(kept, dict):
                self._put(self.path, key, kept)
        return kept if isinstance(kept, dict) else None

    def put(self, key: str, result: object) -> None:
        """Keep `result` for `key`, for this directory and the machine."""
        for path in (self.path, self.machine):
            if path is not None:
                self._put(path, key, result)

    def _put(self, path: Path, key: str, result: object) -> None:
        """Written to a temporary file renamed into place: a reader sees all or none."""
        kept = {**self._all(path), key: result}
        with contextlib.suppress(OSError):
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            temporary = path.with_name(f"{path.name}.{os.getpid()}")
            temporary.write_text(json.dumps(kept), encoding="utf-8")
            os.replace(temporary, path)


class Link:
    """The host's session through the back-end: the socket (made by `connect`, in the background), the handshake
    to send a new back-end, and what the host asked that `hello` may answer."""

    def __init__(self, connect: Callable[[], socket.socket], hello: Hello) -> None:
        self._connect, self._hello = connect, hello
        self._lock = threading.Lock()
        self._socket: socket.socket | None = None
        self._ready = threading.Event()
        self._handshake: list[bytes] = []  # initialize and notifications/initialized, as the host sent them
        self._initialize_id: object = None
        self._replay = False  # the host's initialize was answered from `hello`: the back-end is to hear it
        self._check: tuple[bytes, str, object] | None = None  # the tools/list answered from `hello`: (line, key, answer)
        self._watched: dict[str, str] = {}  # requests whose answers `hello` keeps: key by the request's id as JSON
        self._pending: dict[str, object] = {}  # the host's requests not answered yet, by their id as JSON
        self._out = threading.Lock()  # answers and lost-request errors never interleave on stdout
        self._closing = False  # the host closed its input
        self.stdout = sys.stdout.fileno()
        threading.Thread(target=self._first, daemon=True).start()

    def _first(self) -> None:
        """The first connection, made while the host's first lines are answered; a back-end that cannot be had
        ends the front-end, saying why (the host sees its server exit, as it did when this came first)."""
        try:
            fresh = self._connect()
            with self._lock:  # what the host sent so far is in `_handshake`; what it sends next goes to `_socket`
                if self._replay:  # the host's initialize was answered from `hello`: the back-end hears it now
                    try:
                        fresh = self._replayed(fresh)
                    except OSError:
                        fresh = self._handshaken(time.monotonic() + START_S)
                self._socket = fresh
                self._ready.set()
                check = self._check
                if self._closing:  # the host left before it was there: the back-end ends this session too
                    with contextlib.suppress(OSError):
                        fresh.shutdown(socket.SHUT_WR)
        except OSError as exc:
            print(f"ard-mcp: {exc}", file=sys.stderr, flush=True)
            os._exit(1)
        if check is not None:  # the same request as the host's, under an id of the front-end's own
            checked = {**_message(check[0]), "id": _CHECK}
            with contextlib.suppress(OSError):
                fresh.sendall(json.dumps(checked).encode() + b"\n")

    def send(self, line: bytes) -> None:
        message = _message(line)
        request = json.dumps(message.get("id"))
        kept = Hello.key(message) if "id" in message else None
        with self._lock:
            if self._socket is None and kept is not None and self._from_hello(line, message, kept):
                return
            if message.get("method") == "initialize":
                self._handshake, self._initialize_id = [line], message.get("id")
            elif message.get("method") == "notifications/initialized":
                self._handshake.append(line)
                if self._replay and self._socket is None:
                    return  # sent to the back-end with the handshake, once it is there
        if kept is not None:
            self._watched[request] = kept
        if "method" in message and "id" in message:
            self._pending[request] = message["id"]
        self._ready.wait()
        self._sent(line)

    def _from_hello(self, line: bytes, message: dict[str, object], key: str) -> bool:
        """Answer `message` from `hello`'s answer under `key` where it keeps one (the back-end not there yet);
        True when it did."""
        answer = self._hello.get(key)
        if answer is None or (message.get("method") == "tools/list" and self._check is not None):
            return False
        if message.get("method") == "initialize":
            self._handshake, self._initialize_id, self._replay = [line], message.get("id"), True
        elif message.get("method") == "tools/list":
            self._check = (line, key, answer)
        self._write(json.dumps({"jsonrpc": "2.0", "id": message.get("id"), "result": answer}).encode() + b"\n")
        return True

    def _sent(self, line: bytes) -> None:
        """`line` to the back-end, through a new connection where the one there broke."""
        for attempt in range(2):
            with self._lock:
                current = self._socket
            assert current is not None  # `_ready` is set
            try:
                current.sendall(line)
                return
            except OSError:
                if attempt:
                    raise
                self.reconnect(current)

    def reconnect(self, broken: socket.socket) -> socket.socket:
        """A new connection in place of `broken` (another thread may have made it already), the handshake replayed."""
        with self._lock:
            if self._socket is not broken:
                assert self._socket is not None
                return self._socket
            with contextlib.suppress(OSError):
                broken.shutdown(socket.SHUT_RDWR)  # wakes the reader blocked on it (a close alone does not)
            broken.close()
            fresh = self._handshaken(time.monotonic() + START_S)
            self._socket = fresh
            self._answer_lost()
            return fresh

    def _handshaken(self, deadline: float) -> socket.socket:
        """A new connection with the host's handshake replayed. A back-end killed a moment ago may still accept a
        connection while its process exits, and then reset it: tried again until `deadline`."""
        while True:
            try:
                return self._replayed(self._connect())
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(POLL_S)

    def _replayed(self, fresh: socket.socket) -> socket.socket:
        """`fresh` with the host's handshake sent and the back-end's answer to it read; OSError (closed) where it fails."""
        try:
            for line in self._handshake:
                fresh.sendall(line)
            if self._initialize_id is not None:
                _drop_answer(fresh, self._initialize_id)
        except OSError:
            fresh.close()
            raise
        return fresh

    def _answer_lost(self) -> None:
        """Tell the host which of its requests the back-end stopped during (the handshake's it has answered)."""
        lost, self._pending = self._pending, {}
        for key, request_id in lost.items():
            if key == json.dumps(self._initialize_id):
                continue
            error = {
                "code": LOST,
                "message": "the ard-mcp back-end stopped while this request was in flight, and was started "
                "again: it may or may not have been carried out; send it again if it is safe to",
            }
            self._write(json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode() + b"\n")

    def _write(self, data: bytes) -> None:
        with self._out:
            while data:
                data = data[os.write(self.stdout, data) :]

    def _noted(self, line: bytes) -> bool:
        """Note an answer the host awaited (and keep those `hello` keeps); True for the front-end's own check,
        which the host never sees: a tool list other than the one given is said to the host as changed."""
        answered = _ANSWER.match(line)
        if answered is None:
            return False
        request = answered[1].decode()
        self._pending.pop(request, None)
        result = _message(line).get("result") if request in self._watched or request == _CHECK_ID else None
        if request == _CHECK_ID:
            if self._check is not None and isinstance(result, dict) and result != self._check[2]:
                self._hello.put(self._check[1], result)
                self._write(b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n')
            return True
        key = self._watched.pop(request, None)
        if key is not None and isinstance(result, dict):
            self._hello.put(key, result)
        return False

    def pump(self, stdin_open: threading.Event) -> None:
        """The back-end's messages to stdout, a line at a time (its answers noted), until it ends after the host
        closed stdin (else reconnect and go on)."""
        self._ready.wait()
        with self._lock:
            current = self._socket
        pending = b""
        while current is not None:
            try:
                chunk = current.recv(65536)
            except OSError:
                chunk = b""
            if chunk:
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    if not self._noted(line):
                        self._write(line + b"\n")
                continue
            if not stdin_open.is_set():
                return
            pending = b""
            current = self.reconnect(current)

    def close_writing(self) -> None:
        with self._lock:
            self._closing = True
            if self._socket is not None:
                with contextlib.suppress(OSError):
                    self._socket.shutdown(socket.SHUT_WR)


def _message(line: bytes) -> dict[str, object]:
    try:
        found = json.loads(line)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _drop_answer(connection: socket.socket, request_id: object) -> None:
    """Read the new back-end's answer to the replayed `initialize`: the host has its answer already."""
    pending = b""
    while True:
        chunk = connection.recv(65536)
        if not chunk:
            raise OSError("the ard-mcp back-end closed the connection during the handshake")
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            if _message(line).get("id") == request_id:
                if pending:
                    raise OSError("the ard-mcp back-end said more than its handshake")  # nothing else was asked yet
                return
