"""The search's in-memory copy of the store: it answers exactly as the store does, before and after writes
by this process or another one, and falls back to the store rather than answer from a stale copy."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from ard_mcp.formats.messages import SearchResponse
from ard_mcp.index import resident as resident_module
from ard_mcp.index.lexical import Vocabulary
from ard_mcp.index.resident import ResidentExamples
from ard_mcp.index.store import writes as feed
from ard_mcp.index.store.sqlite import SqliteStore as Store
from ard_mcp.registry import Registry
from ard_mcp.search.query import SearchQuery
from ard_mcp.search.ranking import Ranker
from tests.test_store import _layout_1_store, _vectors, _write

pytestmark = pytest.mark.sqlite_only  # the SQLite store's own files, layouts and connections


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "catalog.sqlite3"


@pytest.fixture
def store(path: Path) -> Iterator[Store]:
    opened = Store(path)
    for i in range(12):
        _write(opened, f"agent{i}", f"topic{i % 4} words{i}", _vectors(1 + i % 5, i))
    yield opened
    opened.close()


@pytest.fixture
def copy(store: Store) -> Iterator[ResidentExamples]:
    made = ResidentExamples(store)
    made.load()
    yield made
    made.close()


@pytest.fixture
def other(path: Path, store: Store) -> Iterator[Store]:
    """The same file opened again, as another ard-mcp process sharing the store would."""
    opened = Store(path)
    yield opened
    opened.close()


def assert_same(copy: ResidentExamples, store: Store, ids: Sequence[int]) -> None:
    (mine, mine_terms), (theirs, their_terms) = copy.examples_and_vocabularies(ids, []), store.examples_and_terms(ids)
    for field in ("ids", "agent_ids", "is_description", "vectors"):
        if len(theirs.ids):
            np.testing.assert_array_equal(getattr(mine, field), getattr(theirs, field), err_msg=field)
        else:  # the store leaves an empty answer without a dimension
            assert getattr(mine, field).size == 0
    assert mine_terms.keys() == their_terms.keys()
    for agent, terms in their_terms.items():
        theirs_as_sets = Vocabulary.of(terms)
        assert mine_terms[agent].terms - {"|"} == theirs_as_sets.terms - {"|"}  # the store's joins the keyword groups with |
        assert mine_terms[agent].keywords == theirs_as_sets.keywords
    assert copy.agents(ids) == store.agents_by_id(ids)  # the entries kept per version: a changed one read again


def every_id(store: Store) -> list[int]:
    return [row[0] for row in store._conn.execute("SELECT id FROM agents")]  # noqa: SLF001


def test_the_copy_answers_as_the_store_does(copy: ResidentExamples, store: Store) -> None:
    ids = every_id(store)
    assert copy.loaded
    assert_same(copy, store, ids)
    assert_same(copy, store, [ids[7], ids[2], ids[2], 10_000])  # unordered, repeated, unknown
    assert_same(copy, store, [])


def test_it_follows_writes_and_deletes_of_this_process(copy: ResidentExamples, store: Store) -> None:
    _write(store, "agent3", "rewritten entirely", _vectors(2, 99))
    _write(store, "newcomer", "fresh words", _vectors(3, 98))
    store.delete("urn:air:example.com:agent5")
    assert_same(copy, store, [*every_id(store), 6])  # 6 was agent5
    assert copy.loaded, "a few changes are overlaid, not a reason to drop the copy"


def test_it_follows_writes_and_deletes_of_another_process(copy: ResidentExamples, store: Store, other: Store) -> None:
    assert_same(copy, store, every_id(store))
    _write(other, "agent1", "changed elsewhere", _vectors(4, 97))
    other.delete("urn:air:example.com:agent9")
    assert_same(copy, store, [*every_id(store), 10])
    _write(other, "agent9", "back again", _vectors(1, 96))  # a new id: deleted agents' ids are not reused
    assert_same(copy, store, every_id(store))
    assert copy.loaded


def test_a_copy_of_an_empty_store_follows_its_first_registrations(tmp_path: Path) -> None:
    """What a server started on a fresh data directory loads."""
    empty = Store(tmp_path / "catalog.sqlite3")
    try:
        copy = ResidentExamples(empty)
        copy.load()
        assert_same(copy, empty, [1])
        first = _write(empty, "first", "very first words", _vectors(3, 1))
        assert_same(copy, empty, [first])
        assert copy.loaded
    finally:
        empty.close()


def test_a_copy_the_feed_no_longer_reaches_is_reloaded_and_never_answers_stale(
    copy: ResidentExamples, store: Store, other: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(feed, "CHANGES_KEPT", 2)
    monkeypatch.setattr(feed, "PRUNE_EVERY", 1)
    for i in range(4):
        _write(other, f"agent{i}", f"pruned away {i}", _vectors(2, 50 + i))
    assert_same(copy, store, every_id(store))  # from the store, while the copy reloads
    assert copy._loader is not None  # noqa: SLF001
    copy._loader.join()  # noqa: SLF001
    assert copy.loaded
    assert_same(copy, store, every_id(store))


def test_too_many_changes_reload_the_copy(copy: ResidentExamples, store: Store, other: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resident_module, "_OVERLAY_MAX", 2)
    for i in range(3):
        _write(other, f"agent{i}", f"many changes {i}", _vectors(2, 60 + i))
    assert_same(copy, store, every_id(store))
    assert copy._loader is not None, "the copy is read again, not overlaid"  # noqa: SLF001
    copy._loader.join()  # noqa: SLF001
    assert copy.loaded
    assert_same(copy, store, every_id(store))


def test_a_copy_of_a_migrated_layout_1_store_answers_as_the_store_does(tmp_path: Path) -> None:
    path = tmp_path / "catalog.sqlite3"
    _layout_1_store(path, {"old": ("layout one", _vectors(2, 1)), "older": ("layout one too", _vectors(3, 2))})
    migrated = Store(path)
    try:
        copy = ResidentExamples(migrated)
        copy.load()
        assert copy.loaded
        assert_same(copy, migrated, every_id(migrated))
        copy.close()
    finally:
        migrated.close()


@pytest.mark.slow  # the model and Chroma
def test_search_ranks_the_same_from_the_copy_and_from_the_store(loaded: Registry) -> None:
    loaded.warm_up()
    assert loaded.resident.loaded
    direct = Ranker(loaded.store, loaded.vectors, loaded.embedder, loaded.tuning)
    for query in ("merge two pdf files", "weather forecast for Oslo, then translate it to French", "send an invoice"):
        mine = [(h.agent_id, h.relevance) for h in loaded.ranker.rank(query, None)]
        theirs = [(h.agent_id, h.relevance) for h in direct.rank(query, None)]
        assert mine == theirs and mine


@pytest.mark.slow  # the model and Chroma
def test_a_search_past_the_vocabularies_it_keeps_answers_as_one_within_them(loaded: Registry, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same pages, byte for byte (ids, scores, confidence, evidence: matched words and tags), whether the
    candidates' whole vocabularies are kept or only the query's terms of each are made for the search
    (`Vocabulary.asked`, what a catalog past `KEPT_MAX` agents gets)."""
    loaded.warm_up()
    queries = ["weather forecast for Oslo, then translate it to French", "merge two pdf documents", "send an invoice", "get_forecast"]

    def pages() -> list[str]:
        return [loaded.search(SearchQuery.of(query)).response().model_dump_json() for query in queries]

    kept = pages()
    monkeypatch.setattr(resident_module, "KEPT_MAX", 1)
    assert pages() == kept
    evidence = [r.evidence for page in kept for r in SearchResponse.model_validate_json(page).results]
    assert any(e is not None and e.matchedTags for e in evidence) and any(e is not None and e.matchedWords for e in evidence)


def test_past_the_vocabularies_it_keeps_a_search_gets_its_querys_terms(
    copy: ResidentExamples, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large catalog (more candidates than `KEPT_MAX` vocabularies): the ones not kept are made of the query's
    terms alone, and answer what ranking asks as the whole ones do; the kept ones stay within the bound."""
    monkeypatch.setattr(resident_module, "KEPT_MAX", 1)
    ids = every_id(store)
    assert len(ids) > 1
    _, whole = store.examples_and_terms(ids)
    query = sorted({t for terms in whole.values() for t in sorted(Vocabulary.of(terms).terms - {"|"})[:2]} | {"absentterm"})
    _, found = copy.examples_and_vocabularies(ids, query)
    for agent, terms in whole.items():
        complete = Vocabulary.of(terms)
        assert {t for t in query if t in complete.terms} == {t for t in query if t in found[agent].terms}
        assert complete.named(query) == found[agent].named(query)
    assert any(found[agent].terms < Vocabulary.of(whole[agent]).terms for agent in ids)  # made of the query's terms
    current = copy._current()  # noqa: SLF001
    assert current is not None and len(current.base.vocabularies) <= 1
