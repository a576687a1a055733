"""Where the registry's logs go and how much of them: stderr (stdout is the MCP stdio channel)."""

from __future__ import annotations

import logging
import sys

NOISY = ("chromadb", "httpx", "httpx2", "mcp.server.lowlevel")
"""Libraries that log every request at INFO: only their warnings are kept (a line per request cost a call
through the registry 3 ms, `bench/invocation.py`)."""


def configure_logging(level: str) -> None:
    """Logs to stderr at `level`, the libraries in `NOISY` from warnings up."""
    logging.basicConfig(level=level.upper(), stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True)
    for noisy in NOISY:
        logging.getLogger(noisy).setLevel(logging.WARNING)
