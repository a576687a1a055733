"""Where the registry's logs go and how much of them: stderr (stdout is the MCP stdio channel), with the
control characters of the text they quote escaped (`terminal_text`): log lines quote URLs, identifiers and
request paths anyone can send, and stderr is often the operator's terminal."""

from __future__ import annotations

import logging
import sys

from ard_mcp.surfaces.terminal_text import shown

NOISY = ("chromadb", "httpx", "httpx2", "mcp.server.lowlevel")
"""Libraries that log every request at INFO: only their warnings are kept (a line per request cost a call
through the registry 3 ms, `bench/invocation.py`)."""


class EscapingFormatter(logging.Formatter):
    """Each record one line whatever its message holds (a line break in a quoted value cannot forge another
    record), and a traceback's lines each escaped."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 (logging's name)
        return shown(super().formatMessage(record))

    def formatException(self, ei: logging._SysExcInfoType) -> str:  # noqa: N802
        return "\n".join(shown(line) for line in super().formatException(ei).split("\n"))


def configure_logging(level: str) -> None:
    """Logs to stderr at `level`, the libraries in `NOISY` from warnings up."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(EscapingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
    for noisy in NOISY:
        logging.getLogger(noisy).setLevel(logging.WARNING)
