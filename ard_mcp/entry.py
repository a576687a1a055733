"""The `ard-mcp` command: a host's `serve --shared` goes straight to the front-end (`surfaces.frontend.quick`),
without the command line's imports, which took 0.7 s of the host's first `tools/list`; everything else to
the command line (`assembly.cli`)."""

from __future__ import annotations

import sys

from ard_mcp.surfaces.frontend import quick


def main() -> int:
    shared = quick(sys.argv[1:])
    if shared is not None:
        return shared
    from ard_mcp.assembly.cli import main as command_line

    return command_line()
