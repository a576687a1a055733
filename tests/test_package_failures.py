"""Each way a package install fails says its cause in words (issue #54), with real pip and npm against a PyPI
index and an npm registry on loopback: a dependency with no release on or before the package's release date
(then resolved as of today, and said so), a dependency not on the index, without a wheel, without one for this
platform or Python, or whose range matches nothing; a pinned version deleted from the registry, with the
nearest newer release to run instead; and an npm package whose optional dependencies for other platforms
were never published (`npm ci` refused its lockfile), which installs, its words kept when npm fails."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest
from mcp import Client, StdioServerParameters

from ard_mcp.packages import npm
from ard_mcp.packages.install import Installer, InstallRefused, Registries, VersionGone
from ard_mcp.packages.specs import PackageSpec
from tests.package_support import PROBE, Index, NpmRegistry, serving_index, serving_npm_registry, wheel
from tests.processes import quiet_env
from tests.test_package_hostile import SERVER_SOURCE, WHY_NOT

pytestmark = pytest.mark.slow

DIES = """import sys
def main():
    print("the server needs a program it cannot find", file=sys.stderr)
    return 3
"""
RELEASED = "2025-03-22T10:00:00Z"  # when ard-probe-dated 1.0.0 was uploaded: its dependencies are resolved as of then


def _spec(registry: str, name: str, version: str) -> PackageSpec:
    return PackageSpec(registry, name, version, None, (), (), ())


def _refused(installer: Installer, spec: PackageSpec) -> InstallRefused:
    with pytest.raises(InstallRefused) as refused:
        anyio.run(installer.install, spec)
    assert str(refused.value).startswith(spec.key() + ": ")
    return refused.value


# -- a PEP 691 index that says when each file was uploaded ---------------------------------------------------------


class _JsonIndex(Index):
    files: Path
    listed: dict[str, dict[str, Any]]  # file name -> what the index says of it besides its name and hash

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        parts = self.path.strip("/").split("/")
        if parts[0] == "simple" and len(parts) == 2:
            found = [f for f in sorted(self.files.iterdir()) if f.name in self.listed and self.listed[f.name]["project"] == parts[1]]
            if not found:
                return self._send(404, b"no such project", "text/plain")
            page = {
                "meta": {"api-version": "1.1"},
                "name": parts[1],
                "files": [
                    {
                        "filename": f.name,
                        "url": f"/files/{f.name}",
                        "hashes": {"sha256": hashlib.sha256(f.read_bytes()).hexdigest()},
                        **{k: v for k, v in self.listed[f.name].items() if k != "project"},
                    }
                    for f in found
                ],
            }
            return self._send(200, json.dumps(page).encode(), "application/vnd.pypi.simple.v1+json")
        if parts[0] == "files" and len(parts) == 2 and (self.files / parts[1]).is_file():
            return self._send(200, (self.files / parts[1]).read_bytes(), "application/octet-stream")
        return self._send(404, b"not found", "text/plain")


def _add(files: Path, listed: dict[str, dict[str, Any]], name: str, version: str, uploaded: str, **given: Any) -> None:
    """A wheel of `name` (its requirements `requires`), listed as uploaded at `uploaded`, with a file name of the
    `tag` given (another platform's) and the index's `requires-python` where given."""
    module = given.get("module", PROBE)
    made = wheel(files, name, version, {name: f"{name.replace('-', '_')}:main"}, module=module, requires=given.get("requires", ()))
    if "tag" in given:
        made = made.rename(made.with_name(made.name.replace("py3-none-any", given["tag"])))
    listed[made.name] = {"project": name, "upload-time": uploaded, **({"requires-python": given["python"]} if "python" in given else {})}


@pytest.fixture(scope="module")
def dated_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    files = tmp_path_factory.mktemp("dated-index")
    listed: dict[str, dict[str, Any]] = {}
    _add(files, listed, "ard-probe-dated", "1.0.0", RELEASED, requires=["ard-probe-later>=2.0.0"])
    _add(files, listed, "ard-probe-steady", "1.0.0", RELEASED, requires=["ard-probe-later"])
    _add(files, listed, "ard-probe-dated-server", "1.0.0", RELEASED, requires=["ard-probe-later>=2.0.0"], module=SERVER_SOURCE.read_text())
    _add(files, listed, "ard-probe-dies", "1.0.0", RELEASED, module=DIES)
    _add(files, listed, "ard-probe-later", "1.0.0", "2025-01-01T00:00:00Z")
    _add(files, listed, "ard-probe-later", "2.0.0", "2025-08-02T12:00:00Z")
    _add(files, listed, "ard-probe-later", "2.1.0", "2025-09-01T12:00:00Z")
    _add(files, listed, "ard-probe-twice", "1.0.0", RELEASED, requires=["ard-probe-later>=2.0.0", "ard-probe-after>=3"])
    _add(files, listed, "ard-probe-after", "3.0.0", "2025-08-20T12:00:00Z")
    _add(files, listed, "ard-probe-after", "3.1.0", "2025-10-01T12:00:00Z")
    for dependency in ("ard-probe-nowhere>=1", "ard-probe-sourceonly", "ard-probe-windows", "ard-probe-py399", "ard-probe-later>=9"):
        needing = f"ard-probe-needs-{dependency.partition('>')[0].removeprefix('ard-probe-')}"
        _add(files, listed, needing, "1.0.0", RELEASED, requires=[dependency])
    sdist = files / "ard_probe_sourceonly-1.0.0.tar.gz"
    sdist.write_bytes(b"not built here")
    listed[sdist.name] = {"project": "ard-probe-sourceonly", "upload-time": "2025-01-01T00:00:00Z"}
    _add(files, listed, "ard-probe-windows", "1.0.0", "2025-01-01T00:00:00Z", tag="cp311-cp311-win_amd64")
    _add(files, listed, "ard-probe-py399", "1.0.0", "2025-01-01T00:00:00Z", python=">=3.99")
    for version in ("1.0.0", "1.2.0", "1.10.0", "2.0.0rc1"):
        _add(files, listed, "ard-probe-gone", version, "2025-01-01T00:00:00Z")
    with serving_index(files, shape=_JsonIndex, listed=listed) as url:
        yield url


def test_a_dependency_with_no_release_by_the_release_date_moves_the_date_and_is_named(dated_index: str, tmp_path: Path) -> None:
    """mcp-rquest 0.1.13 (2025-03-22) needs rnet>=2.0.0, first released 2025-08-02: it was "no wheel fits". As of
    today it got mcp 2.3 and crashed; as of 2025-08-02 it gets what it can be resolved with nearest its date."""
    installer = Installer(tmp_path / "cache", Registries(pypi=(dated_index,)))
    steady = anyio.run(installer.install, _spec("pypi", "ard-probe-steady", "1.0.0"))
    assert steady.note is None  # resolved as of its date: the ard-probe-later of then, not today's
    assert _versions(steady.directory) == {"ard-probe-steady": "1.0.0", "ard-probe-later": "1.0.0"}

    dated = anyio.run(installer.install, _spec("pypi", "ard-probe-dated", "1.0.0"))
    assert dated.note == (
        "its dependencies were resolved as of 2025-08-02, not of its release: its dependency ard-probe-later>=2.0.0 has no release "
        "on or before 2025-03-22 (the release date of ard-probe-dated 1.0.0, which dependencies are resolved as of); its first is "
        "2.0.0 of 2025-08-02"
    )
    assert _versions(dated.directory) == {"ard-probe-dated": "1.0.0", "ard-probe-later": "2.0.0"}  # not 2.1.0, of today
    assert json.loads((dated.directory / "installed.json").read_text())["note"] == dated.note
    assert anyio.run(installer.install, _spec("pypi", "ard-probe-dated", "1.0.0")).note == dated.note  # read back when reused

    twice = anyio.run(installer.install, _spec("pypi", "ard-probe-twice", "1.0.0"))
    assert twice.note is not None and twice.note.startswith("its dependencies were resolved as of 2025-08-20, not of its release: ")
    assert (
        "its dependency ard-probe-after>=3 has no release on or before" in twice.note and "its first is 3.0.0 of 2025-08-20" in twice.note
    )
    assert "(the date they were moved to, which dependencies are resolved as of)" in twice.note
    assert _versions(twice.directory) == {"ard-probe-twice": "1.0.0", "ard-probe-later": "2.0.0", "ard-probe-after": "3.0.0"}


def _versions(directory: Path) -> dict[str, str]:
    """What pip installed into `directory`: name and version of each dist-info."""
    found = (p.name.removesuffix(".dist-info").rpartition("-") for p in (directory / "lib").glob("*.dist-info"))
    return {name.replace("_", "-"): version for name, _, version in found}


def _called_through_serve(index: str, data: Path, package: str) -> Any:
    """`call_agent` of the `probe` tool of an entry running `package` (1.0.0, from `index`), through a real `ard-mcp
    serve` over stdio whose host says yes to its question."""
    entry = {
        "identifier": f"urn:air:probes.example:mcp:{package}",
        "displayName": package,
        "type": "application/mcp-server-card+json",
        "description": "A package server of the tests.",
        "data": {
            "name": f"example.probes/{package}",
            "description": "Answers probes.",
            "version": "1.0.0",
            "packages": [{"registryType": "pypi", "identifier": package, "version": "1.0.0", "transport": {"type": "stdio"}}],
        },
    }
    args = ["-m", "ard_mcp", "serve", "--data-dir", str(data), "--package-registry", f"pypi={index}", "--no-public-package-registries"]

    async def yes(context: Any, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult:
        return mcp_types.ElicitResult(action="accept", content={"network": False, "path": "", "writable": False})

    async def called() -> Any:
        async with Client(StdioServerParameters(command=sys.executable, args=args, env=quiet_env(data)), elicitation_callback=yes) as host:
            assert not (await host.call_tool("register_agent", {"entry": entry})).is_error
            return await host.call_tool("call_agent", {"identifier": entry["identifier"], "tool": "probe", "arguments": {"secret": "none"}})

    return anyio.run(called)


@pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")
def test_a_call_says_the_dependencies_were_resolved_as_of_another_date(dated_index: str, tmp_path: Path) -> None:
    """What the install did otherwise than the entry asked reaches the person, beside the answer: a real `ard-mcp
    serve` over stdio, a host that says yes, a package server whose dependency had no release by its date."""
    result = _called_through_serve(dated_index, tmp_path / "data", "ard-probe-dated-server")
    assert not result.is_error and result.structured_content is not None, result.content
    (said,) = [w for w in result.structured_content.get("warnings") or [] if w.startswith("package pypi:ard-probe-dated-server@1.0.0: ")]
    assert "its dependencies were resolved as of 2025-08-02, not of its release" in said


@pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")
def test_a_server_that_exits_before_the_handshake_is_said_to_with_its_last_words(dated_index: str, tmp_path: Path) -> None:
    """Not the MCP SDK's "unhandled errors in a TaskGroup" around "Connection closed", as a snapshot server that
    needed a program it lacked was reported: that it exited before answering, and the end of its stderr."""
    result = _called_through_serve(dated_index, tmp_path / "data", "ard-probe-dies")
    said = " ".join(block.text for block in result.content if isinstance(block, mcp_types.TextContent))
    assert result.is_error and "the package server pypi:ard-probe-dies@1.0.0 did not start: it exited before answering the MCP" in said
    assert "its stderr ends: the server needs a program it cannot find" in said and "TaskGroup" not in said


def test_a_dependency_pip_found_nothing_of_is_named_with_its_cause(dated_index: str, tmp_path: Path) -> None:
    installer = Installer(tmp_path / "cache", Registries(pypi=(dated_index,)))
    cases = {
        "nowhere": f"its dependency ard-probe-nowhere>=1 is not on {dated_index}",
        "sourceonly": "its dependency ard-probe-sourceonly: no wheel, only source distributions, and building one runs the publisher's",
        "windows": "its dependency ard-probe-windows: no wheel of it fits this platform (ard_probe_windows-1.0.0-cp311-cp311-win_amd64",
        "py399": "its dependency ard-probe-py399 needs Python >=3.99, and it was installed for Python 3.",
        "later": f"its dependency ard-probe-later>=9: {dated_index} has no release of ard-probe-later in that range",
    }
    for name, reason in cases.items():
        refused = _refused(installer, _spec("pypi", f"ard-probe-needs-{name}", "1.0.0"))
        assert reason in str(refused) and "fits this platform, and source builds" not in str(refused), refused
    assert list((tmp_path / "cache").glob("pypi/*/*/installed.json")) == []


def test_a_deleted_pypi_version_names_the_nearest_newer_release(dated_index: str, tmp_path: Path) -> None:
    installer = Installer(tmp_path / "cache", Registries(pypi=(dated_index,)))
    for pinned, newer in (("1.1.0", "1.2.0"), ("1.3.0", "1.10.0"), ("3.0.0", None)):  # PEP 440 order; not the 2.0.0rc1 prerelease
        refused = _refused(installer, _spec("pypi", "ard-probe-gone", pinned))
        assert isinstance(refused, VersionGone) and (refused.registry, refused.name, refused.version, refused.newer) == (
            "pypi",
            "ard-probe-gone",
            pinned,
            newer,
        )
        assert f"{dated_index} has no version {pinned} of ard-probe-gone (deleted, or never published there)" in str(refused)
        if newer:
            assert f"its nearest newer release is {newer}" in str(refused)
            assert f"'ard-mcp packages allow pypi:ard-probe-gone@{newer}'" in str(refused)
        else:
            assert str(refused).endswith("; it has no newer release")
    assert isinstance(_refused(installer, _spec("pypi", "ard-probe-gone", "2.0.0a1")), VersionGone)
    assert _refused(installer, _spec("pypi", "ard-probe-gone", "2.0.0a1")).newer == "2.0.0rc1"  # type: ignore[attr-defined]


# -- npm -----------------------------------------------------------------------------------------------------------


def _publish_all(registry: NpmRegistry, name: str, releases: Mapping[str, Mapping[str, Any]]) -> None:
    """Publish several versions of `name` into one packument (`NpmRegistry.publish` keeps the last alone)."""
    versions: dict[str, Any] = {}
    for version, manifest in releases.items():
        registry.publish(name, version, manifest)
        versions.update(json.loads(registry.documents[f"/{name}"])["versions"])
    latest = list(releases)[-1]
    registry.documents[f"/{name}"] = json.dumps({"name": name, "dist-tags": {"latest": latest}, "versions": versions}).encode()


@pytest.fixture(scope="module")
def npm_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[NpmRegistry, Path]]:
    """(the registry, the file an install script of its packages would write)."""
    ran = tmp_path_factory.mktemp("npm-scripts") / "an-install-script-ran"
    script = f"node -e \"require('fs').writeFileSync('{ran}', 'ran')\""
    with serving_npm_registry() as registry:
        optional = {"ard-probe-native-here": "1.0.0", "ard-probe-native-darwin-arm64": "1.0.0", "ard-probe-native-win32-x64": "1.0.0"}
        scripts = {"preinstall": script, "postinstall": script}
        registry.publish("ard-probe-native", "1.0.0", {"bin": "index.js", "optionalDependencies": optional, "scripts": scripts})
        registry.publish("ard-probe-native-here", "1.0.0", {"scripts": scripts})  # the other platforms' were never published
        _publish_all(registry, "ard-probe-gone", {v: {"bin": "index.js"} for v in ("1.0.0", "1.2.0", "1.10.0", "2.0.0-beta.1")})
        registry.publish("ard-probe-dep", "1.0.0", {})
        registry.publish("ard-probe-needy", "1.0.0", {"bin": "index.js", "dependencies": {"ard-probe-dep": "^3.0.0"}})
        registry.publish("ard-probe-lonely", "1.0.0", {"bin": "index.js", "dependencies": {"ard-probe-nobody": "1.0.0"}})
        yield registry, ran


def test_an_npm_package_whose_other_platforms_optional_dependencies_are_missing_installs(
    npm_registry: tuple[NpmRegistry, Path], tmp_path: Path
) -> None:
    """slack-mcp-server 1.2.3: `npm ci` refused the lockfile (`Missing: slack-mcp-server-darwin-amd64@ from lock file`)."""
    registry, ran = npm_registry
    installed = anyio.run(Installer(tmp_path / "cache", Registries(npm=(registry.url,))).install, _spec("npm", "ard-probe-native", "1.0.0"))
    modules = installed.directory / "node_modules"
    assert sorted(p.name for p in modules.iterdir() if not p.name.startswith(".")) == ["ard-probe-native", "ard-probe-native-here"]
    assert not ran.exists()  # install scripts stay off on the way round npm ci
    tarball = registry.documents["/ard-probe-native/-/ard-probe-native-1.0.0.tgz"]
    assert installed.integrity == json.loads(registry.documents["/ard-probe-native"])["versions"]["1.0.0"]["dist"]["integrity"]
    assert installed.integrity.startswith("sha512-") and tarball
    assert installed.command[-1] == str(modules / "ard-probe-native" / "index.js")


def test_npm_failures_name_their_cause(npm_registry: tuple[NpmRegistry, Path], tmp_path: Path) -> None:
    registry, _ = npm_registry
    installer = Installer(tmp_path / "cache", Registries(npm=(registry.url,)))
    for pinned, newer in (("1.1.0", "1.2.0"), ("1.3.0", "1.10.0"), ("3.0.0", None)):  # semver order; not the 2.0.0-beta.1 prerelease
        refused = _refused(installer, _spec("npm", "ard-probe-gone", pinned))
        assert isinstance(refused, VersionGone) and refused.newer == newer
        assert f"{registry.url} has no version {pinned} of ard-probe-gone (deleted, or never published there)" in str(refused)
        if newer:
            assert f"its nearest newer release is {newer}: to run that one" in str(refused)
            assert f"'ard-mcp packages allow npm:ard-probe-gone@{newer}'" in str(refused)
    needy = _refused(installer, _spec("npm", "ard-probe-needy", "1.0.0"))
    assert f"its dependency ard-probe-dep@^3.0.0 matches no version on {registry.url} (it has 1.0.0)" in str(needy)
    assert not isinstance(needy, VersionGone)
    lonely = _refused(installer, _spec("npm", "ard-probe-lonely", "1.0.0"))
    assert f"its dependency ard-probe-nobody is not on {registry.url}" in str(lonely)
    nobody = _refused(installer, _spec("npm", "ard-probe-nobody-at-all", "1.0.0"))
    assert f"no package ard-probe-nobody-at-all on {registry.url}" in str(nobody)


def test_npm_s_own_words_are_kept_not_its_usage_text(npm_registry: tuple[NpmRegistry, Path], tmp_path: Path) -> None:
    """Its last 2000 characters were the usage text alone; the reason comes first."""
    registry, _ = npm_registry
    project = tmp_path / "project"
    project.mkdir()
    (project / "package.json").write_text(json.dumps({"name": "x", "version": "1.0.0"}))
    spec = _spec("npm", "ard-probe-gone", "1.0.0")
    argv = [shutil.which("npm") or "npm", "ci", "--prefix", str(project), "--ignore-scripts"]
    with pytest.raises(InstallRefused) as refused:
        # the one npm failure ending in its usage text a test can bring about: npm ci with no lockfile
        anyio.run(npm._npm_run, "npm ci", spec, argv, registry.url, (registry.url,), tmp_path / "cache", project, 120.0)  # noqa: SLF001
    said = str(refused.value)
    assert said.startswith("npm:ard-probe-gone@1.0.0: npm could not install it (exit 1): code EUSAGE")
    assert "can only install with an existing package-lock.json" in said
    assert "Usage:" not in said and "--install-strategy" not in said and "A complete log" not in said
