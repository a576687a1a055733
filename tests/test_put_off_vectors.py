"""A new embedded index puts Chroma off (`VectorIndex.defers`, `catch_up.VectorSync`): its first writes go to the
in-process copy, which answers searches at once, and reach Chroma later, opened then; nothing is lost on the way."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from ard_mcp.config import Config, bundled_model_dir
from ard_mcp.index.catch_up import PUT_OFF_SECONDS
from ard_mcp.index.embedding import load_embedder
from ard_mcp.index.records import AgentWrite, FtsDocument, NewExample
from ard_mcp.index.vectors import VectorIndex
from ard_mcp.registry import Registry
from tests.conftest import SAMPLE, results


def _loaded(data_dir: Path) -> Registry:
    registry = Registry(Config(data_dir))
    report = registry.indexer.register_many((f"entries[{i}]", e) for i, e in enumerate(SAMPLE))
    assert report.added == len(SAMPLE)
    return registry


def _examples(registry: Registry) -> int:
    return len(registry.store.examples_of(sorted(registry.store.agent_ids())))


def test_a_new_index_answers_before_chroma_opens_and_chroma_gets_every_write_after(tmp_path: Path) -> None:
    """Searches on a new registry are answered while Chroma is still unopened, with the pages a registry whose
    Chroma took every write at once gives; then Chroma holds every vector and the store has none pending."""
    (tmp_path / "old" / "chroma").mkdir(parents=True)  # an index that exists is opened at once, as before
    at_once, put_off = _loaded(tmp_path / "old"), _loaded(tmp_path / "new")
    try:
        assert at_once.vectors.opened and not put_off.vectors.opened
        assert put_off.store.pending_agents()  # marked until Chroma has them
        for task in ("weather forecast for Oslo tomorrow", "convert these invoices to PDF", "say this in Japanese"):
            assert [r.identifier for r in results(put_off, task)] == [r.identifier for r in results(at_once, task)]
        assert not put_off.vectors.opened
        deadline = time.monotonic() + PUT_OFF_SECONDS + 30
        while put_off.store.pending_agents() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert put_off.vectors.opened and not put_off.store.pending_agents()
        assert put_off.vectors.count() == at_once.vectors.count() == _examples(put_off)
    finally:
        at_once.close()
        put_off.close()


def test_what_opens_chroma_first_finds_every_write_put_off(tmp_path: Path) -> None:
    """A reader of Chroma itself (here its count) before the put-off writes were sent gets them first."""
    registry = _loaded(tmp_path / "data")
    try:
        assert not registry.vectors.opened
        assert registry.vectors.count() == _examples(registry)
        assert not registry.store.pending_agents()
    finally:
        registry.close()


def test_closing_sends_what_was_put_off(tmp_path: Path) -> None:
    registry = _loaded(tmp_path / "data")
    registry.close()
    again = Registry(Config(tmp_path / "data"))
    try:
        assert not again.store.pending_agents()
        assert again.vectors.count() == _examples(again)
    finally:
        again.close()


@pytest.mark.sqlite_only  # the killed process opens the directory's own store, which `--store postgres` replaces here
def test_a_process_killed_before_sending_leaves_its_writes_for_the_next_start(tmp_path: Path) -> None:
    """Killed with its writes only in the copy: the store still calls them pending, and the next start sends them."""
    script = textwrap.dedent(
        f"""
        import os, sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
        from tests.test_put_off_vectors import _loaded
        registry = _loaded(__import__("pathlib").Path({str(tmp_path / "data")!r}))
        assert not registry.vectors.opened and registry.store.pending_agents()
        os._exit(0)
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    again = Registry(Config(tmp_path / "data"))
    try:
        assert again.store.pending_agents()
        assert [r.identifier for r in results(again, "weather forecast for Oslo tomorrow")][:1] == [SAMPLE[0]["identifier"]]
        assert not again.store.pending_agents()
        assert again.vectors.count() == _examples(again)
    finally:
        again.close()


def test_a_new_index_puts_off_only_what_its_copy_holds(tmp_path: Path) -> None:
    """Past the copy's size (`exact_max`) a write cannot be put off; an index that exists is opened at once."""
    embedder = load_embedder(bundled_model_dir())
    index = VectorIndex(tmp_path / "new", embedder, exact_max=4)
    try:
        assert index.defers(4) and not index.defers(5)
        index.remember([(1, 1), (2, 1), (3, 2)], np.eye(3, embedder.dimension, dtype=np.float32))
        assert index.defers(1) and not index.defers(2)
        assert index.nearest_agents(np.eye(3, embedder.dimension, dtype=np.float32)[[2]], 1) == {2}
        assert not index.opened
    finally:
        index.close()
    (tmp_path / "old").mkdir()
    existing = VectorIndex(tmp_path / "old", embedder)
    try:
        assert existing.opened and not existing.defers(1)
    finally:
        existing.close()


def test_a_write_that_removes_records_is_never_put_off(tmp_path: Path) -> None:
    """An update's removals would live in the process alone until sent: a kill first would leave Chroma vectors
    of examples the store no longer has. So an update opens Chroma, and every write reaches it at once."""
    registry = _loaded(tmp_path / "data")
    try:
        assert not registry.vectors.opened
        registry.indexer.register({**SAMPLE[0], "description": "Forecasts rain, wind and snow for any town."})
        assert registry.vectors.opened and not registry.store.pending_agents()
        assert registry.vectors.count() == _examples(registry)
    finally:
        registry.close()


def _write(registry: Registry, description: str, axis: int) -> AgentWrite:
    """A write of SAMPLE[0] with one example whose vector is the unit vector along `axis`."""
    vector = np.eye(1, registry.embedder.dimension, axis, dtype=np.float32)[0]
    examples = [NewExample("query", "q", description, vector)]
    return AgentWrite(
        {**SAMPLE[0], "description": description}, description, "example.com", None, set(), FtsDocument("n", "", description, ""), examples
    )


def test_a_vectors_mark_is_cleared_only_by_the_write_that_set_it(tmp_path: Path, store_url: str | None) -> None:
    """Two quick writes of one agent: the first's vectors, sent after the second has committed (by a put-off
    send or another process), must leave the second pending, or a process killed before sending it loses its
    examples from the vector index for good with nothing pending (the PostgreSQL SIGKILL reliability test did,
    1 run in 10-20, 12-39 examples, when the mark was a flag)."""
    registry = Registry(Config(tmp_path / "data", store_url=store_url))
    try:
        [first] = registry.store.write_many([_write(registry, "first", 0)])
        [second] = registry.store.write_many([_write(registry, "second", 1)])
        assert second.agent == first.agent and second.write > first.write
        assert registry.store.pending_marks() == [(second.agent, second.write)]
        registry.store.mark_vectors_done([(first.agent, first.write)])
        assert registry.store.pending_marks() == [(second.agent, second.write)]
        found, vectors = registry.vectors.stored_vectors([(e, second.agent) for e in second.added])  # opening sends what is pending
        assert found == second.added and np.argmax(vectors, axis=1).tolist() == [1]
        assert not registry.store.pending_marks()
    finally:
        registry.close()
