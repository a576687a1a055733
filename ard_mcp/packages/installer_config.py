"""The operator's own npm and pip configuration, read only where the operator opts in
(`--package-installer-config`): what a private registry needs to be reached (credentials, a CA, a client
certificate, timeouts), and nothing that widens where the installers go or lets a package's code run.

Off (the default) the installers read nothing of the operator's (`npm`, `pypi`, `processes`). On:

- npm reads the operator's user config (`npm_config_userconfig`, either case, where the operator's
  environment sets it, else `~/.npmrc`), with the operator's HOME (npm expands `~/` in the file's paths with
  it) and the variables the file names as `${NAME}` (`//host/:_authToken=${NPM_TOKEN}`), except those that
  configure node, npm, OpenSSL, the loader or a proxy (`_RUNTIME`). npm's command line beats the file, so what
  ard-mcp sets there stays (`npm._settings`): the registry, `egress` as the proxy with no exceptions, scripts
  off (`--ignore-scripts` beats `ignore-scripts=false`, `allow-scripts`, `dangerously-allow-all-scripts`),
  the cache and the logs; pinned besides for this: `strict-ssl` (a CA the file names with `cafile` or `ca` is
  used; verification is not turned off), `git` (measured: the file's `git=/usr/bin/git` fetched a `git://`
  dependency straight from its host, around `egress`; the bare PATH has no git), `global`, `dry-run`. A
  scoped registry in the file (`@scope:registry=URL`) is asked through `egress` like any other, and the
  lockfile check refuses a package that did not come from the registry installed from. The global npmrc is
  not read.
- pip is given, on its command line, the keys of the operator's pip configuration files that reach an index
  and nothing more (`_PIP_KEYS`: `cert`, which replaces the bundle ard-mcp passes otherwise, `client-cert`,
  `timeout`, `retries`, `trusted-host`), read as pip reads them (`_pip_files`: `[install]` over `[global]`),
  and the operator's netrc (`NETRC`, else `~/.netrc`), whose credentials pip sends to the host they are for.
  pip itself still runs isolated (`--isolated`, `PIP_CONFIG_FILE=/dev/null`), so no other key of those files
  is read: `extra-index-url` and `find-links` would add origins, `constraint` and `requirement` another
  requirements file (whose own lines may add indexes: a machine's global pip.conf held `constraint`),
  `root` and `prefix` other places to write, `python` another interpreter to run.

Credentials never appear in what ard-mcp says: `secrets` are the values a refusal is redacted of, and a
registry that refuses a request for want of credentials is said in words (`refused`).
"""

from __future__ import annotations

import base64
import binascii
import configparser
import netrc as netrc_files
import os
import re
import sys
from pathlib import Path

import httpx

from ard_mcp.packages import lookup
from ard_mcp.packages.refusal import InstallRefused

FLAG = "--package-installer-config"
_MAX_FILE = 1024 * 1024
_REFERENCED = re.compile(r"(?<!\\)\$\{([^${}?]+)\??\}")  # npm's `${NAME}` and `${NAME?}` in an npmrc
# what npmrc's `${NAME}` does not pass on: what node (NODE_AUTH_TOKEN is actions/setup-node's token, which node
# does not read), npm, OpenSSL, libuv and the loader read, and what ard-mcp sets itself
_RUNTIME = re.compile(
    r"^(PATH|HOME|NODE_(?!AUTH_TOKEN$).*|NPM_CONFIG_.*|LD_.*|DYLD_.*|OPENSSL_.*|SSL_.*|UV_.*|(HTTPS?|ALL|NO)_PROXY)$", re.I
)
_SECRET_KEYS = ("_authtoken", "_auth", "_password", "key")  # npmrc keys (after `//host/:`) holding a secret
_PIP_KEYS = ("cert", "client-cert", "timeout", "retries", "trusted-host")
_DENIED = re.compile(r"\bE(40[13])\b|HTTP error (40[13]) while getting|answered HTTP (40[13])\b")  # npm, pip, `lookup`


def npmrc() -> Path:
    """The user config the operator's npm reads: `npm_config_userconfig` (npm reads either case) where set, else `~/.npmrc`."""
    given = next((value for name, value in os.environ.items() if name.lower() == "npm_config_userconfig" and value), None)
    return Path(os.path.expanduser(given)) if given else Path.home() / ".npmrc"


def netrc() -> Path:
    """The netrc the operator's pip reads: `NETRC` where set, else `~/.netrc`."""
    return Path(os.path.expanduser(os.environ.get("NETRC") or "~/.netrc"))


def _read(path: Path, what: str) -> str:
    """The text of `path` ("" where there is none); ValueError, naming it, where it cannot be read."""
    try:
        with path.open("rb") as file:
            data = file.read(_MAX_FILE + 1)
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise ValueError(f"{what} {path} cannot be read ({exc.strerror}); it is read because of {FLAG}") from None
    if len(data) > _MAX_FILE:
        raise ValueError(f"{what} {path} is over {_MAX_FILE >> 20} MiB; it is read because of {FLAG}")
    return data.decode("utf-8", "replace")


def npm_environment() -> dict[str, str]:
    """What npm runs with besides the clean environment (`processes`): the operator's HOME, and the variables the
    npmrc names as `${NAME}` that are set (npm leaves an unset one as written: a token of `${NPM_TOKEN}`)."""
    names = set(_REFERENCED.findall(_read(npmrc(), "the operator's npm configuration")))
    return {
        **{name: os.environ[name] for name in sorted(names) if name in os.environ and not _RUNTIME.match(name)},
        "HOME": str(Path.home()),
    }


def _pip_files() -> list[Path]:
    """pip's configuration files on Linux, lowest priority first, as pip finds them: the global ones
    (`$XDG_CONFIG_DIRS` or /etc/xdg, then /etc), the user's (`~/.pip`, then `$XDG_CONFIG_HOME` or ~/.config) unless
    `PIP_CONFIG_FILE` names a file that exists, the site's (`sys.prefix`), `PIP_CONFIG_FILE`; none where that is
    /dev/null."""
    given = os.environ.get("PIP_CONFIG_FILE")
    if given == os.devnull:
        return []
    directories = (os.environ.get("XDG_CONFIG_DIRS", "").strip() or "/etc/xdg").split(os.pathsep)
    files = [*(Path(d) / "pip" / "pip.conf" for d in directories), Path("/etc/pip.conf")]
    if not (given and os.path.exists(given)):
        config_home = os.environ.get("XDG_CONFIG_HOME", "").strip() or os.path.expanduser("~/.config")
        files += [Path.home() / ".pip" / "pip.conf", Path(config_home) / "pip" / "pip.conf"]
    return [*files, Path(sys.prefix) / "pip.conf", *([Path(given)] if given else [])]


def pip_settings(bundle: str | None) -> list[str]:
    """pip's command-line settings from the operator's configuration files (`_PIP_KEYS`; a later file's over an
    earlier's, `[install]` over `[global]`, as pip merges them); `--cert` the operator's, else `bundle`."""
    found: dict[str, str] = {}
    parsers = []
    for path in _pip_files():
        parser = configparser.RawConfigParser()
        try:
            parser.read_string(_read(path, "the operator's pip configuration"), str(path))
        except configparser.Error as exc:  # its text is not said: a line may hold an index URL's password
            line = getattr(exc, "lineno", None)
            raise ValueError(
                f"the operator's pip configuration {path} is not in pip's ini form" + (f" (line {line})" if line else "")
            ) from None
        parsers.append(parser)
    for section in ("global", "install"):
        for parser in parsers:
            for key, value in parser.items(section) if parser.has_section(section) else ():
                name = key.lower().replace("_", "-").removeprefix("--")
                if name in _PIP_KEYS:
                    found[name] = value
    cert = os.path.expanduser(found["cert"]) if "cert" in found else bundle
    settings = ["--cert", cert] if cert else []
    if "client-cert" in found:
        settings += ["--client-cert", os.path.expanduser(found["client-cert"])]
    settings += [f"--{name}={found[name]}" for name in ("timeout", "retries") if name in found]
    return settings + [f"--trusted-host={host}" for host in found.get("trusted-host", "").split()]


def pip_environment() -> dict[str, str]:
    """The operator's netrc for pip (which reads `NETRC` even isolated), where there is one."""
    path = netrc()
    return {"NETRC": str(path)} if path.is_file() else {}


def secrets() -> list[str]:
    """The credentials the operator's npmrc and netrc hold, to redact from what is said: tokens, passwords and
    keys (`_auth` and `_password` also decoded from their base64), `${NAME}` replaced as npm replaces it."""
    found: list[str] = []
    try:
        text = _read(npmrc(), "")
    except ValueError:
        text = ""
    for line in text.splitlines():
        key, equals, value = line.strip().partition("=")
        name = key.strip().rpartition(":")[2].lower()
        if not equals or name not in _SECRET_KEYS:
            continue
        value = _REFERENCED.sub(lambda m: os.environ.get(m[1], m[0]), value.strip().strip("'\""))
        found.append(value)
        if name in ("_auth", "_password"):
            try:
                decoded = base64.b64decode(value, validate=True).decode("utf-8", "replace")
            except (binascii.Error, ValueError):
                continue
            found += [decoded, decoded.partition(":")[2]] if name == "_auth" else [decoded]
    try:
        hosts = netrc_files.netrc(str(netrc())).hosts if netrc().is_file() else {}
    except (OSError, netrc_files.NetrcParseError):
        hosts = {}
    return found + [password for _, _, password in hosts.values() if password]


async def unlisted(client: httpx.AsyncClient, index: str, name: str) -> str:
    """What a Python index answered when asked for `name` and it did not list it (`lookup`: "... answered HTTP 401"),
    "" where it did: pip says nothing of an index page it was refused."""
    try:
        await lookup.pypi_listing(client, index, name)
    except lookup.LookupFailed as exc:
        return f"\n{exc}"
    return ""


def refused(key: str, where: str, said: str, installer: str, opted_in: bool) -> InstallRefused | None:
    """Why `where` (the registry, the index) refused the installer, where `said` shows it did (401, 403, as npm,
    pip or `lookup` say it): the credentials it needs, and where they come from; None where it did not."""
    match = _DENIED.search(said)
    if match is None:
        return None
    if not opted_in:
        how = f"it needs credentials; an operator's own {installer} configuration is read only with {FLAG}"
    elif installer == "npm":
        how = f"the operator's npm configuration ({npmrc()}) gave no credentials it accepts"
    else:
        how = f"neither the index URL nor the operator's netrc ({netrc()}) gave credentials it accepts"
    return InstallRefused(f"{key}: {where} refused the request ({next(g for g in match.groups() if g)}): {how}")
