"""The block that attaches one MCP server to each MCP host, built by one function for every surface: `ard-mcp
host-config` prints it (and `--write` merges it into the host's file), the web page shows it on an entry's page
and on `/attach`.

Why one function: the page and the command built their blocks apart and disagreed (issue #55): the page had no
Claude Code block and put a secret in VS Code's `env` as a literal. Here a server is described once (`Launch`:
the command a host starts, or the URL it connects to, and the variables it needs), and each host's block is
read from that. A variable the person must give is a `<your NAME>` placeholder where the host has no better
way, and a VS Code `inputs` prompt (`${input:ID}`, `password` for a secret) in VS Code, which asks for it when
the server starts and keeps it out of the file. Claude Desktop's file holds only servers it starts: a remote
server is added in its settings instead, and its block says so rather than giving a `url` it ignores.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Variable:
    """An environment variable the server reads: `value` is what the host sets, None when the person gives it."""

    name: str
    value: str | None
    secret: bool = False
    description: str | None = None


@dataclass(frozen=True)
class Launch:
    """How a host reaches a server: the command it starts (over stdio) with its variables, or a URL."""

    command: tuple[str, ...] = ()
    variables: tuple[Variable, ...] = ()
    url: str | None = None
    transport: str = "stdio"  # stdio, http (streamable HTTP) or sse

    @classmethod
    def remote(cls, url: str, transport: str = "http") -> Launch:
        return cls(url=url, transport="sse" if transport == "sse" else "http")


@dataclass(frozen=True)
class Host:
    id: str  # as `ard-mcp host-config` names it
    title: str
    key: str  # the object of the file that holds the servers by name
    stdio_type: bool  # whether an entry names its transport ("type": "stdio")
    file: Callable[[], Path]  # the file `--write` merges into, on this system
    where: str  # the file, in words, as the page names it


def _claude_desktop() -> Path:
    """Where Claude Desktop reads its servers: per user, in each system's place for application settings."""
    if sys.platform == "win32":
        base = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "Claude" / "claude_desktop_config.json"


HOSTS = {
    h.id: h
    for h in (
        Host("claude-desktop", "Claude Desktop", "mcpServers", False, _claude_desktop, "claude_desktop_config.json"),
        # user scope, as `claude mcp add --scope user` writes it: the server in every project
        Host(
            "claude-code",
            "Claude Code",
            "mcpServers",
            True,
            lambda: Path.home() / ".claude.json",
            "~/.claude.json (or .mcp.json in a project)",
        ),
        Host(
            "cursor",
            "Cursor",
            "mcpServers",
            False,
            lambda: Path.home() / ".cursor" / "mcp.json",
            "~/.cursor/mcp.json (or .cursor/mcp.json in a project)",
        ),
        Host("vscode", "VS Code", "servers", True, lambda: Path.cwd() / ".vscode" / "mcp.json", ".vscode/mcp.json"),
    )
}


@dataclass(frozen=True)
class Block:
    """What attaches a server to one host: the JSON `document` to merge into its file, Claude Code's `command`
    line, or, where the host's file cannot hold the server, a `note` saying how to add it instead."""

    host: Host
    document: dict[str, Any] | None
    command: str | None = None
    note: str | None = None

    @property
    def text(self) -> str | None:
        """The document as the page shows it and `host-config` prints it."""
        return None if self.document is None else json.dumps(self.document, indent=2, ensure_ascii=False)


def placeholder(name: str) -> str:
    return f"<your {name}>"


def _input_id(server: str, variable: Variable) -> str:
    """One prompt per server and variable: two servers' `API_KEY`s are different secrets."""
    return f"{server}-{variable.name}"


def _prompted(host: Host, variable: Variable) -> bool:
    """Whether VS Code asks for it: every variable the person gives, and every secret (never written in the file)."""
    return host.id == "vscode" and (variable.value is None or variable.secret)


def _env(host: Host, server: str, launch: Launch) -> dict[str, str]:
    def value(v: Variable) -> str:
        if _prompted(host, v):
            return f"${{input:{_input_id(server, v)}}}"
        return v.value if v.value is not None else placeholder(v.name)

    return {v.name: value(v) for v in launch.variables}


def server_entry(host: Host, server: str, launch: Launch) -> dict[str, Any] | None:
    """The host's entry for the server (None where its file cannot hold it: a remote one in Claude Desktop)."""
    if launch.url is not None:
        if host.id == "claude-desktop":
            return None
        return {"url": launch.url} if host.id == "cursor" else {"type": launch.transport, "url": launch.url}
    entry: dict[str, Any] = {"type": "stdio"} if host.stdio_type else {}
    entry |= {"command": launch.command[0], "args": list(launch.command[1:])}
    env = _env(host, server, launch)
    return entry | ({"env": env} if env else {})


def _inputs(host: Host, server: str, launch: Launch) -> list[dict[str, Any]]:
    def described(v: Variable) -> str:
        return f"{v.name} for {server}" + (f": {v.description}" if v.description else "")

    return [
        {"type": "promptString", "id": _input_id(server, v), "description": described(v), "password": v.secret}
        for v in launch.variables
        if _prompted(host, v)
    ]


def _claude_code_command(server: str, launch: Launch) -> str:
    """`claude mcp add`, which writes the same entry as the block (user scope, like `host-config --write`)."""
    if launch.url is not None:
        return shlex.join(["claude", "mcp", "add", "--scope", "user", "--transport", launch.transport, server, launch.url])
    env = [w for k, v in _env(HOSTS["claude-code"], server, launch).items() for w in ("--env", f"{k}={v}")]
    return shlex.join(["claude", "mcp", "add", "--scope", "user", *env, server, "--", *launch.command])


def block(host: Host, server: str, launch: Launch) -> Block:
    """The block that attaches `launch` to `host` under the name `server`."""
    entry = server_entry(host, server, launch)
    if entry is None:
        note = (
            f"{host.title} adds a remote server in its settings (Settings, Connectors, Add custom connector) with the URL "
            f"{launch.url}; its configuration file holds only servers it starts"
        )
        return Block(host, None, note=note)
    document: dict[str, Any] = {host.key: {server: entry}}
    inputs = _inputs(host, server, launch)
    if inputs:
        document["inputs"] = inputs
    return Block(host, document, _claude_code_command(server, launch) if host.id == "claude-code" else None)


def blocks(server: str, launch: Launch) -> list[Block]:
    """Every host's block, in the order the page shows them."""
    return [block(host, server, launch) for host in HOSTS.values()]
