"""Honest writes and idempotency keys (issue #57).

A write is acknowledged if and only if it is saved: a Chroma server stopped before or during writes (a real
`chroma run` process, stopped and started again on its port) leaves every write the store committed
answered as saved, its vectors queued in the store and sent when Chroma is back; the store is read
afterwards to check each answer. `Idempotency-Key` on the REST writes made with POST: a retry replays the
first answer without writing again, another request with the key is refused (422), one while the first is
running too (409), keys are per credential, expire, survive a restart and are shared by processes
sharing a store. Every part is real: the stores (SQLite, and PostgreSQL with `--store postgres` or the
`postgres` parameter), the Chroma server, the server processes, the MCP client.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from starlette.requests import Request

from ard_mcp.assembly.app import build_app
from ard_mcp.config import Config
from ard_mcp.errors import VectorIndexUnavailable
from ard_mcp.index.catch_up import RETRY_SECONDS
from ard_mcp.index.idempotency import KEEP_SECONDS, LEASE_SECONDS, KeptAnswer
from ard_mcp.index.store.sqlite import SqliteStore
from ard_mcp.registry import Registry
from ard_mcp.surfaces.auth import Principal, TokenStore
from ard_mcp.surfaces.rest.idempotency import HEADER, REPLAYED, fingerprint
from ard_mcp.surfaces.rest.routes import AppState
from ard_mcp.surfaces.rest.settings import HttpSettings
from tests.conftest import INVOICES, PDF, SKILL, TRANSLATE, WEATHER, entry, results
from tests.deployment_support import ChromaServer, until_status
from tests.http_support import BASE_URL
from tests.processes import serving
from tests.test_monitoring import samples, value

pytestmark = [pytest.mark.slow]


def chroma_keys(registry: Registry) -> set[str]:
    """The ids of every record in the vector index (a few hundred here: one read)."""
    return set(registry.vectors._chroma().get(include=[])["ids"])  # noqa: SLF001


def store_keys(registry: Registry) -> set[str]:
    """The vector index's ids of every example the store holds: what Chroma must hold once caught up."""
    return {f"{e}@{a}" for batch in registry.store.iter_examples() for e, a, _ in batch}


def until(condition: Any, within: float) -> bool:
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


# -- a write while Chroma is down is saved, answered as saved, and reaches Chroma when it is back -------
def test_writes_in_a_chroma_outage_are_saved_answered_and_sent_later(tmp_path: Path, store_url: str | None) -> None:
    with ChromaServer(tmp_path / "chroma") as chroma:
        registry = Registry(Config(tmp_path / "data", store_url=store_url, chroma_url=chroma.url))
        try:
            for document in (WEATHER, PDF):
                assert registry.indexer.register(document).status == "created"
            chroma.stop()

            assert registry.indexer.register(INVOICES).status == "created"
            changed = entry(WEATHER, description="Hourly rain radar and storm warnings.", updatedAt="2026-06-01T00:00:00Z")
            assert registry.indexer.register(changed).status == "updated"
            assert registry.deregister(PDF["identifier"], None).status == "deleted"
            report = registry.indexer.register_many([("a", TRANSLATE), ("b", SKILL)])
            assert (report.added, report.rejected) == (2, [])

            # acknowledged, so saved: the store has every one of them, as acknowledged
            store = registry.store
            assert store.get(INVOICES["identifier"]) is not None and store.get(PDF["identifier"]) is None
            stored = store.get(WEATHER["identifier"])
            assert stored is not None and stored.entry["description"] == changed["description"]
            assert {TRANSLATE["identifier"], SKILL["identifier"]} <= {
                a.identifier for a in store.agents_by_id(store.pending_agents()).values()
            }
            assert len(store.queued_vector_deletions(1000)) > 0  # PDF's records and WEATHER's old ones
            with pytest.raises(VectorIndexUnavailable, match="cannot be reached"):  # a search says what is missing (503)
                results(registry, "bill my client for last month's consulting hours")

            chroma.start()  # nothing in this process asks: the background catch-up sends the queue
            assert until(lambda: not store.pending_agents() and not store.queued_vector_deletions(1), within=5 * RETRY_SECONDS + 10)
            assert chroma_keys(registry) == store_keys(registry)
            assert results(registry, "bill my client for last month's consulting hours")[0].identifier == INVOICES["identifier"]
            assert results(registry, "storm warnings and rain radar")[0].identifier == WEATHER["identifier"]
            assert PDF["identifier"] not in [r.identifier for r in results(registry, "merge several pdf files")]
        finally:
            registry.close()


def test_a_search_in_the_writing_process_sends_the_queue_first(tmp_path: Path, store_url: str | None) -> None:
    with ChromaServer(tmp_path / "chroma") as chroma:
        registry = Registry(Config(tmp_path / "data", store_url=store_url, chroma_url=chroma.url))
        try:
            registry.indexer.register(WEATHER)
            chroma.stop()
            registry.indexer.register(INVOICES)
            chroma.start()
            found = results(registry, "which invoices are overdue")  # at once: before the background thread's next try
            assert found[0].identifier == INVOICES["identifier"]
            assert registry.store.pending_agents() == [] and chroma_keys(registry) == store_keys(registry)
        finally:
            registry.close()


def test_a_queued_removal_never_deletes_a_record_whose_id_came_back(tmp_path: Path, store_url: str | None) -> None:
    """SQLite gives a new agent and its examples the ids of the last ones deleted: the removal queued for the
    old record names the new one's id, and must not delete it once the new record is in Chroma."""
    with ChromaServer(tmp_path / "chroma") as chroma:
        config = Config(tmp_path / "data", store_url=store_url, chroma_url=chroma.url)
        registry = Registry(config)
        try:
            registry.indexer.register(WEATHER)
            chroma.stop()
            registry.indexer.register(PDF)
            registry.deregister(PDF["identifier"], None)  # its records' removal is queued
            registry.indexer.register(TRANSLATE)  # on SQLite: PDF's agent id and example ids again
            registry.indexer.sync.stop()  # no catch-up from this process: the queue outlives it
            chroma.start()
            registry.reindex()  # Chroma rebuilt from the store, TRANSLATE's records in it; the queue still there
            queued = registry.store.queued_vector_deletions(1000)
            assert queued and (not isinstance(registry.store, SqliteStore) or any(live for _, _, live in queued)), queued
        finally:
            registry.close()
        reopened = Registry(config)  # sends what is queued when its vector index opens
        try:
            assert chroma_keys(reopened) == store_keys(reopened) and reopened.store.queued_vector_deletions(1) == []
            assert results(reopened, "say this in Japanese")[0].identifier == TRANSLATE["identifier"]
        finally:
            reopened.close()


# -- the same over REST and MCP, with Chroma stopped while clients write ----------------------------------
def _document(i: int) -> dict[str, Any]:
    return entry(
        SKILL,
        identifier=f"urn:air:honest.example.com:agent-{i}",
        displayName=f"Honest agent {i}",
        description=f"Agent number {i} answers questions about topic {i} and its history.",
        url=f"https://honest.example.com/agents/{i}",
        tags=["honest"],
    )


class Writer(threading.Thread):
    """Registers agents over REST one after another (and deletes every third one it registered), recording
    each answer, until told to stop."""

    def __init__(self, base: str) -> None:
        super().__init__(daemon=True)
        self.base = base
        self.answers: list[tuple[str, str, int, float]] = []  # (operation, identifier, status, when)
        self.stopping = threading.Event()

    def run(self) -> None:
        with httpx.Client(base_url=self.base, timeout=60) as client:
            i = 0
            while not self.stopping.is_set():
                document = _document(i)
                answer = client.post("/agents", json=document)
                self.answers.append(("register", document["identifier"], answer.status_code, time.monotonic()))
                if i % 3 == 2:
                    victim = _document(i - 1)["identifier"]
                    answer = client.delete(f"/agents/{victim}")
                    self.answers.append(("delete", victim, answer.status_code, time.monotonic()))
                i += 1


@contextmanager
def writing(base: str) -> Iterator[Writer]:
    writer = Writer(base)
    writer.start()
    try:
        yield writer
    finally:
        writer.stopping.set()
        writer.join(timeout=120)


def mcp_call(base: str, tool: str, arguments: dict[str, Any]) -> Any:
    """One MCP tool call over streamable HTTP, from a client of its own (the test around it blocks)."""

    async def call() -> Any:
        async with Client(f"{base}/mcp") as client:
            return await client.call_tool(tool, arguments)

    return anyio.run(call)


def test_rest_and_mcp_writes_are_acknowledged_iff_saved_across_a_chroma_outage(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    key = str(uuid.uuid4())
    keyed = entry(INVOICES, description="Creates, sends and reconciles invoices; written with an idempotency key.")
    with ChromaServer(tmp_path / "chroma") as chroma:
        args = ("--transport", "streamable-http", "--chroma-url", chroma.url)
        with serving(data_dir, *args) as base:
            assert until_status(f"{base}/readyz", 200, within=60).status_code == 200
            with writing(base) as writer:
                assert until(lambda: len(writer.answers) >= 6, within=60)
                chroma.stop()
                stopped = time.monotonic()
                assert until(lambda: sum(1 for a in writer.answers if a[3] > stopped) >= 12, within=90)
                over_mcp = mcp_call(base, "register_agent", {"entry": TRANSLATE})
                gone_over_mcp = mcp_call(base, "deregister_agent", {"identifier": _document(0)["identifier"]})
                first = httpx.post(f"{base}/agents", json=keyed, headers={HEADER: f'"{key}"'}, timeout=60)
                search = httpx.post(f"{base}/search", json={"query": {"text": "topic 3"}}, timeout=60)
                queued_during = _queued(base)  # the operator sees the outage being ridden out
                chroma.start()
                started = time.monotonic()
                assert until(lambda: sum(1 for a in writer.answers if a[3] > started) >= 6, within=60)
            assert queued_during >= 1, queued_during
            assert until(lambda: _queued(base) == 0, within=60)  # and the queue sent once Chroma answers
            assert not over_mcp.is_error and not gone_over_mcp.is_error, (over_mcp, gone_over_mcp, writer.answers[:8])
            assert first.status_code == 201, first.text
            assert search.status_code == 503 and "cannot be reached" in search.json()["message"]
            found = mcp_call(base, "search_agents", {"text": "Translate a passage into another language"})
            assert found.structured_content["results"][0]["identifier"] == TRANSLATE["identifier"]
            with serving(data_dir, *args) as other:  # a second process sharing the store: the key is known there
                again = httpx.post(f"{other}/agents", json=keyed, headers={HEADER: f'"{key}"'}, timeout=60)
                assert (again.status_code, again.json(), again.headers[REPLAYED]) == (201, first.json(), "true")
        with serving(data_dir, *args) as restarted:  # and after a restart
            again = httpx.post(f"{restarted}/agents", json=keyed, headers={HEADER: f'"{key}"'}, timeout=60)
            assert (again.status_code, again.json(), again.headers[REPLAYED]) == (201, first.json(), "true")
            different = httpx.post(f"{restarted}/agents", json=INVOICES, headers={HEADER: f'"{key}"'}, timeout=60)
            assert different.status_code == 422 and HEADER in different.json()["error"]["message"], different.text

        # the store, read afterwards: every acknowledged write is there as acknowledged, every refused one is not
        registry = Registry(Config(data_dir, chroma_url=chroma.url))
        try:
            expected: dict[str, str | None] = {}  # each agent's description as the acknowledged writes leave it (None: absent)
            for operation, identifier, status, _ in writer.answers:
                if status < 300:
                    expected[identifier] = _document(int(identifier.rsplit("-", 1)[1]))["description"] if operation == "register" else None
                else:
                    expected.setdefault(identifier, None)  # refused: must not have been saved
            expected[_document(0)["identifier"]] = None  # deleted over MCP during the outage
            during = [a for a in writer.answers if stopped < a[3] < started]
            refused = [a for a in writer.answers if a[2] >= 300]
            assert refused == [], refused  # nothing refused: a write the store took is answered as saved
            for identifier, description in expected.items():
                stored = registry.store.get(identifier)
                assert (stored.entry["description"] if stored is not None else None) == description, identifier
            assert registry.store.get(TRANSLATE["identifier"]) is not None
            stored_keyed = registry.store.get(INVOICES["identifier"])
            assert stored_keyed is not None and stored_keyed.entry["description"] == keyed["description"]
            assert registry.store.pending_agents() == [] and registry.store.queued_vector_deletions(1) == []
            assert chroma_keys(registry) == store_keys(registry)
            print(
                f"\n{len(writer.answers)} REST writes ({len(during)} while Chroma was down), "
                f"{sum(1 for a in writer.answers if a[2] < 300)} acknowledged, {len(refused)} refused; "
                f"{len(expected)} agents checked in the store"
            )
        finally:
            registry.close()


def _queued(base: str) -> float:
    """`ard_mcp_index_vectors_queued` as a scrape of `base` reads it."""
    return value(samples(httpx.get(f"{base}/metrics", timeout=30).text), "ard_mcp_index_vectors_queued")


# -- idempotency keys, in one process -----------------------------------------------------------------------
ALICE, BOB = "alice-token-0123456789", "bob-token-0123456789ab"


@asynccontextmanager
async def app_on(
    data_dir: Path, store_url: str | None, tokens: TokenStore | None = None
) -> AsyncIterator[tuple[httpx.AsyncClient, AppState]]:
    app = build_app(Config(data_dir, store_url=store_url), HttpSettings(tokens=tokens or TokenStore()), warm=False)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL, timeout=60) as client,
    ):
        yield client, app.state.ard


def changes(state: AppState) -> int:
    """How many writes the store has taken (its change feed)."""
    registry = state.open_registry()
    return int(registry.store._tuples("SELECT count(*) FROM changes")[0][0])  # noqa: SLF001


def keyed(key: str) -> dict[str, str]:
    return {HEADER: f'"{key}"'}


@pytest.mark.anyio
async def test_a_retry_with_the_same_key_replays_the_first_answer(data_dir: Path, store_url: str | None) -> None:
    async with app_on(data_dir, store_url) as (client, state):
        first = await client.post("/agents", json=WEATHER, headers=keyed("k-1"))
        assert first.status_code == 201 and REPLAYED not in first.headers
        written = changes(state)
        for _ in range(2):
            again = await client.post("/agents", json=WEATHER, headers=keyed("k-1"))
            assert (again.status_code, again.content, again.headers[REPLAYED]) == (201, first.content, "true")
            assert again.headers["content-type"] == first.headers["content-type"]
        assert changes(state) == written  # replayed, not run again
        bare = await client.post("/agents", json=WEATHER, headers={HEADER: "k-1"})  # the same key, unquoted
        assert bare.status_code == 201 and bare.headers[REPLAYED] == "true"
        unkeyed = await client.post("/agents", json=WEATHER)  # run again, it would say "unchanged" (200)
        assert unkeyed.status_code == 200

        refused = await client.post("/agents", json={"identifier": "nope"}, headers=keyed("k-2"))  # a 4xx is kept too
        assert refused.status_code == 400
        kept = await client.post("/agents", json={"identifier": "nope"}, headers=keyed("k-2"))
        assert (kept.status_code, kept.json(), kept.headers[REPLAYED]) == (400, refused.json(), "true")

        crawled = await client.post("/crawl", json={"refresh": True}, headers=keyed("k-3"))  # the other keyed write
        assert crawled.status_code == 200, crawled.text
        recrawled = await client.post("/crawl", json={"refresh": True}, headers=keyed("k-3"))
        assert (recrawled.json(), recrawled.headers[REPLAYED]) == (crawled.json(), "true")


@pytest.mark.anyio
async def test_the_same_key_with_another_request_is_refused(data_dir: Path, store_url: str | None) -> None:
    async with app_on(data_dir, store_url) as (client, state):
        assert (await client.post("/agents", json=WEATHER, headers=keyed("k"))).status_code == 201
        written = changes(state)
        changed = entry(WEATHER, description="Something else entirely.")
        for url, body in (("/agents", changed), ("/agents?format=ard", WEATHER), ("/crawl", {"refresh": True})):
            refused = await client.post(url, json=body, headers=keyed("k"))
            assert refused.status_code == 422, refused.text
            error = refused.json()["error"]
            assert error["code"] in ("UnprocessableContent", "INVALID_ARGUMENT") and "different request" in error["message"]
        assert changes(state) == written
        stored = state.open_registry().store.get(WEATHER["identifier"])
        assert stored is not None and stored.entry["description"] == WEATHER["description"]


@pytest.mark.anyio
async def test_a_key_whose_first_request_is_running_is_refused_with_409(data_dir: Path, store_url: str | None) -> None:
    async with app_on(data_dir, store_url) as (client, state):
        keys = state.open_registry().idempotency
        body = httpx.Request("POST", f"{BASE_URL}/agents", json=WEATHER).content
        request = Request({"type": "http", "method": "POST", "path": "/agents", "query_string": b"", "headers": []})
        held = keys.claim("anonymous", "busy", fingerprint(request, body))  # the first request, still running
        refused = await client.post("/agents", content=body, headers={**keyed("busy"), "content-type": "application/json"})
        assert refused.status_code == 409 and refused.json()["error"]["code"] == "Conflict", refused.text
        assert "still being answered" in refused.json()["error"]["message"]
        assert state.open_registry().store.get(WEATHER["identifier"]) is None
        keys.release(held)  # its answer was a 5xx: nothing saved, the retry runs
        assert (
            await client.post("/agents", content=body, headers={**keyed("busy"), "content-type": "application/json"})
        ).status_code == 201

        # real concurrency: of requests sent at once with one key, one runs; the others are refused or replayed
        answers = await asyncio.gather(*(client.post("/agents", json=INVOICES, headers=keyed("race")) for _ in range(5)))
        ran = [a for a in answers if a.status_code == 201 and REPLAYED not in a.headers]
        assert len(ran) == 1 and all(a.status_code == 409 or a.headers.get(REPLAYED) == "true" for a in answers if a is not ran[0])
        assert sum(1 for a in answers if a.status_code == 409) + len(ran) + sum(1 for a in answers if REPLAYED in a.headers) == 5


@pytest.mark.anyio
async def test_keys_are_per_credential_and_expire(data_dir: Path, store_url: str | None) -> None:
    tokens = TokenStore({ALICE: Principal("alice"), BOB: Principal("bob")})
    async with app_on(data_dir, store_url, tokens) as (client, state):
        alice, bob = {"Authorization": f"Bearer {ALICE}"}, {"Authorization": f"Bearer {BOB}"}
        assert (await client.post("/agents", json=WEATHER, headers={**keyed("k"), **alice})).status_code == 201
        by_bob = await client.post("/agents", json=WEATHER, headers={**keyed("k"), **bob})
        assert by_bob.status_code == 200 and REPLAYED not in by_bob.headers  # Bob's key is his own: run, not replayed
        other = await client.post("/agents", json=INVOICES, headers={**keyed("k"), **bob})
        assert other.status_code == 422  # ...and Bob's own use of it holds for Bob
        nobody = await client.post("/agents", json=WEATHER, headers=keyed("k"))
        assert nobody.status_code == 401  # no credential, no key taken

        keys = state.open_registry().idempotency
        long_ago = time.time() - KEEP_SECONDS - 60
        old = keys.claim("alice", "old", "a request of yesterday", now=long_ago)
        keys.answer(old, KeptAnswer(201, [], b"{}"))
        fresh = await client.post("/agents", json=INVOICES, headers={**keyed("old"), **alice})
        assert fresh.status_code == 201 and REPLAYED not in fresh.headers  # forgotten after KEEP_SECONDS: a new key
        keys.claim("alice", "dead", "a request whose process died", now=time.time() - LEASE_SECONDS - 1)
        taken_over = await client.post("/agents", json=PDF, headers={**keyed("dead"), **alice})
        assert taken_over.status_code == 201  # held past its lease without an answer: free again


@pytest.mark.anyio
@pytest.mark.parametrize(
    "values",
    [[""], ['""'], ['"unterminated'], ['"a\\x"'], ['"a" b'], ["has space"], ["a,b"], ["x" * 256], ["one", "two"], ["caf\xe9"]],
)
async def test_bad_keys_are_refused_with_the_error_object(data_dir: Path, values: list[str]) -> None:
    async with app_on(data_dir, None) as (client, state):
        headers = [(HEADER.encode(), v.encode("latin-1")) for v in values] + [(b"content-type", b"application/json")]
        refused = await client.post("/agents", content=httpx.Request("POST", BASE_URL, json=WEATHER).content, headers=headers)
        assert refused.status_code == 400, refused.text
        error = refused.json()["error"]
        assert error["code"] == "InvalidInput" and error["message"].startswith(HEADER), error
        assert changes(state) == 0
        ard = await client.post("/crawl", json={"refresh": True}, headers=headers[:-1])  # an ARD route: its own error object
        assert ard.status_code == 400 and ard.json()["errorCode"] == "INVALID_ARGUMENT" and HEADER in ard.json()["message"]


@pytest.mark.anyio
async def test_the_key_is_documented_and_refused_where_not_taken(data_dir: Path) -> None:
    async with app_on(data_dir, None) as (client, _):
        document = (await client.get("/openapi.json")).json()
        for path in ("/agents", "/crawl"):
            post = document["paths"][path]["post"]
            assert [p["name"] for p in post["parameters"] if p["in"] == "header"] == [HEADER]
            assert {"409", "422"} <= post["responses"].keys() and REPLAYED in next(iter(post["responses"].values()))["headers"]
        invoke = await client.post("/agents/urn:air:example.com:x/invoke", json={}, headers=keyed("k"))
        assert invoke.status_code == 400 and HEADER in invoke.json()["error"]["message"]
        put = await client.put(f"/agents/{WEATHER['identifier']}", json=WEATHER, headers=keyed("k"))
        assert put.status_code == 201  # PUT is idempotent by its method: the header changes nothing
