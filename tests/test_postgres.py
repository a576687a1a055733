"""The PostgreSQL store against a real server: the same answers as SQLite on one catalog, clear errors,
migrations applied once, following other processes' writes, and three `ard-mcp serve` processes sharing
one database and one `chroma run` server."""

from __future__ import annotations

import itertools
import json
import random
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from ard_mcp.config import Config
from ard_mcp.errors import NotFound, StaleEntry, StoreUnavailable
from ard_mcp.formats.manifests import file_entries
from ard_mcp.formats.messages import FacetRequest
from ard_mcp.index.store import pg_schema
from ard_mcp.index.store.postgres import PostgresStore, fold
from ard_mcp.registry import Registry
from ard_mcp.search.query import SearchQuery
from tests.conftest import REPO, SAMPLE, WEATHER, entry
from tests.postgres_server import PostgresServer
from tests.processes import quiet_env, serving
from tests.reliability_support import Server, generated_entry
from tests.test_chroma_server import chroma_server

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

_DOMAINS = {
    "weather": ["forecast", "rain", "wind", "temperature", "storm"],
    "finance": ["invoice", "payment", "ledger", "tax", "currency"],
    "travel": ["flight", "hotel", "itinerary", "visa", "train"],
    "health": ["symptom", "appointment", "prescription", "clinic", "nutrition"],
    "code": ["repository", "review", "deploy", "test", "refactor"],
    "media": ["video", "podcast", "subtitle", "image", "thumbnail"],
}
_VERBS = ["find", "summarise", "convert", "track", "schedule", "translate", "compare", "monitor"]
_ACCENTED = ["café", "naïve", "résumé", "plain"]
_TYPES = ["application/mcp-server-card+json", "application/a2a-agent-card+json", "application/ai-skill"]


def synthetic_catalog(n: int, seed: int = 7) -> list[dict[str, Any]]:
    """A seeded catalog with overlapping vocabularies, repeated names and dates (ties to break), entries
    without a date, accented words and several types and publishers: what ordering, BM25 and facets must
    agree on."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        domain = rng.choice(sorted(_DOMAINS))
        words = rng.sample(_DOMAINS[domain], 3)
        verb = rng.choice(_VERBS)
        publisher = rng.choice(["acme.example", "globex.example", "initech.example", "umbrella.example"])
        item: dict[str, Any] = {
            "identifier": f"urn:air:{publisher}:{domain}:agent-{i}",
            "displayName": rng.choice([f"{domain.title()} {words[0]} helper", f"{words[1]} {verb}er", "Assistant", "assistant"]),
            "type": rng.choice(_TYPES),
            "url": f"https://{publisher}/agents/{i}.json",
            "description": f"{verb.title()} {words[0]} and {words[1]} data; {rng.choice(_ACCENTED)} {words[2]} support.",
            "tags": [domain, *words[:2]],
            "capabilities": [f"{verb}_{words[0]}", f"get_{words[2]}"],
            "representativeQueries": [f"{verb} the {words[0]} for my {words[1]}", f"show {words[2]} {domain} details"],
        }
        if rng.random() < 0.8:
            item["updatedAt"] = f"2026-0{rng.randint(1, 9)}-{rng.randint(10, 28)}T00:00:00Z"
        if i % 17 == 0:
            item["metadata"] = {"expiresAt": f"2027-0{1 + i % 9}-15T00:00:00Z", "region": rng.choice(["eu", "us"])}
        out.append(item)
    return out


QUERIES = [
    "what will the wind be like tomorrow",
    "pay an invoice in another currency",
    "plan my train itinerary and hotel",
    "book a clinic appointment",
    "review and deploy my repository",
    "subtitle a podcast video",
    "cafe resume",  # folds to the accented words' terms
    "translate a document",
    "monitor storm temperature",
    "tax ledger summary",
    "convert image thumbnails",
    "merge pdf files",
]


def _normalised(value: Any, own: frozenset[str] = frozenset()) -> Any:
    """An answer with what each registry stamps for itself (its clock, and `own` keys) left out."""
    text = json.dumps(value, sort_keys=True, default=str)
    data = json.loads(text)

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k not in {"indexedAt", "createdAt", "checkedAt", "~trust.checkedAt", *own}}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return strip(data)


def _answers(registry: Registry) -> list[Any]:
    now = datetime(2026, 5, 1, tzinfo=UTC)
    out: list[Any] = []
    for text in QUERIES:
        for flt in ({}, {"type": "application/mcp-server-card+json"}, {"tags": ["travel", "finance"]}):
            page = registry.search(SearchQuery.of(text, flt, page_size=5), now=now)
            out.append(page.response().model_dump(mode="json"))
            if page.page_token:
                second = registry.search(SearchQuery.of(text, flt, page_size=5, page_token=page.page_token), now=now)
                out.append(second.response().model_dump(mode="json"))
    # not createdAt: each registry stamps it with its own clock, so two ingests order entries registered in
    # the same millisecond differently (a CI run did); the stores' ordering of it is the updatedAt code path
    for field in ("displayName", "identifier", "updatedAt", "type", "publisher"):
        for order in (field, f"{field} desc"):
            token = None
            for _ in range(3):
                listed = registry.list(order_by=order, page_size=40, page_token=token)
                out.append([item.identifier for item in listed.items])
                token = listed.pageToken
    out.append(registry.list(filter={"publisher": "acme.example"}, order_by="displayName").model_dump(mode="json"))
    facets = [FacetRequest(field=f) for f in ("type", "tags", "publisher", "capabilities")]
    out.append(registry.explore(facets=facets).model_dump(mode="json"))
    out.append(registry.explore("weather forecast", facets=facets).model_dump(mode="json"))
    out.append(registry.explore(filter={"tags": "code"}, facets=facets).model_dump(mode="json"))
    return _normalised(out)


def test_both_stores_give_identical_answers_on_one_catalog(tmp_path: Path, postgres: PostgresServer) -> None:
    catalog = [*SAMPLE, *(e for _, e in file_entries(REPO / "examples" / "ai-catalog.json")), *synthetic_catalog(160)]
    registries = [Registry(Config(tmp_path / "sqlite")), Registry(Config(tmp_path / "pg", store_url=postgres.new_database()))]
    try:
        for registry in registries:
            report = registry.indexer.register_many((f"entries[{i}]", e) for i, e in enumerate(catalog))
            assert report.added == len(catalog) and not report.rejected
        sqlite_answers, pg_answers = (_answers(r) for r in registries)
        assert len(sqlite_answers) > 60
        for a, b in zip(sqlite_answers, pg_answers, strict=True):
            assert a == b
        # BM25 candidates, scores included, are FTS5's to the last few bits
        for text in QUERIES:
            terms = sorted({t for t in text.split() if len(t) > 2})
            fts5, pg = (r.store.lexical(terms, 40, (4.0, 3.0, 1.5, 1.0)) for r in registries)
            assert [a for a, _ in fts5] == [a for a, _ in pg]
            assert [s for _, s in fts5] == pytest.approx([s for _, s in pg], rel=1e-9)

        # stale updates are refused alike, and expiry removes the same entries
        older = entry(WEATHER, updatedAt="2020-01-01T00:00:00Z", description="older")
        for registry in registries:
            registry.indexer.register(entry(WEATHER, updatedAt="2026-09-01T00:00:00Z"))
            with pytest.raises(StaleEntry):
                registry.indexer.register(older)
        expired = [sorted(r.expire_due(datetime(2027, 6, 1, tzinfo=UTC))) for r in registries]
        assert expired[0] == expired[1] and len(expired[0]) >= 3
        assert _answers(registries[0]) == _answers(registries[1])
    finally:
        for registry in registries:
            registry.close()


def test_terms_are_folded_as_fts5_folds_them() -> None:
    assert [fold(t) for t in ("café", "naïve", "ÄÖ", "東京", "résumé")] == ["cafe", "naive", "ao", "東京", "resume"]


def test_an_unreachable_server_is_a_clear_error(tmp_path: Path, postgres: PostgresServer) -> None:
    with pytest.raises(StoreUnavailable, match=r"cannot open the PostgreSQL store at postgresql://postgres:\*\*\*@127.0.0.1:1/x"):
        Registry(Config(tmp_path / "data", store_url="postgresql://postgres:secret@127.0.0.1:1/x?connect_timeout=2"))
    with pytest.raises(StoreUnavailable, match='database "missing" does not exist'):
        PostgresStore(postgres.url("missing"))


def test_migrations_run_once_when_processes_start_together(postgres: PostgresServer) -> None:
    url = postgres.new_database()
    errors: list[BaseException] = []
    stores: list[PostgresStore] = []

    def open_one() -> None:
        try:
            stores.append(PostgresStore(url))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    try:
        assert not errors and len(stores) == 4
        with psycopg.connect(url) as conn:
            applied = conn.execute("SELECT version FROM schema_migrations ORDER BY version").fetchall()
            assert applied == [(v,) for v in range(1, len(pg_schema.MIGRATIONS) + 1)]  # each once, though four processes opened it
            conn.execute("INSERT INTO schema_migrations(version) VALUES (99)")
        with pytest.raises(StoreUnavailable, match="schema version 99, newer than this ard-mcp knows"):
            PostgresStore(url)
    finally:
        for store in stores:
            store.close()


def test_migration_3_keeps_the_marks_an_older_version_set_and_takes_write_numbers_past_32_bits(
    postgres: PostgresServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`vectors_pending` was a 0/1 flag in an integer column; now it is the number of the write whose vectors
    the agent waits for (`writes.put_agent`). An agent a version-2 database calls pending stays pending, and
    is cleared by the mark its old flag becomes."""
    url = postgres.new_database()
    monkeypatch.setattr(pg_schema, "MIGRATIONS", pg_schema.MIGRATIONS[:2])
    old = Registry(Config(tmp_path / "data", store_url=url))
    try:
        assert old.indexer.register_many((str(i), e) for i, e in enumerate(SAMPLE[:3])).added == 3
    finally:
        old.close()
    with psycopg.connect(url, autocommit=True) as conn:
        first = conn.execute("SELECT min(id) FROM agents").fetchone()[0]
        conn.execute("UPDATE agents SET vectors_pending = CASE WHEN id = %s THEN 1 ELSE 0 END", (first,))  # as version 2 left it
        conn.execute("UPDATE changes SET seq = seq + 3000000000")  # three billion writes later: past an integer column
    monkeypatch.undo()
    store = PostgresStore(url)
    try:
        assert store.pending_marks() == [(first, 1)]
        store.mark_vectors_done([(first, 1)])
        assert store.pending_marks() == []
        registry = Registry(Config(tmp_path / "data", store_url=url))
        try:
            registry.indexer.register({**SAMPLE[0], "description": "Forecasts for any town, updated hourly."})
            assert registry.store.pending_marks() == []  # written, sent and cleared with a mark past 2**31
            with psycopg.connect(url) as conn:
                assert conn.execute("SELECT max(seq) FROM changes").fetchone()[0] > 2**31
        finally:
            registry.close()
    finally:
        store.close()


def _wait(condition: Any, timeout: float = 10.0) -> float:
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < timeout, "not within the time allowed"
        time.sleep(0.005)
    return time.monotonic() - started


def test_a_store_follows_writes_made_through_another_one_even_after_losing_its_listener(tmp_path: Path, postgres: PostgresServer) -> None:
    url = postgres.new_database()
    writer, reader = Registry(Config(tmp_path / "a", store_url=url)), Registry(Config(tmp_path / "b", store_url=url))
    try:
        assert reader.store.count() == 0
        writer.indexer.register(WEATHER)
        _wait(lambda: reader.store.count() == 1)
        assert reader.store.filter_agents({"tags": ["weather"]}) == writer.store.filter_agents({"tags": ["weather"]})
        with psycopg.connect(url, autocommit=True) as admin:  # cut every listening connection
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%' AND pid <> pg_backend_pid()")
        writer.indexer.register(SAMPLE[1])
        _wait(lambda: reader.store.count() == 2, timeout=15)
    finally:
        writer.close()
        reader.close()


def test_connections_the_server_ended_are_never_handed_out(tmp_path: Path, postgres: PostgresServer) -> None:
    """A restart or failover of PostgreSQL ends every session; the pool notices a dead connection before
    handing it out (before, each of the next few searches failed with a 503 on one), and gets a new one."""
    url = postgres.new_database()
    registry = Registry(Config(tmp_path / "data", store_url=url))
    try:
        registry.indexer.register_many((f"entries[{i}]", e) for i, e in enumerate(SAMPLE))

        def search() -> None:
            for _ in range(5):
                assert registry.search(SearchQuery.of("weather in Oslo tomorrow")).candidates

        threads = [threading.Thread(target=search) for _ in range(6)]  # the pool grows to several connections
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        with psycopg.connect(url, autocommit=True) as admin:
            pooled = "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND query NOT LIKE 'LISTEN%'"
            assert admin.execute(f"SELECT count(*) {pooled}").fetchone()[0] >= 2
            admin.execute(f"SELECT pg_terminate_backend(pid) {pooled}")
        time.sleep(0.2)  # the server's goodbye reaches each idle connection
        for _ in range(10):
            assert registry.search(SearchQuery.of("weather in Oslo tomorrow")).candidates
    finally:
        registry.close()


def test_while_postgresql_is_down_calls_fail_at_once_and_work_again_when_it_is_back(tmp_path: Path) -> None:
    """A restart of the server (a server of this test's own): while it is down, a search and a write fail with
    StoreUnavailable (503) within a few seconds, not after the pool's 10 s, and the write leaves nothing
    behind; once the server is back the same registry answers again, without being restarted itself."""
    server = PostgresServer()
    try:
        registry = Registry(Config(tmp_path / "data", store_url=server.new_database()))
        try:
            registry.indexer.register_many((f"entries[{i}]", e) for i, e in enumerate(SAMPLE))
            query = SearchQuery.of("weather in Oslo tomorrow")
            assert registry.search(query).candidates
            server.halt()
            time.sleep(0.5)  # the change listener sees its connection end
            changed = entry(WEATHER, description="Tide tables and nothing else.")
            for call in (lambda: registry.search(query), lambda: registry.indexer.register(changed)):
                started = time.monotonic()
                with pytest.raises(StoreUnavailable, match="is unavailable"):
                    call()
                assert time.monotonic() - started < 5

            server.start()

            def answers() -> bool:
                try:
                    return bool(registry.search(query).candidates)
                except StoreUnavailable:
                    return False

            _wait(answers, timeout=20)
            assert all(registry.search(query).candidates for _ in range(5))
            assert registry.get(WEATHER["identifier"]).description == WEATHER["description"]
        finally:
            registry.close()
    finally:
        server.stop()


@pytest.fixture
def cluster(tmp_path: Path, postgres: PostgresServer) -> Iterator[list[str]]:
    """Three `ard-mcp serve` processes on one PostgreSQL database and one Chroma server, with no data directory."""
    url = postgres.new_database()
    unused = tmp_path / "never-created"
    with chroma_server(tmp_path / "chroma") as chroma:
        args = ("--transport", "streamable-http", "--store-url", url, "--chroma-url", chroma)
        with serving(unused, *args) as a, serving(unused, *args) as b, serving(unused, *args) as c:
            yield [a, b, c]
    assert not unused.exists()  # nothing was kept in (or locked in) a directory


def test_three_processes_share_one_database_and_one_chroma_server(cluster: list[str]) -> None:
    with httpx.Client(timeout=30) as http:
        for document in [*SAMPLE, *synthetic_catalog(40)]:
            assert http.post(f"{cluster[0]}/agents", json=document).status_code == 201

        def explore(base: str, facets: list[dict[str, str]]) -> Any:
            response = http.post(f"{base}/explore", json={"resultType": {"facets": facets}})
            assert response.status_code == 200, response.text
            return response.json()

        def answers(base: str) -> list[Any]:
            out = []
            for text in QUERIES[:6]:
                body = http.post(f"{base}/search", json={"query": {"text": text}, "pageSize": 5}).json()
                out.append(_normalised(body, frozenset({"source"})))  # each process's own URL
            out.append(http.get(f"{base}/agents", params={"pageSize": 50}).json())
            out.append(explore(base, [{"field": "tags"}, {"field": "type"}]))
            return out

        def found(base: str, identifier: str, text: str) -> bool:
            body = http.post(f"{base}/search", json={"query": {"text": text}, "pageSize": 5}).json()
            return identifier in [r["identifier"] for r in body["results"]]

        _wait(lambda: answers(cluster[1]) == answers(cluster[0]) == answers(cluster[2]), timeout=20)

        # a write through one is found through the others; a deletion through another disappears everywhere
        fresh = entry(
            WEATHER,
            identifier="urn:air:example.com:weather:tides",
            displayName="Tide Tables",
            description="Tide times and heights for harbours.",
        )

        def tags(base: str) -> Any:
            return explore(base, [{"field": "tags"}])

        before = tags(cluster[0])  # kept by every process until a write anywhere
        assert http.post(f"{cluster[1]}/agents", json=fresh).status_code == 201
        delays = [
            _wait(lambda base=base: found(base, fresh["identifier"], "tide times for a harbour")) for base in (cluster[0], cluster[2])
        ]
        _wait(lambda: tags(cluster[0]) == tags(cluster[1]) == tags(cluster[2]) != before)
        assert http.delete(f"{cluster[2]}/agents/{fresh['identifier']}").status_code in (200, 204)
        delays += [_wait(lambda base=base: not found(base, fresh["identifier"], "tide times for a harbour")) for base in cluster[:2]]
        print(f"write to visible elsewhere: max {max(delays) * 1000:.0f} ms")
        assert max(delays) < 5
        assert answers(cluster[0]) == answers(cluster[1]) == answers(cluster[2])


def test_two_processes_updating_the_same_agents_one_killed_leave_every_vector_in_chroma(tmp_path: Path, postgres: PostgresServer) -> None:
    """Two `serve` processes on one database and one Chroma server update the same few agents at once (two
    writers an agent, each through the other process), and one is killed (SIGKILL) meanwhile: after a restart
    nothing is pending and Chroma has a vector for every stored example. Each process sends its own writes'
    vectors and clears only its own write's mark (`Store.mark_vectors_done`); what that rule prevents, a mark
    cleared by an earlier write's late send, is shown deterministically by
    `test_put_off_vectors.test_a_vectors_mark_is_cleared_only_by_the_write_that_set_it` (here its window is a
    few milliseconds: 6 runs with the marks as flags passed too)."""
    url = postgres.new_database()
    with chroma_server(tmp_path / "chroma") as chroma:
        extra = ("--store-url", url, "--chroma-url", chroma)
        servers = [Server(tmp_path / f"unused-{i}", tmp_path / f"serve-{i}.log", extra) for i in range(2)]
        bases = [server.start() for server in servers]
        stop, written, refused = threading.Event(), [0], [0]

        def update(writer: int) -> None:
            """Writers 2k and 2k+1 update agents 3k..3k+2 at once, each through the other process."""
            with httpx.Client(timeout=30) as http:
                for n in itertools.count():
                    if stop.is_set():
                        return
                    item = generated_entry(writer // 2 * 3 + n % 3, revision=2 * n + writer % 2)
                    try:
                        answer = http.post(f"{bases[(n + writer) % 2]}/agents", json=item)
                        written[0] += answer.status_code in (200, 201)
                    except httpx.TransportError:
                        refused[0] += 1  # the killed process

        writers = [threading.Thread(target=update, args=(w,)) for w in range(4)]
        try:
            for thread in writers:
                thread.start()
            time.sleep(2.0)
            servers[0].kill()
            time.sleep(1.0)
        finally:
            stop.set()
            for thread in writers:
                thread.join(60)
            servers[1].stop()
            servers[0].kill()
        assert written[0] > 20 and refused[0] > 0, (written, refused)
        registry = Registry(Config(tmp_path / "check", store_url=url, chroma_url=chroma))
        try:
            registry.warm_up()  # as the next process to start: sends what is still pending
            assert registry.store.pending_marks() == []
            pairs = [(e, a) for batch in registry.store.iter_examples() for e, a, _ in batch]
            found, _ = registry.vectors.stored_vectors(pairs)
            assert sorted(found) == sorted(e for e, _ in pairs), f"Chroma lacks {len(pairs) - len(found)} of {len(pairs)} stored examples"
        finally:
            registry.close()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ard_mcp", *args], env=quiet_env(), capture_output=True, text=True, timeout=120)


def test_the_cli_ingests_exports_and_refuses_a_file_backup_of_a_postgres_store(tmp_path: Path, postgres: PostgresServer) -> None:
    url = postgres.new_database()
    ingested = _cli("ingest", str(REPO / "examples" / "ai-catalog.json"), "--store-url", url, "--data-dir", str(tmp_path / "d"))
    assert ingested.returncode == 0, ingested.stderr
    exported = _cli("export", str(tmp_path / "out.json"), "--store-url", url, "--data-dir", str(tmp_path / "d"))
    assert exported.returncode == 0, exported.stderr
    original = {e["identifier"] for _, e in file_entries(REPO / "examples" / "ai-catalog.json")}
    assert {e["identifier"] for e in json.loads((tmp_path / "out.json").read_text())["entries"]} == original

    refused = _cli("backup", str(tmp_path / "copy"), "--store-url", url, "--data-dir", str(tmp_path / "d"))
    assert refused.returncode == 2 and "pg_dump" in refused.stderr and "Traceback" not in refused.stderr
    down = _cli("search", "weather", "--store-url", "postgresql://postgres@127.0.0.1:1/x", "--data-dir", str(tmp_path / "e"))
    assert down.returncode == 2 and "cannot open the PostgreSQL store" in down.stderr and "Traceback" not in down.stderr


def test_an_entry_another_process_registered_expires_here_too(tmp_path: Path, postgres: PostgresServer) -> None:
    url = postgres.new_database()
    writer, reader = Registry(Config(tmp_path / "a", store_url=url)), Registry(Config(tmp_path / "b", store_url=url))
    try:
        assert reader.expire_due() == []  # the reader's clock has looked: nothing expires
        soon = (datetime.now(UTC) + timedelta(seconds=2)).isoformat().replace("+00:00", "Z")
        writer.indexer.register(entry(WEATHER, metadata={"expiresAt": soon}))
        _wait(lambda: reader.store.count() == 1)
        assert reader.get(WEATHER["identifier"]).identifier == WEATHER["identifier"]
        time.sleep(2.2)
        with pytest.raises(NotFound):
            reader.get(WEATHER["identifier"])
    finally:
        writer.close()
        reader.close()


def test_a_nul_in_a_looked_up_value_finds_nothing_instead_of_failing(tmp_path: Path, postgres: PostgresServer) -> None:
    """PostgreSQL text cannot hold NUL (SQLite's can); the REST fuzzer sent one in an identifier and got a 500."""
    registry = Registry(Config(tmp_path / "d", store_url=postgres.new_database()))
    try:
        registry.indexer.register(WEATHER)
        assert registry.store.get(WEATHER["identifier"] + "\x00") is None
        assert registry.store.filter_agents({"tags": ["weather\x00"]}) == frozenset()
        with pytest.raises(NotFound):
            registry.get("urn:air:example.com:a\x00b")
    finally:
        registry.close()
