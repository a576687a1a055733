"""What the package tests share: wheels, source distributions and npm tarballs written by hand (no build
backend, nothing from the network), a PEP 503 "simple" index and an npm registry on loopback serving them."""

from __future__ import annotations

import base64
import hashlib
import html
import io
import json
import os
import shutil
import socket
import ssl
import tarfile
import threading
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from ard_mcp.packages.lookup import release_of

PROBE = """import json, sys
def main():
    print(json.dumps({"argv": sys.argv, "file": __file__, "isolated": sys.flags.isolated, "no_site": sys.flags.no_site,
                      "utf8": sys.flags.utf8_mode, "path": sys.path}))
    return 0
def helper():
    return 3
"""


def why_not_confined() -> str | None:
    """Why the sandbox cannot run here (None where it can): its launcher needs bubblewrap, and root to drop to the
    sandbox's uid, as a registry running as root does in CI."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
    if os.geteuid() != 0:
        return "runs the argv a registry running as root builds (setpriv to the sandbox uid needs root), as CI does"
    return None


def wheel(
    directory: Path,
    name: str,
    version: str,
    scripts: dict[str, str],
    module: str = PROBE,
    requires: Sequence[str] = (),
    python: str | None = None,
) -> Path:
    """A pure-Python wheel written as the wheel spec (PEP 427) lays one out: the module, METADATA (with a
    `Requires-Dist` for each of `requires`, and `Requires-Python` where `python` says), WHEEL, entry_points.txt
    and a RECORD with each file's sha256."""
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(f"Requires-Dist: {r}\n" for r in requires)
    metadata += f"Requires-Python: {python}\n" if python else ""
    files = {
        f"{dist}/__init__.py": module.encode(),
        f"{info}/METADATA": metadata.encode(),
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


def _tar(files: Mapping[str, str]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for name, text in files.items():
            member = tarfile.TarInfo(name)
            member.size = len(text.encode())
            archive.addfile(member, io.BytesIO(text.encode()))
    return out.getvalue()


def sdist(directory: Path, name: str, version: str, files: Mapping[str, str]) -> Path:
    """A source distribution: `files` (pyproject.toml, setup.py, ...) under `<name>-<version>/`, with PKG-INFO."""
    base = f"{name}-{version}"
    members = {
        f"{base}/PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        **{f"{base}/{k}": v for k, v in files.items()},
    }
    path = directory / f"{base}.tar.gz"
    path.write_bytes(_tar(members))
    return path


class Index(BaseHTTPRequestHandler):
    """A PEP 503 simple index of the files in `files` (each request noted in `asked`); `_send` answers, for
    indexes of other shapes built on it. With `credentials` ("user:password"), a request without them in its
    basic Authorization is answered 401."""

    files: Path
    asked: list[str]
    credentials: str | None = None

    def do_GET(self) -> None:
        self.asked.append(self.path)
        wanted = f"Basic {base64.b64encode(self.credentials.encode()).decode()}" if self.credentials is not None else None
        if wanted is not None and self.headers.get("Authorization") != wanted:
            return self._send(401, b"credentials needed", "text/plain")
        parts = self.path.strip("/").split("/")
        if parts[0] == "simple" and len(parts) == 2:
            found = sorted(f for f in self.files.iterdir() if (r := release_of(f.name)) and r[0] == parts[1])
            if not found:
                return self._send(404, b"no such project", "text/plain")
            links = "".join(
                f'<a href="/files/{html.escape(f.name)}#sha256={hashlib.sha256(f.read_bytes()).hexdigest()}"{_requires_python(f)}>'
                f"{html.escape(f.name)}</a>\n"
                for f in found
            )
            return self._send(200, f"<!DOCTYPE html><html><body>{links}</body></html>".encode(), "text/html")
        if parts[0] == "files" and len(parts) == 2 and (self.files / unquote(parts[1])).is_file():  # 1.0+x is asked as 1.0%2Bx
            return self._send(200, (self.files / unquote(parts[1])).read_bytes(), "application/octet-stream")
        return self._send(404, b"not found", "text/plain")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _requires_python(path: Path) -> str:
    """A wheel's Requires-Python as PEP 503's `data-requires-python` attribute (pip and ard-mcp read it before
    downloading), where its METADATA has one."""
    if not path.name.endswith(".whl"):
        return ""
    with zipfile.ZipFile(path) as archive:
        metadata = next((archive.read(n).decode() for n in archive.namelist() if n.endswith(".dist-info/METADATA")), "")
    needs = next((line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Python:")), None)
    return f' data-requires-python="{html.escape(needs)}"' if needs else ""


def _over_tls(server: ThreadingHTTPServer, tls: tuple[Path, Path]) -> None:
    """`server` answering over https with `tls`, a certificate and its key (`certificates.self_signed`)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*tls)
    server.socket = context.wrap_socket(server.socket, server_side=True)


@contextmanager
def serving_index(
    files: Path, asked: list[str] | None = None, tls: tuple[Path, Path] | None = None, shape: type[Index] | None = None, **given: Any
) -> Iterator[str]:
    """The simple index of the wheels and sdists in `files`, on a loopback port; yields its URL (`.../simple`);
    over https with `tls`, a certificate and its key (`certificates.self_signed`). `shape`: an `Index` of another
    shape, with the attributes it reads `given`."""
    handler = type("Index", (shape or Index,), {"files": files, "asked": asked if asked is not None else [], **given})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    if tls is not None:
        _over_tls(server, tls)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{server.server_address[1]}/simple"
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


# -- an npm registry on loopback --------------------------------------------------------------------------------

NPM_PROBE = "console.log(JSON.stringify({argv: process.argv.slice(2), file: __filename}))\n"


def npm_tarball(manifest: Mapping[str, Any]) -> bytes:
    """An npm package tarball: package/package.json and index.js, as `npm pack` lays them out."""
    return _tar({"package/package.json": json.dumps(manifest), "package/index.js": NPM_PROBE})


class NpmRegistry:
    """Packuments and tarballs served on a loopback port: `url`, and `asked`, every path requested."""

    def __init__(self, url: str, documents: dict[str, bytes], asked: list[str]) -> None:
        self.url = url
        self.documents = documents
        self.asked = asked

    def publish(
        self, name: str, version: str, manifest: Mapping[str, Any], *, listed_as: str | None = None, packed: Mapping[str, Any] | None = None
    ) -> None:
        """Publish `name@version` with `manifest` (dependencies, bin, ...): its packument lists it under
        `listed_as` (default: the version itself) and its tarball holds `packed` as its package.json (default:
        what the packument says)."""
        said = {"name": name, "version": version, **manifest}
        tarball = npm_tarball(packed if packed is not None else said)
        path = f"/{name}/-/{name}-{version}.tgz"
        self.documents[path] = tarball
        dist = {
            "tarball": self.url + path,
            "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tarball).digest()).decode(),
            "shasum": hashlib.sha1(tarball).hexdigest(),
        }
        key = listed_as or version
        packument = {"name": name, "dist-tags": {"latest": key}, "versions": {key: {**said, "dist": dist}}}
        self.documents[f"/{name}"] = json.dumps(packument).encode()


class _Npm(BaseHTTPRequestHandler):
    documents: dict[str, bytes]
    asked: list[str]
    token: str | None

    def do_GET(self) -> None:
        self.asked.append(self.path)
        if self.token is not None and self.headers.get("Authorization") != f"Bearer {self.token}":
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = self.documents.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", "application/octet-stream" if self.path.endswith(".tgz") else "application/json")
        self.send_header("Content-Length", str(len(body or b"{}")))
        self.end_headers()
        self.wfile.write(body or b"{}")

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serving_npm_registry(token: str | None = None, tls: tuple[Path, Path] | None = None) -> Iterator[NpmRegistry]:
    """An empty npm registry on a loopback port, to `publish` into; with `token`, one that answers 401 to a request
    without `Authorization: Bearer <token>`; over https with `tls`, a certificate and its key."""
    documents: dict[str, bytes] = {}
    asked: list[str] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Registry", (_Npm,), {"documents": documents, "asked": asked, "token": token}))
    if tls is not None:
        _over_tls(server, tls)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield NpmRegistry(f"{'https' if tls else 'http'}://127.0.0.1:{server.server_address[1]}", documents, asked)
    finally:
        server.shutdown()
        server.server_close()
