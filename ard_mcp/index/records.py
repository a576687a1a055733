"""What the store holds and hands out, as plain values: no SQL here, so ranking, the lexical signal and the
search's in-memory copy can use them without depending on a store.

Vectors are kept as int8 components after one float32 scale (max |component| / 127): cosine 0.9999 to the
model's float32 vectors at a quarter of their size. An agent's lexical fields are kept as one
zlib-compressed blob (`FtsDocument.pack`), which the store reads back as the agent's terms.
"""

from __future__ import annotations

import hashlib
import json
import re
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ard_mcp.formats.entry_facts import VOLATILE_KEYS

_SEPARATOR = "\x1f"  # between the FTS columns in a packed document: never produced by the lexical terms

ORDERABLE = ("displayName", "identifier", "updatedAt", "createdAt", "type", "publisher")
"""Fields a listing can be ordered by; every store orders by them (the identifier breaks ties)."""
Order = list[tuple[str, bool]]  # (field of ORDERABLE, descending)


def content_hash(wire: dict[str, Any]) -> str:
    """What decides whether a registration changes anything: the entry's canonical JSON, hashed, without
    the metadata that only says when it was fetched (`entry_facts.VOLATILE_KEYS`)."""
    metadata = wire.get("metadata")
    if isinstance(metadata, dict) and VOLATILE_KEYS & metadata.keys():
        wire = {**wire, "metadata": {k: v for k, v in metadata.items() if k not in VOLATILE_KEYS}}
    return hashlib.sha256(json.dumps(wire, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@dataclass(frozen=True)
class StoredAgent:
    id: int
    identifier: str
    entry: dict[str, Any]
    content_hash: str
    updated_at: str | None
    created_at: str
    indexed_at: str


@dataclass(frozen=True)
class ExampleRow:
    id: int
    agent_id: int
    kind: str
    label: str
    text: str
    vector: np.ndarray


@dataclass(frozen=True)
class NewExample:
    kind: str
    label: str
    text: str
    vector: np.ndarray


@dataclass(frozen=True)
class AgentWrite:
    """One agent as a write hands it to the store (`Store.write_many`): the entry as stored and what is
    derived from it, the filter values, the lexical document and the examples with their vectors."""

    entry: dict[str, Any]
    content_hash: str
    publisher: str
    updated_at: str | None
    values: set[tuple[str, str]]
    fts: FtsDocument
    examples: list[NewExample]


@dataclass(frozen=True)
class Written:
    """One agent as a write left it (`Store.write_many`): its id, the number of the write, which is its
    `vectors_pending` mark until the vector index has these examples, and the example ids removed and added."""

    agent: int
    write: int
    removed: list[int]
    added: list[int]


Mark = tuple[int, int]  # (agent id, write): an agent's `vectors_pending` mark, cleared only while it is still this write's


def encode_vector(vector: np.ndarray) -> bytes:
    """A float32 vector as stored: one float32 scale, then int8 components."""
    scale = np.float32(max(float(np.abs(vector).max()), 1e-12) / 127.0)
    return scale.tobytes() + np.round(vector / scale).astype(np.int8).tobytes()


def decode_vectors(raw: np.ndarray) -> np.ndarray:
    """(n, dimension) float32 from an (n, blob size) uint8 matrix of encoded vectors."""
    scales = np.ascontiguousarray(raw[:, :4]).view(np.float32)
    return raw[:, 4:].view(np.int8).astype(np.float32) * scales


def decode_blobs(blobs: Sequence[bytes]) -> np.ndarray:
    """(n, dimension) float32 from n encoded vectors, in one pass over their joined bytes."""
    return decode_vectors(np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), -1))


@dataclass(frozen=True)
class FtsDocument:
    """An agent's lexical fields, each already a space-separated list of terms."""

    name: str
    keywords: str
    description: str
    examples: str

    def columns(self) -> tuple[str, str, str, str]:
        return (self.name, self.keywords, self.description, self.examples)

    def vocabulary(self) -> set[str]:
        return set(" ".join(self.columns()).split()) - {"|"}

    def terms(self) -> AgentTerms:
        """The keywords column holds one group of terms per tag or capability, `|`-separated."""
        return AgentTerms(" ".join(self.columns()), self.keywords)

    @classmethod
    def packed(cls, blob: bytes) -> FtsDocument:
        return cls(*zlib.decompress(blob).decode().split(_SEPARATOR))

    def pack(self) -> bytes:
        return zlib.compress(_SEPARATOR.join(self.columns()).encode())

    def distinct(self) -> bytes:
        """What an in-memory copy keeps (`AgentRows.terms`): each term once and the keyword groups, uncompressed.
        A third of the four columns' length, so finding a query's terms in it is three times cheaper."""
        return f"{' '.join(self.vocabulary())}{_SEPARATOR}{self.keywords}".encode()


class TermText:
    """A space-separated list of terms (repeats allowed), asked `term in it` by substring search: ranking
    asks a dozen query terms of a hundred candidates, and building a set of each one's terms cost more."""

    __slots__ = ("_text",)

    def __init__(self, terms: str) -> None:
        self._text = f" {terms} "

    def __contains__(self, term: object) -> bool:
        return f" {term} " in self._text

    def any_of(self, terms: Iterable[str]) -> bool:
        return any(f" {t} " in self._text for t in terms)

    def present(self, finder: re.Pattern[str]) -> set[str]:
        """The terms of a `finder` (see `term_finder`) that occur here: one scan for all of a query's
        terms, where a substring search per term cost ~3 ms a query over a hundred candidates."""
        return set(finder.findall(self._text))

    def every(self) -> set[str]:
        """Every term here, found by splitting at the spaces: at 100,000 agents most candidates' vocabularies are
        not kept (`resident.KEPT_MAX`), and making them took ~5 ms of a search, most of it a regex of every term."""
        found = set(self._text.split(" "))
        found.discard("")
        return found


def term_finder(terms: Iterable[str]) -> re.Pattern[str]:
    """Matches any of `terms` as a whole term of a `TermText` (the lookahead leaves the next term's space);
    no terms match nothing."""
    alternatives = sorted({re.escape(t) for t in terms}, key=len, reverse=True)
    return re.compile(" (" + "|".join(alternatives) + ")(?= )" if alternatives else "(?!)")


def keyword_groups(groups: str) -> list[str]:
    """The keyword groups of an agent's `|`-separated keyword text (`FtsDocument.keywords`), each stripped."""
    return [g.strip() for g in groups.split("|")] if groups else []


def keyword_group_count(groups: str) -> int:
    """How many `keyword_groups` the text holds, without splitting it."""
    return groups.count("|") + 1 if groups else 0


def distinct_texts(raw: bytes) -> tuple[str, str]:
    """An agent's distinct terms and its keyword groups as text (what `AgentTerms` is made of), from `FtsDocument.distinct`."""
    vocabulary, keywords = raw.decode().split(_SEPARATOR)
    return vocabulary, keywords


class AgentTerms:
    """An agent's whole vocabulary, and the terms of each of its tags / capabilities (in the entry's order)."""

    __slots__ = ("_groups", "_keyword_text", "_keywords", "vocabulary")

    def __init__(self, vocabulary: str, keyword_groups: str) -> None:
        self.vocabulary = TermText(vocabulary)
        self._groups = keyword_groups
        self._keyword_text = TermText(keyword_groups)
        self._keywords: list[TermText] | None = None

    @property
    def keywords(self) -> list[TermText]:
        if self._keywords is None:
            self._keywords = [TermText(g) for g in keyword_groups(self._groups)]
        return self._keywords

    @classmethod
    def distinct(cls, raw: bytes) -> AgentTerms:
        """From `FtsDocument.distinct`."""
        return cls(*distinct_texts(raw))

    def keywords_named(self, query: Iterable[str]) -> list[TermText]:
        """The keyword groups sharing a term with the query; most agents share none, found in one pass."""
        terms = list(query)
        return [k for k in self.keywords if k.any_of(terms)] if self._keyword_text.any_of(terms) else []


@dataclass(frozen=True)
class CandidateExamples:
    """The examples of a set of agents as arrays, grouped by agent (ascending), for scoring in one go."""

    ids: np.ndarray  # (m,) example ids
    agent_ids: np.ndarray  # (m,) non-decreasing
    is_description: np.ndarray  # (m,) the name + description example of its agent
    vectors: np.ndarray  # (m, dimension) float32

    @classmethod
    def empty(cls) -> CandidateExamples:
        return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, bool), np.zeros((0, 0), np.float32))


@dataclass(frozen=True)
class AgentRows:
    """Some agents' examples (vectors encoded as stored) and lexical terms, in flat arrays grouped by agent:
    the search's in-memory copy of the store (`ard_mcp.index.resident`) is made of these. About 390 bytes
    an example and 800 an agent: 0.31 GB at 100,000 agents."""

    seq: int  # the change feed's newest entry when these were read
    agent_ids: np.ndarray  # (n,) ascending
    offsets: np.ndarray  # (n + 1,) agent i's examples are rows offsets[i]:offsets[i + 1]
    example_ids: np.ndarray  # (m,)
    is_description: np.ndarray  # (m,)
    vectors: np.ndarray  # (m, blob size) uint8, encoded as stored
    terms: bytes  # every agent's `FtsDocument.distinct()` back to back
    term_offsets: np.ndarray  # (n + 1,)

    def rows_of(self, agent_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The example rows of those of `agent_ids` (ascending) that are here, grouped in the same order,
        and the agent of each row."""
        found = self._positions(agent_ids)
        starts = self.offsets[found]
        sizes = self.offsets[found + 1] - starts
        rows = np.repeat(starts - np.cumsum(sizes) + sizes, sizes) + np.arange(int(sizes.sum()))
        return rows, np.repeat(self.agent_ids[found], sizes)

    def agent_terms(self, agent_ids: np.ndarray) -> dict[int, AgentTerms]:
        agents, texts = self.term_texts(agent_ids)
        return {agent: AgentTerms(*pair) for agent, pair in zip(agents, texts, strict=True)}

    def term_texts(self, agent_ids: np.ndarray) -> tuple[list[int], list[tuple[str, str]]]:
        """Those of `agent_ids` that are here, and the `distinct_texts` of each."""
        found = self._positions(agent_ids)
        starts, ends = self.term_offsets[found].tolist(), self.term_offsets[found + 1].tolist()
        return self.agent_ids[found].tolist(), [distinct_texts(self.terms[a:b]) for a, b in zip(starts, ends, strict=True)]

    def nbytes(self) -> int:
        arrays = (self.agent_ids, self.offsets, self.example_ids, self.is_description, self.vectors, self.term_offsets)
        return sum(a.nbytes for a in arrays) + len(self.terms)

    def _positions(self, agent_ids: np.ndarray) -> np.ndarray:
        """Where those of `agent_ids` that are here sit (the others, e.g. deleted, are left out)."""
        if not len(self.agent_ids):
            return np.zeros(0, np.int64)
        positions = np.minimum(np.searchsorted(self.agent_ids, agent_ids), len(self.agent_ids) - 1)
        return np.asarray(positions[self.agent_ids[positions] == agent_ids])
