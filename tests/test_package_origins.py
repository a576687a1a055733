"""Installs take packages only from where the operator allowed: hostile packages built here, served by a
loopback PyPI index and a loopback npm registry, point their dependencies elsewhere (a URL on another
loopback port, a git repository, a path on this machine) or offer another version than the one approved;
each is refused with its reason, leaves no install behind, and the other port is never reached. Then the
proxy itself (`egress`): what it lets through, what it refuses and records, and its chaining to the
operator's own proxy."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from ard_mcp.packages import egress
from ard_mcp.packages.install import Installer, InstallRefused, Registries
from ard_mcp.packages.specs import PackageSpec
from tests.package_support import NpmRegistry, loopback_listener, sdist, serving_index, serving_npm_registry, wheel

pytestmark = pytest.mark.slow

SCRIPTS = {"ard-hostile": "ard_hostile:main"}


def _spec(registry: str, name: str, version: str) -> PackageSpec:
    return PackageSpec(registry, name, version, None, (), (), ())


def _refused(installer: Installer, spec: PackageSpec) -> str:
    """The reason `spec` was refused, after checking that no install of anything was left behind."""
    with pytest.raises(InstallRefused) as refused:
        anyio.run(installer.install, spec)
    assert list(installer.cache.glob("*/*/*/installed.json")) == []
    assert not (installer.cache / spec.registry / spec.name.replace("/", "+") / str(spec.version)).exists()
    return str(refused.value)


@pytest.fixture
def elsewhere() -> Iterator[tuple[int, list[bool]]]:
    """A port on loopback that no install may reach: its number, and one `True` per connection it accepted."""
    with loopback_listener() as found:
        yield found


# -- PyPI ------------------------------------------------------------------------------------------------------


@pytest.fixture
def index(tmp_path: Path, elsewhere: tuple[int, list[bool]]) -> Iterator[tuple[str, Path, Path]]:
    """(index URL, the file a build of a source distribution would write, the cache) with the hostile wheels."""
    port, _ = elsewhere
    files, ran = tmp_path / "files", tmp_path / "a-build-ran"
    files.mkdir()
    with serving_index(files) as url:
        origin = url.removesuffix("/simple")
        build = f"open({str(ran)!r}, 'w').write('ran')\n"
        # a build backend on the index itself: pip would install it into a build environment and import it
        wheel(files, "ard-evil-backend", "1.0", {}, module=build + "def build_wheel(*a, **k): pass\n")
        pyproject = '[build-system]\nrequires = ["ard-evil-backend"]\nbuild-backend = "ard_evil_backend"\n'
        sdist(files, "ard-dep", "1.0", {"pyproject.toml": pyproject})
        local = tmp_path / "ard-dep-dir"
        local.mkdir()
        (local / "pyproject.toml").write_text(pyproject)
        (local / "setup.py").write_text(build)
        wheel(files, "ard-dep", "1.0", SCRIPTS)
        hostile = {
            "ard-url": f"ard-dep @ http://127.0.0.1:{port}/ard_dep-1.0-py3-none-any.whl",
            "ard-vcs": f"ard-dep @ git+https://127.0.0.1:{port}/ard-dep.git",
            "ard-sdist-here": f"ard-dep @ {origin}/files/ard-dep-1.0.tar.gz",
            "ard-path": f"ard-dep @ {local.as_uri()}",
            "ard-wheel-here": f"ard-dep @ {origin}/files/ard_dep-1.0-py3-none-any.whl",
        }
        for name, requirement in hostile.items():
            wheel(files, name, "1.0", SCRIPTS, requires=[requirement])
        wheel(files, "ard-local-only", "1.0+evil", SCRIPTS)
        wheel(files, "ard-local-too", "1.0+evil", SCRIPTS)
        wheel(files, "ard-local-too", "1.0", {"ard-local-too": "ard_local_too:main"})
        yield url, ran, tmp_path / "cache"


def test_a_direct_url_dependency_is_refused_and_its_host_never_asked(
    index: tuple[str, Path, Path], elsewhere: tuple[int, list[bool]]
) -> None:
    url, _, cache = index
    port, reached = elsewhere
    reason = _refused(Installer(cache, Registries(pypi=(url,))), _spec("pypi", "ard-url", "1.0"))
    assert reason.startswith("pypi:ard-url@1.0: its dependency ard-dep")
    assert f"@ http://127.0.0.1:{port}/ard_dep-1.0-py3-none-any.whl is not a release on the index {url}" in reason
    assert f"refused: GET http://127.0.0.1:{port}/ard_dep-1.0-py3-none-any.whl" in reason
    assert reached == []


def test_a_vcs_dependency_is_refused_and_no_checkout_starts(index: tuple[str, Path, Path], elsewhere: tuple[int, list[bool]]) -> None:
    url, _, cache = index
    port, reached = elsewhere
    reason = _refused(Installer(cache, Registries(pypi=(url,))), _spec("pypi", "ard-vcs", "1.0"))
    assert f"its dependency ard-dep@ git+https://127.0.0.1:{port}/ard-dep.git" in reason.replace("ard-dep @", "ard-dep@")
    assert "version-control repository" in reason
    assert reached == []


@pytest.mark.parametrize("name", ["ard-sdist-here", "ard-path"])
def test_a_source_build_of_a_direct_dependency_never_runs(name: str, index: tuple[str, Path, Path]) -> None:
    """From the allowed index itself, or a path on this machine, the proxy has nothing to refuse: pip sets out
    to build it (`--only-binary` does not cover direct references), and starting the build is what is refused."""
    url, ran, cache = index
    reason = _refused(Installer(cache, Registries(pypi=(url,))), _spec("pypi", name, "1.0"))
    assert f"pypi:{name}@1.0: its dependency " in reason and "is not a release on the index" in reason
    assert not ran.exists()


def test_a_direct_wheel_from_the_allowed_index_is_refused_after_the_install(index: tuple[str, Path, Path]) -> None:
    """A wheel by URL on an allowed origin installs without running anything; pip's report tells it apart."""
    url, _, cache = index
    reason = _refused(Installer(cache, Registries(pypi=(url,))), _spec("pypi", "ard-wheel-here", "1.0"))
    origin = url.removesuffix("/simple")
    assert f"its dependency ard-dep came from {origin}/files/ard_dep-1.0-py3-none-any.whl (a direct URL)" in reason


def test_a_local_version_label_is_another_release(index: tuple[str, Path, Path]) -> None:
    url, _, cache = index
    installer = Installer(cache, Registries(pypi=(url,)))
    reason = _refused(installer, _spec("pypi", "ard-local-only", "1.0"))
    assert f"{url} has no version 1.0 of ard-local-only (only 1.0+evil: a local version label makes another release)" in reason
    installed = anyio.run(installer.install, _spec("pypi", "ard-local-too", "1.0"))  # offered both: the approved one
    assert installed.spec.version == "1.0" and (installed.directory / "lib" / "ard_local_too-1.0.dist-info").is_dir()


# -- npm -------------------------------------------------------------------------------------------------------


@pytest.fixture
def npm(tmp_path: Path, elsewhere: tuple[int, list[bool]]) -> Iterator[tuple[NpmRegistry, Path]]:
    port, _ = elsewhere
    local = tmp_path / "ard-dep"
    local.mkdir()
    (local / "package.json").write_text('{"name": "ard-dep", "version": "1.0.0"}')
    with serving_npm_registry() as registry:
        bin_ = {"bin": "index.js"}
        for name, dependency in {
            "ard-tarball": f"http://127.0.0.1:{port}/ard-dep-1.0.0.tgz",
            "ard-git": f"git+https://127.0.0.1:{port}/ard-dep.git",
            "ard-github": "someone/ard-dep",
            "ard-file": f"file:{local}",
            "ard-link": f"link:{local}",
        }.items():
            registry.publish(name, "1.0.0", {**bin_, "dependencies": {"ard-dep": dependency}})
        registry.publish("ard-relisted", "1.0.1", bin_, listed_as="1.0.0")  # the packument's 1.0.0 is a 1.0.1
        registry.publish("ard-repacked", "1.0.0", bin_, packed={"name": "ard-repacked", "version": "6.6.6", **bin_})
        registry.publish("ard-plain", "1.0.0", bin_)
        yield registry, tmp_path / "cache"


def test_npm_dependencies_from_elsewhere_are_refused(npm: tuple[NpmRegistry, Path], elsewhere: tuple[int, list[bool]]) -> None:
    registry, cache = npm
    port, reached = elsewhere
    installer = Installer(cache, Registries(npm=(registry.url,)))
    cases = {
        "ard-tarball": f"ard-dep@http://127.0.0.1:{port}/ard-dep-1.0.0.tgz is not a release on the registry {registry.url}",
        "ard-git": f"ard-dep@git+https://127.0.0.1:{port}/ard-dep.git is not a release on the registry",
        "ard-github": "ard-dep@someone/ard-dep is not a release on the registry",
        "ard-file": "node_modules/ard-dep is a link to '../../../../ard-dep', a directory on this machine; ../../../../ard-dep is a",
        "ard-link": f"link:{cache.parent}/ard-dep is not a release on the registry",
    }
    for name, reason in cases.items():
        said = _refused(installer, _spec("npm", name, "1.0.0"))
        assert said.startswith(f"npm:{name}@1.0.0: ") and reason in said, said
    assert f"refused: GET http://127.0.0.1:{port}/ard-dep-1.0.0.tgz" in _refused(installer, _spec("npm", "ard-tarball", "1.0.0"))
    assert reached == []
    assert not any(path.endswith(".tgz") and "ard-dep" in path for path in registry.asked)


def test_npm_installs_only_the_approved_version(npm: tuple[NpmRegistry, Path]) -> None:
    registry, cache = npm
    installer = Installer(cache, Registries(npm=(registry.url,)))
    assert "npm resolved version '1.0.1', not 1.0.0" in _refused(installer, _spec("npm", "ard-relisted", "1.0.0"))
    said = _refused(installer, _spec("npm", "ard-repacked", "1.0.0"))
    assert "the package npm installed says it is version '6.6.6', not 1.0.0" in said
    unpinned = Installer(cache, Registries(npm=(registry.url,)), allow_unpinned=True)
    assert "1.0.1" in _refused(unpinned, _spec("npm", "ard-relisted", "latest"))  # the tag names 1.0.0, which is a 1.0.1
    plain = anyio.run(installer.install, _spec("npm", "ard-plain", "1.0.0"))
    assert plain.integrity.startswith("sha512-") and (plain.directory / "node_modules" / "ard-plain" / "index.js").is_file()


# -- the proxy itself ------------------------------------------------------------------------------------------


class _Echo(BaseHTTPRequestHandler):
    seen: list[tuple[str, dict[str, str]]]

    def do_GET(self) -> None:
        self.seen.append((self.requestline, dict(self.headers)))
        body = b"hello from the origin"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def origin() -> Iterator[tuple[str, list[tuple[str, dict[str, str]]]]]:
    """An HTTP server on loopback (HTTP/1.1, keep-alive): its URL, and each request line and headers it got."""
    seen: list[tuple[str, dict[str, str]]] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Echo", (_Echo,), {"seen": seen, "protocol_version": "HTTP/1.1"}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


async def _connect(proxy: str, target: str) -> tuple[bytes, socket.socket]:
    """Send `CONNECT target` to the proxy; its answer's head, and the (blocking) socket for what follows."""
    host, port = egress.origin(proxy)
    sock = socket.create_connection((host, port), timeout=10)
    sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += await anyio.to_thread.run_sync(sock.recv, 4096)
    return head, sock


def test_the_proxy_tunnels_only_to_allowed_origins(origin: tuple[str, list[Any]], elsewhere: tuple[int, list[bool]]) -> None:
    url, seen = origin
    port, reached = elsewhere
    authority = url.removeprefix("http://")

    async def main() -> None:
        async with egress.proxy([url]) as out:
            head, sock = await _connect(out.url, authority)
            with sock:
                assert head.startswith(b"HTTP/1.1 200")
                sock.sendall(f"GET /inside HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n".encode())
                answer = b""
                while chunk := await anyio.to_thread.run_sync(sock.recv, 4096):  # to the end: the origin closes
                    answer += chunk
            assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"hello from the origin")
            head, sock = await _connect(out.url, f"127.0.0.1:{port}")
            sock.close()
            assert head.startswith(b"HTTP/1.1 403")
            assert out.refused == [f"CONNECT 127.0.0.1:{port}"]

    anyio.run(main)
    assert [line for line, _ in seen] == ["GET /inside HTTP/1.1"] and reached == []


def test_the_proxy_forwards_plain_http_only_to_allowed_origins(origin: tuple[str, list[Any]], elsewhere: tuple[int, list[bool]]) -> None:
    url, seen = origin
    port, reached = elsewhere

    async def main() -> None:
        async with egress.proxy([url + "/simple"]) as out, httpx.AsyncClient(proxy=out.url, trust_env=False) as client:
            answer = await client.get(f"{url}/files/x.whl?a=1", headers={"Proxy-Authorization": "Basic c2VjcmV0"})
            assert (answer.status_code, answer.text, answer.headers["connection"]) == (200, "hello from the origin", "close")
            again = await client.get(f"{url}/second")  # a new connection: the first was closed after its answer
            assert again.status_code == 200
            refused = await client.get(f"http://127.0.0.1:{port}/dep.whl")
            assert refused.status_code == 403 and "is not on a registry the operator allows" in refused.text
            assert (await client.get(f"http://localhost:{url.rsplit(':', 1)[1]}/x")).status_code == 403  # another name, another origin
            assert out.refused == [f"GET http://127.0.0.1:{port}/dep.whl", f"GET http://localhost:{url.rsplit(':', 1)[1]}/x"]

    anyio.run(main)
    assert [line for line, _ in seen] == ["GET /files/x.whl?a=1 HTTP/1.1", "GET /second HTTP/1.1"]  # origin-form
    headers = seen[0][1]
    assert headers["Connection"] == "close" and headers["Host"] == url.removeprefix("http://") and "Proxy-Authorization" not in headers
    assert reached == []


def test_the_proxy_sends_allowed_requests_on_through_the_operators_proxy(
    origin: tuple[str, list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The operator's proxy here is another `egress` that allows nothing, so what reached it shows in its record."""
    url, seen = origin
    authority = url.removeprefix("http://")

    async def main() -> None:
        async with egress.proxy([]) as operators:
            monkeypatch.setenv("HTTP_PROXY", operators.url)
            monkeypatch.setenv("HTTPS_PROXY", operators.url)
            monkeypatch.delenv("NO_PROXY", raising=False)
            monkeypatch.delenv("no_proxy", raising=False)
            async with egress.proxy([url]) as out, httpx.AsyncClient(proxy=out.url, trust_env=False) as client:
                assert (await client.get(f"{url}/via")).status_code == 403  # the operator's proxy answered
                head, sock = await _connect(out.url, authority)
                sock.close()
                assert head.startswith(b"HTTP/1.1 502")
            assert out.refused == []
            assert operators.refused == [f"GET {url}/via", f"CONNECT {authority}"]
            monkeypatch.setenv("NO_PROXY", "127.0.0.1")
            async with egress.proxy([url]) as out, httpx.AsyncClient(proxy=out.url, trust_env=False) as client:
                assert (await client.get(f"{url}/direct")).status_code == 200
            assert len(operators.refused) == 2

    anyio.run(main)
    assert [line for line, _ in seen] == ["GET /direct HTTP/1.1"]
