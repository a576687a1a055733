"""A hostile package server for tests/test_package_sandbox.py: run in the sandbox by the base interpreter
(standard library only), it tries one thing a malicious package would, named by its first argument, and
prints what happened as JSON: "ok", or the name of the error that stopped it."""

from __future__ import annotations

import ctypes
import functools
import json
import mmap
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CLONE_NEWUSER = 0x10000000
MIB = 1 << 20


def attempt(action: Callable[[], object]) -> str:
    try:
        action()
    except (OSError, MemoryError) as exc:
        return type(exc).__name__ + (f" {os.strerror(exc.errno)}" if isinstance(exc, OSError) and exc.errno else "")
    return "ok"


def read(*paths: str) -> dict[str, str]:
    return {path: attempt(Path(path).read_bytes) for path in paths}


def listdir(*paths: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for path in paths:
        try:
            found[path] = sorted(os.listdir(path))
        except OSError as exc:
            found[path] = type(exc).__name__
    return found


def write(*paths: str) -> dict[str, str]:
    return {path: attempt(functools.partial(Path(path).write_text, "written by the sandbox")) for path in paths}


def connect(port: str) -> str:
    def receive() -> None:
        with socket.create_connection(("127.0.0.1", int(port)), timeout=5) as conn:
            if conn.recv(16) != b"hello":
                raise OSError("the listener said something else")

    return attempt(receive)


def environ() -> dict[str, str]:
    return dict(os.environ)


def peek() -> dict[str, str]:
    """Every /proc file it can read that could hold another process's environment."""
    seen: dict[str, str] = {}
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        for name in ("environ", "cmdline"):
            path = f"/proc/{pid}/{name}"
            try:
                seen[path] = Path(path).read_bytes().decode(errors="replace")
            except OSError as exc:
                seen[path] = type(exc).__name__
    return seen


def processes(host_pid: str) -> dict[str, Any]:
    pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    cmdlines = {pid: Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode() for pid in pids}
    return {"pids": pids, "cmdlines": cmdlines, "signal_host": attempt(lambda: os.kill(int(host_pid), 0)), "session": os.getsid(0)}


def identity() -> dict[str, Any]:
    status = dict(line.split(":\t", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":\t" in line)
    libc = ctypes.CDLL(None, use_errno=True)
    userns = "ok" if libc.unshare(CLONE_NEWUSER) == 0 else os.strerror(ctypes.get_errno())
    keys = ("CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs")
    return {"uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(), **{k: status[k].strip() for k in keys}, "userns": userns}


def fork(count: str) -> dict[str, int]:
    made = failed = 0
    for _ in range(int(count)):
        try:
            pid = os.fork()
        except OSError:
            failed += 1
            continue
        if pid == 0:
            time.sleep(5)
            os._exit(0)
        made += 1
    return {"made": made, "failed": failed}


def allocate(kind: str, size: str) -> str:
    total = int(size)

    def private() -> None:
        block = bytearray(total)
        block[-1] = 1

    def shared() -> None:
        mapping = mmap.mmap(-1, total, flags=mmap.MAP_SHARED)
        for offset in range(0, total, mmap.PAGESIZE):
            mapping[offset] = 1

    def into(fd: int) -> None:
        chunk = b"x" * MIB
        for _ in range(total // MIB):
            os.write(fd, chunk)

    def memfd() -> None:
        into(os.memfd_create("fill"))

    def tmp() -> None:
        into(os.open("/tmp/fill", os.O_WRONLY | os.O_CREAT, 0o600))

    return attempt({"private": private, "shared": shared, "memfd": memfd, "tmp": tmp}[kind])


def files(count: str) -> dict[str, int]:
    opened: list[int] = []
    failed = 0
    for _ in range(int(count)):
        try:
            opened.append(os.open("/dev/null", os.O_RDONLY))
        except OSError:
            failed += 1
    return {"opened": len(opened), "failed": failed}


def burn() -> str:
    """Spin past the CPU limit, ignoring the soft limit's SIGXCPU as a stubborn server would."""
    signal.signal(signal.SIGXCPU, signal.SIG_IGN)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        pass
    return "survived"


def wait(token: str) -> str:
    """Say it started (the token, in its command line, is how the test finds it), then sleep."""
    Path("started").write_text(token)
    time.sleep(60)
    return "survived"


PROBES: dict[str, Callable[..., object]] = {
    f.__name__: f for f in (read, listdir, write, connect, environ, peek, processes, identity, fork, allocate, files, burn, wait)
}

if __name__ == "__main__":
    print(json.dumps(PROBES[sys.argv[1]](*sys.argv[2:])), flush=True)
