"""The store's two on-disk layouts: the compact one new stores get, and the first one, still read and written."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ard_mcp.store import _SCHEMA, FtsDocument, NewExample, Store, TermText, term_finder

WEIGHTS = (4.0, 3.0, 1.5, 1.0)


def _vectors(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, 384)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _write(store: Store, name: str, words: str, vectors: np.ndarray) -> int:
    entry = {"identifier": f"urn:ai:example.com:{name}", "displayName": name, "type": "application/a2a-agent-card+json",
             "url": "https://example.com", "extra": {"kept": [1, "two"]}}
    fts = FtsDocument(name=name, keywords=f"{words} | tag{name}", description=f"{words} description", examples=f"{words} example")
    examples = [NewExample("query", f"q{i}", f"{name} text {i}", v) for i, v in enumerate(vectors)]
    agent_id, _, _ = store.write(entry, f"hash-{words}", "example.com", None, {("type", entry["type"])}, fts, examples)
    return agent_id


def _legacy_store(path: Path) -> Store:
    """A store as layout 1 made it: FTS with its own content, no `fts` column, schema_version 1."""
    schema = _SCHEMA.replace("content = '', ", "").replace(",\n    fts BLOB", "")
    assert schema != _SCHEMA
    with sqlite3.connect(path) as db:
        db.executescript(schema)
        db.execute("INSERT INTO meta(key, value) VALUES ('schema_version', '1')")
    return Store(path)


@pytest.fixture(params=["compact", "legacy"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    path = tmp_path / "catalog.sqlite3"
    opened = Store(path) if request.param == "compact" else _legacy_store(path)
    yield opened
    opened.close()


def _integrity(store: Store) -> None:
    store._conn.execute("INSERT INTO agents_fts(agents_fts, rank) VALUES ('integrity-check', 0)")  # noqa: SLF001


def test_entries_and_vectors_round_trip(store: Store) -> None:
    vectors = _vectors(5, 1)
    _write(store, "alpha", "weather forecast", vectors)
    stored = store.get("urn:ai:example.com:alpha")
    assert stored is not None and stored.entry["extra"] == {"kept": [1, "two"]}
    back = np.stack([row.vector for row in store.examples_of([stored.id])])
    cosine = np.sum(back * vectors, axis=1) / np.linalg.norm(back, axis=1)
    assert np.min(cosine) > 0.9999
    batch = store.candidate_examples([stored.id])
    assert np.allclose(batch.vectors, back)
    assert [v for _, _, v in next(store.iter_examples())][0].shape == (384,)


def test_replacing_and_deleting_keep_the_lexical_index_exact(store: Store) -> None:
    first = _write(store, "alpha", "weather forecast", _vectors(2, 1))
    second = _write(store, "beta", "weather invoices", _vectors(2, 2))
    assert store.document_frequencies(["weather", "forecast"]) == {"weather": 2, "forecast": 1}

    assert _write(store, "alpha", "currency exchange", _vectors(3, 3)) == first  # replaced in place
    _integrity(store)
    assert store.document_frequencies(["weather", "forecast", "currency"]) == {"weather": 1, "currency": 1}
    assert [agent for agent, _ in store.lexical("forecast", 10, WEIGHTS)] == []
    assert [agent for agent, _ in store.lexical("currency", 10, WEIGHTS)] == [first]
    assert "currency" in store.agent_terms([first])[first].vocabulary

    store.delete("urn:ai:example.com:beta")
    _integrity(store)
    assert store.document_frequencies(["weather", "invoices"]) == {}
    assert [agent for agent, _ in store.lexical("weather OR invoices", 10, WEIGHTS)] == []
    assert store.get("urn:ai:example.com:beta") is None and store.examples_of([second]) == []


def test_a_new_store_uses_the_compact_layout(tmp_path: Path) -> None:
    store = Store(tmp_path / "catalog.sqlite3")
    try:
        _write(store, "alpha", "weather forecast", _vectors(1, 1))
        row = store._conn.execute("SELECT entry, fts, (SELECT length(vector) FROM examples) AS size FROM agents").fetchone()  # noqa: SLF001
        assert isinstance(row["entry"], bytes) and isinstance(row["fts"], bytes)
        assert row["size"] == 4 + 384  # one float32 scale, then int8 components
        assert store.meta("schema_version") == "2"
    finally:
        store.close()


def test_a_layout_1_store_stays_in_its_layout(tmp_path: Path) -> None:
    store = _legacy_store(tmp_path / "catalog.sqlite3")
    try:
        _write(store, "alpha", "weather forecast", _vectors(1, 1))
        row = store._conn.execute("SELECT entry, (SELECT length(vector) FROM examples) AS size FROM agents").fetchone()  # noqa: SLF001
        assert isinstance(row["entry"], str) and row["size"] == 2 * 384
        assert store.meta("schema_version") == "1"
    finally:
        store.close()


def test_the_agent_count_follows_writes_from_any_connection(tmp_path: Path) -> None:
    one, two = Store(tmp_path / "catalog.sqlite3"), Store(tmp_path / "catalog.sqlite3")
    try:
        assert one.count() == two.count() == 0
        _write(one, "alpha", "weather", _vectors(1, 1))
        assert one.count() == 1 and two.count() == 1
        _write(two, "beta", "invoices", _vectors(1, 2))
        two.delete("urn:ai:example.com:alpha")
        assert one.count() == 1 and two.count() == 1
        assert [a.identifier for a in one.agents_by_id(range(10)).values()] == ["urn:ai:example.com:beta"]
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
        one.delete("urn:ai:example.com:alpha")
        assert one.filter_agents(flt) == two.filter_agents(flt) == {second}
        assert one.filter_agents({"type": ["application/mcp-server+json"]}) == set()
    finally:
        one.close()
        two.close()


_TERM = st.text(alphabet="ab.+#é", min_size=1, max_size=4)


@given(st.lists(_TERM, max_size=12), st.lists(_TERM, max_size=6))
def test_one_scan_finds_exactly_the_terms_a_per_term_search_finds(document: list[str], query: list[str]) -> None:
    """Terms overlap as strings ("a", "a.a", "aa"), repeat, and carry regex characters."""
    text = TermText(" ".join(document))
    assert text.present(term_finder(query)) == {t for t in query if t in text}
