"""`ard-mcp host-config HOST [--entry ID | --url URL] [--write]`: the block that attaches a server to an MCP host.

Why a command: a host starts its servers from a JSON file with no shell and often another PATH, so a
hand-written `"command": "ard-mcp"` failed wherever the virtual environment was not on the host's PATH, and
`uvx ard-mcp` works only once the package is published. By default this prints the entry for this very install:
the absolute path of its own `ard-mcp` executable and its data directory. `--url` gives the block for an ard-mcp
served over HTTP, and `--entry` the block of a catalog entry's server (its remote, or its npm or PyPI package),
each from `host_blocks`, the function the web page shows its blocks from, so the two never differ (issue #55).

`--write` merges the block into the host's file, keeping every other server the file holds, its comments and
trailing commas (which VS Code, Cursor and Claude Code accept: `jsonc`), and the person's original as
`FILE.bak`. A second `--write` of the same entry changes nothing and says so: it once said "replaced" and
overwrote the backup with the merged file, so the person's original was gone (issue #55).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ard_mcp.surfaces.cli import jsonc
from ard_mcp.surfaces.cli.terminal_text import shown
from ard_mcp.surfaces.host_blocks import HOSTS, Block, Host, Launch, Variable, block

__all__ = ["HOSTS", "Host", "host_config_command", "host_config_commands", "merged", "own_launch", "write"]


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


def own_launch(data_dir: Path, model_dir: Path | None = None) -> Launch:
    """This install, started over stdio with its own data directory (and model, if one was named), by absolute
    paths, since a host starts it from a directory of its own. `--shared`: every host (and window) a person
    attaches shares one back-end of the data directory (`frontend`)."""
    env = [Variable("ARD_MCP_DATA_DIR", str(data_dir.expanduser().absolute()))]
    if model_dir is not None:
        env.append(Variable("ARD_MCP_MODEL_DIR", str(model_dir.expanduser().absolute())))
    return Launch((*own_executable(), "serve", "--shared"), tuple(env))


def _entry_launch(reference: str) -> tuple[str, Launch]:
    """(server name, launch) of a catalog entry: a JSON file holding it (`-`: standard input), else its
    identifier in the bundled snapshot. ValueError saying why there is none."""
    from ard_mcp.formats.catalog import CatalogEntry
    from ard_mcp.invocation.policy import Limits
    from ard_mcp.invocation.targets import Offline, target_of
    from ard_mcp.surfaces.host_launch import launch_of, package_run, server_name

    if reference == "-" or Path(reference).is_file():
        raw = json.loads(sys.stdin.read() if reference == "-" else Path(reference).read_text(encoding="utf-8"))
    else:
        from ard_mcp.index.snapshot import read

        raw = next((e for e in read().entries if e.get("identifier") == reference), None)
        if raw is None:
            raise ValueError(
                f"{reference!r} is neither a file nor an entry of the bundled snapshot: save the entry's JSON (GET /agents/ID, "
                "the get_agent tool, or its page's raw JSON) to a file and give its path"
            )
    entry = CatalogEntry.model_validate(raw)
    target = target_of(entry.stored(), Limits())
    run = package_run(entry.stored())
    launch = launch_of(target, run)
    if launch is None:
        why = getattr(run, "problem", None) or (target.reason if isinstance(target, Offline) else None) or getattr(run, "reason", "")
        raise ValueError(f"no configuration to give for {entry.identifier}: {why or 'it names no remote and no package'}")
    return server_name(entry.identifier), launch


def _inputs_merged(document: dict[str, Any], ours: list[dict[str, Any]]) -> list[Any]:
    """VS Code's `inputs` with ours: each replacing the one of its id, the person's others kept."""
    listed = document.get("inputs")
    theirs = listed if isinstance(listed, list) else []
    ids = {i["id"] for i in ours}
    kept = [i for i in theirs if not (isinstance(i, dict) and i.get("id") in ids)]
    return kept + ours


def merged(path: Path, key: str, name: str, entry: dict[str, Any], inputs: list[dict[str, Any]] | None = None) -> tuple[str, str | None]:
    """The host file's text with `entry` as server `name` (and VS Code's `inputs` it uses), every other key,
    server and comment as it was, and what was there before under that name: "replaced", "unchanged", or None
    (added). A file that is not a JSON object (comments and trailing commas allowed) is refused, never replaced."""
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
        if before == entry and all(i in _inputs_merged(document, []) for i in inputs or []):
            return text, "unchanged"
    else:
        document, before = {}, None
    written = jsonc.with_member(text, (key, name), entry)
    expected = {**document, key: {**(document.get(key) or {}), name: entry}}
    if inputs:
        expected["inputs"] = _inputs_merged(document, inputs)
        written = jsonc.with_top_member(written, "inputs", expected["inputs"])
    if jsonc.parsed(written) != expected:
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
        help="print (or --write) the configuration that attaches this install, or a catalog entry's server, to an MCP host",
        description="Prints the server entry for HOST's configuration file: this install's own ard-mcp executable by its "
        "absolute path, started over stdio with this data directory (ARD_MCP_DATA_DIR); with --url, an ard-mcp served over "
        "HTTP; with --entry, a catalog entry's server (its remote URL, or npx/uvx with its npm or PyPI package), as the web "
        "page shows it. With --write it is merged into the host's file: Claude Desktop's claude_desktop_config.json "
        "(~/.config/Claude on Linux, ~/Library/Application Support/Claude on macOS, %APPDATA%\\Claude on Windows), Claude "
        "Code's ~/.claude.json (user scope, as `claude mcp add --scope user` writes it), Cursor's ~/.cursor/mcp.json, VS "
        "Code's .vscode/mcp.json in the current folder (with an `inputs` prompt for each secret). Every other server in it "
        "stays, and its comments; the file as it was before the first write is kept as FILE.bak. Restart the host (or "
        "reload its MCP servers) afterwards.",
    )
    common(parser)
    parser.add_argument("host", choices=sorted(HOSTS), metavar="HOST", help=f"one of {', '.join(sorted(HOSTS))}")
    what = parser.add_mutually_exclusive_group()
    what.add_argument(
        "--entry", metavar="ID|FILE", help="a catalog entry: its identifier in the bundled snapshot, or a file of its JSON (- reads it)"
    )
    what.add_argument("--url", metavar="URL", help="an ard-mcp served over HTTP, by its MCP endpoint (http://HOST:PORT/mcp)")
    parser.add_argument("--transport", choices=("http", "sse"), default="http", help="--url's transport (default %(default)s)")
    parser.add_argument("--write", action="store_true", help="merge the entry into the host's configuration file")
    parser.add_argument("--name", default=None, help="the server's name in the host (default ard, or the entry's own)")
    parser.add_argument("--path", type=Path, default=None, metavar="FILE", help="the host's file, where it is not in its usual place")
    parser.add_argument("--prepare-only", action="store_true", help=argparse.SUPPRESS)  # what a printing run starts in the background


def _block(args: argparse.Namespace) -> Block:
    host = HOSTS[args.host]
    if args.entry:
        name, launch = _entry_launch(args.entry)
    else:
        name = "ard"
        launch = Launch.remote(args.url, args.transport) if args.url else own_launch(args.data_dir, args.model_dir)
    return block(host, args.name or name, launch)


def prepare(launch: Launch) -> str:
    """Ask the configured ard-mcp, as a host of each protocol version would, its handshake and first tool list
    (`sharing.warm`), so a host's first start is answered at once; what to tell the person. On a scratch data
    directory, whose back-end is stopped after: the answers are kept for every directory of these settings,
    and the person's own directory is left for their host to start."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

    from ard_mcp.surfaces.sharing.frontend import stop_idle
    from ard_mcp.surfaces.sharing.warm import warm

    versions = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)
    with tempfile.TemporaryDirectory(prefix="ard-mcp-prepare-") as scratch:
        env = {**os.environ, **{v.name: v.value for v in launch.variables if v.value is not None}, "ARD_MCP_DATA_DIR": scratch}
        try:
            answered = warm(launch.command, env, HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS)
        finally:
            stop_idle(Path(scratch))
    if len(answered) == len(versions):
        return f"prepared: the host's first start is answered at once (handshake and tool list kept for MCP {', '.join(versions)})"
    return "could not prepare the first start (it will wait about a second for ard-mcp to start): `ard-mcp serve --shared` did not answer"


def _prepare_in_background(args: argparse.Namespace) -> str:
    """Start `host-config --prepare-only` on its own, so printing returns at once and the first start is prepared
    (a few seconds) before the person has pasted the entry and restarted their host; what to tell them."""
    command = [*own_executable(), "host-config", args.host, "--prepare-only", "--data-dir", str(args.data_dir)]
    command += ["--model-dir", str(args.model_dir)] if args.model_dir is not None else []
    try:
        subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError as exc:
        return f"# could not prepare the first start in the background ({exc}); it will wait about a second for ard-mcp to start"
    return "# preparing its first start in the background (a few seconds), so the host's first tools/list is answered at once"


def host_config_command(args: argparse.Namespace) -> int:
    host = HOSTS[args.host]
    path = args.path or host.file()
    if args.prepare_only:
        print(shown(prepare(own_launch(args.data_dir, args.model_dir))), file=sys.stderr)
        return 0
    try:
        found = _block(args)
    except (OSError, ValueError) as exc:
        print(shown(f"ard-mcp: {exc}"), file=sys.stderr)
        return 2
    if found.document is None:
        print(shown(f"# {found.note}"), file=sys.stderr)
        return 1
    print(found.text)
    if found.command:
        print(shown(f"# or: {found.command}"), file=sys.stderr)
    if not args.write:
        print(shown(f"# {host.title}: this goes in {path} (the same command with --write merges it there)"), file=sys.stderr)
        if not args.entry and not args.url:
            print(shown(_prepare_in_background(args)), file=sys.stderr)
        return 0
    name, entry = next(iter(found.document[host.key].items()))
    try:
        text, before = merged(path, host.key, name, entry, found.document.get("inputs"))
        backup = write(path, text) if before != "unchanged" else None
    except (OSError, ValueError) as exc:
        print(shown(f"ard-mcp: {exc}"), file=sys.stderr)
        return 2
    if before == "unchanged":
        print(shown(f"unchanged: {path} already has this server {name!r}; nothing was written"), file=sys.stderr)
    else:
        kept = f"; your original file is {backup}" if backup else ""
        action = "replaced the server" if before == "replaced" else "added the server"
        print(shown(f"{action} {name!r} in {path}{kept}; restart {host.title} to use it"), file=sys.stderr)
    if not args.entry and not args.url:  # ard-mcp's own server: have its first answers ready for the host
        print(shown(prepare(own_launch(args.data_dir, args.model_dir))), file=sys.stderr)
    return 0
