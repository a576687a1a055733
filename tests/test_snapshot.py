"""The bundled snapshot of public MCP servers: a person's first start over stdio answers everyday tasks with
real servers, from the snapshot's own vectors; nothing else gets it unless asked; it says where every entry
came from and under which licence; removed, it stays removed.

The servers here are real processes (`ard-mcp serve` over stdio driven by the MCP SDK's client, and over
streamable HTTP), on SQLite data directories: the snapshot is for a person's own registry, never a shared
PostgreSQL store, so these run on SQLite only. conftest starts every other test's servers without it
(ARD_MCP_NO_SNAPSHOT); these take it out of their servers' environment."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from mcp import Client, StdioServerParameters

from ard_mcp.config import Config, default_model_dir
from ard_mcp.formats.leniency import read_entry
from ard_mcp.index import snapshot
from ard_mcp.index.embedding import ModelSpec
from ard_mcp.registry import Registry
from tests import processes

REPO = Path(__file__).resolve().parents[1]
CATALOG = REPO / "examples" / "ai-catalog.json"
# A task a person asks on their first day, and words one of the top three results must have in its name.
EVERYDAY = {
    "read and write files in a folder": ("filesystem", "file system"),
    "fetch a web page as markdown": ("fetch", "markdown"),
    "send a message to a Slack channel": ("slack",),
    "get a weather forecast": ("weather",),
    "search GitHub issues": ("github",),
}


@pytest.fixture(scope="module")
def bundled() -> snapshot.Snapshot:
    return snapshot.read()


def _env() -> dict[str, str]:
    """A person's environment: no ARD_MCP_NO_SNAPSHOT, quiet logs."""
    return {k: v for k, v in os.environ.items() if k not in ("ARD_MCP_NO_SNAPSHOT", "ARD_MCP_STORE_URL")} | {"ARD_MCP_LOG_LEVEL": "WARNING"}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    run = subprocess.run([sys.executable, "-m", "ard_mcp", *args], env=_env(), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return run


def _stdio(data_dir: Path, calls: list[tuple[str, dict[str, Any]]], *flags: str) -> list[dict[str, Any]]:
    """Start `ard-mcp serve` over stdio as a host would, make the calls, return their structured results."""

    async def run() -> list[dict[str, Any]]:
        server = StdioServerParameters(
            command=sys.executable, args=["-m", "ard_mcp", "serve", "--data-dir", str(data_dir), *flags], env=_env()
        )
        out = []
        async with Client(server) as client:
            for tool, arguments in calls:
                result = await client.call_tool(tool, arguments)
                assert not result.is_error, result.content
                assert result.structured_content is not None
                out.append(result.structured_content)
        return out

    return anyio.run(run)


def _names(hit: dict[str, Any]) -> str:
    return f"{hit['identifier']} {hit['displayName']}".lower().replace("-", " ").replace("_", " ")


# -- the file that ships ---------------------------------------------------------------------------------------


def test_the_snapshot_holds_a_thousand_attributed_servers(bundled: snapshot.Snapshot) -> None:
    """Each source with its licence, its text and the commit it was read at; each entry naming its source."""
    assert len(bundled.entries) >= 1000
    assert snapshot.BUNDLED.stat().st_size < 3 * 2**20
    names = {s["name"] for s in bundled.sources}
    assert names == {"mcp-registry-seed", "docker-mcp-catalog", "mcp-servers-readme"}
    for source in bundled.sources:
        assert re.fullmatch(r"[0-9a-f]{40}", source["commit"]) and source["url"].startswith("https://github.com/")
        assert source["licence"] == "MIT" and "Permission is hereby granted, free of charge" in source["licenceText"]
    assert sum(s["servers"] for s in bundled.sources) == len(bundled.entries)
    for entry in bundled.entries:
        assert entry["metadata"]["source"] in names and entry["metadata"]["snapshot"] == bundled.id
    assert len({e["identifier"] for e in bundled.entries}) == len(bundled.entries)


def test_an_image_command_line_becomes_the_arguments_of_its_package() -> None:
    """Docker's `run.command` is the only place the three catalogs say how a server is started: a value in one
    of the image's volumes is the person's own file or folder (asked for, never filled), the rest is kept; a
    command with a template of Docker's settings or a $VARIABLE is not carried at all."""
    sys.path.insert(0, str(REPO / "bench"))
    from build_snapshot import image_arguments

    assert image_arguments(["--db-path", "/mcp/db.sqlite", "--transport=stdio", "serve", "--verbose"], ["data:/mcp"]) == [
        {
            "type": "named",
            "name": "--db-path",
            "isRequired": True,
            "format": "filepath",
            "description": "a file of yours (Docker's catalog keeps it at /mcp/db.sqlite, in a volume)",
        },
        {"type": "named", "name": "--transport", "value": "stdio"},
        {"type": "positional", "value": "serve"},
        {"type": "named", "name": "--verbose"},
    ]
    assert image_arguments(["--root", "/data/"], ["store:/data"])[0]["description"].startswith("a folder of yours")
    assert image_arguments(["{{fs.paths|volume-target|into}}"], ["{{fs.paths|volume|into}}"]) == []
    assert image_arguments(["--auth-token", "$SENTRY_AUTH_TOKEN"], []) == []


def test_the_sqlite_reference_server_asks_the_person_for_their_database_file(bundled: snapshot.Snapshot) -> None:
    """The snapshot's SQLite server runs its PyPI package with `--db-path` and the file the person grants."""
    from ard_mcp.packages.grants import needed
    from ard_mcp.packages.specs import PackageSpec, package_of

    (entry,) = [e for e in bundled.entries if e["metadata"].get("sourceId") == "com.docker/SQLite"]
    spec = package_of(entry)
    assert isinstance(spec, PackageSpec) and spec.name == "mcp-server-sqlite"
    assert needed(spec.package_arguments) == "file" and spec.package_arguments[0] == "--db-path"


def test_the_snapshot_has_a_vector_for_every_text_this_version_indexes(bundled: snapshot.Snapshot) -> None:
    """Built for the default model, and in step with how entries are read into examples today: a first start
    embeds nothing (a change to `example_texts` that changes a text means running bench/build_snapshot.py)."""
    assert bundled.model_id == ModelSpec.load(default_model_dir()).id
    needed = {t for e in bundled.entries for t in snapshot.entry_texts(read_entry(e, e["identifier"])[0])}
    lacking = sorted(needed - set(bundled.texts))
    assert not lacking, f"{len(lacking)} texts lack a vector, e.g. {lacking[:3]}"
    norms = np.linalg.norm(np.stack(list(bundled.vectors.values())), axis=1)
    assert np.allclose(norms, 1.0, atol=0.02)


# -- the model guard, on a snapshot of two entries -------------------------------------------------------------


def _tiny(path: Path, model_id: str, vectors: np.ndarray) -> list[str]:
    entries = [
        {
            "identifier": f"urn:air:example.com:server:{name}",
            "displayName": name,
            "type": "application/mcp-server-card+json",
            "description": text,
            "data": {"name": f"com.example/{name}"},
            "metadata": {"source": "test", "snapshot": "tiny-1"},
        }
        for name, text in (("tides", "Tide tables for harbours."), ("moon", "Phases of the moon."))
    ]
    texts = sorted({t for e in entries for t in snapshot.entry_texts(read_entry(e)[0])})
    header = {"id": "tiny-1", "model": {"id": model_id, "dimension": vectors.shape[1]}, "sources": [], "entries": entries}
    snapshot.write(path, header, texts, vectors[: len(texts)])
    return texts


def _stored(registry: Registry) -> dict[str, np.ndarray]:
    found: dict[str, np.ndarray] = {}
    for agent_id in registry.store.agent_ids():
        found.update(registry.store.vectors_by_text(agent_id))
    return found


@pytest.mark.slow
@pytest.mark.sqlite_only
def test_the_snapshots_vectors_are_used_only_for_the_model_they_were_made_with(tmp_path: Path) -> None:
    """Vectors no model would make (random) are stored as given for the same model id, which proves the model
    never ran on them; under another id the registry embeds the texts itself."""
    registry = Registry(Config(data_dir=tmp_path / "same"))
    try:
        random = np.random.default_rng(7).normal(size=(4, registry.model_spec.dimension)).astype(np.float32)
        random /= np.linalg.norm(random, axis=1, keepdims=True)
        texts = _tiny(tmp_path / "same.xz", registry.model_spec.id, random)
        assert snapshot.add_if_new(registry.store, registry.indexer, registry.model_spec.id, tmp_path / "same.xz") is not None
        stored = _stored(registry)
        for i, text in enumerate(texts):
            assert float(stored[text] @ random[i]) > 0.999
    finally:
        registry.close()

    registry = Registry(Config(data_dir=tmp_path / "other"))
    try:
        texts = _tiny(tmp_path / "other.xz", "another-model@1", random)
        report = snapshot.add_if_new(registry.store, registry.indexer, registry.model_spec.id, tmp_path / "other.xz")
        assert report is not None and report.added == 2
        stored, own = _stored(registry), registry.embedder.embed(texts)
        for i, text in enumerate(texts):
            assert float(stored[text] @ own[i]) > 0.99 and float(stored[text] @ random[i]) < 0.5
    finally:
        registry.close()


@pytest.mark.slow
@pytest.mark.sqlite_only
def test_only_a_new_store_gets_it(tmp_path: Path) -> None:
    """A registry that holds entries, or held some and was emptied by its owner, is not new."""
    registry = Registry(Config(data_dir=tmp_path / "d"))
    try:
        random = np.eye(4, registry.model_spec.dimension, dtype=np.float32)
        _tiny(tmp_path / "t.xz", registry.model_spec.id, random)
        registry.indexer.register_many([("own", json.loads(CATALOG.read_text())["entries"][0])])
        assert snapshot.add_if_new(registry.store, registry.indexer, registry.model_spec.id, tmp_path / "t.xz") is None
        for identifier in registry.store.identifiers(registry.store.agent_ids()).values():
            registry.indexer.deregister(identifier)
        assert registry.store.count() == 0
        assert snapshot.add_if_new(registry.store, registry.indexer, registry.model_spec.id, tmp_path / "t.xz") is None
    finally:
        registry.close()


# -- real servers -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def first_start(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[dict[str, Any]]]]:
    """A person's first start: a new data directory served over stdio, asked the everyday tasks."""
    data_dir = tmp_path_factory.mktemp("first") / "registry"
    calls: list[tuple[str, dict[str, Any]]] = [("search_agents", {"text": task, "pageSize": 3}) for task in EVERYDAY]
    calls.append(("list_agents", {"pageSize": 1}))
    yield data_dir, _stdio(data_dir, calls)


@pytest.mark.slow
@pytest.mark.sqlite_only
def test_a_first_start_answers_everyday_tasks_with_real_servers(first_start: tuple[Path, list[dict[str, Any]]]) -> None:
    _, answers = first_start
    for (task, words), answer in zip(EVERYDAY.items(), answers, strict=False):
        top = answer["results"][:3]
        assert any(word in _names(hit) for hit in top for word in words), f"{task!r}: {[h['displayName'] for h in top]}"
    assert answers[-1]["total"] >= 1000


@pytest.mark.slow
@pytest.mark.sqlite_only
def test_each_entry_says_where_it_came_from(first_start: tuple[Path, list[dict[str, Any]]], bundled: snapshot.Snapshot) -> None:
    data_dir, answers = first_start
    first = answers[0]["results"][0]["identifier"]
    [entry] = _stdio(data_dir, [("get_agent", {"identifier": first})])
    source = next(s for s in bundled.sources if s["name"] == entry["metadata"]["source"])
    assert entry["metadata"]["snapshot"] == bundled.id and source["commit"]
    assert "public-mcp-servers" in _cli("snapshot", "show", "--data-dir", str(data_dir)).stdout


@pytest.mark.slow
@pytest.mark.sqlite_only
def test_a_registry_with_entries_gets_nothing(tmp_path: Path) -> None:
    _cli("ingest", str(CATALOG), "--data-dir", str(tmp_path))
    [listed] = _stdio(tmp_path, [("list_agents", {"pageSize": 1})])
    assert listed["total"] == 11


@pytest.mark.slow
@pytest.mark.sqlite_only
def test_a_registry_served_over_http_gets_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARD_MCP_NO_SNAPSHOT", raising=False)
    with processes.serving(tmp_path, "--transport", "streamable-http") as base:
        import httpx

        found = httpx.post(f"{base}/search", json={"query": {"text": "get a weather forecast"}}, timeout=60)
        assert found.status_code == 200 and found.json()["results"] == []
    assert "0 entries of the snapshot" in _cli("snapshot", "show", "--data-dir", str(tmp_path)).stdout


@pytest.mark.slow
@pytest.mark.sqlite_only
def test_removed_it_stays_removed_and_add_brings_it_back(tmp_path: Path, bundled: snapshot.Snapshot) -> None:
    """`snapshot remove` takes out what the snapshot added and keeps the person's own entries; the next start
    adds nothing; `snapshot add` adds it again when asked."""
    [searched] = _stdio(tmp_path, [("search_agents", {"text": "get a weather forecast", "pageSize": 3})])
    assert searched["results"]
    _cli("ingest", str(CATALOG), "--data-dir", str(tmp_path))
    removed = _cli("snapshot", "remove", "--data-dir", str(tmp_path)).stdout
    assert f"removed {len(bundled.entries)} entries" in removed
    [listed] = _stdio(tmp_path, [("list_agents", {"pageSize": 1})])
    assert listed["total"] == 11
    assert f"added {len(bundled.entries)}" in _cli("snapshot", "add", "--data-dir", str(tmp_path)).stdout
    [listed] = _stdio(tmp_path, [("list_agents", {"pageSize": 1})])
    assert listed["total"] == 11 + len(bundled.entries)


@pytest.mark.slow
@pytest.mark.sqlite_only
def test_no_snapshot_starts_a_new_registry_empty(tmp_path: Path) -> None:
    [listed] = _stdio(tmp_path, [("list_agents", {"pageSize": 1})], "--no-snapshot")
    assert listed["total"] == 0


@pytest.mark.slow
@pytest.mark.sqlite_only
def test_a_crawl_of_the_live_registry_updates_the_snapshots_servers_in_place(tmp_path: Path, bundled: snapshot.Snapshot) -> None:
    """The registry's newer record of a server the snapshot holds replaces it (same identifier, no second
    entry); `snapshot remove` then leaves it, since it is the registry's now. The registry here is a loopback
    stand-in answering `GET /v0.1/servers` as the official one does."""
    from tests.web_publisher import Publisher

    seeded = next(e for e in bundled.entries if e["metadata"]["source"] == "mcp-registry-seed")
    name = seeded["metadata"]["sourceId"]
    official = {"status": "active", "isLatest": True, "publishedAt": "2026-09-01T10:00:00Z", "updatedAt": "2026-09-01T10:00:00Z"}
    record = {"name": name, "description": "The registry's own, newer description.", "version": "2.0.0"}
    page = {"servers": [{"server": record, "_meta": {"io.modelcontextprotocol.registry/official": official}}], "metadata": {"count": 1}}
    [listed] = _stdio(tmp_path, [("list_agents", {"pageSize": 1})])
    with Publisher() as live:
        live.put("/v0.1/servers", page)
        _cli("crawl", "--mcp-registry", live.origin, "--allow-private-networks", "--data-dir", str(tmp_path))
    [entry, after] = _stdio(tmp_path, [("get_agent", {"identifier": seeded["identifier"]}), ("list_agents", {"pageSize": 1})])
    assert entry["description"] == record["description"] and "snapshot" not in entry["metadata"]
    assert after["total"] == listed["total"] == len(bundled.entries)
    _cli("snapshot", "remove", "--data-dir", str(tmp_path))
    [kept] = _stdio(tmp_path, [("list_agents", {"pageSize": 5})])
    assert [e["identifier"] for e in kept["items"]] == [seeded["identifier"]]


def _killed_while_writing(data_dir: Path) -> None:
    """Start `ard-mcp serve` over stdio on a new data directory (its warm-up adds the snapshot, no request
    needed) and kill it (SIGKILL) while it writes the snapshot: once its write-ahead log has grown past 1 MiB
    (the snapshot's pages; making the tables writes a few KiB) and a transaction holds the store, which this
    process's own attempt to take SQLite's write lock, with no wait, finds."""
    import sqlite3
    import time

    from ard_mcp.index.store import CATALOG_FILE

    server = subprocess.Popen(
        [sys.executable, "-m", "ard_mcp", "serve", "--data-dir", str(data_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_env(),
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and server.poll() is None:
            time.sleep(0.005)
            wal = data_dir / f"{CATALOG_FILE}-wal"
            if not wal.exists() or wal.stat().st_size < 2**20:
                continue
            probe = sqlite3.connect(data_dir / CATALOG_FILE, timeout=0, isolation_level=None)
            try:
                made = probe.execute("SELECT count(*) FROM meta WHERE key = 'schema_version'").fetchone()[0]
            except sqlite3.OperationalError:  # not made yet, or the store being made
                made = 0
            try:
                if made:
                    probe.execute("BEGIN IMMEDIATE")
                    probe.execute("ROLLBACK")
            except sqlite3.OperationalError as exc:
                if "locked" in str(exc):
                    return
                raise
            finally:
                probe.close()
        pytest.fail("the first start never held the store's write lock")
    finally:
        server.kill()
        server.wait()


@pytest.mark.slow
@pytest.mark.sqlite_only
def test_a_first_start_killed_while_adding_it_leaves_all_or_nothing_and_the_next_start_has_it_all(
    tmp_path: Path, bundled: snapshot.Snapshot
) -> None:
    """The snapshot is written in one transaction with the store's record of it, so a first start killed
    while writing it leaves a new store (which the next start fills) or all of it (whose vectors the next
    start sends the vector index), never a registry that silently lacks part of it."""
    _killed_while_writing(tmp_path)
    registry = Registry(Config(data_dir=tmp_path))
    try:
        assert registry.store.count() in (0, len(bundled.entries))
        assert snapshot.is_new(registry.store) == (registry.store.count() == 0)
    finally:
        registry.close()
    weather = ("search_agents", {"text": "get a weather forecast", "pageSize": 3})
    calls: list[tuple[str, dict[str, Any]]] = [("list_agents", {"pageSize": 1}), weather]
    [listed, searched] = _stdio(tmp_path, calls)
    assert listed["total"] == len(bundled.entries)
    assert any("weather" in _names(hit) for hit in searched["results"])
    registry = Registry(Config(data_dir=tmp_path))
    try:
        assert snapshot.state(registry.store) == bundled.id and registry.store.pending_agents() == []
        assert registry.vectors.count() == registry.store.example_count()
    finally:
        registry.close()
    assert f"{len(bundled.entries)} entries of the snapshot" in _cli("snapshot", "show", "--data-dir", str(tmp_path)).stdout
