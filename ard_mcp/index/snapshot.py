"""A snapshot of public MCP catalogs that ships with ard-mcp, with its vectors, for a person's first start.

Why: a registry a person attaches to their host over stdio is empty until they fill it, so its first
answer to "read and write files in a folder" was nothing. A new data directory served over stdio starts
with the bundled snapshot instead (`add_if_new`): about two thousand real servers from public catalogs,
each entry saying where it came from (`metadata.source`) and which snapshot added it (`metadata.snapshot`).

Why the vectors ship too: embedding its 2,193 example texts took 8 s of a 11 s first start on two cores
(3 s with them), and more with the longer entries a later snapshot may hold, so the snapshot carries one
vector per distinct example text, for the model it was built with, int8 after
one float32 scale as the store keeps them (`records.encode_vector`). A registry with that model writes
them as they are; a registry with another model (`--model-dir`) embeds the texts itself, as an ingest
does. A text the snapshot lacks (an entry this version reads into other examples) is embedded too.

The file is one xz stream: a JSON header line (id, model, sources with their licences and commits,
entries, texts), a newline, then the vectors back to back. `bench/build_snapshot.py` writes it.
"""

from __future__ import annotations

import json
import logging
import lzma
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ard_mcp.formats.entry_facts import SNAPSHOT_KEY  # metadata.snapshot: the id of the snapshot that added the entry
from ard_mcp.index.filter_values import METADATA_PREFIX

if TYPE_CHECKING:  # `serve` reads `BUNDLED` before its handshake; numpy and the indexer wait for a registry (test_transports)
    import numpy as np

    from ard_mcp.formats.catalog import CatalogEntry
    from ard_mcp.index.indexer import Indexer, IngestReport, Progress
    from ard_mcp.index.store.base import Store

log = logging.getLogger(__name__)

BUNDLED = Path(__file__).resolve().parents[1] / "data" / "public-mcp-servers.snapshot.xz"
FORMAT = "ard-mcp-snapshot/1"
SOURCE_KEY = "source"  # metadata.source: the public catalog the entry came from
STATE = "snapshot"  # the store's meta key: the id of the snapshot added, or REMOVED
REMOVED = "removed"  # the person removed it: a later start adds nothing


@dataclass(frozen=True)
class Snapshot:
    """A snapshot read from its file: what it is, where its entries came from, and its vectors."""

    id: str
    model_id: str
    dimension: int
    sources: list[dict[str, Any]]  # name, title, url, commit, licence, licenceText, servers
    entries: list[dict[str, Any]]
    texts: list[str]
    _vectors: bytes

    @cached_property
    def vectors(self) -> dict[str, np.ndarray]:
        """Each text's vector (float32, as decoded from the store's int8 form)."""
        import numpy as np

        from ard_mcp.index.records import decode_vectors

        raw = np.frombuffer(self._vectors, dtype=np.uint8).reshape(len(self.texts), 4 + self.dimension)
        return dict(zip(self.texts, decode_vectors(raw), strict=True))

    def summary(self) -> str:
        """One line: how many servers and from where (what a person is told when it is added)."""
        parts = ", ".join(f"{s['servers']} from {s['title']}" for s in self.sources)
        return f"{len(self.entries)} public MCP servers ({parts})"


def read(path: Path = BUNDLED) -> Snapshot:
    payload = lzma.decompress(path.read_bytes())
    header, _, vectors = payload.partition(b"\n")
    head = json.loads(header)
    if head.get("format") != FORMAT:
        raise ValueError(f"{path}: not an {FORMAT} file (format {head.get('format')!r})")
    snapshot = Snapshot(
        head["id"], head["model"]["id"], int(head["model"]["dimension"]), head["sources"], head["entries"], head["texts"], vectors
    )
    if len(vectors) != len(snapshot.texts) * (4 + snapshot.dimension):
        raise ValueError(f"{path}: {len(vectors)} bytes of vectors for {len(snapshot.texts)} texts of dimension {snapshot.dimension}")
    return snapshot


def write(path: Path, header: Mapping[str, Any], texts: Sequence[str], vectors: np.ndarray) -> None:
    """The snapshot file (`bench/build_snapshot.py`): `header` without `format` and `texts`, which are added."""
    from ard_mcp.index.records import encode_vector

    head = {"format": FORMAT, **header, "texts": list(texts)}
    body = b"".join(encode_vector(v) for v in vectors)
    data = json.dumps(head, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" + body
    path.write_bytes(lzma.compress(data, preset=9 | lzma.PRESET_EXTREME))


def state(store: Store) -> str | None:
    """The id of the snapshot this store was given, `REMOVED`, or None (never given one)."""
    return store.meta(STATE)


def is_new(store: Store) -> bool:
    """A store nothing was ever written to: no entries, no model recorded (the first write records it), no
    snapshot added or removed before. An emptied registry is not new: its owner emptied it."""
    return state(store) is None and store.meta("model_id") is None and store.count() == 0


def add(store: Store, indexer: Indexer, model_id: str, snapshot: Snapshot, progress: Progress | None = None) -> IngestReport:
    """Register the snapshot's entries, with its vectors when `model_id` is the model they were made with.

    In one transaction with the store's record of it (`STATE`): a first start killed while adding it leaves
    a new store, which the next start fills, or all of it (whose vectors the next start sends the vector
    index, `catch_up`), never a registry that silently lacks part of it, as one transaction an entry did."""
    given = snapshot.vectors if snapshot.model_id == model_id else None
    if given is None:
        log.warning("the snapshot's vectors are for %s, not %s: embedding its %d texts", snapshot.model_id, model_id, len(snapshot.texts))
    items = ((f"snapshot {snapshot.id}", e) for e in snapshot.entries)
    return indexer.register_many(items, progress, known_vectors=given, meta={STATE: snapshot.id})


def add_if_new(store: Store, indexer: Indexer, model_id: str, path: Path = BUNDLED) -> IngestReport | None:
    """A new store gets the bundled snapshot (None when it is not new, or ard-mcp ships none)."""
    if not is_new(store) or not path.is_file():
        return None
    snapshot = read(path)
    log.info("a new registry: adding the bundled snapshot of %s; `ard-mcp snapshot remove` removes them", snapshot.summary())
    return add(store, indexer, model_id, snapshot)


def remove(store: Store, indexer: Indexer, snapshot_ids: Sequence[str]) -> list[str]:
    """Remove the entries a snapshot added and that are still as it added them (an entry a crawl or a
    registration has replaced since is someone's own now); later starts add nothing. Their identifiers."""
    ids = store.filter_agents({METADATA_PREFIX + SNAPSHOT_KEY: list(snapshot_ids)}) or frozenset()
    removed = sorted(store.identifiers(ids).values())
    for identifier in removed:
        indexer.deregister(identifier)
    store.set_meta(STATE, REMOVED)
    return removed


def held(store: Store, snapshot_ids: Sequence[str]) -> int:
    """How many entries of those snapshots the store holds."""
    return len(store.filter_agents({METADATA_PREFIX + SNAPSHOT_KEY: list(snapshot_ids)}) or ())


def entry_texts(entry: CatalogEntry) -> list[str]:
    """The texts an entry is indexed by (the build script embeds these)."""
    from ard_mcp.index.example_texts import extract_examples

    return [e.text for e in extract_examples(entry)]
