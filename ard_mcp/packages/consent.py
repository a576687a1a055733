"""The person's consent to install and start a package server: what they are asked, and what they said.

A package server is code from a registry the person has never looked at, reachable by a model that can be
steered by injected text; nothing is installed or started before the person says yes to that package at
that version. Over stdio the host asks them (MCP form elicitation, `consent_question`); a host without
elicitation, and every HTTP transport, uses what was approved beforehand from the command line (`ard-mcp
packages allow KEY`). An approval is for one registry, name and version (`specs.PackageSpec.key`): an
update is a new question. Network access is asked for separately and is off unless granted.

Approvals are kept in `<data-dir>/packages/approved.json`, written whole to a temporary file and renamed,
so a crash never leaves half a file; a file that cannot be read is reported and read as no approvals
(nothing runs that was not approved, and no read fails).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

from ard_mcp.formats.timestamps import utc_text

log = logging.getLogger(__name__)
FILE = "approved.json"


class PackageConsent(BaseModel):
    """The form the person fills in (form elicitation: flat, primitive fields, nothing secret)."""

    network: bool = Field(default=False, title="Let it reach the network", description="Off: it runs with no network at all.")


@dataclass(frozen=True)
class Approval:
    key: str  # registry:name@version
    network: bool
    at: str
    by: str  # "the person, asked by their host" or "the command line"


class Approvals:
    """The approved package versions of one data directory (safe to share between threads)."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / FILE
        self._lock = threading.Lock()

    def get(self, key: str) -> Approval | None:
        return next((a for a in self.all() if a.key == key), None)

    def all(self) -> list[Approval]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            return [Approval(**item) for item in raw["approved"]]
        except FileNotFoundError:
            return []
        except (OSError, ValueError, TypeError, KeyError) as exc:
            log.error("package approvals %s cannot be read (%s): no package is approved until it is fixed or removed", self.path, exc)
            return []

    def allow(self, key: str, network: bool, by: str) -> Approval:
        approval = Approval(key, network, utc_text(datetime.now(UTC), "seconds"), by)
        with self._lock:
            self._write([*(a for a in self.all() if a.key != key), approval])
        return approval

    def revoke(self, key: str) -> bool:
        with self._lock:
            kept = [a for a in self.all() if a.key != key]
            found = len(kept) != len(self.all())
            if found:
                self._write(kept)
        return found

    def _write(self, approvals: list[Approval]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(f".{os.getpid()}.tmp")
        text = json.dumps({"approved": [asdict(a) for a in approvals]}, indent=2)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, self.path)
