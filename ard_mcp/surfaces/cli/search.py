"""`ard-mcp search` through the back-end that `serve --shared` shares (`frontend`, `backend`), issue #55.

Why: a search run in its own process loaded the model each time (2-6 s), and could not open a data directory
a back-end held (embedded Chroma admits one process). Where a back-end with this registry's settings runs,
the search is its `search_agents` tool called over the back-end's socket (`initialize`, then `tools/call`):
milliseconds. Where none runs, `served` starts one as a host's front-end would (for a registry kept in the
data directory), so the next search is fast too; it stops `ARD_MCP_BACKEND_IDLE` seconds after (default 60),
and a command that must claim the directory before then asks it to stop at once (`frontend.stop_idle`).

The answer is printed as the in-process search prints it (`print_search`, one function for both), from the
tool's structured content: the same `SearchResponse`, dumped the same way. A search the back-end cannot
serve exactly as the command line would (another `--public-url` or trust policy, say) is run in process.

`quick` is the console script's path, before the command line's parser and its imports (0.6 s): a plain
search on a back-end that already runs, stdlib only. Anything else, and every refusal, goes on to the
command line, which checks the input itself and so says what it always said.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ard_mcp.surfaces.cli.terminal_text import shown, shown_json
from ard_mcp.surfaces.sharing import frontend

if TYPE_CHECKING:
    import argparse

    from ard_mcp.config import Config

log = logging.getLogger(__name__)
TOOL = "search_agents"
PROTOCOL = "2025-11-25"  # the newest revision with the `initialize` handshake
DETAILS = ("compact", "minimal", "summary", "full")
# What `serve` reads that a command-line search does not, and that changes a search's answer: with one set,
# `quick` leaves the search to the command line, which compares the two configurations in full (`served`).
SERVE_ONLY = ("ARD_MCP_PUBLIC_URL", "ARD_MCP_TRUST_POLICY")
# The settings `search` shares with `serve`, as `serve` flags: a back-end started with these is this registry.
CARRIED = (("model_dir", "--model-dir"), ("rerank", "--rerank"), ("chroma_url", "--chroma-url"), ("store_url", "--store-url"))
_ERROR_PREFIX = f"Error executing tool {TOOL}: "  # how the SDK words a tool's own error (a registry error's message follows)


def print_search(response: dict[str, Any]) -> None:
    """A search's answer on stdout, as `search_agents` gives it (every path prints through this)."""
    print(shown_json(json.dumps(response, indent=2, ensure_ascii=False)))


def arguments(text: str, filter: Any, page_size: int, page_token: str | None, detail: str) -> dict[str, Any]:
    """The tool's arguments for the command line's search: this registry only, as the in-process search asks."""
    given = {"text": text, "filter": filter, "pageSize": page_size, "pageToken": page_token, "detail": detail, "federation": "none"}
    return {name: value for name, value in given.items() if value is not None}


class _Session:
    """An MCP session over a back-end connection, one request at a time (the command line asks two things)."""

    def __init__(self, connection: socket.socket) -> None:
        self._file = connection.makefile("rwb")
        self._next = 0

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The result of `method`; OSError where the back-end answers with an error or goes away."""
        self._next += 1
        self._send({"jsonrpc": "2.0", "id": self._next, "method": method, "params": params})
        while True:
            line = self._file.readline()
            if not line:
                raise OSError("the ard-mcp back-end closed the connection")
            message = json.loads(line)
            if message.get("id") == self._next and "method" not in message:
                if "error" in message:
                    raise OSError(f"the ard-mcp back-end refused {method}: {message['error'].get('message')}")
                result: dict[str, Any] = message.get("result") or {}
                return result
            if "method" in message and "id" in message:  # a question for a host (none comes for a search): declined
                self._send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "not supported"}})

    def notify(self, method: str) -> None:
        self._send({"jsonrpc": "2.0", "method": method})

    def _send(self, message: dict[str, Any]) -> None:
        self._file.write(json.dumps(message).encode() + b"\n")
        self._file.flush()


def call(connection: socket.socket, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The `tools/call` result of tool `name` over a new MCP session on `connection`."""
    session = _Session(connection)
    client = {"name": "ard-mcp-cli", "version": "1"}
    session.request("initialize", {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": client})
    session.notify("notifications/initialized")
    return session.request("tools/call", {"name": name, "arguments": arguments})


def answered(result: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The response a search result holds, or None and the registry's refusal as the command line words it."""
    structured = result.get("structuredContent")
    if not result.get("isError") and isinstance(structured, dict):
        return structured, ""
    texts = [part.get("text", "") for part in result.get("content") or [] if isinstance(part, dict)]
    said = " ".join(texts) or "the search failed"
    return None, said.removeprefix(_ERROR_PREFIX)


def _searched(connection: socket.socket, query: dict[str, Any]) -> int:
    """Print what the back-end found (0), or its refusal as the command line prints a registry error (2)."""
    with connection:
        response, refusal = answered(call(connection, TOOL, query))
    if response is None:
        print(shown(f"ard-mcp: {refusal}"), file=sys.stderr)
        return 2
    print_search(response)
    return 0


def quick(argv: Sequence[str]) -> int | None:
    """`ard-mcp search TEXT [--filter F] [--page-size N] [--page-token T] [--detail D] [--data-dir DIR]` served by a
    running back-end of a plain `serve`, before the command line is imported: its exit status (0), else None."""
    if len(argv) < 2 or argv[0] != "search" or any(os.environ.get(name) for name in SERVE_ONLY):
        return None
    given, text, words = {"--detail": "compact", "--page-size": "10"}, None, list(argv[1:])
    while words:
        word = words.pop(0)
        name, equals, value = word.partition("=")
        if name in ("--filter", "--page-size", "--page-token", "--detail", "--data-dir"):
            if not equals:
                if not words:
                    return None
                value = words.pop(0)
            given[name] = value
        elif word.startswith("-") or text is not None:
            return None  # any other option, or a second text: the command line's parser reads it
        else:
            text = word
    try:
        page_size, found = int(given["--page-size"]), json.loads(given["--filter"]) if "--filter" in given else None
    except ValueError:
        return None
    if text is None or given["--detail"] not in DETAILS or not (found is None or isinstance(found, dict)):
        return None
    if "--data-dir" in given:
        data_dir = Path(given["--data-dir"])
    elif os.environ.get("ARD_MCP_DATA_DIR"):
        data_dir = Path(os.environ["ARD_MCP_DATA_DIR"])
    else:
        from ard_mcp.config import default_data_dir

        data_dir = default_data_dir()
    connection = frontend.attach(frontend.socket_path(data_dir.expanduser().absolute(), frontend.settings_of(["serve"])))
    if connection is None:
        return None
    query = arguments(text, found, page_size, given.get("--page-token"), given["--detail"])
    with connection:
        try:
            response, _ = answered(call(connection, TOOL, query))
        except (OSError, ValueError):
            return None
    if response is None:
        return None  # refused: the command line checks the input itself, and says so as it always did
    print_search(response)
    return 0


def served(args: argparse.Namespace, config_of: Callable[[argparse.Namespace], Config], query: dict[str, Any]) -> int | None:
    """Search through the back-end of this registry, started where none runs: the exit status, or None where no
    back-end can answer exactly as the in-process search would (the caller then searches in process)."""
    import dataclasses

    from ard_mcp.surfaces.cli.arguments import build_parser

    parser = build_parser()
    defaults = parser.parse_args(["search", "-"])
    data_dir = args.data_dir.expanduser().absolute()
    words = [w for name, flag in CARRIED if getattr(args, name) != getattr(defaults, name) for w in (flag, str(getattr(args, name)))]
    argv = ["serve", "--data-dir", str(data_dir), *words]
    config = config_of(parser.parse_args(argv))
    if dataclasses.replace(config, starter=None) != config_of(args):
        return None
    path = frontend.socket_path(data_dir, frontend.settings_of(argv))
    connection = frontend.attach(path)
    if connection is None and (args.store_url or args.chroma_url or (config.starter is not None and _new(data_dir))):
        # None started: a back-end would give a new registry the bundled snapshot (a search changes nothing), and
        # one on a PostgreSQL store or a Chroma server would hold their connections unasked; this process reaches
        # them itself, and says itself what is wrong with them.
        return None
    try:
        if connection is None:
            connection = frontend.connected(path, frontend.backend_command(argv), data_dir / "backend.log")
        return _searched(connection, query)
    except (OSError, ValueError) as exc:
        log.info("searching in this process: %s", exc)
        return None


def _new(data_dir: Path) -> bool:
    """Whether the store in `data_dir` was never written to (`index.snapshot.is_new`), read without claiming it."""
    import sqlite3

    from ard_mcp.errors import ArdError
    from ard_mcp.index.backup import connect_read_only
    from ard_mcp.index.snapshot import STATE

    try:
        db = connect_read_only(data_dir)
    except (ArdError, sqlite3.Error):
        return True
    try:
        noted = db.execute("SELECT count(*) FROM meta WHERE key IN (?, 'model_id')", (STATE,)).fetchone()[0]
        return not noted and db.execute("SELECT 1 FROM agents LIMIT 1").fetchone() is None
    except sqlite3.Error:
        return True
    finally:
        db.close()
