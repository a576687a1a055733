"""The `ard-mcp` command: a host's `serve --shared` goes straight to the front-end (`surfaces.frontend.quick`),
without the command line's imports, which took 0.7 s of the host's first `tools/list`, and a plain `search` to a
running back-end (`surfaces.cli_search.quick`) likewise; everything else to the command line (`assembly.cli`)."""

from __future__ import annotations

import sys

from ard_mcp.surfaces.cli import search as cli_search
from ard_mcp.surfaces.sharing.frontend import quick


def main() -> int:
    shared = quick(sys.argv[1:])
    if shared is not None:
        return shared
    searched = cli_search.quick(sys.argv[1:])
    if searched is not None:
        return searched
    from ard_mcp.assembly.cli import main as command_line

    return command_line()
