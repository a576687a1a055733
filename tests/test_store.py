"""The stores: what they keep and give back and their lexical index kept exact through writes (both
stores); for SQLite, answers kept across connections and older stores migrated to the current layout once,
when they open."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ard_mcp.config import Config
from ard_mcp.index.records import AgentWrite, FtsDocument, NewExample, TermText, content_hash, term_finder
from ard_mcp.index.store import open_store
from ard_mcp.index.store.base import Store as BaseStore
from ard_mcp.index.store.postgres import field_counts, fold
from ard_mcp.index.store.schema import SCHEMA_VERSION
from ard_mcp.index.store.sqlite import SqliteStore as Store

pytestmark = pytest.mark.sqlite_only  # the SQLite store's own files, layouts and connections

WEIGHTS = (4.0, 3.0, 1.5, 1.0)


def _vectors(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, 384)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _write(store: Store, name: str, words: str, vectors: np.ndarray, identifier: str | None = None) -> int:
    entry = {
        "identifier": identifier or f"urn:air:example.com:{name}",
        "displayName": name,
        "type": "application/a2a-agent-card+json",
        "url": "https://example.com",
        "extra": {"kept": [1, "two"]},
    }
    fts = FtsDocument(name=name, keywords=f"{words} | tag{name}", description=f"{words} description", examples=f"{words} example")
    examples = [NewExample("query", f"q{i}", f"{name} text {i}", v) for i, v in enumerate(vectors)]
    values = {("type", entry["type"]), ("identifier", entry["identifier"])}
    [written] = store.write_many([AgentWrite(entry, f"hash-{words}", "example.com", None, values, fts, examples)])
    return written.agent


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store(tmp_path / "catalog.sqlite3")
    yield opened
    opened.close()


@pytest.fixture
def any_store(tmp_path: Path, store_url: str | None) -> Iterator[BaseStore]:
    """Each store: SQLite, and PostgreSQL where the machine has it."""
    opened = open_store(Config(tmp_path, store_url=store_url))
    yield opened
    opened.close()


def _integrity(store: BaseStore) -> None:
    """The full-text index holds exactly every stored agent's terms."""
    if isinstance(store, Store):
        store._conn.execute("INSERT INTO agents_fts(agents_fts, rank) VALUES ('integrity-check', 0)")  # noqa: SLF001
        return
    indexed: dict[int, set[str]] = {}
    for term, agent in store._tuples("SELECT term, agent_id FROM postings"):  # noqa: SLF001
        indexed.setdefault(agent, set()).add(term)
    stored = {agent: FtsDocument.packed(blob).vocabulary() for agent, blob in store._tuples("SELECT id, fts FROM agents")}  # noqa: SLF001
    assert indexed == {agent: {fold(t) for t in terms} for agent, terms in stored.items()}
    documents = [FtsDocument.packed(blob) for _, blob in store._tuples("SELECT id, fts FROM agents")]  # noqa: SLF001
    totals = store._tuples("SELECT documents, tokens FROM lexical_totals")[0]  # noqa: SLF001
    assert totals == (len(documents), sum(field_counts(d)[1] for d in documents)) and store.count() == len(documents)


def test_entries_and_vectors_round_trip(any_store: BaseStore) -> None:
    store = any_store
    vectors = _vectors(5, 1)
    _write(store, "alpha", "weather forecast", vectors)
    stored = store.get("urn:air:example.com:alpha")
    assert stored is not None and stored.entry["extra"] == {"kept": [1, "two"]}
    back = np.stack([row.vector for row in store.examples_of([stored.id])])
    cosine = np.sum(back * vectors, axis=1) / np.linalg.norm(back, axis=1)
    assert np.min(cosine) > 0.9999
    batch = store.candidate_examples([stored.id])
    assert np.allclose(batch.vectors, back)
    assert next(v for _, _, v in next(store.iter_examples())).shape == (384,)


def test_replacing_and_deleting_keep_the_lexical_index_exact(any_store: BaseStore) -> None:
    store = any_store
    first = _write(store, "alpha", "weather forecast", _vectors(2, 1))
    second = _write(store, "beta", "weather invoices", _vectors(2, 2))
    assert store.document_frequencies(["weather", "forecast"]) == {"weather": 2, "forecast": 1}

    assert _write(store, "alpha", "currency exchange", _vectors(3, 3)) == first  # replaced in place
    _integrity(store)
    assert store.document_frequencies(["weather", "forecast", "currency"]) == {"weather": 1, "currency": 1}
    assert [agent for agent, _ in store.lexical(["forecast"], 10, WEIGHTS)] == []
    assert [agent for agent, _ in store.lexical(["currency"], 10, WEIGHTS)] == [first]
    assert "currency" in store.agent_terms([first])[first].vocabulary

    store.delete("urn:air:example.com:beta")
    _integrity(store)
    assert store.document_frequencies(["weather", "invoices"]) == {}
    assert [agent for agent, _ in store.lexical(["weather", "invoices"], 10, WEIGHTS)] == []
    assert store.get("urn:air:example.com:beta") is None and store.examples_of([second]) == []


def test_a_new_store_uses_the_compact_layout(store: Store) -> None:
    _write(store, "alpha", "weather forecast", _vectors(1, 1))
    row = store._conn.execute("SELECT entry, fts, (SELECT length(vector) FROM examples) AS size FROM agents").fetchone()  # noqa: SLF001
    assert isinstance(row["entry"], bytes) and isinstance(row["fts"], bytes)
    assert row["size"] == 4 + 384  # one float32 scale, then int8 components
    assert store.meta("schema_version") == SCHEMA_VERSION


# Layout 1 as the first versions made it: JSON text entries, float16 vectors, an FTS index with its own
# content, terms in plain columns; no term counts and no change feed yet.
LAYOUT_1 = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE agents(
    id INTEGER PRIMARY KEY, identifier TEXT NOT NULL UNIQUE, entry TEXT NOT NULL, content_hash TEXT NOT NULL,
    display_name TEXT NOT NULL, type TEXT NOT NULL, publisher TEXT NOT NULL, updated_at TEXT, created_at TEXT NOT NULL,
    indexed_at TEXT NOT NULL, vectors_pending INTEGER NOT NULL DEFAULT 1, terms TEXT NOT NULL DEFAULT '',
    keyword_terms TEXT NOT NULL DEFAULT ''
);
CREATE TABLE agent_values(
    field TEXT NOT NULL, value TEXT NOT NULL, agent_id INTEGER NOT NULL, PRIMARY KEY(field, value, agent_id)
) WITHOUT ROWID;
CREATE INDEX agent_values_by_agent ON agent_values(agent_id);
CREATE TABLE examples(
    id INTEGER PRIMARY KEY, agent_id INTEGER NOT NULL, kind TEXT NOT NULL, label TEXT NOT NULL, text TEXT NOT NULL, vector BLOB NOT NULL
);
CREATE INDEX examples_by_agent ON examples(agent_id);
CREATE VIRTUAL TABLE agents_fts USING fts5(name, keywords, description, examples, tokenize = 'unicode61 remove_diacritics 2');
INSERT INTO meta(key, value) VALUES ('schema_version', '1');
"""


def _layout_1_store(path: Path, agents: dict[str, tuple[str, np.ndarray]]) -> None:
    """A layout 1 store holding `agents` (name -> (words, vectors)), written as layout 1 wrote them."""
    with sqlite3.connect(path) as db:
        db.executescript(LAYOUT_1)
        for agent_id, (name, (words, vectors)) in enumerate(agents.items(), start=1):
            entry = {
                "identifier": f"urn:ai:example.com:{name}",  # the v0.5 spelling layout 1 stored
                "displayName": name,
                "type": "application/a2a-agent-card+json",
                "url": "https://example.com",
            }
            fts = FtsDocument(name=name, keywords=f"{words} | tag{name}", description=f"{words} description", examples=f"{words} example")
            stamp = "2026-01-01T00:00:00Z"
            db.execute(
                "INSERT INTO agents(id, identifier, entry, content_hash, display_name, type, publisher, created_at, indexed_at,"
                " vectors_pending, terms, keyword_terms) VALUES (?, ?, ?, 'h', ?, ?, 'example.com', ?, ?, 0, ?, ?)",
                (
                    agent_id,
                    entry["identifier"],
                    json.dumps(entry),
                    name,
                    entry["type"],
                    stamp,
                    stamp,
                    " ".join(sorted(fts.vocabulary())),
                    fts.keywords,
                ),
            )
            db.executemany(
                "INSERT INTO agent_values VALUES (?, ?, ?)",
                [("type", entry["type"], agent_id), ("identifier", entry["identifier"], agent_id)],
            )
            db.execute(
                "INSERT INTO agents_fts(rowid, name, keywords, description, examples) VALUES (?, ?, ?, ?, ?)", (agent_id, *fts.columns())
            )
            for i, vector in enumerate(vectors):
                db.execute(
                    "INSERT INTO examples(agent_id, kind, label, text, vector) VALUES (?, 'query', ?, ?, ?)",
                    (agent_id, f"q{i}", f"{name} text {i}", vector.astype(np.float16).tobytes()),
                )


def test_a_layout_1_store_is_migrated_once_without_its_model(tmp_path: Path) -> None:
    path = tmp_path / "catalog.sqlite3"
    alpha, beta = _vectors(3, 1), _vectors(2, 2)
    _layout_1_store(path, {"alpha": ("weather forecast", alpha), "beta": ("weather invoices", beta)})
    store = Store(path)
    try:
        assert store.meta("schema_version") == SCHEMA_VERSION
        columns = {row[1] for row in store._conn.execute("PRAGMA table_info(agents)")}  # noqa: SLF001
        assert "terms" not in columns and "keyword_terms" not in columns
        _integrity(store)
        stored = store.get("urn:air:example.com:alpha")
        assert stored is not None and stored.entry["displayName"] == "alpha" and stored.entry["identifier"] == stored.identifier
        back = np.stack([row.vector for row in store.examples_of([stored.id])])
        assert np.min(np.sum(back * alpha, axis=1) / np.linalg.norm(back, axis=1)) > 0.999
        assert store.document_frequencies(["weather", "forecast", "invoices", "tagbeta"]) == {
            "weather": 2,
            "forecast": 1,
            "invoices": 1,
            "tagbeta": 1,
        }
        assert [agent for agent, _ in store.lexical(["forecast"], 10, WEIGHTS)] == [stored.id]
        assert [k._text for k in store.agent_terms([stored.id])[stored.id].keywords] == [" weather forecast ", " tagalpha "]  # noqa: SLF001
        assert store.read_rows().agent_ids.tolist() == [1, 2]
        assert store.filter_agents({"identifier": ["urn:air:example.com:beta"]}) == {2}

        _write(store, "alpha", "currency exchange", _vectors(1, 3))  # a migrated agent is replaced and deleted like any other
        store.delete("urn:air:example.com:beta")
        _integrity(store)
        assert store.document_frequencies(["weather", "currency", "invoices"]) == {"currency": 1}
    finally:
        store.close()
    Store(path).close()  # opening it again migrates nothing


def test_layout_3_identifiers_take_their_v09_spelling_and_case_twins_become_one(tmp_path: Path) -> None:
    path = tmp_path / "catalog.sqlite3"
    store = Store(path)
    older = _write(store, "twin", "first copy", _vectors(2, 1), identifier="urn:ai:Example.com:twin")
    newer = _write(store, "twin", "second copy", _vectors(1, 2), identifier="urn:ai:example.com:twin")
    other = _write(store, "solo", "only one", _vectors(1, 3), identifier="urn:ai:example.com:solo")
    assert len({older, newer, other}) == 3
    store.set_meta("schema_version", "3")
    store.close()
    reopened = Store(path)
    try:
        assert reopened.meta("schema_version") == SCHEMA_VERSION
        twin = reopened.get("urn:air:example.com:twin")
        assert twin is not None and twin.id == newer and twin.entry["identifier"] == "urn:air:example.com:twin"
        assert twin.content_hash == content_hash(twin.entry)
        assert reopened.get("urn:ai:example.com:twin") is None and reopened.examples_of([older]) == []
        assert reopened.filter_agents({"identifier": ["urn:air:example.com:solo"]}) == {other}
        assert reopened.document_frequencies(["first", "second", "only"]) == {"second": 1, "only": 1}
        _integrity(reopened)
        assert reopened.changes_since(0) is not None
    finally:
        reopened.close()


def test_layout_4_media_types_are_filtered_in_their_canonical_spelling(tmp_path: Path) -> None:
    path = tmp_path / "catalog.sqlite3"
    store = Store(path)
    old = _write(store, "old", "old name", _vectors(1, 1))
    new = _write(store, "new", "new name", _vectors(1, 2))
    store._conn.execute("UPDATE agents SET type = 'application/mcp-server+json' WHERE id = ?", (old,))  # noqa: SLF001 - as layout 4 kept it
    store._conn.execute("UPDATE agent_values SET value = 'application/mcp-server+json' WHERE field = 'type' AND agent_id = ?", (old,))  # noqa: SLF001
    store._conn.execute("UPDATE agents SET type = 'application/mcp-server-card+json' WHERE id = ?", (new,))  # noqa: SLF001
    store._conn.execute("UPDATE agent_values SET value = 'application/mcp-server-card+json' WHERE field = 'type' AND agent_id = ?", (new,))  # noqa: SLF001
    store.set_meta("schema_version", "4")
    store.close()
    reopened = Store(path)
    try:
        assert reopened.meta("schema_version") == SCHEMA_VERSION
        assert reopened.filter_agents({"type": ["application/mcp-server-card+json"]}) == {old, new}
        assert reopened.facet("type", None) == [("application/mcp-server-card+json", 2)]
    finally:
        reopened.close()


def test_layout_2_loses_the_plain_term_columns_only_layout_1_filled(tmp_path: Path) -> None:
    path = tmp_path / "catalog.sqlite3"
    store = Store(path)
    _write(store, "alpha", "weather forecast", _vectors(1, 1))
    store._conn.execute("ALTER TABLE agents ADD COLUMN terms TEXT NOT NULL DEFAULT ''")  # noqa: SLF001 - as layout 2 made it
    store._conn.execute("ALTER TABLE agents ADD COLUMN keyword_terms TEXT NOT NULL DEFAULT ''")  # noqa: SLF001
    store.set_meta("schema_version", "2")
    store.close()
    reopened = Store(path)
    try:
        assert reopened.meta("schema_version") == SCHEMA_VERSION
        assert {"terms", "keyword_terms"}.isdisjoint(row[1] for row in reopened._conn.execute("PRAGMA table_info(agents)"))  # noqa: SLF001
        assert reopened.get("urn:air:example.com:alpha") is not None
    finally:
        reopened.close()


def test_the_agent_count_follows_writes_from_any_connection(tmp_path: Path) -> None:
    one, two = Store(tmp_path / "catalog.sqlite3"), Store(tmp_path / "catalog.sqlite3")
    try:
        assert one.count() == two.count() == 0
        _write(one, "alpha", "weather", _vectors(1, 1))
        assert one.count() == 1 and two.count() == 1
        _write(two, "beta", "invoices", _vectors(1, 2))
        two.delete("urn:air:example.com:alpha")
        assert one.count() == 1 and two.count() == 1
        assert [a.identifier for a in one.agents_by_id(range(10)).values()] == ["urn:air:example.com:beta"]
    finally:
        one.close()
        two.close()


def test_term_counts_are_rebuilt_for_a_store_made_before_them(store: Store) -> None:
    _write(store, "alpha", "weather forecast", _vectors(1, 1))
    _write(store, "beta", "weather invoices", _vectors(1, 2))
    expected = store.document_frequencies(["weather", "forecast", "invoices", "tagalpha"])
    assert expected == {"weather": 2, "forecast": 1, "invoices": 1, "tagalpha": 1}
    store._conn.execute("DROP TABLE term_agents")  # noqa: SLF001 - as a store from before the table existed
    store._conn.execute("DELETE FROM meta WHERE key = 'term_agents'")  # noqa: SLF001
    reopened = Store(store.path)
    try:
        assert reopened.document_frequencies(["weather", "forecast", "invoices", "tagalpha"]) == expected
    finally:
        reopened.close()


def test_a_kept_filter_answer_follows_writes_from_any_connection(tmp_path: Path) -> None:
    one, two = Store(tmp_path / "catalog.sqlite3"), Store(tmp_path / "catalog.sqlite3")
    flt = {"type": ["application/a2a-agent-card+json"]}
    try:
        first = _write(one, "alpha", "weather", _vectors(1, 1))
        assert one.filter_agents(flt) == {first}
        second = _write(two, "beta", "invoices", _vectors(1, 2))
        assert one.filter_agents(flt) == {first, second}
        one.delete("urn:air:example.com:alpha")
        assert one.filter_agents(flt) == two.filter_agents(flt) == {second}
        assert one.filter_agents({"type": ["application/mcp-server-card+json"]}) == set()
    finally:
        one.close()
        two.close()


def test_one_version_is_read_once_until_this_process_writes(tmp_path: Path) -> None:
    """A search reads the store's version once (`one_version`): another connection's commit meanwhile is seen by
    the next read outside it, this process's own write at once, and another thread is never held to it."""
    one, two = Store(tmp_path / "catalog.sqlite3"), Store(tmp_path / "catalog.sqlite3")
    seen: list[object] = []
    try:
        before = one.version()
        with one.one_version():
            _write(two, "alpha", "weather", _vectors(1, 1))
            assert one.version() == before  # held: the commit of another connection comes after this read
            with one.one_version():
                assert one.version() == before  # nested: the outer read holds
            other = threading.Thread(target=lambda: seen.append(one.version()))
            other.start()
            other.join()
            assert seen[0] != before  # another thread reads for itself
            _write(one, "beta", "invoices", _vectors(1, 2))
            after_own = one.version()
            assert after_own != before and one.version() == after_own  # its own write: read again, as without it
        assert one.version() == after_own  # nothing written since
        _write(two, "gamma", "maps", _vectors(1, 3))
        assert one.version() != after_own and one.count() == 3
    finally:
        one.close()
        two.close()


_TERM = st.text(alphabet="ab.+#é", min_size=1, max_size=4)


@given(st.lists(_TERM, max_size=12), st.lists(_TERM, max_size=6))
def test_one_scan_finds_exactly_the_terms_a_per_term_search_finds(document: list[str], query: list[str]) -> None:
    """Terms overlap as strings ("a", "a.a", "aa"), repeat, and carry regex characters."""
    text = TermText(" ".join(document))
    assert text.present(term_finder(query)) == {t for t in query if t in text}
