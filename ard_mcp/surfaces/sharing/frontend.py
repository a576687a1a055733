"""`ard-mcp serve --shared`: the stdio server a host starts, as a thin front-end to the one back-end of its data
directory (`backend`), which it starts when none runs. Any number of hosts (two Claude Code windows, Claude
Desktop beside Cursor) can then use one data directory at once; a second plain `serve` exited "in use".

The front-end passes the host's messages and the back-end's through unchanged, a line each, noting only the
host's handshake and which of its requests await an answer, so every message (a consent question, progress,
a called server's question) reaches the host as the back-end wrote it. Standard library only, so it starts in tens of
milliseconds. A back-end that dies (a crash, `kill -9`) is started again, and the host's `initialize` and
`notifications/initialized` are sent to it anew (its answer dropped), so the host's next request is served
as if nothing happened. A request in flight at that moment is answered with an error saying it may or may
not have been carried out (sent again, a tool call could run twice); no write the back-end acknowledged is
lost (it is saved before it is answered). The host's session is `link.Link`'s, which also answers a host's
handshake and first `tools/list` from the back-end's answers kept the last time, while the back-end starts.

A plain `serve` is the same front-end with its back-end in its own process, on one end of a socket pair
(`hosted`): it answers its host as fast, and stays the one process its host started.

The back-end is one per data directory and settings: the socket's name holds a digest of the command line
and `ARD_MCP_*` variables it was started with, so a front-end never attaches to a back-end with other
settings (that one then finds the directory in use, and says so). Two front-ends starting at once take turns
(a lock beside the socket), so only one starts a back-end.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from ard_mcp.surfaces.sharing.link import POLL_S, START_S, Hello, Link

HANDOVER_S = 20.0  # a back-end started waits this long for the directory: its holder, a host's `serve` others had joined, is exiting
GREETING = b"ard-mcp back-end\n"  # `backend.GREETING`: not imported, the front-end stays free of the back-end's imports
GREETING_S = 10.0
STOP = b"ard-mcp stop-if-idle\n"  # `backend.STOP`: a connection's first line asking an idle back-end to stop
STOP_S = 30.0  # a stopping back-end closes its registry (Chroma flushed) before it exits
_MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes


def _digest(settings: Sequence[str]) -> str:
    return hashlib.sha256("\0".join(settings).encode()).hexdigest()[:12]


def socket_path(data_dir: Path, settings: Sequence[str]) -> Path:
    """Where the back-end for `data_dir` started with `settings` listens."""
    digest = _digest(settings)
    path = data_dir / f"ard-mcp-{digest}.sock"
    if len(str(path)) <= _MAX_SOCKET_PATH:
        return path
    _runtime().mkdir(mode=0o700, parents=True, exist_ok=True)
    return _runtime() / f"{_key(data_dir)}-{digest}.sock"


def machine_hello(settings: Sequence[str]) -> Path:
    """Where the answers a back-end of this install and `settings` gave are kept for every data directory of the
    user's (`link.Hello`): the user's cache folder, by the package's folder (two checkouts of one version answer
    differently) and the settings' digest."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ard-mcp"
    install = hashlib.sha256(str(Path(__file__).resolve().parents[2]).encode()).hexdigest()[:12]
    return cache / f"hello-{install}-{_digest(settings)}.json"


def _runtime() -> Path:
    """Where the socket of a data directory with a long path goes (sun_path is short)."""
    return Path(os.environ.get("XDG_RUNTIME_DIR") or f"/tmp/ard-mcp-{os.getuid()}")


def _key(data_dir: Path) -> str:
    return hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:16]


def settings_of(argv: Sequence[str]) -> list[str]:
    """What a back-end's settings are: the command line and the ARD_MCP_* variables, less `--shared`, `--backend`
    and the data directory (the socket is the data directory's already, however it was named: a host configured
    with `--data-dir` and one with `ARD_MCP_DATA_DIR` share it)."""
    words, kept = command_words(argv), []  # `ard-mcp` alone and `ard-mcp serve` are one
    while words:
        word = words.pop(0)
        if word == "--data-dir" and words:
            words.pop(0)
        elif word not in ("--shared", "--backend") and not word.startswith("--data-dir="):
            kept.append(word)
    variables = sorted(
        f"{name}={value}" for name, value in os.environ.items() if name.startswith("ARD_MCP_") and name != "ARD_MCP_DATA_DIR"
    )
    return [*kept, *variables]


def attach(path: Path) -> socket.socket | None:
    """A connection a live back-end greeted; None where none answers. A back-end killed a moment ago can still
    take a connection while its process exits, and reset it at once: its greeting never comes."""
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.settimeout(GREETING_S)
        client.connect(str(path))
    except OSError:
        client.close()
        return None
    return _greeted(client)


def _greeted(client: socket.socket) -> socket.socket | None:
    """`client` once the back-end at its other end has said `GREETING`; None (closed) where it does not."""
    said = b""
    try:
        client.settimeout(GREETING_S)
        while not said.endswith(b"\n") and len(said) < len(GREETING):
            chunk = client.recv(len(GREETING) - len(said))
            if not chunk:
                break
            said += chunk
        client.settimeout(None)
    except OSError:
        said = b""
    if said != GREETING:
        client.close()
        return None
    return client


def connected(path: Path, start: Sequence[str], log: Path) -> socket.socket:
    """A connection to the back-end at `path`, started with `start` (its stderr appended to `log`) where none
    answers; OSError saying why when it cannot be had."""
    found = attach(path)
    if found is not None:
        return found
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one front-end starts it; the others find it started
        found = attach(path)
        if found is not None:
            return found
        with open(log, "ab") as errors:
            process = subprocess.Popen(
                list(start), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors, start_new_session=True
            )
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            found = attach(path)
            if found is not None:
                return found
            if process.poll() is not None:
                raise OSError(f"the ard-mcp back-end stopped as it started: {_tail(log)}")
            time.sleep(POLL_S)
    raise OSError(f"the ard-mcp back-end did not answer within {START_S:g} s: {_tail(log)}")


def _tail(log: Path) -> str:
    with contextlib.suppress(OSError):
        lines = [line for line in log.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
        return " / ".join(lines[-3:])[-1500:] or "it said nothing"
    return "its log cannot be read"


def no_input() -> bool:
    """Whether stdin can bring nothing: closed, /dev/null, or an empty file (a service manager, a script)."""
    try:
        found = os.fstat(sys.stdin.fileno())
    except (OSError, ValueError):
        return True
    if stat.S_ISREG(found.st_mode):
        return found.st_size == 0
    return stat.S_ISCHR(found.st_mode) and found.st_rdev == os.stat(os.devnull).st_rdev


def command_words(argv: Sequence[str]) -> list[str]:
    """`argv` as the command line's parser reads it: with no subcommand, `serve` (so `uvx ard-mcp` in an MCP
    host's configuration starts the server)."""
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        return ["serve", *argv]
    return list(argv)


def quick(argv: Sequence[str], serve_here: Callable[[Sequence[str], socket.socket], threading.Thread | None]) -> int | None:
    """`ard-mcp serve` as a host starts it, plain or `--shared`, run before the command line's parser is imported
    (its imports took 0.7 s of a host's first `tools/list`): where `argv` is such a plain command, the front-end's
    exit status (`shared`, or `hosted` with `serve_here(argv, connection)` its back-end), else None. A plain
    `serve` with a terminal on stdin, or nothing there, is the command line's to explain."""
    command, *words = command_words(argv)
    if command != "serve" or any(a in words for a in ("--backend", "-h", "--help")):
        return None
    sharing = "--shared" in words
    words = [a for a in words if a != "--shared"]
    transport = os.environ.get("ARD_MCP_TRANSPORT") or "stdio"
    data_dir: str | None = os.environ.get("ARD_MCP_DATA_DIR") or None
    while words:
        word = words.pop(0)
        name, equals, value = word.partition("=")
        if name in ("--data-dir", "--transport") and not equals:
            if not words:
                return None
            value = words.pop(0)
        if name == "--data-dir":
            data_dir = value
        elif name == "--transport":
            transport = value
        else:
            return None  # any other option: the command line's parser reads it
    if transport != "stdio" or not (sharing or not (sys.stdin.isatty() or no_input())):
        return None
    if data_dir is None:
        from ard_mcp.config import default_data_dir

        directory = default_data_dir()
    else:
        directory = Path(data_dir)
    return shared(argv, directory) if sharing else hosted(argv, directory, partial(serve_here, argv))


def backend_command(argv: Sequence[str]) -> list[str]:
    """The back-end's own command line for `ard-mcp ARGV` (`serve [--shared] ...`)."""
    return [sys.executable, "-m", "ard_mcp", *(a for a in argv if a != "--shared"), "--backend"]


def shared(argv: Sequence[str], data_dir: Path) -> int:
    """Be the front-end for `ard-mcp` started with `argv` (`serve --shared ...`) on `data_dir`."""
    directory = data_dir.expanduser().absolute()
    return run(directory, settings_of(argv), partial(_to_backend, argv, directory))


def _to_backend(argv: Sequence[str], directory: Path, path: Path) -> socket.socket:
    """A connection to the back-end of `ard-mcp ARGV` on `directory` at `path`, started where none answers (its
    stderr in the directory's `backend.log`)."""
    return connected(path, backend_command(argv), directory / "backend.log")


def joinable(data_dir: Path, argv: Sequence[str]) -> bool:
    """Whether a back-end of `ard-mcp ARGV`'s settings holds `data_dir` (other hosts' `serve --shared`): a plain
    `serve` a host started then joins it as one more front-end instead of being refused, so a host configured
    by hand with plain `serve` works beside those `host-config` configured."""
    connection = attach(socket_path(data_dir.expanduser().absolute(), settings_of(argv)))
    if connection is None:
        return False
    connection.close()
    return True


def stop_idle(data_dir: Path) -> bool:
    """Ask every back-end of `data_dir` (any settings) to stop if no host is attached, and wait until each that
    agreed has exited (so let the directory go): True when one did. Why: a back-end `ard-mcp search`
    started holds the directory for its idle time, and a command that must claim it (`ingest`, `check`, a
    plain `serve`) would otherwise be refused until then; one serving a host is left alone."""
    runtime, stopping = _runtime(), []
    for path in [*data_dir.glob("ard-mcp-*.sock"), *(runtime.glob(f"{_key(data_dir)}-*.sock") if runtime.is_dir() else [])]:
        connection = attach(path)
        if connection is None:
            continue
        with connection:
            try:
                connection.settimeout(GREETING_S)
                connection.sendall(STOP)
                said = connection.recv(64).split()
            except OSError:
                continue
            if len(said) == 2 and said[0] == b"stopping" and said[1].isdigit():
                stopping.append(int(said[1]))
    deadline = time.monotonic() + STOP_S
    while any(_alive(pid) for pid in stopping) and time.monotonic() < deadline:
        time.sleep(POLL_S)
    return bool(stopping)


def _alive(pid: int) -> bool:
    """Whether process `pid` still runs: a back-end has let its directory go only once it has exited."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's: not ours to wait for, but running
    return True


def hosted(argv: Sequence[str], data_dir: Path, serve_here: Callable[[socket.socket], threading.Thread | None]) -> int:
    """Be the stdio server of the host that started plain `ard-mcp ARGV` on `data_dir`, with its back-end in this
    process (`assembly.stdio`): `serve_here(connection)` serves the host's session on `connection` (one end of a
    socket pair) in the thread it returns; None where a back-end of these settings holds the directory already,
    which this process then joins as `serve --shared` does. Why: the handshake and first `tools/list` are
    answered from what was kept (`link.Hello`) while this process imports and builds its server, where a plain
    `serve` took 1.1 s to its first `tools/list`. A back-end that stops while the host is still here (its
    session failed) is followed by one started as `serve --shared` starts it. The process exits once its own
    back-end has closed the registry: waited for here, as the interpreter's exit stops the thread pools first."""
    directory = data_dir.expanduser().absolute()
    served: list[threading.Thread | None] = []  # the first connection's: this process's own back-end, or None (joined)

    def connect(path: Path) -> socket.socket:
        if not served:
            ours, theirs = socket.socketpair()
            serving = serve_here(theirs)
            served.append(serving)
            if serving is not None:
                greeted = _greeted(ours)
                if greeted is None:
                    raise OSError("the ard-mcp server stopped as it started")
                return greeted
            ours.close()
            theirs.close()
        return _to_backend(argv, directory, path)

    status = run(directory, settings_of(argv), connect)
    for serving in served:
        if serving is not None:
            serving.join()
    return status


def run(data_dir: Path, settings: Sequence[str], connect: Callable[[Path], socket.socket]) -> int:
    """Be the host's stdio server through the back-end that `connect(the socket's path)` reaches; 1 with the
    reason on stderr where none can be had."""
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        path = socket_path(data_dir, settings)
        link = Link(partial(connect, path), Hello(path.with_suffix(".hello.json"), machine_hello(settings)))
    except OSError as exc:
        print(f"ard-mcp: {exc}", file=sys.stderr, flush=True)
        return 1
    stdin_open = threading.Event()
    stdin_open.set()
    reader = threading.Thread(target=link.pump, args=(stdin_open,), daemon=True)
    reader.start()
    try:
        for line in sys.stdin.buffer:
            link.send(line)
    except OSError as exc:
        print(f"ard-mcp: {exc}", file=sys.stderr, flush=True)
        return 1
    finally:
        stdin_open.clear()
        link.close_writing()
    reader.join(timeout=30)
    return 0
