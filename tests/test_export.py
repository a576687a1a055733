"""`ard-mcp export` and `ard-mcp backup`: the whole registry as one valid manifest, streamed; a copy of the
store taken while another process owns the data directory and writes; and both read back: an export
ingested into an empty data directory, a backup restored and reindexed, give the same registry.

The fast tests fill a store as the indexer does, minus the vectors (neither command reads them), so they
need no model; the ones marked slow ingest, reindex and search through the command line."""

from __future__ import annotations

import io
import json
import shutil
import sqlite3
import threading
import tracemalloc
import zlib
from collections.abc import Iterable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from ard_mcp.config import Config
from ard_mcp.errors import InvalidArgument, NotFound
from ard_mcp.formats.leniency import Notice, read_entry
from ard_mcp.formats.manifests import manifest_entries
from ard_mcp.index import datadir
from ard_mcp.index.backup import backup
from ard_mcp.index.export import export, replacing
from ard_mcp.index.filter_values import entry_values
from ard_mcp.index.lexical import fts_document
from ard_mcp.index.records import AgentWrite, content_hash
from ard_mcp.index.store.sqlite import SqliteStore as Store
from ard_mcp.registry import Registry
from ard_mcp.search.visibility import EVERYONE
from tests.conftest import PDF, SAMPLE, WEATHER, entry
from tests.http_support import ard_errors, assert_ard
from tests.test_cli import ard

pytestmark = pytest.mark.sqlite_only  # the SQLite store's own files, layouts and connections

CALENDAR: dict[str, Any] = {
    "identifier": "urn:air:office.example.com:bundle:calendar",
    "displayName": "Team Calendar",
    "type": "application/mcp-server-card+json",
    "description": "Finds a free slot for a meeting across everyone's calendars.",
    "url": "https://office.example.com/calendar.json",
}
OLD_PDF = entry(PDF, description="Document conversion toolkit (the copy in the bundle).", updatedAt="2026-01-01T00:00:00Z")
BUNDLE: dict[str, Any] = {  # a nested catalog: registered itself, and its members separately
    "identifier": "urn:air:office.example.com:bundle:office",
    "displayName": "Office Bundle",
    "type": "application/ai-catalog+json",
    "description": "Office tools published together.",
    "data": {"specVersion": "1.0", "host": {"displayName": "Office"}, "entries": [OLD_PDF, CALENDAR]},
}
NEW_PDF = entry(PDF, updatedAt="2026-06-01T00:00:00Z")  # registered on its own after the bundle: newer than its copy there
CHATTY = entry(  # more queries than the schema's five: the store keeps them all
    WEATHER, identifier="urn:air:example.com:weather:chatty", representativeQueries=[f"will it rain in city {i}" for i in range(7)]
)
LONE = entry(WEATHER, identifier="urn:air:example.com:weather:lone", representativeQueries=["is it windy"])  # fewer than two


def _manifest(entries: list[dict[str, Any]]) -> dict[str, Any]:
    return {"specVersion": "1.0", "host": {"displayName": "Test"}, "entries": entries}


def _write(store: Store, raw: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """One entry stored as the indexer stores it, without its examples' vectors (export and backup copy them
    or not, but never read them)."""
    parsed, _ = read_entry(raw)
    document = parsed.stored()
    updated = parsed.updated.isoformat() if parsed.updated else None
    values = entry_values(document)
    store.write_many([AgentWrite(document, content_hash(document), parsed.publisher, updated, values, fts_document(parsed, []), [])])
    return parsed.identifier, document


def _fill(data_dir: Path, entries: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """A manifest's entries written (nested catalogs walked, as ingest walks them); returns the stored
    documents by identifier."""
    data_dir.mkdir(parents=True, exist_ok=True)
    store = Store(data_dir / "catalog.sqlite3")
    try:
        return dict(_write(store, raw) for _, raw in manifest_entries(_manifest(list(entries))) if not isinstance(raw, Notice))
    finally:
        store.close()


def _exported(data_dir: Path, **options: Any) -> dict[str, Any]:
    out = io.BytesIO()
    export(data_dir, out, **options)
    manifest: dict[str, Any] = json.loads(out.getvalue())
    return manifest


def _by_identifier(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    entries = {e["identifier"]: e for e in manifest["entries"]}
    assert len(entries) == len(manifest["entries"]), "every stored entry is written once"
    return entries


# -- export ---------------------------------------------------------------------------------------------
def test_export_writes_every_stored_entry_once_catalogs_first(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    stored = _fill(data_dir, [*SAMPLE, BUNDLE])

    run = ard("export", data_dir=data_dir)  # stdout by default
    assert run.returncode == 0, run.stderr
    assert run.stderr.strip() == f"exported {len(stored)} entries to stdout"
    manifest = json.loads(run.stdout)
    assert_ard(manifest, "catalog:")
    assert manifest["specVersion"] == "1.0" and manifest["host"] == {"displayName": "ard-mcp agent registry"}
    assert _by_identifier(manifest) == stored  # the stored documents, members of the bundle included
    # The catalog first: ingest walks it again, and the members as stored must come after its copies of them.
    assert manifest["entries"][0]["identifier"] == BUNDLE["identifier"]
    assert run.stdout.count("\n") == len(stored) + 2  # one entry a line


def test_the_stored_form_keeps_every_query_and_the_served_form_is_schema_valid(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    _fill(data_dir, [*SAMPLE, CHATTY, LONE])

    stored = _exported(data_dir)
    entries = _by_identifier(stored)
    assert entries[CHATTY["identifier"]]["representativeQueries"] == CHATTY["representativeQueries"]
    assert entries[LONE["identifier"]]["representativeQueries"] == ["is it windy"]
    errors = ard_errors(stored, "catalog:")  # lossless, so these two break the schema's 2-5, and nothing else does
    assert len(errors) == 2 and all("representativeQueries" in e for e in errors), errors

    served = _exported(data_dir, served=True)
    assert_ard(served, "catalog:")
    entries = _by_identifier(served)
    assert entries[CHATTY["identifier"]]["representativeQueries"] == CHATTY["representativeQueries"][:5]
    assert "representativeQueries" not in entries[LONE["identifier"]]


def test_export_writes_what_reads_show_and_leaves_out_what_they_leave_out(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Issue #44: export wrote a row today's rules refuse and an entry whose expiresAt had passed, which every
    read leaves out (a registry that opens the store removes the second at its first read). An entry
    `visibleTo` hides from others is the operator's to export: the local operator's reads show it."""
    data_dir = tmp_path / "data"
    hidden = entry(WEATHER, identifier="urn:air:example.com:weather:private", metadata={"visibleTo": "alice"})
    lapsed = entry(WEATHER, identifier="urn:air:example.com:weather:lapsed", metadata={"expiresAt": "2020-01-01T00:00:00Z"})
    broken = entry(WEATHER, identifier="urn:air:example.com:weather:broken")
    stored = _fill(data_dir, [*SAMPLE, hidden, lapsed, broken])
    older = {**stored[broken["identifier"]], "metadata": {"expiresAt": "9999-12-31T23:59:59-14:00"}}  # as an older version stored it
    with sqlite3.connect(data_dir / "catalog.sqlite3") as db:
        db.execute("UPDATE agents SET entry = ? WHERE identifier = ?", (zlib.compress(json.dumps(older).encode()), broken["identifier"]))
    db.close()

    shown = {e["identifier"] for e in SAMPLE} | {hidden["identifier"]}
    for served in (False, True):
        assert set(_by_identifier(_exported(data_dir, served=served))) == shown
    assert f"{lapsed['identifier']} expired at 2020-01-01T00:00:00Z and is left out of the export" in caplog.text
    assert f"{broken['identifier']} is stored but cannot be read, so it is left out of every answer" in caplog.text
    with closing(Registry(Config(data_dir))) as registry:  # what a read shows the local operator: the same entries
        assert {item.identifier for item in registry.list(page_size=100, viewer=EVERYONE).items} == shown


def test_export_streams_in_batches_and_holds_one_batch_at_a_time(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    words = " ".join(f"word{i}" for i in range(4000))  # ~38 KB of inline data per entry
    big = [entry(PDF, identifier=f"urn:air:docs.example.org:bulk:agent-{i}", data={"notes": f"{i} {words}"}) for i in range(300)]
    _fill(data_dir, big)
    target = tmp_path / "catalog.json"
    reports: list[tuple[int, int]] = []

    tracemalloc.start()
    try:
        with replacing(target) as out:
            written = export(data_dir, out, batch=10, progress=lambda done, total: reports.append((done, total)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    size = target.stat().st_size
    assert written == 300 and size > 10_000_000
    assert reports == [(n, 300) for n in range(10, 301, 10)]  # written out batch by batch
    assert peak < size / 5, f"export held {peak / 2**20:.1f} MiB to write {size / 2**20:.1f} MiB"
    assert len(json.loads(target.read_bytes())["entries"]) == 300


def test_an_interrupted_export_leaves_the_previous_file(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    _fill(data_dir, [entry(PDF, identifier=f"urn:air:docs.example.org:bulk:agent-{i}") for i in range(50)])
    target = tmp_path / "out" / "catalog.json"
    target.parent.mkdir()
    target.write_text("previous export")

    def stop(done: int, total: int) -> None:
        raise KeyboardInterrupt  # the user gave up half-way

    with pytest.raises(KeyboardInterrupt), replacing(target) as out:
        export(data_dir, out, batch=10, progress=stop)
    assert target.read_text() == "previous export"
    assert [p.name for p in target.parent.iterdir()] == ["catalog.json"]  # no partial file left behind

    run = ard("export", str(target), data_dir=data_dir)
    assert run.returncode == 0 and run.stdout == "", run.stderr  # stdout stays free when writing a file
    assert run.stderr.strip() == f"exported 50 entries to {target}"
    assert len(json.loads(target.read_text())["entries"]) == 50
    missing_dir = ard("export", str(tmp_path / "nowhere" / "catalog.json"), data_dir=data_dir)
    assert missing_dir.returncode == 2 and "no such directory" in missing_dir.stderr


def test_export_of_an_empty_store_and_of_no_store(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    _fill(empty, [])
    manifest = _exported(empty)
    assert manifest["entries"] == []
    assert_ard(manifest, "catalog:")

    typo = tmp_path / "typo"
    with pytest.raises(NotFound, match="no catalog in"):
        export(typo, io.BytesIO())
    run = ard("export", data_dir=typo)
    assert run.returncode == 2 and "no catalog in" in run.stderr and run.stdout == ""
    assert not typo.exists()  # read-only: a mistyped --data-dir does not become a new, empty catalog


# -- backup ---------------------------------------------------------------------------------------------
def _journal_mode(path: Path) -> int:
    """The file format's write version (header byte 18): 1 is a rollback journal, 2 is WAL."""
    return path.read_bytes()[18]


def _agents(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        return sorted(r[0] for r in db.execute("SELECT identifier FROM agents"))


def test_export_and_backup_work_while_another_process_owns_the_data_directory(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    _fill(data_dir, SAMPLE)
    claim = datadir.claim(data_dir, shared=False)  # as a running server holds it
    store = Store(data_dir / "catalog.sqlite3")  # and its connection, with writes still in the write-ahead log
    try:
        _fill(data_dir, [CALENDAR])
        assert (data_dir / "catalog.sqlite3-wal").stat().st_size > 0
        expected = sorted([*(e["identifier"] for e in SAMPLE), CALENDAR["identifier"]])

        exported = ard("export", data_dir=data_dir)
        assert exported.returncode == 0, exported.stderr
        assert sorted(_by_identifier(json.loads(exported.stdout))) == expected

        into = tmp_path / "backups"
        into.mkdir()
        run = ard("backup", str(into), data_dir=data_dir)
        assert run.returncode == 0, run.stderr
        copy = into / "catalog.sqlite3"
        assert run.stdout.startswith(f"backed up {len(expected)} agents (") and str(copy) in run.stdout
        assert _agents(copy) == expected
        assert _journal_mode(copy) == 1  # one self-contained file
        assert sorted(p.name for p in into.iterdir()) == ["catalog.sqlite3"]

        onto_itself = ard("backup", str(data_dir), data_dir=data_dir)
        assert onto_itself.returncode == 2 and "is the store being backed up" in onto_itself.stderr
        assert _agents(data_dir / "catalog.sqlite3") == expected
    finally:
        store.close()
        datadir.release(claim)


def test_a_backup_is_one_consistent_snapshot_while_another_connection_writes(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    _fill(data_dir, SAMPLE)
    stop = threading.Event()

    def keep_writing() -> None:
        store = Store(data_dir / "catalog.sqlite3")
        try:
            i = 0
            while not stop.is_set():
                _write(store, entry(PDF, identifier=f"urn:air:docs.example.org:busy:agent-{i}"))
                i += 1
        finally:
            store.close()

    writer = threading.Thread(target=keep_writing)
    writer.start()
    try:
        counts = []
        for n in range(5):
            copy = backup(data_dir, tmp_path / f"backup-{n}.sqlite3")
            with sqlite3.connect(copy.path) as db:
                assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
                agents = db.execute("SELECT count(*) FROM agents").fetchone()[0]
                # each agent's rows come with it: no write is half in the copy
                assert db.execute("SELECT count(DISTINCT agent_id) FROM agent_values").fetchone()[0] == agents == copy.agents
            counts.append(agents)
    finally:
        stop.set()
        writer.join()
    assert counts == sorted(counts) and counts[-1] > len(SAMPLE)


def test_backup_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        backup(tmp_path / "typo", tmp_path / "copy.sqlite3")
    assert not (tmp_path / "typo").exists()
    data_dir = tmp_path / "data"
    _fill(data_dir, SAMPLE)
    with pytest.raises(InvalidArgument, match="no such directory"):
        backup(data_dir, tmp_path / "nowhere" / "copy.sqlite3")
    target = tmp_path / "copy.sqlite3"
    backup(data_dir, target)
    _fill(data_dir, [CALENDAR])
    backup(data_dir, target)  # a later backup to the same file replaces it
    assert CALENDAR["identifier"] in _agents(target)


# -- read back: the product's own ingest, reindex and search (the model and Chroma) ----------------------
@pytest.mark.slow
def test_an_export_ingested_into_an_empty_data_directory_restores_the_same_entries(tmp_path: Path) -> None:
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    first.write_text(json.dumps(_manifest([NEW_PDF, *(e for e in SAMPLE if e is not PDF), CHATTY, LONE])))
    second.write_text(json.dumps(_manifest([BUNDLE])))  # its copy of the PDF server is older than the one registered
    original = tmp_path / "original"
    assert ard("ingest", str(first), data_dir=original).returncode == 0
    run = ard("ingest", str(second), "--json", data_dir=original)
    assert json.loads(run.stdout)["added"] == 2  # the bundle and its calendar; the PDF copy is refused as stale
    before = _by_identifier(_exported(original))
    assert before[PDF["identifier"]]["updatedAt"] == NEW_PDF["updatedAt"]

    exported = tmp_path / "export.json"
    assert ard("export", str(exported), data_dir=original).returncode == 0
    restored = tmp_path / "restored"
    run = ard("ingest", str(exported), "--json", data_dir=restored)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["rejected"] == [], report
    assert report["added"] == len(before)  # the bundle's copy of a member and the member itself are one entry
    # Same identifiers, same stored documents: the PDF server as registered on its own, not the bundle's
    # copy (the bundle is written first, so the member as stored comes after ingest has walked the copy).
    assert _by_identifier(_exported(restored)) == before

    # Into the registry it came from, nothing changes; the bundle's stale copy is refused, as it was then.
    again = json.loads(ard("ingest", str(exported), "--json", data_dir=original).stdout)
    assert (again["added"], again["updated"]) == (0, 0)
    assert again["rejected"] == [
        f"{exported}: entries[0].data.entries[0]: {PDF['identifier']}: updatedAt {OLD_PDF['updatedAt']} is older than the "
        f"stored {NEW_PDF['updatedAt']}; nothing was changed"
    ]


@pytest.mark.slow
def test_a_backup_restored_and_reindexed_finds_the_entries(tmp_path: Path) -> None:
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps(_manifest(SAMPLE)))
    live = tmp_path / "live"
    assert ard("ingest", str(catalog), data_dir=live).returncode == 0
    claim = datadir.claim(live, shared=False)  # a server on it while the backup is taken
    try:
        run = ard("backup", str(tmp_path / "backup.sqlite3"), data_dir=live)
        assert run.returncode == 0, run.stderr
    finally:
        datadir.release(claim)

    fresh = tmp_path / "fresh"  # the restore steps of docs/backup.md: the backup as the store of an empty data directory
    fresh.mkdir()
    shutil.copyfile(tmp_path / "backup.sqlite3", fresh / "catalog.sqlite3")
    reindexed = ard("reindex", data_dir=fresh)
    assert reindexed.returncode == 0, reindexed.stderr
    assert reindexed.stdout.strip().endswith(f"of {len(SAMPLE)} agents")
    found = ard("search", "merge several pdf files into one", "--page-size", "2", data_dir=fresh)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["results"][0]["identifier"] == PDF["identifier"]
