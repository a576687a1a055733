"""The operator's own npm and pip configuration, read only with --package-installer-config (issue #54): with
real npm and pip against a loopback registry that wants a token and an index that wants a password, the
operator's npmrc and netrc let the install through, and without the opt-in the refusal says why in words,
never holding the secret. Nothing in those files turns scripts on, sends a request past `egress` or to
another registry, index or proxy, and of pip.conf only what reaches an index is taken (`installer_config`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from ard_mcp.packages import installer_config
from ard_mcp.packages.install import Installer, InstallRefused, Registries, VersionGone
from ard_mcp.packages.specs import PackageSpec
from ard_mcp.surfaces.cli.arguments import build_parser
from ard_mcp.surfaces.cli.invocation_settings import invocation_policy
from tests.certificates import self_signed
from tests.package_support import NpmRegistry, loopback_listener, serving_index, serving_npm_registry, wheel

pytestmark = pytest.mark.slow

TOKEN = "npm_s3cretT0kenOfTheOperator"
PASSWORD = "pip-s3cret-passw0rd"
NOT_READ = "an operator's own {} configuration is read only with --package-installer-config"
OPERATOR_VARIABLES = ("npm_config_userconfig", "NPM_CONFIG_USERCONFIG", "NETRC", "PIP_CONFIG_FILE", "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS")


def _spec(registry: str, name: str, version: str) -> PackageSpec:
    return PackageSpec(registry, name, version, None, (), (), ())


def _refused(installer: Installer, spec: PackageSpec) -> str:
    with pytest.raises(InstallRefused) as refused:
        anyio.run(installer.install, spec)
    said = str(refused.value)
    assert said.startswith(spec.key() + ": ")
    return said


def _files(home: Path) -> set[Path]:
    return set(home.rglob("*"))


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The operator's home, a temporary one: their npmrc, netrc and pip.conf go here, and nothing of the real
    user's is read."""
    directory = tmp_path / "operator"
    directory.mkdir()
    monkeypatch.setenv("HOME", str(directory))
    for name in OPERATOR_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return directory


@pytest.fixture(scope="module")
def private_npm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[NpmRegistry, Path]]:
    """A registry on loopback that answers only `Authorization: Bearer TOKEN`, and the file an install script of
    its packages would write."""
    ran = tmp_path_factory.mktemp("private-npm") / "an-install-script-ran"
    script = f"node -e \"require('fs').writeFileSync('{ran}', 'ran')\""
    scripts = {"preinstall": script, "install": script, "postinstall": script, "prepare": script}
    with serving_npm_registry(token=TOKEN) as registry:
        registry.publish("ard-probe-private", "1.0.0", {"bin": "index.js", "dependencies": {"ard-probe-private-dep": "1.0.0"}})
        registry.publish("ard-probe-private-dep", "1.0.0", {"scripts": scripts, "hasInstallScript": True})
        registry.publish("ard-probe-scripted", "1.0.0", {"bin": "index.js", "scripts": scripts, "hasInstallScript": True})
        yield registry, ran


def _npmrc(home: Path, registry: NpmRegistry, *lines: str, token: str = TOKEN) -> Path:
    path = home / ".npmrc"
    path.write_text("\n".join([f"//{registry.url.removeprefix('http://')}/:_authToken={token}", *lines]) + "\n")
    return path


def test_the_operators_npmrc_token_reaches_a_private_registry_only_with_the_opt_in(
    private_npm: tuple[NpmRegistry, Path], home: Path, tmp_path: Path
) -> None:
    registry, ran = private_npm
    _npmrc(home, registry)
    spec = _spec("npm", "ard-probe-private", "1.0.0")

    said = _refused(Installer(tmp_path / "off", Registries(npm=(registry.url,))), spec)
    assert f"the registry {registry.url} refused the request (401): it needs credentials; {NOT_READ.format('npm')}" in said
    assert TOKEN not in said

    before = _files(home)
    installed = anyio.run(Installer(tmp_path / "on", Registries(npm=(registry.url,), installer_config=True)).install, spec)
    assert installed.integrity.startswith("sha512-")
    assert (installed.directory / "node_modules" / "ard-probe-private-dep" / "package.json").is_file()
    assert "/ard-probe-private-dep/-/ard-probe-private-dep-1.0.0.tgz" in registry.asked
    assert not ran.exists()  # the dependency's install scripts did not run
    assert _files(home) == before  # npm, run with the operator's HOME, wrote nothing there

    _npmrc(home, registry, token="npm_anotherT0kenNotAccepted")
    said = _refused(Installer(tmp_path / "wrong", Registries(npm=(registry.url,), installer_config=True)), spec)
    assert f"refused the request (401): the operator's npm configuration ({home / '.npmrc'}) gave no credentials it accepts" in said
    assert "npm_anotherT0kenNotAccepted" not in said


def test_a_token_the_npmrc_names_as_a_variable_is_passed_on_and_one_node_reads_is_not(
    private_npm: tuple[NpmRegistry, Path], home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`_authToken=${NPM_TOKEN}` is how npmrc files hold tokens; a variable that configures node (NODE_OPTIONS,
    which would make npm's own node run a file) is not passed on, whatever the npmrc names."""
    registry, _ = private_npm
    userconfig = tmp_path / "elsewhere.npmrc"  # where npm_config_userconfig points, not ~/.npmrc
    userconfig.write_text(f"//{registry.url.removeprefix('http://')}/:_authToken=${{ARD_PROBE_NPM_TOKEN}}\n")
    monkeypatch.setenv("npm_config_userconfig", str(userconfig))
    monkeypatch.setenv("ARD_PROBE_NPM_TOKEN", TOKEN)
    installer = Installer(tmp_path / "cache", Registries(npm=(registry.url,), installer_config=True))
    assert anyio.run(installer.install, _spec("npm", "ard-probe-private", "1.0.0")).integrity.startswith("sha512-")

    required = tmp_path / "required.js"
    marker = tmp_path / "node-ran-the-operators-file"
    required.write_text(f"require('fs').writeFileSync({json.dumps(str(marker))}, 'ran')\n")
    monkeypatch.setenv("NODE_OPTIONS", f"--require {required}")
    userconfig.write_text(f"//{registry.url.removeprefix('http://')}/:_authToken=${{NODE_OPTIONS}}\n")
    said = _refused(
        Installer(tmp_path / "node-options", Registries(npm=(registry.url,), installer_config=True)),
        _spec("npm", "ard-probe-scripted", "1.0.0"),
    )
    assert f"the operator's npm configuration ({userconfig}) gave no credentials it accepts" in said
    assert not marker.exists()


def test_an_npmrc_turns_no_scripts_on_and_sends_nothing_elsewhere(
    private_npm: tuple[NpmRegistry, Path], home: Path, tmp_path: Path
) -> None:
    """What the command line sets wins over the npmrc, and what it pins besides (`npm._settings`) too."""
    registry, ran = private_npm
    with loopback_listener() as (port, reached):
        elsewhere = f"http://127.0.0.1:{port}/"
        _npmrc(
            home,
            registry,
            "ignore-scripts=false",
            "allow-scripts=ard-probe-scripted,ard-probe-private-dep",
            "dangerously-allow-all-scripts=true",
            "foreground-scripts=true",
            "script-shell=/bin/sh",
            f"registry={elsewhere}",
            f"@ard-probe:registry={elsewhere}",
            f"proxy={elsewhere}",
            f"https-proxy={elsewhere}",
            "noproxy=127.0.0.1,localhost",
            "strict-ssl=false",
            "git=/usr/bin/git",
            "global=true",
            "dry-run=true",
            "package-lock=false",
            f"prefix={home / 'global-prefix'}",
            f"cache={home / 'npm-cache'}",
        )
        installer = Installer(tmp_path / "cache", Registries(npm=(registry.url,), installer_config=True))
        installed = anyio.run(installer.install, _spec("npm", "ard-probe-scripted", "1.0.0"))
        assert (installed.directory / "node_modules" / "ard-probe-scripted" / "index.js").is_file()
        assert not ran.exists()  # preinstall, install, postinstall and prepare would each have written it
        # with the npmrc's git, git's own protocol would go around `egress` (measured without the pin: git reached the port)
        registry.publish(
            "ard-probe-gitdep", "1.0.0", {"bin": "index.js", "dependencies": {"ard-probe-git": f"git://127.0.0.1:{port}/x.git"}}
        )
        said = _refused(installer, _spec("npm", "ard-probe-gitdep", "1.0.0"))
        assert f"git://127.0.0.1:{port}/x.git" in said
        registry.publish("ard-probe-scopedep", "1.0.0", {"bin": "index.js", "dependencies": {"@ard-probe/scoped": "1.0.0"}})
        said = _refused(installer, _spec("npm", "ard-probe-scopedep", "1.0.0"))
        assert f"npm asked for GET http://127.0.0.1:{port}/@ard-probe%2fscoped, which is not on the registry {registry.url}" in said
        assert reached == []  # neither as the registry, nor as the proxy, nor as a scope's registry, nor by git
    assert not (home / "global-prefix").exists() and not (home / "npm-cache").exists()


def test_an_npmrc_cannot_turn_tls_verification_off_and_its_cafile_is_used(home: Path, tmp_path: Path) -> None:
    chain, key = self_signed(tmp_path, "localhost")
    with serving_npm_registry(tls=(chain, key)) as registry:
        registry.publish("ard-probe-tls", "1.0.0", {"bin": "index.js"})
        spec = _spec("npm", "ard-probe-tls", "1.0.0")
        (home / ".npmrc").write_text("strict-ssl=false\nfetch-retries=0\n")  # the operator's retries are read (else 70 s of them)
        said = _refused(Installer(tmp_path / "unverified", Registries(npm=(registry.url,), installer_config=True)), spec)
        assert f"the TLS certificate of {registry.url} could not be verified" in said  # npm's DEPTH_ZERO_SELF_SIGNED_CERT

        (home / "ca").mkdir()
        (home / "ca" / "registry.pem").write_bytes(chain.read_bytes())
        (home / ".npmrc").write_text("cafile=~/ca/registry.pem\n")  # npm expands ~ with the operator's HOME
        installed = anyio.run(Installer(tmp_path / "verified", Registries(npm=(registry.url,), installer_config=True)).install, spec)
        assert installed.integrity.startswith("sha512-")


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = tmp_path_factory.mktemp("private-index")
    wheel(files, "ard-probe-private", "1.0.0", {"ard-probe-private": "ard_probe_private:main"})
    return files


def test_the_operators_netrc_reaches_a_private_index_only_with_the_opt_in(wheels: Path, home: Path, tmp_path: Path) -> None:
    asked: list[str] = []
    with serving_index(wheels, asked, credentials=f"alice:{PASSWORD}") as url:
        spec = _spec("pypi", "ard-probe-private", "1.0.0")
        said = _refused(Installer(tmp_path / "bare", Registries(pypi=(url,), installer_config=True)), spec)  # no netrc yet
        assert f"the index {url} refused the request (401): neither the index URL nor the operator's netrc ({home / '.netrc'})" in said

        (home / ".netrc").write_text(f"machine 127.0.0.1\nlogin alice\npassword {PASSWORD}\n")
        said = _refused(Installer(tmp_path / "off", Registries(pypi=(url,))), spec)
        assert f"the index {url} refused the request (401): it needs credentials; {NOT_READ.format('pip')}" in said
        assert PASSWORD not in said

        opted_in = Installer(tmp_path / "on", Registries(pypi=(url,), installer_config=True))
        installed = anyio.run(opted_in.install, spec)
        assert installed.integrity.startswith("sha256=")
        assert "/files/ard_probe_private-1.0.0-py3-none-any.whl" in asked
        # ard-mcp's own look at the index, which says why, uses the netrc too
        with pytest.raises(VersionGone, match=f"{url} has no version 9.9.9 of ard-probe-private"):
            anyio.run(opted_in.install, _spec("pypi", "ard-probe-private", "9.9.9"))

        unpinned = Installer(tmp_path / "unpinned", Registries(pypi=(url,)), allow_unpinned=True)
        said = _refused(unpinned, _spec("pypi", "ard-probe-private", ">=1"))  # pip's --dry-run, asked why too
        assert f"the index {url} refused the request (401): it needs credentials" in said

        credentialed = url.replace("http://", f"http://alice:{PASSWORD}@")  # the operator's --package-registry may hold them
        said = _refused(Installer(tmp_path / "url", Registries(pypi=(credentialed,))), _spec("pypi", "ard-probe-absent", "1.0.0"))
        assert said.endswith(f"no package ard-probe-absent on {url.replace('http://', 'http://alice:[redacted]@')}")


def test_of_pip_conf_only_what_reaches_an_index_is_taken(wheels: Path, home: Path, tmp_path: Path) -> None:
    """An index, find-links and a constraint in the operator's pip.conf would widen where pip goes or what it
    takes: none is asked anything, and the install is what it is without them."""
    elsewhere: list[str] = []
    with serving_index(wheels, elsewhere) as other, serving_index(wheels) as url:
        constraint = tmp_path / "constraints.txt"
        constraint.write_text("ard-probe-private==9.9\n")  # would make the install impossible
        config = home / ".config" / "pip" / "pip.conf"
        config.parent.mkdir(parents=True)
        config.write_text(
            f"[global]\nindex-url = {other}\nextra-index-url = {other}\nfind-links = {other.removesuffix('/simple')}/files/\n"
            f"constraint = {constraint}\ntimeout = 7\n[install]\nrequirement = {constraint}\ntimeout = 9\nretries = 2\n"
            "trusted-host = 127.0.0.1\n  localhost\ncert = ~/ca.pem\nclient-cert = ~/client.pem\n"
        )
        assert installer_config.pip_settings("/bundle.pem") == [
            "--cert",
            str(home / "ca.pem"),
            "--client-cert",
            str(home / "client.pem"),
            "--timeout=9",
            "--retries=2",
            "--trusted-host=127.0.0.1",
            "--trusted-host=localhost",
        ]
        config.write_text(config.read_text().replace("cert = ~/ca.pem\nclient-cert = ~/client.pem\n", ""))
        installer = Installer(tmp_path / "cache", Registries(pypi=(url,), installer_config=True))
        assert anyio.run(installer.install, _spec("pypi", "ard-probe-private", "1.0.0")).integrity.startswith("sha256=")
    assert elsewhere == []


def test_the_cert_of_the_operators_pip_conf_verifies_the_index_instead_of_the_bundle(wheels: Path, home: Path, tmp_path: Path) -> None:
    chain, key = self_signed(tmp_path, "localhost")
    with serving_index(wheels, tls=(chain, key)) as url:
        (home / "ca").mkdir()
        (home / "ca" / "index.pem").write_bytes(chain.read_bytes())
        config = tmp_path / "pip.conf"
        config.write_text("[global]\ncert = ~/ca/index.pem\n")
        spec = _spec("pypi", "ard-probe-private", "1.0.0")
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("PIP_CONFIG_FILE", str(config))
            said = _refused(Installer(tmp_path / "off", Registries(pypi=(url,))), spec)
            assert f"the TLS certificate of {url} could not be verified" in said
            installed = anyio.run(Installer(tmp_path / "on", Registries(pypi=(url,), installer_config=True)).install, spec)
        assert installed.integrity.startswith("sha256=")


def test_the_credentials_of_the_operators_files_are_known_to_be_redacted(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a refusal is redacted of (`Installer`): tokens, `_auth` and `_password` as written and decoded, a
    `${NAME}` as npm fills it, netrc passwords; not usernames, hosts or paths."""
    monkeypatch.setenv("ARD_PROBE_NPM_TOKEN", "npm_fromTheEnvironment")
    (home / ".npmrc").write_text(
        '; a comment\n//npm.corp/:_authToken = ${ARD_PROBE_NPM_TOKEN}\n//other.corp/:_auth="YWxpY2U6b3BlbnNlc2FtZQ=="\n'
        "//third.corp/:username=bob\n//third.corp/:_password=c2VjcmV0LXBhc3M=\ncafile=~/ca.pem\n"
    )
    (home / ".netrc").write_text(f"machine pypi.corp login carol password {PASSWORD}\n")
    assert installer_config.secrets() == [
        "npm_fromTheEnvironment",
        "YWxpY2U6b3BlbnNlc2FtZQ==",
        "alice:opensesame",
        "opensesame",
        "c2VjcmV0LXBhc3M=",
        "secret-pass",
        PASSWORD,
    ]


def test_the_flag_and_its_variable_turn_it_on_and_it_is_off_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    def on(*argv: str) -> bool:
        return invocation_policy(build_parser().parse_args(["serve", *argv]), stdio=True).packages.registries.installer_config

    monkeypatch.delenv("ARD_MCP_PACKAGE_INSTALLER_CONFIG", raising=False)
    assert not on() and on("--package-installer-config")
    monkeypatch.setenv("ARD_MCP_PACKAGE_INSTALLER_CONFIG", "1")
    assert on()
