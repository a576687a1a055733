"""What the package tests share: wheels written by hand (no build backend, nothing from the network) and a
PEP 503 "simple" index on loopback serving them."""

from __future__ import annotations

import base64
import hashlib
import html
import os
import socket
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from ard_mcp.packages.lookup import release_of

PROBE = """import json, sys
def main():
    print(json.dumps({"argv": sys.argv, "file": __file__, "isolated": sys.flags.isolated, "no_site": sys.flags.no_site,
                      "utf8": sys.flags.utf8_mode, "path": sys.path}))
    return 0
def helper():
    return 3
"""


def wheel(directory: Path, name: str, version: str, scripts: dict[str, str], module: str = PROBE) -> Path:
    """A pure-Python wheel written as the wheel spec (PEP 427) lays one out: the module, METADATA, WHEEL,
    entry_points.txt and a RECORD with each file's sha256."""
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    files = {
        f"{dist}/__init__.py": module.encode(),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: ard-mcp-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/entry_points.txt": ("[console_scripts]\n" + "".join(f"{k} = {v}\n" for k, v in scripts.items())).encode(),
    }
    record = [
        f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}"
        for path, data in files.items()
    ]
    files[f"{info}/RECORD"] = ("\n".join([*record, f"{info}/RECORD,,"]) + "\n").encode()
    path = directory / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in files.items():
            archive.writestr(member, data)
    return path


class _Index(BaseHTTPRequestHandler):
    files: Path
    asked: list[str]

    def do_GET(self) -> None:
        self.asked.append(self.path)
        parts = self.path.strip("/").split("/")
        if parts[0] == "simple" and len(parts) == 2:
            found = sorted(f for f in self.files.iterdir() if (r := release_of(f.name)) and r[0] == parts[1])
            if not found:
                return self._send(404, b"no such project", "text/plain")
            links = "".join(
                f'<a href="/files/{html.escape(f.name)}#sha256={hashlib.sha256(f.read_bytes()).hexdigest()}">{html.escape(f.name)}</a>\n'
                for f in found
            )
            return self._send(200, f"<!DOCTYPE html><html><body>{links}</body></html>".encode(), "text/html")
        if parts[0] == "files" and len(parts) == 2 and (self.files / parts[1]).is_file():
            return self._send(200, (self.files / parts[1]).read_bytes(), "application/octet-stream")
        return self._send(404, b"not found", "text/plain")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serving_index(files: Path, asked: list[str] | None = None) -> Iterator[str]:
    """The simple index of the wheels and sdists in `files`, on a loopback port; yields its URL (`.../simple`)."""
    handler = type("Index", (_Index,), {"files": files, "asked": asked if asked is not None else []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    finally:
        server.shutdown()
        server.server_close()


def running_with(token: str) -> list[int]:
    """Host processes whose command line holds `token` (what a sandboxed server left behind, if anything)."""
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            if token.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
        except OSError:
            continue
    return found


@contextmanager
def loopback_listener() -> Iterator[tuple[int, list[bool]]]:
    """A listener on the host's loopback that says hello to whoever connects: its port, and one `True` per
    connection it accepted (what a sandboxed server without network must never add to)."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()
    reached: list[bool] = []

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            reached.append(True)
            with conn:
                conn.sendall(b"hello")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], reached
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()
