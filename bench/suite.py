"""The quality benchmark's sources, their indexes, and each query's candidates, shared by `quality.py`
(which reports) and `fit_fusion.py` (which fits).

A *source* is a set of labelled queries over an *index*:

* `livemcpbench` and `metatool`: the shared data's dev queries over one index of its three catalogs
  (740 entries; `<shared>/data/README.md`);
* `seal-tools`, `toolalpaca`, `mcp-bench`: built by `bench/build_sources.py` from the public repositories
  into `bench/.data/<name>/` (catalog and dev queries), each over an index of its own catalog;
* `everyday`: the everyday tasks (`bench/everyday_tasks.jsonl`, `everyday.py`) over an index of the bundled
  snapshot of public MCP servers, whose entries are written as a catalog into `bench/.data/snapshot/`;
* `no-answer` (25 queries) and `no-answer-hard` (our own, written to be hard: near-miss topics, word-sense near misses, absent
  tools, other languages, long tasks), over the shared index: no entry fits any of them;
* held out (issue #56), `apibench`, `restbench` and `nestful` (`HELD_OUT_SOURCES`): public tool-retrieval sets built
  by `bench/build_sources.py --held-out`, each over an index of its own catalog, that no tuning has touched.
  They are scored, never fitted: `sources` and `catalogs` leave them out unless asked for by name (so
  `fit_fusion.py`, which asks for every source, never sees them, and neither does a plain `quality.py`),
  `fit_fusion.fit` refuses them (`refuse_unfitted`), and `quality.py --sources` ranks them with the product's
  tuning only. `build_sources.BUILDERS`, which `train_pairs.py` trains the encoder on, does not hold them.

Every dev source is ranked from the same collected candidates under any tuning (`Ranker.select`), so a
leave-one-source-out fit costs no second search. The ranking from collected candidates is the product's
(`Registry.search` calls `Ranker.rank`, which is `select(candidates(...))`).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np

from ard_mcp.config import Config
from ard_mcp.evaluation.judgements import Judgement, load_queries
from ard_mcp.evaluation.report import Answer
from ard_mcp.formats.identifiers import normalize_identifier
from ard_mcp.formats.manifests import file_entries
from ard_mcp.index import snapshot
from ard_mcp.registry import Registry
from ard_mcp.search.ranking import Candidates, Ranker
from ard_mcp.search.rerank import Reranker
from ard_mcp.search.tuning import Tuning

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
BUILT = BENCH / ".data"
#: The shared catalogs, in ingest order: 8 identifiers are in both the seed and LiveMCPBench, and the later copy wins.
SHARED_CATALOGS = ("mcp-registry-seed", "metatool", "livemcpbench")
BUILT_SOURCES = ("seal-tools", "toolalpaca", "mcp-bench")
#: Built like BUILT_SOURCES but never fitted or trained on: an outside check of the ranking and its confidence.
HELD_OUT_SOURCES = ("apibench", "restbench", "nestful")
EVERYDAY = BENCH / "everyday_tasks.jsonl"
#: Dev sources scored beside the fitted ones but never fitted on: the everyday tasks over the product's own catalog.
#: Fitted with the other five, the confidence learnt that catalog's low scores in-sample and vouched for 54 of the 172
#: hard no-answer queries instead of 20 (and 22 of its 53 own no-answer tasks), so they measure how the tuning fitted
#: on other catalogs holds on this one, which is what a new user's catalog gets.
NOT_FITTED = ("everyday",)
T = TypeVar("T")
NO_ANSWER = {"no-answer": BENCH / "no_answer.jsonl", "no-answer-hard": BENCH / "no_answer_hard.jsonl"}


@dataclass(frozen=True)
class Source:
    name: str
    index: str  # the name of the index its queries run over
    queries: list[Judgement]


@dataclass
class Collected:
    """One query's candidates, with the identifier of each candidate agent (None: nothing was found)."""

    judgement: Judgement
    found: Candidates | None
    identifiers: list[str]


def catalogs(shared: Path, built: Path, held_out: bool = False) -> dict[str, list[Path]]:
    """Index name -> the catalog files it is built from, in ingest order; built sources that are missing are left out,
    and so are the held-out sources' indexes unless `held_out`."""
    out = {"shared": [shared / "data" / name / "catalog.json" for name in SHARED_CATALOGS]}
    for name in BUILT_SOURCES + (HELD_OUT_SOURCES if held_out else ()):
        if (built / name / "catalog.json").is_file():
            out[name] = [built / name / "catalog.json"]
    out["snapshot"] = [snapshot_catalog(built)]
    return out


def snapshot_catalog(built: Path) -> Path:
    """The bundled snapshot's entries as a catalog file (what the baselines read, and what its index ingests)."""
    path = built / "snapshot" / "catalog.json"
    entries = snapshot.read().entries
    text = json.dumps({"specVersion": "1.0", "host": {"displayName": "the bundled snapshot"}, "entries": entries}, sort_keys=True)
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return path


def sources(shared: Path, built: Path, only: Iterable[str] | None = None, held_out: bool = False) -> list[Source]:
    """Every source whose files exist (or those named in `only`), dev sources first. A held-out source is there
    only when `only` names it or `held_out` asks for all of them: asking for "every source", as a fit does,
    never gives one."""
    wanted = set(only) if only else None
    found = [Source(d, "shared", load_queries(shared / "data" / d / "queries.dev.jsonl")) for d in ("livemcpbench", "metatool")]
    found += [
        Source(n, n, load_queries(built / n / "queries.dev.jsonl")) for n in BUILT_SOURCES if (built / n / "queries.dev.jsonl").is_file()
    ]
    found += [Source("everyday", "snapshot", load_queries(EVERYDAY))] if EVERYDAY.is_file() else []
    found += [Source(n, "shared", load_queries(p)) for n, p in NO_ANSWER.items() if p.is_file()]
    found += [
        Source(n, n, load_queries(built / n / "queries.dev.jsonl"))
        for n in HELD_OUT_SOURCES
        if (held_out or (wanted is not None and n in wanted)) and (built / n / "queries.dev.jsonl").is_file()
    ]
    return [s for s in found if wanted is None or s.name in wanted]


def refuse_unfitted(names: Iterable[str]) -> None:
    """Raise ValueError if a held-out or scored-only source is among `names` (the sources a fit is about to use):
    figures on a held-out set mean something only while no choice has been made on it (`NOT_FITTED`: why those)."""
    among = sorted(set(names) & {*HELD_OUT_SOURCES, *NOT_FITTED})
    if among:
        raise ValueError(f"{', '.join(among)}: never fitted on (suite.HELD_OUT_SOURCES, suite.NOT_FITTED)")


def fitted(items: Mapping[str, T]) -> dict[str, T]:
    """The sources among `items` a fit may use: neither held out nor scored only."""
    return {name: value for name, value in items.items() if name not in HELD_OUT_SOURCES and name not in NOT_FITTED}


def open_index(name: str, files: list[Path], root: Path, model_dir: Path | None = None) -> Registry:
    """The registry of one index under `root/<name>`, ingesting its catalogs when it is empty (a kept
    `--data-dir` is reused as it is: delete it after changing a catalog)."""
    registry = Registry(Config(data_dir=root / name, model_dir=model_dir))
    if registry.store.count() == 0:
        for path in files:
            start = time.perf_counter()
            report = registry.indexer.register_many(file_entries(path))
            print(
                f"  {name}: {path.parent.name:<18} added {report.added:>5}  updated {report.updated:>3}  "
                f"rejected {len(report.rejected):>3}  ({time.perf_counter() - start:.1f} s)",
                flush=True,
            )
            for message in report.rejected[:5]:
                print(f"    rejected: {message}")
    return registry


def collect(registry: Registry, judgements: Iterable[Judgement]) -> list[Collected]:
    """Each query's candidates and their signals, as the product computes them."""
    names = _identifiers(registry)
    out = []
    for j in judgements:
        found = registry.ranker.candidates(j.query, None)
        ids = [] if found is None else [names[int(a)] for a in found.agent_ids]
        out.append(Collected(j, found, ids))
    return out


def _identifiers(registry: Registry) -> dict[int, str]:
    agents = registry.store.agents_by_id(registry.store.agent_ids())
    return {agent_id: normalize_identifier(agent.identifier) for agent_id, agent in agents.items()}


def ranker_with(registry: Registry, tuning: Tuning, reranker: Reranker | None = None) -> Ranker:
    """The registry's ranker under another tuning (same store, index and model), optionally with a reranker."""
    r = registry.ranker
    return Ranker(r.store, r.vectors, r.embedder, tuning, r.examples, reranker)


def tuned(base: Tuning, weights: np.ndarray, bias: float, cutoff: int, floor: int) -> Tuning:
    return dataclasses.replace(base, weights=tuple(round(float(w), 3) for w in weights), bias=round(bias, 3), cutoff=cutoff, floor=floor)


def answer(ranker: Ranker, item: Collected, k: int = 10) -> Answer:
    """What `search_agents` would list first for a collected query under `ranker`'s tuning."""
    ranking = ranker.select(item.found)
    if item.found is None:
        return Answer([])
    position = {int(a): i for i, a in enumerate(item.found.agent_ids)}
    return Answer([item.identifiers[position[h.agent_id]] for h in ranking.hits[:k]], ranking.confident)


def labels(item: Collected) -> np.ndarray:
    """1 for each candidate that meets one of the query's requirements, else 0."""
    wanted = {m for r in item.judgement.requirements for m in r.members}
    return np.array([1.0 if i in wanted else 0.0 for i in item.identifiers])
