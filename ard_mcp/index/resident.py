"""The search's in-memory copy of every agent's examples and lexical terms.

Each search rescores ~100 candidate agents against all of their examples and terms. Read from SQLite that
cost ~8 ms a query at 100,000 agents (an IN query over scattered pages, then decoding); gathered from arrays
in memory it costs well under 1 ms. The copy keeps the store's int8 vectors and each agent's distinct
terms, 0.31 GB at 100,000 agents, read once at warm-up on a connection of its own.

The store stays the source of truth and the copy follows its change feed: when the store's version moves
(a write by this process or another one sharing the file), the agents changed since the copy was read are
re-read into a small overlay. Until the copy is loaded, after a change too large to overlay, or when the
feed no longer reaches back far enough, the search reads the store directly while a fresh copy loads in the
background; so an answer never comes from a stale copy.

What a search derives from an agent's rows and entry is kept with the rows it came from (`_Kept`): its
terms as sets (`lexical.Vocabulary`) and its stored entry, decoded and checked (`Store.agents_by_id`). Rows
never change once read (a changed agent's go into a new overlay), so each is made once per version of the
agent, not once per search: at 2,000 agents that took 1.0 ms of a search's CPU (the candidates' terms
decoded 0.3, the page's ten entries read and checked 0.7).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from ard_mcp.index.lexical import Vocabulary
from ard_mcp.index.records import AgentRows, CandidateExamples, StoredAgent, decode_vectors
from ard_mcp.index.store.base import Store

log = logging.getLogger(__name__)

_OVERLAY_MAX = 1_000  # changed agents re-read on each change of the store; past this, reload everything
#: Agents whose derived values one `_Kept` holds (each kind); past this it starts again. An entry is a few KB
#: and a vocabulary some hundred terms, so at 100,000 agents keeping every one would add ~1 GB to the copy.
KEPT_MAX = 8_192
V = TypeVar("V")


@dataclass
class _Kept:
    """Rows of the copy and what searches derived from them, per agent: valid as long as the rows are."""

    rows: AgentRows
    vocabularies: dict[int, Vocabulary] = field(default_factory=dict)
    entries: dict[int, StoredAgent] = field(default_factory=dict)

    @staticmethod
    def _of(kept: dict[int, V], agent_ids: Iterable[int], read: Callable[[list[int]], dict[int, V]]) -> dict[int, V]:
        """The kept values of those agents, `read` for the ones not kept yet (and kept; an agent `read` leaves out is not)."""
        found: dict[int, V] = {}
        missing: list[int] = []
        for agent in agent_ids:
            value = kept.get(agent)
            if value is None:
                missing.append(agent)
            else:
                found[agent] = value
        if missing:
            fresh = read(missing)
            if len(kept) + len(fresh) > KEPT_MAX:
                kept.clear()
            kept.update(fresh)
            found.update(fresh)
        return found

    def vocabularies_of(self, agent_ids: np.ndarray, query: Sequence[str]) -> dict[int, Vocabulary]:
        """Each agent's whole vocabulary, kept, where every agent's can be (at most `KEPT_MAX`); in a larger
        catalog only the query's terms of each, made for this search (`Vocabulary.asked`: the same answers). Why:
        at 100,000 agents a search's candidates were mostly not kept, so the kept ones were cleared again and
        again, and making whole vocabularies took ~4 ms of a search (`bench/scale.py`, docs/benchmarks.md)."""
        if len(self.rows.agent_ids) > KEPT_MAX:
            agents, texts = self.rows.term_texts(np.asarray(agent_ids, np.int64))
            return dict(zip(agents, Vocabulary.asked(query, texts), strict=True))

        def read(missing: list[int]) -> dict[int, Vocabulary]:
            return {agent: Vocabulary.of(terms) for agent, terms in self.rows.agent_terms(np.array(missing, np.int64)).items()}

        return self._of(self.vocabularies, agent_ids.tolist(), read)

    def entries_of(self, agent_ids: np.ndarray, store: Store) -> dict[int, StoredAgent]:
        return self._of(self.entries, agent_ids.tolist(), store.agents_by_id)


@dataclass(frozen=True)
class _Copy:
    base: _Kept
    changed: np.ndarray  # ascending ids of agents changed since `base` was read; `overlay` has their rows now
    overlay: _Kept
    version: tuple[int, int]  # the store's version this copy is current for

    def parts(self, agent_ids: np.ndarray) -> list[tuple[_Kept, np.ndarray]]:
        if not len(self.changed):
            return [(self.base, agent_ids)]
        changed = np.isin(agent_ids, self.changed)
        return [(self.base, agent_ids[~changed]), (self.overlay, agent_ids[changed])]


class ResidentExamples:
    """`Store.examples_and_terms` (the terms as a `lexical.Vocabulary` each) and `Store.agents_by_id` as the store
    answers them, from memory once loaded."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._copy: _Copy | None = None
        self._lock = threading.Lock()  # guards the swap of `_copy` and the start of a reload
        self._loader: threading.Thread | None = None
        self._closed = False

    @property
    def loaded(self) -> bool:
        return self._copy is not None

    def load(self) -> None:
        """Read every agent's rows now (warm-up; a reload runs this in the background)."""
        if self._closed:
            return
        version = self._store.version()  # before reading: a change committed meanwhile shows up as a newer version
        rows = self._store.read_rows()
        kept = _Kept(rows)
        with self._lock:
            self._copy = _Copy(kept, np.zeros(0, np.int64), kept, version)
        log.info("search copy: %d agents, %d examples, %.0f MB in memory", len(rows.agent_ids), len(rows.example_ids), rows.nbytes() / 1e6)

    def close(self) -> None:
        """Stop following the store and wait for a background reload, so the data directory can go."""
        self._closed = True
        loader = self._loader
        if loader is not None:
            loader.join()
        self._copy = None

    def examples_and_vocabularies(self, agent_ids: Sequence[int], query: Sequence[str]) -> tuple[CandidateExamples, dict[int, Vocabulary]]:
        """Both from one copy (or one store transaction): a search sees one state of the registry. The terms are
        what ranking asks of them about the query's terms `query`, a `Vocabulary`, made once per version of each
        agent while there is room to keep it (`_Kept.vocabularies_of`); read from the store (while the copy loads),
        whole."""
        copy = self._current()
        if copy is None:
            examples, terms = self._store.examples_and_terms(agent_ids)
            return examples, {agent: Vocabulary.of(found) for agent, found in terms.items()}
        wanted = np.unique(np.asarray(agent_ids, np.int64))
        return self._examples(copy, wanted), {
            agent: vocabulary for kept, ids in copy.parts(wanted) for agent, vocabulary in kept.vocabularies_of(ids, query).items()
        }

    def agents(self, agent_ids: Iterable[int]) -> dict[int, StoredAgent]:
        """`Store.agents_by_id`, each entry read once per version of the agent while the copy is loaded."""
        copy = self._current()
        if copy is None:
            return self._store.agents_by_id(agent_ids)
        wanted = np.asarray(list(agent_ids), np.int64)
        return {agent: entry for kept, ids in copy.parts(wanted) for agent, entry in kept.entries_of(ids, self._store).items()}

    @staticmethod
    def _examples(copy: _Copy, wanted: np.ndarray) -> CandidateExamples:
        pieces = []
        for kept, ids in copy.parts(wanted):
            rows = kept.rows
            found, agents = rows.rows_of(ids)
            if len(found):  # rows read from an empty store have no width
                pieces.append((agents, rows.example_ids[found], rows.is_description[found], rows.vectors[found]))
        if not pieces:
            return CandidateExamples.empty()
        agents, ids, descriptions, encoded = (np.concatenate(column) for column in zip(*pieces, strict=True))
        order = np.lexsort((ids, agents)) if len(pieces) > 1 else slice(None)
        return CandidateExamples(ids[order], agents[order], descriptions[order], decode_vectors(encoded[order]))

    def _current(self) -> _Copy | None:
        """The copy, brought in step with the store first; None while only the store can answer."""
        copy = self._copy
        if copy is None:  # not loaded yet, or reloading
            return None
        version = self._store.version()
        if version == copy.version:
            return copy
        with self._lock:
            copy = self._copy
            if copy is None or copy.version == version:
                return copy
            seq, changed = copy.overlay.rows.seq, copy.changed
            while True:
                found = self._store.changes_since(seq)
                if found is not None:
                    changed = np.union1d(changed, found[1])
                if found is None or len(changed) > _OVERLAY_MAX:
                    self._copy = None
                    self._reload(found is None)
                    return None
                overlay = self._store.read_rows(changed.tolist())
                if overlay.seq == found[0]:
                    break
                seq = found[0]  # more changes were committed before the overlay was read: take them in too
            self._copy = _Copy(copy.base, changed, _Kept(overlay), version)
            return self._copy

    def _reload(self, lost: bool) -> None:
        """Load a fresh copy in the background (the lock is held); searches read the store meanwhile."""
        if self._closed or (self._loader is not None and self._loader.is_alive()):
            return
        log.info(
            "search copy: %s; reloading it in the background",
            "the change feed no longer reaches back to it" if lost else f"over {_OVERLAY_MAX} agents changed",
        )
        self._loader = threading.Thread(target=self._load_logged, name="ard-mcp-search-copy", daemon=True)
        self._loader.start()

    def _load_logged(self) -> None:
        try:
            self.load()
        except Exception:  # the store answers instead; the next change tries again
            log.exception("search copy: reloading failed; searches read the store")
