"""The `ard-mcp` command: a host's `serve` (plain or `--shared`) goes straight to the front-end
(`surfaces.frontend.quick`), without the command line's imports, which took 0.7 s of the host's first
`tools/list`, and a plain `search` to a running back-end (`surfaces.cli_search.quick`) likewise; everything
else to the command line (`assembly.cli`)."""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Sequence

from ard_mcp.surfaces.cli import search as cli_search
from ard_mcp.surfaces.sharing.frontend import quick


def main() -> int:
    served = quick(sys.argv[1:], _serve_here)
    if served is not None:
        return served
    searched = cli_search.quick(sys.argv[1:])
    if searched is not None:
        return searched
    from ard_mcp.assembly.cli import main as command_line

    return command_line()


def _serve_here(argv: Sequence[str], connection: socket.socket) -> threading.Thread | None:
    """A plain `serve`'s back-end in this process (`assembly.stdio`), imported in the front-end's background."""
    from ard_mcp.assembly.stdio import serve_here

    return serve_here(argv, connection)
