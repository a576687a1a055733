"""How to run an MCP server entry in a person's own MCP host: the package it starts from and the command that
starts it, and a ready-to-paste configuration for each host the page offers.

The package is read by `packages.specs.package_of`, the code that starts package servers for `call_agent`, so
the page and the registry never disagree about a package: its name and pinned version, its runtime and package
arguments, and its environment variables (each one the person must give becomes a `<your NAME>` placeholder in
`env`). What that code cannot start (a container image, a command line the person must complete, an argument
meant for a launcher) gets its reason on the page instead of a configuration that would not run. A remote
server is configured by its URL; nothing here reaches the network."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from typing import Any

from ard_mcp.formats import media_types
from ard_mcp.formats.catalog import CatalogEntry
from ard_mcp.invocation.calls import Target
from ard_mcp.invocation.targets import Offline
from ard_mcp.packages import names
from ard_mcp.packages.inputs import FILE, FOLDER
from ard_mcp.packages.specs import EnvVar, PackageSpec, Unusable, package_of

REGISTRY_NAMES = {"npm": "npm", "pypi": "PyPI", "unknown": "npm or PyPI (the description does not say which)"}


@dataclass(frozen=True)
class HostConfig:
    host: str
    where: str  # the file it goes in
    text: str


@dataclass(frozen=True)
class PackageView:
    """The package an entry starts from, as the page shows it."""

    registry: str  # as a person names it: npm, PyPI
    name: str
    version: str | None
    command: list[str] | None  # what starts it (`npx -y NAME@VERSION ARGS`), None when it cannot be given
    environment: tuple[EnvVar, ...]
    problem: str | None  # why no command can be given

    @property
    def command_line(self) -> str | None:
        """The command as a shell line, each item quoted as a shell needs it."""
        return shlex.join(self.command) if self.command else None


@dataclass(frozen=True)
class Hosts:
    package: PackageView | None  # the package it starts from, when its description lists one
    package_problem: str | None  # when it lists packages and none can be started: why (`Unusable.reason`)
    configs: list[HostConfig]
    missing: str | None  # for an MCP server with no configuration to give: why


_PLACEHOLDERS = {FOLDER: "/path/to/your/folder", FILE: "/path/to/your/file"}


def _spelled(spec: PackageSpec) -> str:
    """The package with its version, as its launcher takes it: `name@1.2.3` (npx), `name==1.2.3` (uvx)."""
    if not spec.version:
        return spec.name
    if spec.registry == "npm":
        return f"{spec.name}@{spec.version}"
    pinned = names.pinned_version("pypi", spec.version)
    if pinned:
        return f"{spec.name}=={pinned}"
    return spec.name + spec.version if spec.version[0] in "<>=!~" else spec.name


def _command(spec: PackageSpec) -> list[str] | str:
    """The command line that starts the package in a host, or why none can be given; a folder or file the person
    gives it (`packages.grants`) is a placeholder they replace with its path."""
    arguments = [_PLACEHOLDERS.get(a, a) for a in spec.package_arguments]
    if spec.registry == "npm":
        node = [f"--node-options={' '.join(spec.runtime_arguments)}"] if spec.runtime_arguments else []
        return ["npx", "-y", *node, _spelled(spec), *arguments]
    if spec.registry == "pypi":
        if spec.runtime_arguments:
            return f"its arguments for the Python interpreter ({' '.join(spec.runtime_arguments)}) cannot be passed through uvx"
        return ["uvx", _spelled(spec), *arguments]
    npm = shlex.join(["npx", "-y", f"{spec.name}@{spec.version}" if spec.version else spec.name])
    pypi = shlex.join(["uvx", f"{spec.name}=={spec.version}" if spec.version else spec.name])
    return (
        f"its description does not say whether {spec.name} is an npm or a PyPI package (ard-mcp asks both when it starts "
        f"it; this page asks neither): on npm it would start with {npm}, on PyPI with {pypi}"
    )


def package_view(spec: PackageSpec) -> PackageView:
    command = _command(spec)
    return PackageView(
        registry=REGISTRY_NAMES.get(spec.registry, spec.registry),
        name=spec.name,
        version=spec.version,
        command=command if isinstance(command, list) else None,
        environment=spec.environment,
        problem=command if isinstance(command, str) else None,
    )


def server_name(entry: CatalogEntry) -> str:
    """A key for the host's server list: the identifier's last part, in the characters hosts accept."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", entry.identifier.rsplit(":", 1)[-1]).strip("-")[:64] or "server"


def _env(variables: tuple[EnvVar, ...]) -> dict[str, str]:
    """What the host must set: each required variable, with its default when it has one, else a placeholder."""
    return {v.name: v.default if v.default is not None else f"<your {v.name}>" for v in variables if v.required}


def _launch(target: Target | Offline, package: PackageView | None) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(what Claude Desktop and Cursor run, what VS Code runs), or None when there is nothing to run."""
    if isinstance(target, Target) and target.package is None:  # a remote server: hosts connect to its URL
        kind = "sse" if target.transport_kind == "sse" else "http"
        return {"url": target.url}, {"type": kind, "url": target.url}
    if package is None or package.command is None:
        return None
    stdio: dict[str, Any] = {"command": package.command[0], "args": package.command[1:]}
    env = _env(package.environment)
    if env:
        stdio["env"] = env
    return stdio, {"type": "stdio", **stdio}


def hosts(entry: CatalogEntry, target: Target | Offline) -> Hosts:
    """The package and host configurations of an MCP server entry (none for any other kind of entry)."""
    if media_types.canonical_type(entry.type) != media_types.MCP_SERVER_CARD:
        return Hosts(None, None, [], None)
    spec = package_of(entry.stored())
    lists_packages = isinstance(spec, PackageSpec) or spec.kind != "no-package"
    package = package_view(spec) if isinstance(spec, PackageSpec) else None
    problem = spec.reason if isinstance(spec, Unusable) and lists_packages else None
    launch = _launch(target, package)
    if launch is None:
        offline = target.reason if isinstance(target, Offline) else None
        why = (package.problem if package else None) or offline or problem or "its description names no remote and no package"
        return Hosts(package, problem, [], why)
    plain, vscode = launch
    name = server_name(entry)

    def text(value: Any) -> str:
        return json.dumps(value, indent=2, ensure_ascii=False)

    configs = [
        HostConfig("Claude Desktop", "claude_desktop_config.json", text({"mcpServers": {name: plain}})),
        HostConfig("VS Code", ".vscode/mcp.json", text({"servers": {name: vscode}})),
        HostConfig("Cursor", "~/.cursor/mcp.json (or .cursor/mcp.json in a project)", text({"mcpServers": {name: plain}})),
    ]
    return Hosts(package, problem, configs, None)
