"""Where the registry's logs go and how much of them: stderr (stdout is the MCP stdio channel), with the
control characters of the text they quote escaped (`terminal_text`): log lines quote URLs, identifiers and
request paths anyone can send, and stderr is often the operator's terminal."""

from __future__ import annotations

import logging
import sys

from ard_mcp.surfaces.cli.terminal_text import shown

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


def configure_logging(level: str, form: str = "text") -> None:
    """Logs to stderr at `level`, the libraries in `NOISY` from warnings up: escaped text lines, or with `form`
    `json` one JSON object a line (`monitoring.json_logs`)."""
    handler = logging.StreamHandler(sys.stderr)
    if form == "json":
        from ard_mcp.monitoring.json_logs import JsonFormatter

        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(EscapingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
    for noisy in NOISY:
        logging.getLogger(noisy).setLevel(logging.WARNING)
