"""The person's consent to install and start a package server: what they are asked, and what they said.

A package server is code from a registry the person has never looked at, reachable by a model that can be
steered by injected text; nothing is installed or started before the person says yes to exactly what will
run (`plans.LaunchPlan`). Over stdio the host asks them (MCP form elicitation, `PackageConsent`); a host
without elicitation, and every HTTP transport, uses what was approved beforehand from the command line
(`ard-mcp packages allow plan:DIGEST`, the digest a refusal names; the refused launch is kept in
`requested.json` so the command line can show what it approves). An approval is for one launch: another
version, argument, variable or registry is a new question that says what changed. The installed files'
integrity is recorded on the first install after the approval and checked on every later one; files that
differ are refused until the person is asked again (`changed` holds what was found).

Approvals are kept in `<data-dir>/packages/approved.json`, written whole to a temporary file and renamed,
so a crash never leaves half a file; a file that cannot be read, or an item that is not an approval (one
written before launches were recorded), is reported and read as no approval (nothing runs that was not
approved, and no read fails).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ard_mcp.formats.timestamps import utc_text
from ard_mcp.packages.grants import ROOT, Grant
from ard_mcp.packages.plans import LaunchPlan

log = logging.getLogger(__name__)
FILE = "approved.json"
REQUESTED = "requested.json"
MAX_REQUESTED = 100  # refused launches kept for the command line to approve, newest last


class PackageConsent(BaseModel):
    """The form the person fills in (form elicitation: flat, primitive fields, nothing secret); `FolderConsent`
    where the launch works on a folder or file of theirs."""

    network: bool = Field(default=False, title="Let it reach the network", description="Off: it runs with no network at all.")
    web_pages: bool = Field(
        default=False,
        title="Let it send me to web pages",
        description="Off: it may not ask you to open a page it names (a sign-in link, say); its forms still reach you.",
    )


class FolderConsent(PackageConsent):
    path: str = Field(title="Folder or file to give it", description="Its full path on this machine; it sees nothing else of your files.")
    writable: bool = Field(default=False, title="Let it change files there", description="Off: it may only read them.")


class RootConsent(FolderConsent):
    path: str = Field(
        default="",
        title="A folder it may work in (optional)",
        description="Its full path, given to it as its root folder where it asks for one; empty: none of your files.",
    )


_NETWORK_ON = Field(default=True, title="Let it reach the network", description="On because it looks like it needs to; off: no network.")


class NetworkConsent(PackageConsent):
    network: bool = _NETWORK_ON


class NetworkFolderConsent(FolderConsent):
    network: bool = _NETWORK_ON


class NetworkRootConsent(RootConsent):
    network: bool = _NETWORK_ON


def form(asks_for: str | None, needs_network: bool) -> type[PackageConsent]:
    """The form for a launch: a field for its folder or file where it takes one (`grants`), an optional folder
    field where it takes none (`grants.ROOT`), the network box ticked where the package looks like it needs the
    network (`question.network_reasons`), unticked otherwise."""
    if asks_for == ROOT:
        return NetworkRootConsent if needs_network else RootConsent
    if asks_for:
        return NetworkFolderConsent if needs_network else FolderConsent
    return NetworkConsent if needs_network else PackageConsent


@dataclass(frozen=True)
class Approval:
    plan: LaunchPlan
    network: bool
    at: str
    by: str  # "the person, asked by their host" or "the command line"
    web_pages: bool = False  # it may ask the person to open a page it names (URL-mode elicitation)
    grant: Grant | None = None  # the folder or file it works on, where its launch takes one
    integrity: str | None = None  # the installed files', recorded on the first install after the approval
    changed: str | None = None  # an install whose integrity differs from `integrity`: refused until asked again

    @property
    def digest(self) -> str:
        return self.plan.digest

    @property
    def key(self) -> str:
        return self.plan.key

    def as_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "plan": self.digest,
            "launch": self.plan.as_json(),
            "network": self.network,
            "at": self.at,
            "by": self.by,
            "webPages": self.web_pages,
            "grant": self.grant.as_json() if self.grant is not None else None,
            "integrity": self.integrity,
            "changed": self.changed,
        }

    @classmethod
    def from_json(cls, raw: Any) -> Approval:
        """ValueError when `raw` is not an approval this version wrote (one of an older version is refused)."""
        if not isinstance(raw, dict) or "launch" not in raw:
            raise ValueError("not an approval of a launch (written before launches were recorded: approve it again)")
        plan = LaunchPlan.from_json(raw["launch"])
        if raw.get("plan") != plan.digest:
            raise ValueError(f"its digest {raw.get('plan')!r} is not its launch's ({plan.digest}): edited by hand?")
        integrity, changed = raw.get("integrity"), raw.get("changed")
        web_pages = raw.get("webPages", False)
        if (
            not isinstance(raw.get("network"), bool)
            or not isinstance(web_pages, bool)
            or not all(isinstance(v, str | None) for v in (integrity, changed))
        ):
            raise ValueError("network and webPages must be true or false, integrity and changed strings or null")
        grant = Grant.from_json(raw["grant"]) if raw.get("grant") is not None else None
        return cls(plan, raw["network"], str(raw.get("at", "")), str(raw.get("by", "")), web_pages, grant, integrity, changed)


def _now() -> str:
    return utc_text(datetime.now(UTC), "seconds")


class Approvals:
    """The approved launches of one data directory (safe to share between threads)."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / FILE
        self.requested_path = directory / REQUESTED
        self._lock = threading.Lock()
        # the file as last read, by its identity (inode, size, mtime): each call of a package server checks its
        # approval twice, and every write replaces the file (a new inode), which another process may do too
        self._read: tuple[tuple[int, int, int], list[Approval]] | None = None

    def get(self, digest: str) -> Approval | None:
        return next((a for a in self.all() if a.digest == digest), None)

    def of_package(self, registry: str, name: str) -> list[Approval]:
        """The approvals of any launch of that package, newest first."""
        return [a for a in reversed(self.all()) if (a.plan.registry, a.plan.name) == (registry, name)]

    def all(self) -> list[Approval]:
        try:
            found = os.stat(self.path)
        except OSError:
            return []
        identity = (found.st_ino, found.st_size, found.st_mtime_ns)
        read = self._read
        if read is not None and read[0] == identity:
            return list(read[1])
        approvals = self._parsed()
        self._read = (identity, approvals)
        return list(approvals)

    def _parsed(self) -> list[Approval]:
        found: list[Approval] = []
        for i, raw in enumerate(self._items(self.path, "approved")):
            try:
                found.append(Approval.from_json(raw))
            except ValueError as exc:
                log.error("package approvals %s, item %d, is not used: %s", self.path, i, exc)
        return found

    def allow(
        self, plan: LaunchPlan, network: bool, by: str, integrity: str | None = None, web_pages: bool = False, grant: Grant | None = None
    ) -> Approval:
        approval = Approval(plan, network, _now(), by, web_pages, grant, integrity)
        with self._lock:
            self._write([*(a for a in self.all() if a.digest != plan.digest), approval])
        return approval

    def record_integrity(self, digest: str, integrity: str, *, matches: bool) -> None:
        """Pin `integrity` to the approval (`matches`: it is what the person approved), or keep it as `changed`."""
        with self._lock:
            kept = self.all()
            updated = [
                (replace(a, integrity=integrity, changed=None) if matches else replace(a, changed=integrity)) if a.digest == digest else a
                for a in kept
            ]
            if updated != kept:
                self._write(updated)

    def revoke(self, target: str) -> int:
        """Remove the approval of `target` (a plan digest, or `registry:name@version`: every launch of it); how many went."""
        with self._lock:
            before = self.all()
            kept = [a for a in before if target not in (a.digest, a.key)]
            gone = len(before) - len(kept)
            if gone:
                self._write(kept)
        return gone

    def request(self, plan: LaunchPlan) -> None:
        """Keep a refused launch, so `ard-mcp packages allow plan:DIGEST` can show and approve exactly it."""
        with self._lock:
            items = [i for i in self._items(self.requested_path, "requested") if isinstance(i, dict) and i.get("plan") != plan.digest]
            items = [*items, {"plan": plan.digest, "launch": plan.as_json(), "at": _now()}][-MAX_REQUESTED:]
            _write_json(self.requested_path, {"requested": items})

    def requested(self, digest: str) -> LaunchPlan | None:
        """A refused launch by its digest (as a refusal named it), or None."""
        for item in self._items(self.requested_path, "requested"):
            if isinstance(item, dict) and item.get("plan") == digest:
                try:
                    plan = LaunchPlan.from_json(item.get("launch"))
                except ValueError:
                    return None
                return plan if plan.digest == digest else None
        return None

    def _items(self, path: Path, key: str) -> list[Any]:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            items = raw[key]
        except FileNotFoundError:
            return []
        except (OSError, ValueError, TypeError, KeyError) as exc:
            log.error("%s cannot be read (%s): read as empty until it is fixed or removed", path, exc)
            return []
        return items if isinstance(items, list) else []

    def _write(self, approvals: list[Approval]) -> None:
        _write_json(self.path, {"approved": [a.as_json() for a in approvals]})


def _write_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(json.dumps(value, indent=2) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, path)
