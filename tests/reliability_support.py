"""Shared by the reliability suite (`tests/test_reliability.py`, `bench/soak.py`): generated catalog entries,
real `ard-mcp` processes that can be killed with SIGKILL, a look into a data directory from outside, and
latency percentiles.

Sizes come from the environment, with short defaults for CI; `ARD_MCP_SOAK_*` names the long version
(see docs/reliability.md)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx
import psycopg

from tests import processes
from tests.processes import data_dir_of, free_port, quiet_env

PUBLISHER = "soak.example.org"

# Words the generated entries are made of: every entry has a name of its own (three syllables) and a
# combination of task, object and audience, so a search naming its description finds it and no other.
_SYLLABLES = "ka lo mi ru ve zan tor pel quin dra sho fen gul bri tas nok".split()
_TASKS = [
    ("convert", "converts", "Converter"),
    ("translate", "translates", "Translator"),
    ("summarize", "summarizes", "Summarizer"),
    ("schedule", "schedules", "Scheduler"),
    ("monitor", "monitors", "Monitor"),
    ("forecast", "forecasts", "Forecaster"),
    ("reconcile", "reconciles", "Reconciler"),
    ("classify", "classifies", "Classifier"),
    ("transcribe", "transcribes", "Transcriber"),
    ("audit", "audits", "Auditor"),
    ("validate", "validates", "Validator"),
    ("archive", "archives", "Archiver"),
]
_OBJECTS = [
    "invoices",
    "weather reports",
    "shipping labels",
    "medical records",
    "podcast episodes",
    "legal contracts",
    "satellite images",
    "payroll sheets",
    "customer emails",
    "sensor readings",
    "flight bookings",
    "recipe cards",
    "tax returns",
    "git commits",
    "support tickets",
    "song lyrics",
]
_AUDIENCES = ["small bakeries", "hospitals", "airlines", "law firms", "farmers", "schools", "city councils", "game studios"]
_TYPES = ["application/mcp-server-card+json", "application/a2a-agent-card+json", "application/ai-skill"]


def soak_int(name: str, default: int) -> int:
    """`ARD_MCP_SOAK_<NAME>` as an integer, else the short default."""
    value = os.environ.get(f"ARD_MCP_SOAK_{name}")
    return int(value) if value else default


def soak_float(name: str, default: float) -> float:
    value = os.environ.get(f"ARD_MCP_SOAK_{name}")
    return float(value) if value else default


def agent_name(number: int) -> str:
    """A made-up word, distinct for each number below 16**3 (then a numeral is appended)."""
    n = len(_SYLLABLES)
    word = _SYLLABLES[number % n] + _SYLLABLES[(number // n) % n] + _SYLLABLES[(number // n // n) % n]
    suffix = "" if number < n**3 else str(number // n**3)
    return word.capitalize() + suffix


def generated_entry(number: int, publisher: str = PUBLISHER, *, slug: str = "agent", revision: int = 0) -> dict[str, Any]:
    """A valid ARD v0.9 entry of its own (identifier, name and texts), `revision` changing its description."""
    name = agent_name(number)
    verb, verbs, noun = _TASKS[number % len(_TASKS)]
    thing = _OBJECTS[(number // len(_TASKS)) % len(_OBJECTS)]
    audience = _AUDIENCES[(number // 7) % len(_AUDIENCES)]
    local = f"{slug}-{number}"
    description = f"{name} {verbs} {thing} for {audience}" + (f", revision {revision}." if revision else ".")
    return {
        "identifier": f"urn:air:{publisher}:soak:{local}",
        "displayName": f"{name} {thing.title()} {noun}",
        "type": _TYPES[number % len(_TYPES)],
        "description": description,
        "tags": [verb, thing.split()[-1], "soak"],
        "url": f"https://{publisher}/agents/{local}.json",
        "representativeQueries": [f"{verb} my {thing} with {name}", f"{name} for {audience}: {verb} {thing}"],
    }


def search_text(item: dict[str, Any]) -> str:
    """A task naming the entry: its own description (one of its indexed texts)."""
    return str(item["description"])


def write_catalog(path: Path, entries: list[dict[str, Any]]) -> Path:
    path.write_text(
        json.dumps({"specVersion": "1.0", "host": {"displayName": "soak", "identifier": "did:web:soak.example.org"}, "entries": entries})
    )
    return path


# -- processes -------------------------------------------------------------------------------------------
def ard_mcp(*args: str, log: IO[str] | None = None) -> subprocess.Popen[str]:
    """`python -m ard_mcp ARGS`, its stdout piped (the summary of ingest), its stderr to `log` (a file, so a
    long run never blocks on a full pipe)."""
    return subprocess.Popen(
        [sys.executable, "-m", "ard_mcp", *args],
        env=quiet_env(data_dir_of(args)),
        stdout=subprocess.PIPE,
        stderr=log if log is not None else subprocess.DEVNULL,
        text=True,
    )


def kill9(process: subprocess.Popen[str]) -> None:
    """SIGKILL, no chance to clean up, and reap it."""
    if process.poll() is None:
        process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)


@dataclass
class Server:
    """A real `ard-mcp serve --transport streamable-http` on a free loopback port; its stderr goes to a file."""

    data_dir: Path
    log_path: Path
    extra: tuple[str, ...] = ()
    process: subprocess.Popen[str] | None = None
    base: str = ""
    _log: IO[str] | None = field(default=None, repr=False)

    def start(self, timeout: float = 90.0) -> str:
        port = free_port()
        self._log = self.log_path.open("a")
        self.process = ard_mcp(
            "serve", "--transport", "streamable-http", "--port", str(port), "--data-dir", str(self.data_dir), *self.extra, log=self._log
        )
        self.base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"ard-mcp serve exited with {self.process.returncode}: {self.log_tail()}")
            try:
                if httpx.get(f"{self.base}/healthz", timeout=2).status_code == 200:
                    return self.base
            except httpx.TransportError:
                time.sleep(0.1)
        self.kill()
        raise AssertionError(f"ard-mcp serve did not answer at {self.base} within {timeout:.0f} s: {self.log_tail()}")

    def kill(self) -> None:
        if self.process is not None:
            kill9(self.process)
        self._close_log()

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM and wait (SIGKILL if it does not stop in time: the caller's checks then fail on the log)."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                kill9(self.process)
                raise AssertionError(f"ard-mcp serve did not stop within {timeout:.0f} s of SIGTERM") from None
        self._close_log()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def log_tail(self, chars: int = 3000) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return text[-chars:]


# -- looking into a data directory from outside -------------------------------------------------------------
def outside(data_dir: Path) -> Any | None:
    """A connection to the store of `data_dir` from another process, as the suite reads it while its owner
    writes: the SQLite file read-only (WAL), or under `--store postgres` the directory's database
    (`processes.database_of`) in autocommit, so each query sees what is committed. None while the store
    does not exist yet (no file, or no schema)."""
    if processes.database_of is not None:
        db = psycopg.connect(processes.database_of(data_dir), autocommit=True)
        if db.execute("SELECT to_regclass('agents') IS NOT NULL").fetchone() == (True,):
            return db
        db.close()
        return None
    path = data_dir / "catalog.sqlite3"
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10) if path.exists() else None


def stored_identifiers(data_dir: Path) -> set[str]:
    db = outside(data_dir)
    if db is None:
        return set()
    try:
        return {row[0] for row in db.execute("SELECT identifier FROM agents")}
    except sqlite3.OperationalError:  # the schema is not created yet
        return set()
    finally:
        db.close()


#: The store's B-tree indexes (PostgreSQL), for `integrity`.
INDEXES = """
    SELECT c.oid::regclass::text FROM pg_index i
    JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
    WHERE am.amname = 'btree' AND c.relnamespace = 'public'::regnamespace
"""


def integrity(data_dir: Path) -> str:
    """What is wrong with the store ("ok" for nothing), checked as the next process would open it. SQLite: `PRAGMA
    integrity_check` (recovering the WAL). PostgreSQL: amcheck's `bt_index_check` of every index with
    `heapallindexed`, which also finds a table row missing from an index."""
    if processes.database_of is not None:
        with psycopg.connect(processes.database_of(data_dir), autocommit=True) as pg:
            pg.execute("CREATE EXTENSION IF NOT EXISTS amcheck")
            indexes = [row[0] for row in pg.execute(INDEXES)]
            try:
                for index in indexes:
                    pg.execute("SELECT bt_index_check(%s::regclass, true)", (index,))
            except psycopg.Error as error:
                return f"{index}: {error}"
            return "ok" if indexes else "no index to check"
    db = sqlite3.connect(data_dir / "catalog.sqlite3", timeout=10)
    try:
        return ", ".join(row[0] for row in db.execute("PRAGMA integrity_check"))
    finally:
        db.close()


# -- latency ------------------------------------------------------------------------------------------------
def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(share * len(ordered) + 0.5)))
    return ordered[rank - 1]


def p50_p99(values: list[float]) -> str:
    """`p50 / p99 ms (n)` of latencies in seconds."""
    return f"{percentile(values, 0.50) * 1000:.1f} / {percentile(values, 0.99) * 1000:.1f} ms (n={len(values)})"
