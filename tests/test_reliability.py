"""The reliability suite: real processes killed with SIGKILL, many concurrent clients, and fuzzing of every
REST route and MCP tool. Nothing is mocked: `ard-mcp` runs as its own process with the real model and
embedded Chroma, clients speak HTTP and MCP over loopback TCP.

- SIGKILL during `ard-mcp ingest`, at a random point: once a random number of agents is stored, once every
  agent is stored but before its vectors reach Chroma, or after a random delay. Every agent stored before
  the kill survives it intact; re-running the ingest counts exactly those as unchanged and adds the rest;
  after it, the store passes `PRAGMA integrity_check` (amcheck on PostgreSQL), has no agent waiting for its
  vectors, Chroma holds a vector for every stored example, and every entry is found by a search naming it.
- SIGKILL of `ard-mcp serve` while clients register and update entries over REST: after a restart every
  acknowledged write is there, in its acknowledged (or its in-flight) version, and searchable.
- N clients for T seconds mixing searches, registrations, updates and deletions over REST and MCP, each
  client owning its own identifiers: zero 5xx, zero unexpected MCP tool errors, every search for a client's
  own entry reflects its last acknowledged write, and the final registry is exactly what the clients'
  acknowledged writes imply. Prints p50 / p99 latencies.
- Property-based fuzzing of every MCP tool (arguments drawn from its input schema and from arbitrary JSON)
  and of every REST route of /openapi.json against a real server process: no 5xx, no unexpected exception,
  no traceback in any answer, no answer slower than the timeout, and the server keeps answering.
- What the suite found, kept as regression tests: `trustManifest.attestations: true` crashed registration
  and ingest (a 500, an unexpected exception, a traceback) instead of being refused.

Short by default (CI); the long version sets the sizes through the environment (docs/reliability.md):

    ARD_MCP_SOAK_SECONDS=60 ARD_MCP_SOAK_CLIENTS=30 ARD_MCP_SOAK_KILLS=12 ARD_MCP_SOAK_FUZZ_EXAMPLES=200 \
        ARD_MCP_SOAK_REST_FUZZ_EXAMPLES=50 python -m pytest -m soak -s tests/test_reliability.py

`ARD_MCP_SOAK_REPORT=FILE` also writes the figures as JSON (`bench/soak.py` does both).
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import threading
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import httpx
import httpx2
import jsonschema
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from ard_mcp.config import Config
from ard_mcp.registry import Registry
from ard_mcp.search.query import SearchQuery
from ard_mcp.surfaces.mcp.server import build_server
from ard_mcp.surfaces.rest.operations import OPERATIONS, Operation
from ard_mcp.web.settings import CrawlSettings
from tests.conftest import SAMPLE, keep_connections_on_loopback
from tests.http_support import AIDIP_TRANSLATOR, XU_HR
from tests.reliability_support import (
    Server,
    ard_mcp,
    generated_entry,
    integrity,
    kill9,
    outside,
    p50_p99,
    percentile,
    search_text,
    soak_float,
    soak_int,
    stored_identifiers,
    write_catalog,
)
from tests.test_http_fuzz import any_json, draw_request, from_schema, texts, words

pytestmark = [pytest.mark.slow, pytest.mark.soak]

KILLS = soak_int("KILLS", 2)  # rounds of SIGKILL during ingest
SERVE_KILLS = soak_int("SERVE_KILLS", max(1, KILLS // 3))  # rounds of SIGKILL of a server taking registrations
INGEST_ENTRIES = soak_int("INGEST_ENTRIES", 150)
WRITERS = soak_int("WRITERS", 4)  # REST clients registering while the server is killed
CLIENTS = soak_int("CLIENTS", 8)
SECONDS = soak_float("SECONDS", 10.0)
FUZZ_EXAMPLES = soak_int("FUZZ_EXAMPLES", 30)  # per MCP tool
REST_FUZZ_EXAMPLES = soak_int("REST_FUZZ_EXAMPLES", 10)  # per REST route (tests/test_http_fuzz.py runs 50 each in-process)
SEED = soak_int("SEED", 0) or random.SystemRandom().randrange(1, 2**31)
OP_TIMEOUT = 60.0  # seconds any one request may take before it counts as a hang
TRACEBACK = re.compile(r'Traceback \(most recent call last\)|File "[^"]+", line \d+')
OWNED_PER_CLIENT = 8


def record(section: str, figures: dict[str, Any]) -> None:
    """Print the figures and, with ARD_MCP_SOAK_REPORT=FILE, merge them into that JSON file."""
    print(f"\n[soak] {section}: {json.dumps(figures)}")
    target = os.environ.get("ARD_MCP_SOAK_REPORT")
    if target:
        path = Path(target)
        report = json.loads(path.read_text()) if path.exists() else {}
        report[section] = {**figures, "seed": SEED}
        path.write_text(json.dumps(report, indent=2))


def server_log_problems(server: Server) -> list[str]:
    """Lines of the server's log that show an unhandled exception (a 500 or an unexpected tool error)."""
    text = server.log_path.read_text(errors="replace") if server.log_path.exists() else ""
    return [line for line in text.splitlines() if "Traceback" in line or "unexpected exception" in line or "Exception in ASGI" in line]


def check_registry(data_dir: Path, entries: list[dict[str, Any]], search: set[str] | None = None) -> int:
    """Open the data directory as the next process would (which repairs an interrupted write) and check
    that it holds exactly `entries`, as given, with no agent waiting for its vectors, that Chroma holds a
    vector for every stored example, and that a search naming each entry (of those in `search`, if given)
    finds it. Returns the number of vectors in Chroma that belong to no stored example."""
    registry = Registry(Config(data_dir))
    try:
        registry.warm_up()
        assert registry.store.pending_agents() == [], "an agent still waits for its vectors after a restart"
        db = outside(data_dir)
        assert db is not None, "no store after a restart"
        try:
            pairs = [(int(e), int(a)) for e, a in db.execute("SELECT id, agent_id FROM examples")]
        finally:
            db.close()
        present: set[int] = set()
        for start in range(0, len(pairs), 500):
            found, _ = registry.vectors.stored_vectors(pairs[start : start + 500])
            present.update(found)
        missing = len(pairs) - len(present)
        assert missing == 0, f"Chroma lacks the vectors of {missing} of {len(pairs)} stored examples"
        assert registry.store.count() == len(entries), f"{registry.store.count()} agents stored, {len(entries)} expected"
        for item in entries:
            stored = registry.get(item["identifier"])
            assert stored.description == item["description"], f"{item['identifier']}: {stored.description!r}"
            if search is None or item["identifier"] in search:
                page = registry.search(SearchQuery.of(search_text(item), page_size=10)).response()
                found_ids = [r.identifier for r in page.results]
                assert item["identifier"] in found_ids, (
                    f"a search for {search_text(item)!r} does not find {item['identifier']}: {found_ids}"
                )
        return registry.vectors.count() - len(pairs)
    finally:
        registry.close()


# -- SIGKILL during ingest ---------------------------------------------------------------------------------
@dataclass
class Kill:
    killed: bool
    seconds: float
    seen: set[str]  # identifiers stored (committed) just before the kill
    pending: int  # of them, agents whose vectors had not reached Chroma


def _progress(db: Any) -> tuple[int, int]:
    try:
        row = db.execute("SELECT count(*), count(*) FILTER (WHERE vectors_pending <> 0) FROM agents").fetchone()
    except Exception:  # the store or its schema does not exist yet, or is being created
        return 0, 0
    return int(row[0]), int(row[1])


def ingest_and_kill(catalog: Path, data_dir: Path, log: Path, when: Callable[[float, int, int], bool], timeout: float = 300.0) -> Kill:
    """Run `ard-mcp ingest`, watching its store from outside; SIGKILL it the moment `when(seconds, stored,
    pending)` holds. If the ingest ends first, nothing is killed."""
    with log.open("a") as log_file:
        process = ard_mcp("ingest", str(catalog), "--data-dir", str(data_dir), log=log_file)
        started = time.monotonic()
        db: Any = None
        try:
            while True:
                elapsed = time.monotonic() - started
                if process.poll() is not None:
                    assert process.returncode == 0, f"ingest exited with {process.returncode}: {log.read_text()[-2000:]}"
                    return Kill(False, elapsed, stored_identifiers(data_dir), 0)
                assert elapsed < timeout, f"ingest did not finish within {timeout:.0f} s"
                if db is None:
                    db = outside(data_dir)
                stored, pending = _progress(db) if db is not None else (0, 0)
                if when(elapsed, stored, pending):
                    seen = {row[0] for row in db.execute("SELECT identifier FROM agents")} if db is not None and stored else set()
                    kill9(process)
                    return Kill(True, elapsed, seen, pending)
                time.sleep(0.005)
        finally:
            if db is not None:
                db.close()
            kill9(process)


def kill_point(mode: str, rng: random.Random, entries: int, horizon: float) -> tuple[str, Callable[[float, int, int], bool]]:
    """When to kill an ingest of `entries` agents, as a description and a test of (seconds since start, agents
    stored, of them without vectors in Chroma); `horizon` is how long a whole ingest takes."""
    if mode == "writes":
        at_least = rng.randint(1, entries - 1)

        def after_writes(seconds: float, stored: int, pending: int) -> bool:
            return stored >= at_least

        return f"once {at_least} agents are stored", after_writes
    if mode == "flush":

        def before_vectors(seconds: float, stored: int, pending: int) -> bool:
            return stored >= entries and pending > 0

        return "once every agent is stored, before the vectors reach Chroma", before_vectors
    delay = rng.uniform(0.3, horizon)

    def after_delay(seconds: float, stored: int, pending: int) -> bool:
        return seconds >= delay

    return f"after {delay:.1f} s", after_delay


def test_sigkill_during_ingest_keeps_every_stored_entry(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    entries = [generated_entry(i) for i in range(INGEST_ENTRIES)]
    catalog = write_catalog(tmp_path / "catalog.json", entries)
    whole: list[float] = []  # seconds whole ingests took (or until the vector flush), as the rounds measure them
    rounds: list[dict[str, Any]] = []
    orphans = 0
    for number in range(KILLS):
        data_dir = tmp_path / f"data-{number}"
        mode = ("writes", "flush", "delay")[number % 3]
        point, when = kill_point(mode, rng, len(entries), max(whole) if whole else 6.0)

        kill = ingest_and_kill(catalog, data_dir, tmp_path / "ingest.log", when)
        if not kill.killed or mode == "flush":
            whole.append(kill.seconds)
        started = outside(data_dir)  # a kill early enough leaves no store at all
        if started is not None:
            started.close()
            assert integrity(data_dir) == "ok"
        survived = stored_identifiers(data_dir)
        lost = kill.seen - survived
        assert not lost, f"round {number} ({point}): {len(lost)} agents stored before the kill are gone, e.g. {sorted(lost)[:3]}"
        by_id = {e["identifier"]: e for e in entries}
        orphans += check_registry(data_dir, [by_id[i] for i in sorted(survived)])  # a restart alone repairs the directory

        with (tmp_path / "ingest.log").open("a") as log_file:
            again = ard_mcp("ingest", str(catalog), "--data-dir", str(data_dir), "--json", log=log_file)
            out, _ = again.communicate(timeout=300)
        assert again.returncode == 0, (tmp_path / "ingest.log").read_text()[-2000:]
        report = json.loads(out)
        assert report["rejected"] == [] and report["updated"] == 0, report
        assert report["unchanged"] == len(survived), f"the re-ingest found {report['unchanged']} unchanged, {len(survived)} survived"
        assert report["added"] == len(entries) - len(survived), report
        orphans += check_registry(data_dir, entries, search={e["identifier"] for e in entries} - survived)  # survivors: searched above
        rounds.append(
            {"point": point, "killed": kill.killed, "at_s": round(kill.seconds, 2), "stored": len(survived), "pending": kill.pending}
        )
        outcome = f"killed at {kill.seconds:.1f} s" if kill.killed else "finished first"
        print(
            f"ingest round {number}: {point}: {outcome}, {len(survived)}/{len(entries)} agents stored ({kill.pending} without "
            f"vectors in Chroma); after a restart and a re-ingest all {len(entries)} present and found"
        )
    killed_mid_write = sum(1 for r in rounds if r["killed"] and (0 < r["stored"] < len(entries) or r["pending"]))
    record(
        "ingest_kills",
        {
            "rounds": KILLS,
            "entries": len(entries),
            "killed": sum(r["killed"] for r in rounds),
            "killed_mid_write": killed_mid_write,
            "lost": 0,
            "orphan_vectors": orphans,
            "rounds_detail": rounds,
        },
    )


# -- SIGKILL of a server taking registrations --------------------------------------------------------------
@dataclass
class Writes:
    """What the registering clients know: the acknowledged version of each entry (a revision number), and
    the one write each client had in flight when the server died (it may or may not have happened)."""

    acknowledged: dict[str, int] = field(default_factory=dict)
    in_flight: dict[str, int] = field(default_factory=dict)
    numbers: dict[str, int] = field(default_factory=dict)
    server_errors: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


KILL_PUBLISHER = "kill.soak.example.org"


def _register_until_killed(base: str, writer: int, first: int, writes: Writes, stop: threading.Event, rng: random.Random) -> None:
    """One client: new entries, and now and then a new revision of one of its own, until the server dies."""
    mine: list[str] = []
    with httpx.Client(base_url=base, timeout=OP_TIMEOUT) as client:
        for sequence in range(400):
            if stop.is_set():
                return
            if mine and rng.random() < 0.25:
                identifier = rng.choice(mine)
                number, revision = writes.numbers[identifier], writes.acknowledged[identifier] + 1
            else:
                number, revision = first + sequence, 0
            item = generated_entry(number, KILL_PUBLISHER, revision=revision)
            identifier = item["identifier"]
            with writes.lock:
                writes.numbers[identifier] = number
                writes.in_flight[identifier] = revision
            started = time.monotonic()
            try:
                response = client.post("/agents", json=item)
            except httpx.TransportError:
                return  # the server is gone: this write stays in flight
            if response.status_code >= 500:
                writes.server_errors.append(f"POST /agents {identifier} -> {response.status_code} {response.text[:300]}")
            if response.status_code not in (200, 201):
                return
            with writes.lock:
                writes.latencies.append(time.monotonic() - started)
                writes.acknowledged[identifier] = revision
                del writes.in_flight[identifier]
            if revision == 0:
                mine.append(identifier)


def test_sigkill_of_a_server_loses_no_acknowledged_registration(tmp_path: Path) -> None:
    rng = random.Random(SEED + 1)
    data_dir = tmp_path / "data"
    writes = Writes()
    rounds: list[dict[str, Any]] = []
    orphans = 0
    for number in range(SERVE_KILLS):
        server = Server(data_dir, tmp_path / "serve.log")
        base = server.start()
        stop = threading.Event()
        threads = [
            threading.Thread(
                target=_register_until_killed,
                args=(base, w, 100_000 + number * 10_000 + w * 1_000, writes, stop, random.Random(rng.random())),
            )
            for w in range(WRITERS)
        ]
        acknowledged_before = len(writes.acknowledged)
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 60
        while len(writes.acknowledged) < acknowledged_before + 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 3.0))
        server.kill()
        killed_with = len(writes.acknowledged)
        stop.set()
        for thread in threads:
            thread.join(timeout=OP_TIMEOUT + 10)
            assert not thread.is_alive(), "a registering client hung after the server was killed"
        in_flight = dict(writes.in_flight)
        assert not writes.server_errors, writes.server_errors[:5]

        server = Server(data_dir, tmp_path / "serve.log")
        base = server.start()
        try:
            with httpx.Client(base_url=base, timeout=OP_TIMEOUT) as client:
                for identifier in sorted(writes.acknowledged.keys() | in_flight.keys()):
                    got = client.get(f"/agents/{quote(identifier, safe=':')}")
                    versions = {v for v in (writes.acknowledged.get(identifier), in_flight.get(identifier)) if v is not None}
                    if got.status_code == 404 and identifier not in writes.acknowledged:
                        continue  # a registration in flight at the kill that did not happen: allowed
                    assert got.status_code == 200, (
                        f"{identifier}, acknowledged as revision {writes.acknowledged.get(identifier)}: {got.status_code} {got.text[:300]}"
                    )
                    descriptions = {
                        generated_entry(writes.numbers[identifier], KILL_PUBLISHER, revision=v)["description"]: v for v in versions
                    }
                    description = got.json()["description"]
                    assert description in descriptions, f"{identifier}: {description!r} is none of the written versions {sorted(versions)}"
                    writes.acknowledged[identifier] = descriptions[description]  # what the registry holds is now the known version
                    found = client.post("/search", json={"query": {"text": description}, "pageSize": 10})
                    assert found.status_code == 200, found.text[:300]
                    found_ids = [r["identifier"] for r in found.json()["results"]]
                    assert identifier in found_ids, f"{identifier} is stored but a search for {description!r} does not find it: {found_ids}"
                writes.in_flight.clear()
                health = client.get("/healthz").json()
                assert health["agents"] == len(writes.acknowledged), health
        finally:
            server.stop()
        assert not server_log_problems(server), server_log_problems(server)[:10]
        assert integrity(data_dir) == "ok"
        rounds.append({"acknowledged_at_kill": killed_with, "in_flight": len(in_flight)})
        print(
            f"server kill {number}: {killed_with} entries acknowledged, {len(in_flight)} writes in flight; "
            "after a restart every acknowledged one present and found"
        )
    entries = [generated_entry(writes.numbers[i], KILL_PUBLISHER, revision=v) for i, v in writes.acknowledged.items()]
    orphans += check_registry(data_dir, entries, search=set())  # the store and Chroma agree
    record(
        "serve_kills",
        {
            "rounds": SERVE_KILLS,
            "writers": WRITERS,
            "acknowledged": len(writes.acknowledged),
            "lost": 0,
            "orphan_vectors": orphans,
            "register_p50_ms": round(percentile(writes.latencies, 0.5) * 1000, 1),
            "register_p99_ms": round(percentile(writes.latencies, 0.99) * 1000, 1),
            "rounds_detail": rounds,
        },
    )


# -- many concurrent clients over REST and MCP ---------------------------------------------------------------
@dataclass
class Tally:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    operations: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)  # 5xx, unexpected tool errors, transport errors, hangs, wrong answers
    expected_errors: int = 0  # deleting what the client deleted already: 404 / NOT_FOUND
    stale: list[str] = field(default_factory=list)  # a search that did not reflect the client's last acknowledged write


# uvicorn closed a keep-alive connection idle for 5 s, and httpx keeps one for 5 s: a request sent on a
# connection as the server closed it failed before any answer (RemoteProtocolError "Server disconnected without
# sending a response", or ReadError), in 3 of 9 runs of 30 clients for 60 s. The server now keeps idle
# connections longer than clients pool them (`KEEP_ALIVE_SECONDS`), so the clients here use httpx's own 5 s.
KEEPALIVE = soak_float("KEEPALIVE", 5.0)
CLIENT_LIMITS = httpx.Limits(keepalive_expiry=KEEPALIVE)
MCP_CLIENT_LIMITS = httpx2.Limits(keepalive_expiry=KEEPALIVE)
SEED_PUBLISHER = "seed.soak.example.org"
SEEDED = [generated_entry(i, SEED_PUBLISHER) for i in range(40)]


@dataclass
class SoakClient:
    """One client: its own publisher and identifiers, a REST client and an MCP session, and the state its
    acknowledged writes imply (revision per entry number; None once deleted)."""

    index: int
    rng: random.Random
    tally: Tally
    rest: httpx.AsyncClient
    mcp: Client
    state: dict[int, int | None] = field(default_factory=dict)
    last: dict[int, int] = field(default_factory=dict)  # the last revision written, also of a deleted entry
    unknown: set[int] = field(default_factory=set)  # entries a failed request left in an unknown state
    doing: str = ""  # the operation under way, and how long its connection had been idle before it (for error messages)
    last_used: dict[str, float] = field(default_factory=dict)

    @property
    def publisher(self) -> str:
        return f"c{self.index}.soak.example.org"

    def entry(self, number: int, revision: int) -> dict[str, Any]:
        return generated_entry(number, self.publisher, revision=revision)

    async def step(self) -> None:
        surface = self.rng.choice(("rest", "mcp"))
        roll = self.rng.random()
        now = time.monotonic()
        idle = now - self.last_used.get(surface, now)
        operation = self.search if roll < 0.5 or (roll >= 0.82 and not self.state) else self.register if roll < 0.82 else self.delete
        self.doing = f"{surface} {operation.__name__} after {idle:.2f} s idle"
        try:
            await operation(surface)
        finally:
            self.last_used[surface] = time.monotonic()

    async def search(self, surface: str) -> None:
        own = [n for n in self.last if n not in self.unknown]
        expect: tuple[str, bool] | None = None
        if own and self.rng.random() < 0.6:  # read your own writes
            number = self.rng.choice(own)
            item = self.entry(number, self.last[number])
            expect = (item["identifier"], self.state[number] is not None)
            text = search_text(item)
        else:
            text = search_text(self.rng.choice(SEEDED))
        started = time.monotonic()
        if surface == "rest":
            response = await self.rest.post("/search", json={"query": {"text": text}, "pageSize": 10})
            if not self.ok(response, (200,), f"POST /search {text!r}"):
                return
            found = [r["identifier"] for r in response.json()["results"]]
        else:
            result = await self.mcp.call_tool("search_agents", {"text": text, "pageSize": 10})
            if not self.tool_ok(result, f"search_agents {text!r}"):
                return
            found = [r["identifier"] for r in (result.structured_content or {})["results"]]
        self.timed(f"search {surface}", started)
        if expect is not None and (expect[0] in found) != expect[1]:
            self.tally.stale.append(
                f"{surface} search for {text!r}: {expect[0]} {'missing' if expect[1] else 'returned after its deletion'}"
            )

    async def register(self, surface: str) -> None:
        if len(self.state) < OWNED_PER_CLIENT and (not self.state or self.rng.random() < 0.4):
            number = self.index * 10_000 + len(self.state)
        else:
            number = self.rng.choice(sorted(self.state))
        if number in self.unknown:
            return
        revision = self.last.get(number, -1) + 1
        item = self.entry(number, revision)
        created = self.state.get(number) is None
        started = time.monotonic()
        what = f"register {item['identifier']} revision {revision}"
        self.unknown.add(number)  # until the answer says what happened
        if surface == "rest":
            response = await self.rest.post("/agents", json=item)
            if not self.ok(response, (201,) if created else (200,), what):
                return
        else:
            result = await self.mcp.call_tool("register_agent", {"entry": item})
            if not self.tool_ok(result, what):
                return
            status = (result.structured_content or {}).get("status")
            if status != ("created" if created else "updated"):
                self.tally.errors.append(f"mcp {what}: status {status}, expected {'created' if created else 'updated'}")
                return
        self.unknown.discard(number)
        self.timed(f"register {surface}", started)
        self.state[number] = self.last[number] = revision

    async def delete(self, surface: str) -> None:
        number = self.rng.choice(sorted(self.state))
        if number in self.unknown:
            return
        identifier = self.entry(number, 0)["identifier"]
        present = self.state[number] is not None
        started = time.monotonic()
        what = f"delete {identifier} ({'present' if present else 'deleted already'})"
        self.unknown.add(number)  # until the answer says what happened
        if surface == "rest":
            response = await self.rest.delete(f"/agents/{quote(identifier, safe=':')}")
            if not self.ok(response, (200,) if present else (404,), what):
                return
        else:
            result = await self.mcp.call_tool("deregister_agent", {"identifier": identifier})
            if present and not self.tool_ok(result, what):
                return
            if not present:
                text = getattr(result.content[0], "text", "") if result.content else ""
                if not (result.is_error and "is registered" in text):
                    self.tally.errors.append(f"mcp {what}: {text[:300] if result.is_error else 'deleted it again (a resurrected write)'}")
                    return
        self.unknown.discard(number)
        if not present:
            self.tally.expected_errors += 1
        self.timed(f"delete {surface}", started)
        self.state[number] = None

    def ok(self, response: httpx.Response, statuses: tuple[int, ...], what: str) -> bool:
        if response.status_code in statuses:
            return True
        self.tally.errors.append(f"rest {what}: {response.status_code} {response.text[:300]}")
        return False

    def tool_ok(self, result: Any, what: str) -> bool:
        if not result.is_error and result.structured_content is not None:
            return True
        self.tally.errors.append(f"mcp {what}: {result.content!r:.300}")
        return False

    def timed(self, kind: str, started: float) -> None:
        self.tally.latencies[kind].append(time.monotonic() - started)
        self.tally.operations[kind] += 1


def describe(exc: BaseException) -> str:
    """An exception, exception groups flattened to their leaves, each with where it was raised."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe(inner) for inner in exc.exceptions)
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    cause = f" (from {describe(exc.__cause__)})" if exc.__cause__ is not None else ""
    return f"{type(exc).__name__}: {exc}{where}{cause}"


async def _soak_client(index: int, base: str, deadline: float, tally: Tally, clients: list[SoakClient]) -> None:
    """One client from connecting to closing; every failure, in any phase, is counted as an error."""
    phase = "connecting"
    try:
        async with AsyncExitStack() as stack:
            rest = await stack.enter_async_context(httpx.AsyncClient(base_url=base, timeout=OP_TIMEOUT, limits=CLIENT_LIMITS))
            mcp_http = await stack.enter_async_context(httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300), limits=MCP_CLIENT_LIMITS))
            # (a hang connecting is caught by the test's own deadline)
            mcp = await stack.enter_async_context(Client(streamable_http_client(f"{base}/mcp", http_client=mcp_http)))
            client = SoakClient(index, random.Random(SEED * 1_000 + index), tally, rest, mcp)
            clients.append(client)
            phase = "running"
            while time.monotonic() < deadline:
                try:
                    with anyio.fail_after(OP_TIMEOUT):
                        await client.step()
                except TimeoutError:
                    tally.errors.append(f"client {index}: {client.doing}: took over {OP_TIMEOUT:.0f} s")
                except Exception as exc:
                    tally.errors.append(f"client {index}: {client.doing}: {describe(exc)}"[:1000])
            phase = "closing"
    except Exception as exc:
        tally.errors.append(f"client {index} failed while {phase}: {describe(exc)}"[:1500])


@pytest.mark.anyio
async def test_concurrent_clients_over_rest_and_mcp_see_no_server_error(tmp_path: Path) -> None:
    server = Server(tmp_path / "data", tmp_path / "serve.log")
    base = server.start()
    tally = Tally()
    clients: list[SoakClient] = []
    try:
        async with httpx.AsyncClient(base_url=base, timeout=OP_TIMEOUT) as rest:
            for item in [*SAMPLE, *SEEDED]:
                assert (await rest.post("/agents", json=item)).status_code == 201
            await rest.post("/search", json={"query": {"text": "warm up"}})

            started = time.monotonic()
            deadline = started + SECONDS

            with anyio.fail_after(SECONDS + 3 * OP_TIMEOUT):
                async with anyio.create_task_group() as group:
                    for index in range(CLIENTS):
                        group.start_soon(_soak_client, index, base, deadline, tally, clients)
            elapsed = time.monotonic() - started

            # the final registry is what the clients' acknowledged writes imply: nothing lost, nothing resurrected
            wrong: list[str] = []
            present = len(SAMPLE) + len(SEEDED)
            for client in clients:
                for number, revision in client.state.items():
                    if number in client.unknown:
                        continue
                    identifier = client.entry(number, 0)["identifier"]
                    got = await rest.get(f"/agents/{quote(identifier, safe=':')}")
                    if revision is None:
                        if got.status_code != 404:
                            wrong.append(f"{identifier} was deleted but answers {got.status_code}")
                        continue
                    present += 1
                    expected = client.entry(number, revision)["description"]
                    if got.status_code != 200 or got.json().get("description") != expected:
                        wrong.append(f"{identifier}: expected revision {revision}, got {got.status_code} {got.text[:200]}")
            agents = (await rest.get("/healthz")).json()["agents"]
            unknown = sum(len(c.unknown) for c in clients)
            if not unknown and agents != present:
                wrong.append(f"/healthz counts {agents} agents, the clients' writes imply {present}")
    finally:
        server.stop()

    searches = [v for k, vs in tally.latencies.items() if k.startswith("search") for v in vs]
    writes = [v for k, vs in tally.latencies.items() if not k.startswith("search") for v in vs]
    total = sum(tally.operations.values())
    for kind in sorted(tally.latencies):
        print(f"  {kind:16} p50 / p99 {p50_p99(tally.latencies[kind])}")
    summary = (
        f"soak: {CLIENTS} clients for {SECONDS:.0f} s over REST and MCP: {total} operations ({total / elapsed:.0f}/s), "
        f"{len(tally.errors)} errors, {len(tally.stale)} stale searches, {len(wrong)} wrong final entries, "
        f"{tally.expected_errors} expected NOT_FOUND; search p50 / p99 {p50_p99(searches)}; write p50 / p99 {p50_p99(writes)}"
    )
    print(summary)
    record(
        "concurrency",
        {
            "clients": CLIENTS,
            "seconds": SECONDS,
            "operations": total,
            "per_second": round(total / elapsed, 1),
            "by_kind": dict(tally.operations),
            "errors": len(tally.errors),
            "stale_searches": len(tally.stale),
            "wrong_final": len(wrong),
            "expected_not_found": tally.expected_errors,
            "search_p50_ms": round(percentile(searches, 0.5) * 1000, 1),
            "search_p99_ms": round(percentile(searches, 0.99) * 1000, 1),
            "write_p50_ms": round(percentile(writes, 0.5) * 1000, 1),
            "write_p99_ms": round(percentile(writes, 0.99) * 1000, 1),
            "by_kind_p50_p99_ms": {
                k: [round(percentile(v, 0.5) * 1000, 1), round(percentile(v, 0.99) * 1000, 1)] for k, v in tally.latencies.items()
            },
        },
    )
    problems = server_log_problems(server)
    assert not tally.errors, f"{len(tally.errors)} errors, e.g. {tally.errors[:5]}"
    assert not problems, f"the server logged {len(problems)} unhandled exceptions: {problems[:5]}\n{server.log_tail()}"
    assert not tally.stale, f"{len(tally.stale)} searches did not reflect the client's last write, e.g. {tally.stale[:5]}"
    assert not wrong, wrong[:10]
    assert len(clients) == CLIENTS


# -- fuzzing every MCP tool ----------------------------------------------------------------------------------
MCP_TOOLS = (
    "search_agents",
    "discover_agents",
    "explore_facets",
    "register_agent",
    "get_agent",
    "list_agents",
    "deregister_agent",
    "crawl_catalogs",
    "get_agent_tools",
    "call_agent",
)
FUZZ = settings(max_examples=FUZZ_EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
TOOL_TIMEOUT = 30.0


class _Unexpected(logging.Handler):
    """Collects what the server logs about an exception it did not expect (the MCP form of a 500)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(f"{record.name}: {record.getMessage()}" + (" (with a traceback)" if record.exc_info else ""))


class McpFuzz:
    def __init__(self, portal: BlockingPortal, client: Client, tools: dict[str, Any], unexpected: _Unexpected) -> None:
        self.portal, self.client, self.unexpected = portal, client, unexpected
        self.tools = tools  # name -> the Tool tools/list gave
        self.answers: Counter[str] = Counter()  # "result", "tool error", "protocol error"

    def __repr__(self) -> str:  # hypothesis prints the fixtures of a failing example
        return "McpFuzz()"


@pytest.fixture(scope="module")
def mcp_fuzz(tmp_path_factory: pytest.TempPathFactory, offline_dns: str) -> Iterator[McpFuzz]:
    offline = CrawlSettings(dns_server=offline_dns)  # fuzzed crawl targets never reach the system's resolvers
    server = build_server(Config(tmp_path_factory.mktemp("mcp-fuzz") / "data"), warm=False, crawl=offline)
    unexpected = _Unexpected()
    logging.getLogger().addHandler(unexpected)
    try:
        with (
            pytest.MonkeyPatch.context() as patch,
            start_blocking_portal() as portal,
            portal.wrap_async_context_manager(Client(server)) as client,
        ):
            keep_connections_on_loopback(patch)  # fuzzed crawl targets reach no address but loopback (a number is read as one)
            tools = {t.name: t for t in portal.call(client.list_tools).tools}
            assert set(tools) == set(MCP_TOOLS), "a tool was added or removed: fuzz it here"
            for item in SAMPLE:
                assert not portal.call(client.call_tool, "register_agent", {"entry": item}).is_error
            fuzz = McpFuzz(portal, client, tools, unexpected)
            yield fuzz
        record("mcp_fuzz", {"tools": len(MCP_TOOLS), "examples_per_tool": FUZZ_EXAMPLES, "calls": fuzz.answers.total(), **fuzz.answers})
    finally:
        logging.getLogger().removeHandler(unexpected)


def _entries() -> st.SearchStrategy[dict[str, Any]]:
    """Sample entries with one field replaced by arbitrary JSON, removed, or added."""
    keys = st.sampled_from(sorted({k for item in SAMPLE for k in item} | {"data", "metadata", "trustManifest", "junk"}))
    return st.builds(
        lambda base, key, value, drop: {k: v for k, v in {**base, key: value}.items() if not (drop and k == key)},
        st.sampled_from([*SAMPLE, XU_HR, AIDIP_TRANSLATOR]),
        keys,
        any_json,
        st.booleans(),
    )


def tool_arguments(name: str, schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Arguments shaped by the tool's input schema (bounds crossed on purpose), arbitrary JSON objects with
    its argument names and others, and for `register_agent` real entries with one field broken."""
    shaped = from_schema(schema, schema.get("$defs", {})).filter(lambda v: isinstance(v, dict))
    names = st.sampled_from(sorted(schema.get("properties", {})) or ["x"]) | words | st.text(max_size=12)
    arbitrary = st.dictionaries(names, any_json | texts, max_size=5)
    if name == "register_agent":
        return shaped | arbitrary | st.fixed_dictionaries({"entry": _entries()}, optional={"format": texts})
    if name in ("get_agent", "deregister_agent"):
        known = [item["identifier"] for item in SAMPLE] + [
            SAMPLE[0]["identifier"].replace("urn:air:", "urn:ai:"),
            XU_HR["id"],
            "agent-12345",
        ]
        return shaped | arbitrary | st.fixed_dictionaries({"identifier": st.sampled_from(known)})
    return shaped | arbitrary


async def _call(client: Client, name: str, arguments: dict[str, Any]) -> Any:
    with anyio.fail_after(TOOL_TIMEOUT):
        try:
            return await client.call_tool(name, arguments)
        except MCPError as exc:  # a protocol-level refusal is an answer too
            return exc


@pytest.mark.parametrize("name", MCP_TOOLS)
@FUZZ
@given(data=st.data())
def test_every_mcp_tool_answers_fuzzed_arguments(mcp_fuzz: McpFuzz, name: str, data: st.DataObject) -> None:
    portal, client, tool = mcp_fuzz.portal, mcp_fuzz.client, mcp_fuzz.tools[name]
    if name in ("register_agent", "deregister_agent"):  # an earlier example may have changed or removed a sample
        for item in SAMPLE:
            portal.call(client.call_tool, "register_agent", {"entry": item})
    arguments = data.draw(tool_arguments(name, tool.input_schema), label="arguments")
    seen = len(mcp_fuzz.unexpected.records)
    try:
        answer = portal.call(_call, client, name, arguments)
    except TimeoutError:
        pytest.fail(f"{name}({json.dumps(arguments)[:500]}) did not answer within {TOOL_TIMEOUT:.0f} s")
    assert mcp_fuzz.unexpected.records[seen:] == [], f"{name}({json.dumps(arguments)[:500]}): {mcp_fuzz.unexpected.records[seen:]}"
    mcp_fuzz.answers["protocol error" if isinstance(answer, MCPError) else "tool error" if answer.is_error else "result"] += 1
    if isinstance(answer, MCPError):
        text = str(answer)
    else:
        text = " ".join(getattr(c, "text", "") for c in answer.content)
        if not answer.is_error:
            assert answer.structured_content is not None, f"{name}({arguments}) answered without structured content: {text[:300]}"
            if tool.output_schema:
                errors = [e.message for e in jsonschema.Draft202012Validator(tool.output_schema).iter_errors(answer.structured_content)]
                assert not errors, f"{name}({json.dumps(arguments)[:300]}): the result does not match the output schema: {errors[:3]}"
    assert not TRACEBACK.search(text), f"{name}({json.dumps(arguments)[:500]}) answered with a traceback: {text[:1000]}"
    alive = portal.call(_call, client, "list_agents", {"pageSize": 1})
    assert not isinstance(alive, MCPError) and not alive.is_error, f"the server stopped answering after {name}({arguments})"


# -- fuzzing every REST route of a real server process -------------------------------------------------------
@dataclass
class Live:
    server: Server = field(repr=False)
    client: httpx.Client = field(repr=False)
    openapi: dict[str, Any] = field(repr=False)
    statuses: Counter[str] = field(default_factory=Counter, repr=False)  # "2xx", "4xx", ...

    def __repr__(self) -> str:  # hypothesis prints the fixtures of a failing example
        return f"Live({self.server.base})"


REST_FUZZ = settings(max_examples=REST_FUZZ_EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """A real `ard-mcp serve` over TCP; after the module, its log must show no unhandled exception."""
    where = tmp_path_factory.mktemp("rest-fuzz")
    server = Server(where / "data", where / "serve.log")
    base = server.start()
    try:
        with httpx.Client(base_url=base, timeout=OP_TIMEOUT) as client:
            for item in [*SAMPLE, XU_HR, AIDIP_TRANSLATOR]:
                assert client.post("/agents", json=item).status_code == 201
            live = Live(server, client, client.get("/openapi.json").json())
            yield live
    finally:
        server.stop()
    problems = server_log_problems(server)
    assert not problems, f"the server logged {len(problems)} unhandled exceptions: {problems[:5]}\n{server.log_tail()}"
    record(
        "rest_fuzz",
        {"routes": len(OPERATIONS), "examples_per_route": REST_FUZZ_EXAMPLES, "requests": live.statuses.total(), **live.statuses},
    )


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: f"{op.method} {op.path}")
@REST_FUZZ
@given(data=st.data())
def test_every_rest_route_of_a_real_server_answers_fuzzed_requests(live: Live, op: Operation, data: st.DataObject) -> None:
    client = live.client
    path, kwargs = draw_request(op, live.openapi, data)
    try:
        response = client.request(op.method, path, **kwargs)
    except httpx.TimeoutException:
        pytest.fail(f"{op.method} {path} {kwargs} did not answer within {OP_TIMEOUT:.0f} s")
    live.statuses[f"{response.status_code // 100}xx"] += 1
    what = f"{op.method} {path} {json.dumps(kwargs, default=repr)[:1000]}"
    assert response.status_code < 500, f"{what} -> {response.status_code} {response.text[:500]}\nserver log: {live.server.log_tail()}"
    assert not TRACEBACK.search(response.text), f"{what} answered with a traceback: {response.text[:1000]}"
    assert client.get("/healthz").status_code == 200  # the server keeps answering


# -- what the suite found ------------------------------------------------------------------------------------
BROKEN_TRUST = {
    "identifier": "urn:air:example.com:broken:trust",
    "displayName": "Broken trust manifest",
    "type": "application/ai-skill",
    "url": "https://example.com/broken.json",
    "trustManifest": {"identity": "spiffe://example.com/broken", "attestations": True},
}


def test_attestations_that_are_not_a_list_are_refused_not_a_crash(mcp_fuzz: McpFuzz, tmp_path: Path) -> None:
    problems: list[str] = []
    server = Server(tmp_path / "data", tmp_path / "serve.log")
    base = server.start()
    try:
        for method, path in (("POST", "/agents"), ("PUT", f"/agents/{BROKEN_TRUST['identifier']}")):
            response = httpx.request(method, base + path, json=BROKEN_TRUST, timeout=OP_TIMEOUT)
            if response.status_code != 400:
                problems.append(f"{method} {path}: {response.status_code} {response.text[:200]}")
    finally:
        server.stop()
    seen = len(mcp_fuzz.unexpected.records)
    result = mcp_fuzz.portal.call(_call, mcp_fuzz.client, "register_agent", {"entry": BROKEN_TRUST})
    if mcp_fuzz.unexpected.records[seen:] or "attestations" not in str(result):
        problems.append(f"register_agent: {str(result)[:300]} {mcp_fuzz.unexpected.records[seen:]}")
    good = generated_entry(0)
    for name, manifest in (
        ("entry", {"specVersion": "1.0", "entries": [good, BROKEN_TRUST]}),
        (
            "host",
            {
                "specVersion": "1.0",
                "host": {"displayName": "h", "identifier": "did:web:example.com", "trustManifest": BROKEN_TRUST["trustManifest"]},
                "entries": [good],
            },
        ),
    ):
        catalog = tmp_path / f"{name}.json"
        catalog.write_text(json.dumps(manifest))
        with (tmp_path / f"{name}.log").open("w") as log:
            process = ard_mcp("ingest", str(catalog), "--data-dir", str(tmp_path / name), log=log)
            process.communicate(timeout=300)
        text = (tmp_path / f"{name}.log").read_text()
        if TRACEBACK.search(text) or process.returncode not in (0, 1):
            problems.append(f"ingest with a broken {name} trust manifest: exit {process.returncode}, {text[-300:]}")
    assert not problems, problems
