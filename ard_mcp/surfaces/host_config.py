"""`ard-mcp host-config HOST [--write]`: the configuration that attaches this install to an MCP host.

Why a command: a host starts its servers from a JSON file with no shell and often another PATH, so a
hand-written `"command": "ard-mcp"` failed wherever the virtual environment was not on the host's PATH, and
`uvx ard-mcp` works only once the package is published. This prints the entry for this very install: the
absolute path of its own `ard-mcp` executable and its data directory; `--write` merges it into the host's
file, keeping every other server the file holds, its comments and trailing commas (which VS Code, Cursor
and Claude Code accept: `jsonc`), and the person's original as `FILE.bak`. A second `--write` of the same
entry changes nothing and says so: it once said "replaced" and overwrote the backup with the merged file, so
the person's original was gone (issue #55).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ard_mcp.surfaces import jsonc
from ard_mcp.surfaces.terminal_text import shown


@dataclass(frozen=True)
class Host:
    title: str
    key: str  # the object of the file that holds the servers by name
    stdio_type: bool  # whether an entry names its transport ("type": "stdio")
    where: Callable[[], Path]  # the file, on this system


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
    "claude-desktop": Host("Claude Desktop", "mcpServers", False, _claude_desktop),
    # user scope, as `claude mcp add --scope user` writes it: this install in every project
    "claude-code": Host("Claude Code", "mcpServers", True, lambda: Path.home() / ".claude.json"),
    "cursor": Host("Cursor", "mcpServers", False, lambda: Path.home() / ".cursor" / "mcp.json"),
    "vscode": Host("VS Code", "servers", True, lambda: Path.cwd() / ".vscode" / "mcp.json"),  # this workspace
}


def own_executable() -> list[str]:
    """The command that starts this install's `ard-mcp`, absolute: the script this process was started as,
    else the one beside this Python (a virtual environment's bin/ or Scripts/), else the one on PATH, else
    this Python with `-m ard_mcp` (which always runs this very install)."""
    names = ("ard-mcp", "ard-mcp.exe")
    started = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if started is not None and started.name in names and started.is_file():
        return [str(started.absolute())]
    for folder in (Path(sys.executable).parent, Path(sys.executable).parent / "Scripts"):
        for name in names:
            if (folder / name).is_file():
                return [str((folder / name).absolute())]
    found = shutil.which("ard-mcp")
    return [str(Path(found).absolute())] if found else [str(Path(sys.executable).absolute()), "-m", "ard_mcp"]


def server_entry(host: Host, data_dir: Path, model_dir: Path | None = None) -> dict[str, Any]:
    """The host's entry for this install: started over stdio with its own data directory (and model, if one
    was named), by absolute paths, since a host starts it from a directory of its own."""
    command = own_executable()
    env = {"ARD_MCP_DATA_DIR": str(data_dir.expanduser().absolute())}
    if model_dir is not None:
        env["ARD_MCP_MODEL_DIR"] = str(model_dir.expanduser().absolute())
    entry: dict[str, Any] = {"type": "stdio"} if host.stdio_type else {}
    # --shared: every host (and window) a person attaches shares one back-end of the data directory (`frontend`)
    return entry | {"command": command[0], "args": [*command[1:], "serve", "--shared"], "env": env}


def merged(path: Path, key: str, name: str, entry: dict[str, Any]) -> tuple[str, str | None]:
    """The host file's text with `entry` as server `name`, every other key, server and comment as it was, and
    what was there before under that name: "replaced", "unchanged", or None (added). A file that is not a JSON
    object (comments and trailing commas allowed) is refused, never replaced."""
    text = ""
    if path.exists():
        try:
            text = path.read_text(encoding="utf-8")
            document = jsonc.parsed(text)
        except (UnicodeDecodeError, ValueError) as exc:
            raise ValueError(f"{path} is not JSON ({exc}); nothing was written: add the entry above by hand") from None
        if not isinstance(document, dict) or not isinstance(document.get(key, {}), dict):
            raise ValueError(f"{path}: expected a JSON object with an object {key!r}; nothing was written: add the entry above by hand")
        before = (document.get(key) or {}).get(name)
        if before == entry:
            return text, "unchanged"
    else:
        document, before = {}, None
    written = jsonc.with_member(text, (key, name), entry)
    if jsonc.parsed(written) != {**document, key: {**(document.get(key) or {}), name: entry}}:
        raise ValueError(f"{path}: the entry could not be set without changing something else; nothing was written: add it by hand")
    return written + ("" if written.endswith("\n") else "\n"), None if before is None else "replaced"


def write(path: Path, text: str) -> Path | None:
    """Replace the file at once (a host reading it never sees half of it). The first time it replaces a file,
    the file is kept as `.bak`: the person's original, never overwritten by a later write."""
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = path.with_name(path.name + ".bak")
    if path.exists() and not backup.exists():
        shutil.copy2(path, backup)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)
    return backup if backup.exists() else None


def host_config_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: Callable[[argparse.ArgumentParser], None]
) -> None:
    parser = commands.add_parser(
        "host-config",
        help="print (or --write) the configuration that attaches this install to an MCP host",
        description="Prints the server entry for HOST's configuration file: this install's own ard-mcp executable by its "
        "absolute path, started over stdio with this data directory (ARD_MCP_DATA_DIR). With --write it is merged into the "
        "host's file: Claude Desktop's claude_desktop_config.json (~/.config/Claude on Linux, ~/Library/Application Support/"
        "Claude on macOS, %APPDATA%\\Claude on Windows), Claude Code's ~/.claude.json (user scope, as `claude mcp add --scope "
        "user` writes it), Cursor's ~/.cursor/mcp.json, VS Code's .vscode/mcp.json in the current folder. Every other server "
        "in it stays, and its comments; the file as it was before the first write is kept as FILE.bak. Restart the host (or "
        "reload its MCP servers) afterwards.",
    )
    common(parser)
    parser.add_argument("host", choices=sorted(HOSTS), metavar="HOST", help=f"one of {', '.join(sorted(HOSTS))}")
    parser.add_argument("--write", action="store_true", help="merge the entry into the host's configuration file")
    parser.add_argument("--name", default="ard", help="the server's name in the host (default %(default)s)")
    parser.add_argument("--path", type=Path, default=None, metavar="FILE", help="the host's file, where it is not in its usual place")


def host_config_command(args: argparse.Namespace) -> int:
    host = HOSTS[args.host]
    path = args.path or host.where()
    entry = server_entry(host, args.data_dir, args.model_dir)
    print(json.dumps({host.key: {args.name: entry}}, indent=2, ensure_ascii=False))
    if args.host == "claude-code":
        words = [w for k, v in entry["env"].items() for w in ("--env", f"{k}={v}")] + [args.name, "--", entry["command"], *entry["args"]]
        print(shown(f"# or: claude mcp add --scope user {shlex.join(words)}"), file=sys.stderr)
    if not args.write:
        print(shown(f"# {host.title}: this goes in {path} (`ard-mcp host-config {args.host} --write` merges it there)"), file=sys.stderr)
        return 0
    try:
        text, before = merged(path, host.key, args.name, entry)
        if before == "unchanged":
            print(shown(f"unchanged: {path} already has this server {args.name!r}; nothing was written"), file=sys.stderr)
            return 0
        backup = write(path, text)
    except (OSError, ValueError) as exc:
        print(shown(f"ard-mcp: {exc}"), file=sys.stderr)
        return 2
    kept = f"; your original file is {backup}" if backup else ""
    action = "replaced the server" if before == "replaced" else "added the server"
    print(shown(f"{action} {args.name!r} in {path}{kept}; restart {host.title} to use it"), file=sys.stderr)
    return 0
