"""Training triples (task, positive text, hard negative text) for fine-tuning the bundled encoder, per source.

    python bench/train_pairs.py [--mirror /work/.mirror] [--shared ../shared] [--out bench/.data/training/pairs.jsonl] [--api-bank]

Only the public sources issue #33 names, each read from a fetched snapshot or the shared data:

* `seal-tools` (Apache-2.0): every instance of dev, test_in_domain and test_out_domain (train.jsonl is not in
  the snapshot) against the 4,076-tool catalog;
* `toolalpaca` (Apache-2.0): the real and simulated evaluation instructions against the public-apis catalog;
* `mcp-bench` (Apache-2.0): its tasks against its servers;
* `livemcpbench` (Apache-2.0) and `metatool` (MIT): the shared dev queries against the shared 740-entry index;
* with `--api-bank`, `api-bank` (Apache-2.0): API-Bank's level-3 training requests against the APIs its tool
  searcher found (`sources/api_bank.py`; training only, as `quality.py` does not score it);
* each catalog's own texts (`catalog:<source>`): an entry's representative queries, tools and skills paired
  with its name + description, so the model learns that a server's tools and its summary belong together.

Every row carries `source`, which `train_encoder.py --exclude` leaves out, so the model that `quality.py`
scores on a source never saw that source's queries or catalog texts (leave-one-source-out).

The texts are the product's own: a positive is one of the relevant entry's indexed examples
(`ard_mcp.index.example_texts`), so training aligns tasks with exactly what the example-level index embeds.
Each query gives two rows per relevant entry: with the entry's name + description, and with the example the
bundled model already finds closest (when that is another one). The hard negative of a row is an example
of an entry BM25 ranks high for the task that is not relevant: one of the first five such entries, chosen by
sha256(seed:query) (no `random` state), and of it the example the bundled model finds closest. Lexical
neighbours are what the dense model confuses most; the bundled model's own top candidates were not used
because unlabelled relevant entries among them would be taught as negatives.

The output is a pure function of the snapshots, the shared data and `--seed`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import suite
from build_sources import BUILDERS, snapshot_dir
from quality import BM25, all_text, tokenize
from sources import api_bank, seal_tools

from ard_mcp.errors import InvalidArgument
from ard_mcp.evaluation.judgements import Judgement, load_queries
from ard_mcp.formats.identifiers import normalize_identifier
from ard_mcp.formats.leniency import read_entry
from ard_mcp.formats.manifests import file_entries
from ard_mcp.index.embedding import Embedder, load_embedder
from ard_mcp.index.example_texts import extract_examples, humanize

DEFAULT_OUT = suite.BUILT / "training" / "pairs.jsonl"
#: Catalog self-pairs per entry at most, so a 40-tool server does not outweigh forty one-tool entries.
SELF_PAIRS = 6
NEGATIVE_DEPTH = 5
#: Word-set overlap (Jaccard) from which an example counts as a copy of the summary.
NEAR_COPY = 0.8


@dataclass
class Catalog:
    """One index's entries: each entry's examples (texts) by identifier, and BM25 over all their text."""

    examples: dict[str, list[str]]
    source_of: dict[str, str]
    bm25: BM25

    @classmethod
    def of(cls, entries: dict[str, dict[str, Any]], source_of: dict[str, str]) -> Catalog:
        """Entries read as the index reads them (`read_entry`, v0.5 spellings normalised); ones it rejects left out."""
        examples: dict[str, list[str]] = {}
        for ident, raw in entries.items():
            try:
                examples[ident] = [e.text for e in extract_examples(read_entry(raw)[0])]
            except InvalidArgument:
                continue
        kept = [i for i in entries if i in examples]
        return cls(examples, source_of, BM25(kept, [all_text(entries[i]) for i in kept]))


def _entries(paths: Sequence[Path]) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Entries by normalised identifier (later copies win, as in the index) and the source each came from."""
    entries: dict[str, dict[str, Any]] = {}
    source_of: dict[str, str] = {}
    for path, source in ((p, p.parent.name) for p in paths):
        for _, raw in file_entries(path):
            if isinstance(raw, dict) and isinstance(raw.get("identifier"), str):
                ident = normalize_identifier(raw["identifier"])
                entries[ident], source_of[ident] = raw, source
    return entries, source_of


def _pick(seed: int, text: str, count: int) -> int:
    return int(hashlib.sha256(f"{seed}:{text}".encode()).hexdigest(), 16) % count


class Miner:
    """Closest examples under the bundled model, embedding each text once."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.cache: dict[str, np.ndarray] = {}

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            self.cache.update(zip(missing, self.embedder.embed(missing), strict=True))
        return np.stack([self.cache[t] for t in texts])

    def closest(self, query: str, texts: Sequence[str]) -> str:
        scores = self.vectors(texts) @ self.vectors([query])[0]
        return texts[int(np.argmax(scores))]


def query_rows(source: str, judgements: Sequence[Judgement], catalog: Catalog, miner: Miner, seed: int) -> Iterator[dict[str, str]]:
    for judgement in judgements:
        wanted = dict.fromkeys(i for r in judgement.requirements for i in sorted(r.members) if i in catalog.examples)
        if not wanted:
            continue
        ranked = [i for i in catalog.bm25.search(judgement.query, NEGATIVE_DEPTH + len(wanted)) if i not in wanted][:NEGATIVE_DEPTH]
        negative = ""
        if ranked:
            negative = miner.closest(judgement.query, catalog.examples[ranked[_pick(seed, judgement.query, len(ranked))]])
        for ident in wanted:
            examples = catalog.examples[ident]
            for positive in dict.fromkeys([examples[0], miner.closest(judgement.query, examples)]):
                yield {"source": source, "query": judgement.query, "positive": positive, "negative": negative}


def _words(text: str) -> set[str]:
    return set(tokenize(humanize(text)))


def catalog_rows(catalog: Catalog) -> Iterator[dict[str, str]]:
    """Each entry's other examples paired with its name + description (the first example), leaving out the
    ones that repeat it (a one-tool entry's tool is its description again: 4,064 such Seal-Tools pairs)."""
    for ident, examples in catalog.examples.items():
        summary = _words(examples[0])
        others = [text for text in examples[1:] if len(_words(text) & summary) < NEAR_COPY * len(_words(text) | summary)]
        for other in others[:SELF_PAIRS]:
            yield {"source": f"catalog:{catalog.source_of[ident]}", "query": other, "positive": examples[0], "negative": ""}


def judgements_of(raw_queries: Sequence[dict[str, Any]]) -> list[Judgement]:
    return [Judgement.from_json(q) for q in raw_queries]


def build(mirror: Path, shared: Path, seed: int, with_api_bank: bool = False) -> Iterator[dict[str, str]]:
    miner = Miner(load_embedder())
    entries, source_of = _entries([shared / "data" / name / "catalog.json" for name in suite.SHARED_CATALOGS])
    shared_catalog = Catalog.of(entries, source_of)
    yield from catalog_rows(shared_catalog)
    for name in ("livemcpbench", "metatool"):
        yield from query_rows(name, load_queries(shared / "data" / name / "queries.dev.jsonl"), shared_catalog, miner, seed)
    for name, module in (*BUILDERS.items(), *([(api_bank.NAME, api_bank)] if with_api_bank else [])):
        git_dir = snapshot_dir(mirror, module)
        if not git_dir.is_dir():
            raise SystemExit(f"{name}: no snapshot at {git_dir}; see bench/build_sources.py for how to fetch it")
        every_split = seal_tools.INSTANCES + seal_tools.TEST_INSTANCES
        dataset = seal_tools.build(git_dir, every_split) if module is seal_tools else module.build(git_dir)
        entries = {normalize_identifier(e["identifier"]): e for e in dataset.entries}
        catalog = Catalog.of(entries, dict.fromkeys(entries, name))
        yield from catalog_rows(catalog)
        yield from query_rows(name, judgements_of(dataset.queries), catalog, miner, seed)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"), help="folder holding <owner>+<repo>/repo snapshots")
    parser.add_argument("--shared", type=Path, default=suite.REPO.parent / "shared", help="the shared folder holding data/")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the JSON-lines file to write (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the negative choice")
    parser.add_argument("--api-bank", action="store_true", help="add API-Bank's rows (not yet in the shipped recipe: docs/training.md)")
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    with args.out.open("w", encoding="utf-8") as out:
        for row in build(args.mirror, args.shared, args.seed, args.api_bank):
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            counts[row["source"]] = counts.get(row["source"], 0) + 1
    for source, count in sorted(counts.items()):
        print(f"{source:<26} {count:>6} rows")
    print(f"{sum(counts.values())} rows in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
