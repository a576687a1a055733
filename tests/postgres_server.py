"""A real PostgreSQL server for the tests: a throwaway cluster made with `initdb` in a temporary directory,
listening on a free loopback port, run as the `postgres` user when the tests run as root (PostgreSQL
refuses to run as root). Nothing is installed: the machine's PostgreSQL binaries are used if there are any,
and the tests that need them are skipped where there are none."""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg


def _bindir() -> Path | None:
    """Debian keeps the server binaries out of PATH (/usr/lib/postgresql/N/bin); `initdb` on PATH is enough too."""
    found = shutil.which("initdb")
    if found:
        return Path(os.path.realpath(found)).parent
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
    return Path(dirs[-1]) if dirs and (Path(dirs[-1]) / "initdb").exists() else None


BINDIR = _bindir()
AVAILABLE = BINDIR is not None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    def __init__(self, password: str | None = None) -> None:
        """`password`: connections over TCP must give it (scram-sha-256), as a deployed server's do; without
        one, every connection is trusted."""
        assert BINDIR is not None, "no PostgreSQL binaries on this machine"
        self._root = Path(tempfile.mkdtemp(prefix="ard-mcp-pg-"))
        self.password = password
        self._as_postgres = os.geteuid() == 0
        if self._as_postgres:
            shutil.chown(self._root, "postgres", "postgres")
        self.port = _free_port()
        self._names = (f"t{i}" for i in itertools.count(1))
        auth = ["--auth=trust"]
        if password is not None:
            (self._root / "password").write_text(password)
            auth = ["--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={self._root / 'password'}"]
        self._run(BINDIR / "initdb", "-D", str(self._root / "data"), "-U", "postgres", *auth, "-E", "UTF8", "--locale=C", "--no-sync")
        self.start()

    def start(self) -> None:
        """Start the server on its port (again, after `halt`) and wait until it accepts connections."""
        assert BINDIR is not None
        settings = ["listen_addresses=127.0.0.1", "fsync=off", "synchronous_commit=off", "full_page_writes=off", "max_connections=300"]
        self._process = subprocess.Popen(
            [str(BINDIR / "postgres"), "-D", str(self._root / "data"), "-p", str(self.port), "-k", str(self._root)]
            + [arg for setting in settings for arg in ("-c", setting)],
            stdout=subprocess.DEVNULL,
            stderr=open(self._root / "server.log", "ab"),  # noqa: SIM115 - the child keeps it
            user="postgres" if self._as_postgres else None,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                psycopg.connect(self.url(), connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if self._process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"PostgreSQL did not start: {(self._root / 'server.log').read_text()[-2000:]}") from None
                time.sleep(0.1)

    def _run(self, *command: object) -> None:
        subprocess.run([str(c) for c in command], check=True, capture_output=True, user="postgres" if self._as_postgres else None)

    def url(self, database: str = "postgres") -> str:
        secret = "" if self.password is None else f":{self.password}"
        return f"postgresql://postgres{secret}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh, empty database; returns its URL."""
        name = next(self._names)
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def halt(self) -> None:
        """Stop the server as a restart or failover does (fast shutdown: every session is ended), keeping its data."""
        self._process.send_signal(signal.SIGINT)
        try:
            self._process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def stop(self) -> None:
        self.halt()
        with contextlib.suppress(OSError):
            shutil.rmtree(self._root)
