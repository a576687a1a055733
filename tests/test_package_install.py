"""The package room's reading and installing: specs read from the MCP registry seed and from a current
server.json, real installs of `mcp-server-time` (PyPI) and `@modelcontextprotocol/server-memory` (npm) started
with the MCP SDK's stdio client, the cache reused, and each refusal; a PyPI simple index on loopback serves
wheels written here, so the PyPI paths (entry points, unpinned versions, no wheel, locks) run without PyPI."""

from __future__ import annotations

import base64
import collections
import hashlib
import io
import json
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters

from ard_mcp.errors import InvalidArgument
from ard_mcp.packages.inputs import FILE, FOLDER
from ard_mcp.packages.install import Installed, Installer, InstallRefused, Registries
from ard_mcp.packages.specs import EnvVar, PackageSpec, Unusable, package_of, parse_key
from tests.certificates import self_signed
from tests.conftest import NO_SHARED_DATA, SHARED_DATA
from tests.package_support import serving_index, wheel

pytestmark = pytest.mark.slow

SEED = SHARED_DATA / "mcp-registry-seed" / "catalog.json"
TIME = PackageSpec("pypi", "mcp-server-time", "2026.10.19", None, (), (), ())
MEMORY = PackageSpec("npm", "@modelcontextprotocol/server-memory", "2026.8.31", None, (), (), ())


def _spec(registry: str, name: str, version: str | None, **changes: Any) -> PackageSpec:
    return PackageSpec(registry, name, version, changes.get("base"), changes.get("runtime", ()), changes.get("args", ()), ())


# -- reading specs ---------------------------------------------------------------------------------------------


def _seed_entries() -> list[dict[str, Any]]:
    if not SEED.is_file():
        pytest.skip(NO_SHARED_DATA)
    entries: list[dict[str, Any]] = json.loads(SEED.read_text(encoding="utf-8"))["entries"]
    return entries


def _seed(name: str) -> dict[str, Any]:
    return next(e for e in _seed_entries() if e["data"]["name"] == name)


def test_the_seed_catalog_gives_a_spec_or_a_reason_for_each_server() -> None:
    specs = [package_of(e) for e in _seed_entries()]
    kinds = collections.Counter(s.kind if isinstance(s, Unusable) else f"usable {s.registry}" for s in specs)
    print(f"\nMCP registry seed, {len(specs)} servers:", dict(sorted(kinds.items())))
    assert kinds == {
        "usable unknown": 182,
        "usable npm": 61,
        "usable pypi": 21,
        "needs-input": 72,
        "name": 77,
        "launcher": 25,
        "container": 26,
        "no-package": 7,
    }
    assert all(isinstance(s, Unusable) and s.reason for s in specs if not isinstance(s, PackageSpec))


def test_seed_records_read_exactly() -> None:
    magic = package_of(_seed("io.github.21st-dev/magic-mcp"))
    assert magic == PackageSpec("npm", "@21st-dev/magic", "0.0.46", None, (), (), (EnvVar("API_KEY", True, True, None, None),))
    assert magic.key() == "npm:@21st-dev/magic@0.0.46"

    adfin = package_of(_seed("io.github.adfin-engineering/mcp-server-adfin"))  # a checkout's own script: another program
    assert isinstance(adfin, Unusable) and adfin.kind == "needs-input"
    assert "'--directory <absolute_path_to_adfin_mcp_folder>'" in adfin.reason and "adfinmcp" in adfin.reason
    clickhouse = package_of(_seed("io.github.clickhouse/mcp-clickhouse"))  # `uvx --with mcp-clickhouse --python 3.13 mcp-clickhouse`
    assert isinstance(clickhouse, Unusable) and clickhouse.kind == "launcher" and "'--with mcp-clickhouse'" in clickhouse.reason
    # a launcher that runs the package itself (`uv --directory <checkout> run kagimcp`, `uvx blender-mcp`): left out
    kagi = package_of(_seed("io.github.kagisearch/kagimcp"))
    assert isinstance(kagi, PackageSpec) and kagi.key() == "pypi:kagimcp@0.1.3" and kagi.package_arguments == ()
    ramp = package_of(_seed("io.github.ramp-public/ramp-mcp"))  # the server's own arguments after it are kept
    assert isinstance(ramp, PackageSpec) and ramp.package_arguments == ("-s", "transactions:read,reimbursements:read")
    bitrise = package_of(_seed("io.github.bitrise-io/bitrise-mcp"))  # `uvx --from git+https://...`: another package than the registry's
    assert isinstance(bitrise, Unusable) and bitrise.kind == "launcher" and "git source" in bitrise.reason
    axiom = package_of(_seed("io.github.axiomhq/mcp-server-axiom"))
    assert isinstance(axiom, Unusable) and axiom.kind == "name"
    assert [s.kind for s in map(package_of, _seed_entries()) if isinstance(s, Unusable) and "container image" in s.reason] == [
        "container"
    ] * 26

    airbnb = package_of(_seed("io.github.openbnb-org/mcp-server-airbnb"))  # a seed flag written whole, name and value alike
    assert isinstance(airbnb, PackageSpec) and airbnb.package_arguments == ("--ignore-robots-txt",)
    llama = package_of(_seed("io.github.run-llama/mcp-server-llamacloud"))
    assert isinstance(llama, PackageSpec) and llama.package_arguments[:4] == (
        "--index",
        "10k-SEC-Tesla",
        "--description",
        "10k SEC documents from 2023 for Tesla",
    )


CURRENT: dict[str, Any] = {
    "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
    "name": "io.github.example/files",
    "description": "Files",
    "version": "1.0.0",
    "packages": [
        {"registryType": "oci", "identifier": "docker.io/example/files:1.0.0", "transport": {"type": "stdio"}},
        {"registryType": "nuget", "identifier": "Example.Files", "version": "1.0.0", "transport": {"type": "stdio"}},
        {
            "registryType": "npm",
            "identifier": "example-files",
            "version": "1.0.0",
            "transport": {"type": "streamable-http", "url": "http://localhost:8080/mcp"},
        },
        {
            "registryType": "npm",
            "registryBaseUrl": "https://registry.npmjs.org",
            "identifier": "@example/files",
            "version": "v1.2.3",
            "transport": {"type": "stdio"},
            "runtimeHint": "node",
            "runtimeArguments": [{"type": "named", "name": "--max-old-space-size", "value": "256"}],
            "packageArguments": [
                {"type": "named", "name": "--port", "value": "8080"},
                {"type": "positional", "valueHint": "mode", "value": "serve"},
                {"type": "named", "name": "--stdio"},
                {"type": "named", "name": "--level", "default": "info"},
                {"type": "named", "name": "--mount", "value": "src={source},dst=/data", "variables": {"source": {"default": "/srv"}}},
                {"type": "positional", "valueHint": "target_dir"},
                {"type": "named", "name": "--token", "value": "{token}", "variables": {"token": {"isSecret": True}}},
            ],
            "environmentVariables": [
                {"name": "FILES_API_KEY", "isRequired": True, "description": "the key"},
                {"name": "GITHUB_TOKEN", "description": "optional token"},
                {"name": "DB_PASSWORD", "isSecret": False, "default": "x"},
                {"name": "FILES_ROOT", "isSecret": True, "isRequired": True, "default": "/srv"},
                {"name": "LOG_LEVEL", "value": "debug"},
                {"name": "TENANT", "value": "{tenant}", "variables": {"tenant": {"isRequired": True}}},
            ],
        },
    ],
}


def test_a_current_server_json_gives_every_argument_kind() -> None:
    spec = package_of({"data": CURRENT})
    assert isinstance(spec, PackageSpec)
    assert (spec.registry, spec.name, spec.version, spec.registry_base_url) == (
        "npm",
        "@example/files",
        "1.2.3",
        "https://registry.npmjs.org",
    )
    assert spec.key() == "npm:@example/files@1.2.3"
    assert spec.runtime_arguments == ("--max-old-space-size", "256")
    # the optional positional without a value and the optional --token whose {token} has no value are left out
    assert spec.package_arguments == ("--port", "8080", "serve", "--stdio", "--level", "info", "--mount", "src=/srv,dst=/data")
    assert spec.environment == (
        EnvVar("FILES_API_KEY", True, True, "the key", None),
        EnvVar("GITHUB_TOKEN", False, True, "optional token", None),
        EnvVar("DB_PASSWORD", False, True, None, "x"),
        EnvVar("FILES_ROOT", True, True, None, "/srv"),
        EnvVar("LOG_LEVEL", False, False, None, "debug"),
        EnvVar("TENANT", True, False, None, None),
    )


def _unusable(package: dict[str, Any]) -> Unusable:
    found = package_of({"data": {"name": "io.github.example/x", "packages": [{"transport": {"type": "stdio"}, **package}]}})
    assert isinstance(found, Unusable)
    return found


def test_what_makes_a_package_unusable_is_named() -> None:
    npm = {"registryType": "npm", "identifier": "x-server", "version": "1.0.0"}
    required = _unusable({**npm, "packageArguments": [{"type": "positional", "valueHint": "team_id", "isRequired": True}]})
    assert required.kind == "needs-input" and "'team_id'" in required.reason
    needs = _unusable({**npm, "packageArguments": [{"type": "named", "name": "--team", "value": "${input:teamId}", "isRequired": True}]})
    assert needs.kind == "needs-input" and "'--team ${input:teamId}'" in needs.reason
    # a path of the person's is a slot the person fills when asked (`grants`), a file where the words say so
    slots = [
        ({"type": "positional", "valueHint": "target_dir", "isRequired": True}, (FOLDER,)),
        ({"type": "named", "name": "--vault", "value": "${input:vaultPath}", "isRequired": True}, ("--vault", FOLDER)),
        (
            {"type": "named", "name": "--db", "description": "The SQLite database file", "isRequired": True, "format": "filepath"},
            ("--db", FILE),
        ),
    ]
    for argument, items in slots:
        found = package_of({"data": {"packages": [{**npm, "packageArguments": [argument]}]}})
        assert isinstance(found, PackageSpec) and found.package_arguments == items, found
    launcher = _unusable(
        {**npm, "runtimeHint": "npx", "runtimeArguments": [{"type": "named", "name": "-y"}, {"type": "named", "name": "--package=other"}]}
    )
    assert launcher.kind == "launcher" and "'--package=other'" in launcher.reason and "npx" in launcher.reason
    assert _unusable({**npm, "transport": {"type": "sse", "url": "http://localhost/sse"}}).kind == "transport"
    assert _unusable({"registryType": "mcpb", "identifier": "https://example.com/x.mcpb"}).kind == "registry"
    assert _unusable({"registryType": "pypi", "identifier": "../../etc", "version": "1"}).kind == "name"
    assert package_of({"data": {"name": "io.github.example/x", "remotes": [{"type": "sse", "url": "https://x.example/sse"}]}}) == Unusable(
        "the server description lists no packages (it lists remote endpoints: it runs elsewhere)", "no-package"
    )
    npx_yes = package_of({"data": {"packages": [{**npm, "runtimeHint": "npx", "runtimeArguments": [{"type": "named", "name": "-y"}]}]}})
    assert isinstance(npx_yes, PackageSpec) and npx_yes.runtime_arguments == ()


def test_keys_read_back() -> None:
    assert parse_key("npm:@scope/name@1.2.3") == ("npm", "@scope/name", "1.2.3")
    assert parse_key("npm:@scope/name") == ("npm", "@scope/name", None)
    assert parse_key("pypi:MCP_Server.Time@v2026.10.19") == ("pypi", "mcp-server-time", "2026.10.19")
    assert parse_key(TIME.key()) == ("pypi", "mcp-server-time", "2026.10.19")
    for bad in ("mcp-server-time@1", "docker:x@1", "npm:../x@1", "pypi:x@"):
        with pytest.raises(InvalidArgument, match="package"):
            parse_key(bad)


# -- a PyPI index on loopback ------------------------------------------------------------------------------------


def _sdist(directory: Path, name: str, version: str) -> Path:
    path = directory / f"{name.replace('-', '_')}-{version}.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        data = f"from setuptools import setup\nsetup(name={name!r}, version={version!r})\n".encode()
        member = tarfile.TarInfo(f"{name}-{version}/setup.py")
        member.size = len(data)
        archive.addfile(member, io.BytesIO(data))
    return path


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[str], Path]]:
    """(simple index URL, paths asked of it, the files it serves)."""
    files = tmp_path_factory.mktemp("index")
    both = {"ard-probe-server": "ard_probe_server:main", "ard-probe-helper": "ard_probe_server:helper"}
    for version in ("1.0.0", "1.1.0"):
        wheel(files, "ard-probe-server", version, both)
    wheel(files, "ard-probe-pair", "1.0.0", {"pair-one": "ard_probe_pair:main", "pair-two": "ard_probe_pair:helper"})
    wheel(files, "ard-probe-solo", "1.0.0", {"solo-run": "ard_probe_solo:main"})
    wheel(files, "ard-probe-future", "1.0.0", {"ard-probe-future": "ard_probe_future:main"}, python=">=3.99")
    _sdist(files, "ard-probe-sdist", "1.0.0")
    asked: list[str] = []
    with serving_index(files, asked) as url:
        yield url, asked, files


def _run(installed: Installed) -> dict[str, Any]:
    out = subprocess.run(installed.command, capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def test_a_wheel_from_a_loopback_index_installs_and_runs_its_own_entry_point(index: tuple[str, list[str], Path], tmp_path: Path) -> None:
    url, asked, files = index
    # the record's registryBaseUrl is honoured because the operator allows it, beside PyPI (listed first)
    installer = Installer(tmp_path / "cache", Registries(pypi=("https://pypi.org/simple", url + "/")))
    spec = _spec("pypi", "ard-probe-server", "1.0.0", base=url, runtime=("-X", "utf8"), args=("--greeting", "hi there"))
    installed = anyio.run(installer.install, spec)
    assert installed.directory == tmp_path / "cache" / "pypi" / "ard-probe-server" / "1.0.0"
    assert installed.integrity == f"sha256={hashlib.sha256((files / 'ard_probe_server-1.0.0-py3-none-any.whl').read_bytes()).hexdigest()}"
    assert installed.runtime_dirs == (Path(sys.base_prefix),) and installed.resolved_from is None
    assert installed.command[0].startswith(sys.base_prefix) and not installed.command[0].startswith(sys.prefix + "/")
    assert json.loads((installed.directory / "installed.json").read_text())["from"] == url
    assert "/simple/ard-probe-server/" in asked
    ran = _run(installed)
    assert ran["argv"] == ["ard-probe-server", "--greeting", "hi there"]  # the script of the package's own name, not the helper
    assert Path(ran["file"]).is_relative_to(installed.directory)
    assert (ran["isolated"], ran["no_site"], ran["utf8"]) == (1, 1, 1)
    assert not any("site-packages" in p for p in ran["path"])  # neither the venv's nor the base interpreter's

    solo = anyio.run(Installer(tmp_path / "cache", Registries(pypi=(url,))).install, _spec("pypi", "ard-probe-solo", "1.0.0"))
    assert _run(solo)["argv"] == ["solo-run"]  # its only console script, whatever it is named


def test_loopback_index_refusals(index: tuple[str, list[str], Path], tmp_path: Path) -> None:
    url, _, _ = index
    installer = Installer(tmp_path / "cache", Registries(pypi=(url,)))
    cases = {
        _spec("pypi", "ard-probe-sdist", "1.0.0"): "no wheel, only a source distribution",
        _spec("pypi", "ard-probe-absent", "1.0.0"): f"no package ard-probe-absent on {url}",
        _spec("pypi", "ard-probe-future", "1.0.0"): "it needs Python >=3.99; this machine has 3.",
        _spec("pypi", "ard-probe-server", "9.9.9"): "has no version 9.9.9",
        _spec("pypi", "ard-probe-pair", "1.0.0"): "no console script is named ard-probe-pair, and it has pair-one, pair-two",
        _spec("pypi", "ard-probe-server", None): "version (none) does not pin one release",
        _spec("pypi", "ard-probe-server", "latest"): "version latest does not pin one release",
        _spec("pypi", "ard-probe-server", ">=1.0"): "version >=1.0 does not pin one release",
        _spec(
            "pypi", "ard-probe-server", "1.0.0", base="http://127.0.0.1:9/simple"
        ): "registryBaseUrl http://127.0.0.1:9/simple is not among",
    }
    for spec, reason in cases.items():
        with pytest.raises(InstallRefused) as refused:
            anyio.run(installer.install, spec)
        assert str(refused.value).startswith(spec.key()) and reason in str(refused.value)
    assert not (tmp_path / "cache" / "pypi" / "ard-probe-pair" / "1.0.0").exists()  # a refused install leaves no directory
    with pytest.raises(InstallRefused, match="the operator allows no pypi registry"):
        anyio.run(Installer(tmp_path / "cache", Registries(pypi=())).install, _spec("pypi", "ard-probe-server", "1.0.0"))
    with pytest.raises(InstallRefused, match=r"pip install did not finish within 0\.05 s"):
        anyio.run(Installer(tmp_path / "cache", Registries(pypi=(url,)), timeout=0.05).install, _spec("pypi", "ard-probe-server", "1.0.0"))
    assert not (tmp_path / "cache" / "pypi" / "ard-probe-server" / "1.0.0").exists()


def test_an_index_whose_certificate_cannot_be_verified_is_named(index: tuple[str, list[str], Path], tmp_path: Path) -> None:
    """What pip 23 said behind a TLS-inspecting proxy, "no wheel fits this platform", was a certificate (issue #54)."""
    _, _, files = index
    with serving_index(files, tls=self_signed(tmp_path, "localhost")) as url, pytest.raises(InstallRefused) as refused:
        anyio.run(Installer(tmp_path / "cache", Registries(pypi=(url,))).install, _spec("pypi", "ard-probe-server", "1.0.0"))
    assert f"the TLS certificate of {url} could not be verified" in str(refused.value) and "SSL_CERT_FILE" in str(refused.value)


def test_unpinned_versions_resolve_to_the_newest_when_allowed(index: tuple[str, list[str], Path], tmp_path: Path) -> None:
    url, _, _ = index
    installer = Installer(tmp_path / "cache", Registries(pypi=(url,)), allow_unpinned=True)
    newest = anyio.run(installer.install, _spec("pypi", "ard-probe-server", None))
    assert newest.spec.key() == "pypi:ard-probe-server@1.1.0" and newest.directory.name == "1.1.0"
    ranged = anyio.run(installer.install, _spec("pypi", "ard-probe-server", ">=1.0,<1.1"))
    assert ranged.spec.version == "1.0.0"


def test_a_half_done_install_is_redone_and_concurrent_installs_run_pip_once(index: tuple[str, list[str], Path], tmp_path: Path) -> None:
    url, asked, _ = index
    installer = Installer(tmp_path / "cache", Registries(pypi=(url,)))
    spec = _spec("pypi", "ard-probe-server", "1.1.0")
    half = tmp_path / "cache" / "pypi" / "ard-probe-server" / "1.1.0"
    half.mkdir(parents=True)
    (half / "left-by-a-crash").write_text("x")
    before = len([path for path in asked if path.startswith("/files/ard_probe_server-")])
    results: list[Installed] = []

    async def both() -> None:
        async def one() -> None:
            results.append(await installer.install(spec))

        async with anyio.create_task_group() as group:
            group.start_soon(one)
            group.start_soon(one)

    anyio.run(both)
    assert results[0] == results[1]
    downloads = len([path for path in asked if path.startswith("/files/ard_probe_server-")])
    assert downloads == before + 1  # one pip run: the other waited, then reused it
    assert not (half / "left-by-a-crash").exists() and (half / "installed.json").is_file()


# -- an npm registry on loopback --------------------------------------------------------------------------------

NPM_PROBE = "console.log(JSON.stringify({argv: process.argv.slice(2), execArgv: process.execArgv, file: __filename}))\n"


def _tarball(manifest: dict[str, Any]) -> bytes:
    """An npm package tarball: package/package.json and the scripts it names, as `npm pack` lays them out."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for name, text in {"package.json": json.dumps(manifest), "index.js": NPM_PROBE, "other.js": NPM_PROBE}.items():
            member = tarfile.TarInfo(f"package/{name}")
            member.size = len(text.encode())
            archive.addfile(member, io.BytesIO(text.encode()))
    return out.getvalue()


class _NpmRegistry(BaseHTTPRequestHandler):
    documents: dict[str, bytes]  # path -> body: packuments and tarballs

    def do_GET(self) -> None:
        body = self.documents.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", "application/json" if not self.path.endswith(".tgz") else "application/octet-stream")
        self.send_header("Content-Length", str(len(body or b"{}")))
        self.end_headers()
        self.wfile.write(body or b"{}")

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _publish(documents: dict[str, bytes], tarballs_at: str, name: str, manifest: dict[str, Any]) -> None:
    tarball = _tarball({"name": name, "version": "1.0.0", **manifest})
    path = f"/{name}/-/{name}-1.0.0.tgz"
    documents[path] = tarball
    dist = {
        "tarball": tarballs_at + path,
        "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tarball).digest()).decode(),
        "shasum": hashlib.sha1(tarball).hexdigest(),
    }
    version = {"name": name, "version": "1.0.0", **manifest, "dist": dist}
    documents[f"/{name}"] = json.dumps({"name": name, "dist-tags": {"latest": "1.0.0"}, "versions": {"1.0.0": version}}).encode()


@pytest.fixture(scope="module")
def npm_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """(registry URL, the file an install script of its packages would write)."""
    ran = tmp_path_factory.mktemp("npm-registry") / "an-install-script-ran"
    script = f"node -e \"require('fs').writeFileSync('{ran}', 'ran')\""
    documents: dict[str, bytes] = {}
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Registry", (_NpmRegistry,), {"documents": documents}))
    url = f"http://127.0.0.1:{server.server_address[1]}"
    bins = {"ard-probe-other": "other.js", "ard-probe-npm": "index.js"}
    scripts = {"preinstall": script, "install": script, "postinstall": script, "prepare": script}
    _publish(documents, url, "ard-probe-npm", {"bin": bins, "scripts": scripts, "hasInstallScript": True})
    _publish(documents, url, "ard-probe-elsewhere", {"bin": "index.js", "dependencies": {"ard-probe-dep": "1.0.0"}})
    _publish(documents, f"http://localhost:{server.server_address[1]}", "ard-probe-dep", {})  # its tarball on another host
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield url, ran
    server.shutdown()
    server.server_close()


def test_an_npm_package_installs_without_running_its_install_scripts(npm_registry: tuple[str, Path], tmp_path: Path) -> None:
    url, ran = npm_registry
    installer = Installer(tmp_path / "cache", Registries(npm=(url,)))
    installed = anyio.run(
        installer.install, _spec("npm", "ard-probe-npm", "1.0.0", runtime=("--no-warnings",), args=("--greeting", "hi there"))
    )
    assert not ran.exists()  # preinstall, install, postinstall and prepare would each have written it
    assert installed.integrity.startswith("sha512-")
    out = subprocess.run(installed.command, capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    printed = json.loads(out.stdout)
    assert printed["argv"] == ["--greeting", "hi there"] and printed["execArgv"] == ["--no-warnings"]
    assert printed["file"] == str(installed.directory / "node_modules" / "ard-probe-npm" / "index.js")  # the bin of its own name
    with pytest.raises(
        InstallRefused, match=r"node_modules/ard-probe-dep came from 'http://localhost:\d+/ard-probe-dep/-/ard-probe-dep-1\.0\.0\.tgz'"
    ):
        anyio.run(installer.install, _spec("npm", "ard-probe-elsewhere", "1.0.0"))
    assert not (tmp_path / "cache" / "npm" / "ard-probe-elsewhere" / "1.0.0").exists()


# -- the public registries ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def public(tmp_path_factory: pytest.TempPathFactory) -> tuple[Installer, Installed, Installed]:
    """mcp-server-time and server-memory installed once for the module (printing how long each took)."""
    installer = Installer(tmp_path_factory.mktemp("packages"))
    found = []
    for spec in (TIME, MEMORY):
        started = time.monotonic()
        found.append(anyio.run(installer.install, spec))
        print(f"\ninstalled {spec.key()} in {time.monotonic() - started:.1f} s")
    return installer, found[0], found[1]


async def _tools(installed: Installed, home: Path) -> set[str]:
    command, *args = installed.command
    server = StdioServerParameters(command=command, args=args, env={"PATH": "/usr/bin:/bin", "HOME": str(home)})
    async with Client(server) as client:
        return {tool.name for tool in (await client.list_tools()).tools}


def test_mcp_server_time_from_pypi_answers_over_stdio(public: tuple[Installer, Installed, Installed], tmp_path: Path) -> None:
    _, time_server, _ = public
    assert time_server.spec == TIME and time_server.directory.parts[-3:] == ("pypi", "mcp-server-time", "2026.10.19")
    assert "get_current_time" in anyio.run(_tools, time_server, tmp_path)
    listed = httpx.get("https://pypi.org/simple/mcp-server-time/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}, timeout=30)
    wheel = next(f for f in listed.json()["files"] if f["filename"] == "mcp_server_time-2026.10.19-py3-none-any.whl")
    assert time_server.integrity == f"sha256={wheel['hashes']['sha256']}"


def test_server_memory_from_npm_answers_over_stdio(public: tuple[Installer, Installed, Installed], tmp_path: Path) -> None:
    _, _, memory = public
    assert memory.directory.parts[-3:] == ("npm", "@modelcontextprotocol+server-memory", "2026.8.31")
    assert memory.command[0] == str(Path("/usr/bin/node").resolve()) and memory.runtime_dirs == (Path("/usr"),)
    assert "create_entities" in anyio.run(_tools, memory, tmp_path)
    url = "https://registry.npmjs.org/@modelcontextprotocol%2fserver-memory/2026.8.31"
    assert memory.integrity == httpx.get(url, timeout=30).json()["dist"]["integrity"]


def test_a_second_install_reuses_the_cache(public: tuple[Installer, Installed, Installed]) -> None:
    installer, time_server, memory = public
    for installed in (time_server, memory):
        (installed.directory / "still-here").write_text("a reinstall would remove this")
        started = time.monotonic()
        again = anyio.run(installer.install, installed.spec)
        assert time.monotonic() - started < 0.5 and again == installed
        assert (installed.directory / "still-here").is_file()


def test_public_refusals(tmp_path: Path) -> None:
    installer = Installer(tmp_path)
    cases = {
        _spec("npm", "@modelcontextprotocol/server-memory", "^2026.1.0"): "does not pin one release",
        _spec("npm", "@modelcontextprotocol/server-memory", "latest"): "does not pin one release",
        _spec("npm", "@modelcontextprotocol/server-memory", "2026.8.31", base="https://npm.example.com"): "is not among the npm registries",
        _spec("npm", "ard-mcp-no-such-package-zz9", "1.0.0"): "no package ard-mcp-no-such-package-zz9 on https://registry.npmjs.org",
        _spec("unknown", "ard-mcp-no-such-package-zz9", "1.0.0"): "neither npm nor PyPI has ard-mcp-no-such-package-zz9",
        _spec("unknown", "mcp-server-fetch", "2025.4.7"): "both npm and PyPI have a package mcp-server-fetch",
    }
    for spec, reason in cases.items():
        with pytest.raises(InstallRefused) as refused:
            anyio.run(installer.install, spec)
        assert reason in str(refused.value)
    with pytest.raises(InstallRefused, match="the operator allows no npm registry"):
        anyio.run(Installer(tmp_path, Registries(npm=())).install, MEMORY)
    assert Registries().url_for(_spec("pypi", "x", "1", base="https://pypi.org")) == "https://pypi.org/simple"
    assert list(tmp_path.glob("*/*/*/installed.json")) == []


def test_the_unknown_registry_is_resolved_where_one_registry_has_the_name(tmp_path: Path) -> None:
    installer = Installer(tmp_path)
    scoped = anyio.run(installer.resolve, _spec("unknown", "@modelcontextprotocol/server-memory", "2026.8.31"))
    assert scoped == MEMORY  # PyPI cannot hold an @scope/ name, so npm alone is asked
    figma = anyio.run(installer.resolve, _spec("unknown", "figma-developer-mcp", "0.2.2"))
    assert (figma.registry, figma.name) == ("npm", "figma-developer-mcp")
    memory = anyio.run(
        Installer(tmp_path, allow_unpinned=True).install, _spec("unknown", "@modelcontextprotocol/server-memory", ">=2026.7.0 <2026.8.0")
    )
    assert memory.spec.key() == "npm:@modelcontextprotocol/server-memory@2026.7.4"
    assert memory.resolved_from is not None and memory.resolved_from.startswith("found on npm only (https://registry.npmjs.org")
