"""The invocation audit log: one JSON line per call or tool-list fetch, refused ones included (who, which entry
and tool, the endpoint, the outcome, how long, how many bytes; never the arguments or the answer), appended
to `invocations.jsonl` in the data directory, which an operator reads with `ard-mcp invocations` or
`GET /invocations`.

A line is written with one `write` on a file opened for appending, so processes sharing the data directory
interleave whole lines; it reaches the operating system before the call's answer goes out (no fsync: a
crash of the machine, not of the registry, can lose the newest lines). The directory is made once, on the
first line: making it on every line took 0.4 ms a call (`bench/invocation.py`, profiled). Reading takes
the newest lines from the end of the file, and skips one that is not a JSON object (a line cut by a crash)
rather than failing.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Literal

from pydantic import Field

from ard_mcp.formats.catalog import WireModel

log = logging.getLogger(__name__)
FILE = "invocations.jsonl"
MAX_READ = 1000
_TAIL_BYTES = 512 * 1024  # what a read looks at: more than MAX_READ lines


class AuditRecord(WireModel):
    at: str = Field(description="When the call ended (UTC).")
    caller: str = Field(description="The credential's name; 'local' over stdio and the command line, 'anonymous' on an open registry.")
    identifier: str
    tool: str
    action: Literal["call", "tools"] = Field(default="call", description="call: a call of a tool; tools: a fetch of its tool list.")
    endpoint: str | None = None
    protocol: str | None = None
    outcome: str = Field(
        description="ok, agent-error (the agent's own error), refused (the registry's policy), not-found, invalid (the call's "
        "arguments), unreachable, timeout, or error (a fault of the registry's own)."
    )
    status: int | None = Field(default=None, description="The HTTP status an AIDIP agent or this registry answered with.")
    durationMs: float
    bytes: int = Field(default=0, description="The size of the agent's answer as returned.")
    detail: str | None = Field(default=None, description="Why, for anything but ok.")
    integrity: str | None = Field(default=None, description="A package server's: the registry's integrity data for what was run.")


class InvocationLog(WireModel):
    """The newest records of the audit log, newest first (`GET /invocations`, for operators)."""

    records: list[AuditRecord]


class AuditLog:
    def __init__(self, directory: Path) -> None:
        self.path = directory / FILE
        self._made = False

    def append(self, record: AuditRecord) -> None:
        line = (record.model_dump_json() + "\n").encode()
        try:
            if not self._made:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._made = True
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        except OSError as exc:  # the call happened; a full disk must not turn its answer into an error
            log.error("invocation audit log %s: %s", self.path, exc)

    def newest(self, limit: int = 100) -> list[AuditRecord]:
        """The newest `limit` records (at most `MAX_READ`), newest first."""
        try:
            with open(self.path, "rb") as f:
                f.seek(max(0, f.seek(0, os.SEEK_END) - _TAIL_BYTES))
                lines = f.read().splitlines()
        except FileNotFoundError:
            return []
        found: list[AuditRecord] = []
        for raw in reversed(lines):
            if len(found) >= min(limit, MAX_READ):
                break
            try:
                found.append(AuditRecord.model_validate(json.loads(raw)))
            except ValueError:
                continue
        return found
