"""Shared by the readiness and deployment tests: a Chroma server that can be stopped and started again on
its port (as an outage and its end look to the processes using it), and polling an HTTP route until it
answers a given status, within a bound."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

import httpx

from tests.processes import free_port, wait_for


class ChromaServer:
    """`chroma run` on a free loopback port, over one directory, stopped and started again on the same port."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        chroma = shutil.which("chroma") or str(Path(sys.executable).with_name("chroma"))
        self._process = subprocess.Popen(
            [chroma, "run", "--path", str(self.path), "--host", "127.0.0.1", "--port", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        wait_for(f"{self.url}/api/v2/heartbeat", self._process, "chroma run")

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=10)
        self._process = None

    def __enter__(self) -> ChromaServer:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self.stop()


def until_status(url: str, status: int, within: float, headers: dict[str, str] | None = None) -> httpx.Response:
    """GET `url` until it answers `status` (every 0.2 s), at most `within` seconds; the last answer either way."""
    deadline = time.monotonic() + within
    while True:
        try:
            answer = httpx.get(url, timeout=10, headers=headers)
            if answer.status_code == status or time.monotonic() > deadline:
                return answer
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.2)
