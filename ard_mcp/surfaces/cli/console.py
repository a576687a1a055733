"""What the command line shows a person: the progress bar and the summaries of `ingest` and `crawl`.

Summaries are for reading, so a warning that every entry of a catalog earns the same way (a v0.5 catalog's
`urn:ai:` prefix: 733 identical lines for the benchmark catalogs) is one line with a count; `--json`
still lists each warning with its entry.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterable
from typing import Any

from ard_mcp.surfaces.cli.terminal_text import shown

# `FILE: entries[3].data.entries[0]` (a crawl: `URL.entries[3]`): where in a manifest an entry sits
_LOCATION = re.compile(r"^(?P<where>.*?entries\[\d+\](?:\.data\.entries\[\d+\])*)(?:\.|: )(?P<what>.*)$", re.DOTALL)
# the parts of a message that name the entry's own values: quoted text, identifiers, numbers
_VALUES = re.compile(r"'[^']*'|\"[^\"]*\"|urn:\S+|\d+")


class ProgressBar:
    """A one-line progress bar on stderr (stdout may be a pipe the user is reading JSON from). With nothing
    to embed (an unchanged re-ingest) it says so once instead of drawing `0/0 texts (0/s)`."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.started = time.monotonic()
        self.tty = sys.stderr.isatty()
        self.last = -1.0
        self.said_nothing = False

    def __call__(self, done: int, total: int) -> None:
        if total == 0:
            if not self.said_nothing:
                print(f"{self.label}: nothing new to embed", file=sys.stderr, flush=True)
            self.said_nothing = True
            return
        now = time.monotonic()
        if done < total and now - self.last < (0.1 if self.tty else 5.0):
            return
        self.last = now
        width = 30
        filled = int(width * done / total)
        rate = done / max(now - self.started, 1e-6)
        line = f"{self.label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} texts ({rate:.0f}/s)"
        sys.stderr.write(("\r" + line) if self.tty else line + "\n")
        if self.tty and done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def collapsed(warnings: Iterable[str]) -> list[str]:
    """The warnings as summary lines: those that differ only in their entry and its values become one line,
    `N entries: <the first one's message> (first at <its location>)`, in order of first appearance."""
    groups: dict[str, list[tuple[str, str, str]]] = {}
    for warning in warnings:
        found = _LOCATION.match(warning)
        key = _VALUES.sub("_", found["what"]) if found else warning
        groups.setdefault(key, []).append((found["where"], found["what"], warning) if found else ("", warning, warning))
    lines = []
    for members in groups.values():
        where, what, warning = members[0]
        lines.append(warning if len(members) == 1 else f"{len(members)} entries: {what} (first at {where}; --json lists each)")
    return lines


def print_ingest(report: Any) -> None:
    """`ingest`'s summary on stdout: the counts, every rejection, the warnings collapsed."""
    print(
        f"added {report.added}, updated {report.updated}, unchanged {report.unchanged}, rejected {len(report.rejected)}, "
        f"warnings {len(report.warnings)}"
    )
    _print_findings(report)


def _print_findings(report: Any) -> None:
    for reason in report.rejected:
        print(shown(f"  rejected {reason}"))
    for warning in collapsed(report.warnings):
        print(shown(f"  warning {warning}"))


def print_crawl(report: Any) -> None:
    """`crawl`'s summary on stdout: the counts, each document fetched, errors, rejections and warnings."""
    print(
        f"documents {len([s for s in report.sources if s.status != 'not-found'])}: added {report.added}, updated {report.updated}, "
        f"unchanged {report.unchanged}, removed {len(report.removed)}, rejected {len(report.rejected)}, warnings {len(report.warnings)}"
    )
    for source in report.sources:
        if source.status != "not-found":
            detail = f" ({source.error})" if source.error else f" ({source.entries} entries)"
            print(shown(f"  {source.status:<12} {source.url} [{source.via}]{detail}"))
    for registry in report.registries:
        print(shown(f"  registry     {registry}"))
    for error in report.errors:
        print(shown(f"  error {error}"))
    _print_findings(report)
