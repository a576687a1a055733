"""Build retrieval-benchmark datasets from public tool-use benchmarks, in the shape of shared/data.

    python bench/build_sources.py [--mirror /work/.mirror] [--out bench/.data] [--max-queries 300] [--seed 0] [--held-out] [NAMES...]

NAMES are any of seal-tools, toolalpaca, mcp-bench (all three when none is given), the sources the ranking is
fitted and the encoder trained on (`BUILDERS`, which `train_pairs.py` reads), or of the held-out sources
apibench, restbench, nestful (`HELD_OUT`; `--held-out` builds all three, and only them when no NAMES are
given): public sets that no tuning has touched, scored only (`suite.HELD_OUT_SOURCES`; that module says how
they are kept out of every fit). For each it writes
`<out>/<name>/catalog.json` (an ai-catalog manifest: `{"specVersion": "1.0", "host": {...}, "entries": [...]}`),
`queries.dev.jsonl` (shared/data/README.md's query format, plus `kind`), `SOURCE.txt` and `LICENSE.txt`, and
prints entries, tools, indexed examples, queries by kind and the mean number of relevant entries per query.

Snapshots: each source is read from a bare git directory `<mirror>/<owner>+<repo>/repo`, at its HEAD, with
`git show` (nothing is checked out, nothing is fetched at build time):

    git clone --bare https://github.com/fairyshine/Seal-Tools  /work/.mirror/fairyshine+Seal-Tools/repo
    git clone --bare https://github.com/tangqiaoyu/ToolAlpaca  /work/.mirror/tangqiaoyu+ToolAlpaca/repo
    git clone --bare https://github.com/Accenture/mcp-bench    /work/.mirror/Accenture+mcp-bench/repo
    git clone --bare https://github.com/ShishirPatil/gorilla   /work/.mirror/ShishirPatil+gorilla/repo     # held out
    git clone --bare https://github.com/Yifan-Song793/RestGPT  /work/.mirror/Yifan-Song793+RestGPT/repo    # held out
    git clone --bare https://github.com/IBM/NESTFUL            /work/.mirror/IBM+NESTFUL/repo              # held out

To rebuild exactly what SOURCE.txt names, point HEAD at that commit first:
`git --git-dir <dir> update-ref --no-deref HEAD <sha>`. Only files that are in the snapshot are read (Seal-Tools'
train.jsonl and ToolAlpaca's train_data.json are not needed). Output is a pure function of the snapshot,
`--max-queries` and `--seed`.

Why the mapping is what it is (each builder's docstring has the details):

* One entry per thing a user would pick: a Seal-Tools tool, a ToolAlpaca API, an MCP-Bench server, an
  APIBench model API, a RestBench endpoint, a NESTFUL function. The labels name exactly those units, so
  precision is measured at the level the benchmark labels.
* REST tools and APIs are `application/openapi+json`, MCP servers `application/mcp-server+json`.
  Identifiers are `urn:air:<source>.example.org:<tool|api|endpoint|server>:<slug>`: none of these has a
  publisher domain of its own, and `.example.org` says so.
* Every entry's `data.tools` lists its tools as `{name, description, inputSchema}`, which is what
  `ard_mcp.index.example_texts` indexes one example for (besides name + description); `capabilities` are the
  tool names. `data` otherwise keeps the source's own record.
* Nothing from the benchmark instances (instructions, tasks, golden answers) goes into an entry: no
  `representativeQueries`. The queries would otherwise be matched against themselves.
* `relevant` is every distinct tool/API/server an instance calls; an instance calling something the catalog
  lacks is dropped. `kind` says which slice a query belongs to (single-tool/multi-tool, real/simulated,
  single-server/multi-server) so results can be read per slice.
* At most `--max-queries` queries per source, sampled per kind in proportion (every kind represented),
  ordered by sha256(seed:id) rather than `random`, so the sample is the same on any platform.
* `updatedAt` is a fixed timestamp, so rebuilding gives byte-identical files and a re-ingest changes nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sources import apibench, mcp_bench, nestful, restbench, seal_tools, toolalpaca
from sources.common import Dataset, stratified_sample

from ard_mcp.formats.catalog import CatalogEntry
from ard_mcp.index.example_texts import extract_examples

REPO = Path(__file__).resolve().parent.parent
#: The built sources the ranking is fitted on and the encoder trained on (`train_pairs.py` reads every one).
BUILDERS: dict[str, ModuleType] = {module.NAME: module for module in (seal_tools, toolalpaca, mcp_bench)}
#: Held-out public sets (issue #56): built and scored only, never fitted or trained on, so they are not in
#: `BUILDERS`; their names are `suite.HELD_OUT_SOURCES`.
HELD_OUT: dict[str, ModuleType] = {module.NAME: module for module in (apibench, restbench, nestful)}


def snapshot_dir(mirror: Path, module: ModuleType) -> Path:
    """`<mirror>/<owner>+<repo>/repo`, where `fetch` (or `git clone --bare`) puts a snapshot."""
    return mirror / str(module.REPO).replace("/", "+") / "repo"


def write(dataset: Dataset, queries: Sequence[dict[str, object]], folder: Path, command: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    catalog = {"specVersion": "1.0", "host": {"displayName": dataset.title}, "entries": dataset.entries}
    (folder / "catalog.json").write_text(json.dumps(catalog, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    lines = "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries)
    (folder / "queries.dev.jsonl").write_text(lines, encoding="utf-8")
    (folder / "SOURCE.txt").write_text(f"source: {dataset.source}\nbuilt by: {command}\n", encoding="utf-8")
    (folder / "LICENSE.txt").write_text(dataset.licence_text.rstrip() + "\n", encoding="utf-8")


def summary(dataset: Dataset, queries: Sequence[dict[str, object]]) -> str:
    """Entries, tools, indexed examples (what the product's example index holds), queries by kind and
    the mean number of relevant entries per query."""
    examples = sum(len(extract_examples(CatalogEntry.model_validate(entry))) for entry in dataset.entries)
    kinds = Counter(str(q["kind"]) for q in queries)
    available = Counter(str(q["kind"]) for q in dataset.queries)
    by_kind = ", ".join(f"{kind} {kinds[kind]}/{available[kind]}" for kind in sorted(available))
    relevant = [len(q["relevant"]) for q in queries if isinstance(q["relevant"], list | dict)]
    mean = sum(relevant) / len(relevant) if relevant else 0.0
    return (
        f"{dataset.name}: {len(dataset.entries)} entries, {dataset.tool_count} tools, {examples} indexed examples; "
        f"{len(queries)} queries ({by_kind} sampled/available), {mean:.2f} relevant per query\n"
        f"  {dataset.source}"
    )


def main(argv: Sequence[str] | None = None, echo: Callable[[str], None] = print) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    known = BUILDERS | HELD_OUT
    parser.add_argument(
        "names", nargs="*", metavar="NAMES", help=f"sources to build, of {', '.join(known)} (default: {', '.join(BUILDERS)})"
    )
    parser.add_argument(
        "--held-out", action="store_true", help=f"build the held-out sources ({', '.join(HELD_OUT)}) too; with no NAMES, only them"
    )
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"), help="folder holding <owner>+<repo>/repo snapshots")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / ".data", help="output folder (one subfolder per source)")
    parser.add_argument("--max-queries", type=int, default=300, help="most queries kept per source (stratified by kind)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the deterministic sample")
    args = parser.parse_args(argv)
    unknown = [name for name in args.names if name not in known]
    if unknown:
        parser.error(f"unknown source(s) {', '.join(unknown)}; choose from {', '.join(known)}")
    if args.max_queries < 1:
        parser.error("--max-queries must be at least 1")

    names = list(dict.fromkeys([*(args.names or ([] if args.held_out else BUILDERS)), *(HELD_OUT if args.held_out else [])]))
    for name in names:
        module = known[name]
        git_dir = snapshot_dir(args.mirror, module)
        if not git_dir.is_dir():
            echo(f"{name}: no snapshot at {git_dir}; see this script's docstring for how to fetch it")
            return 1
        dataset: Dataset = module.build(git_dir)
        queries = stratified_sample(dataset.queries, args.max_queries, args.seed)
        command = f"python bench/build_sources.py --max-queries {args.max_queries} --seed {args.seed} {name}"
        write(dataset, queries, args.out / name, command)
        echo(summary(dataset, queries))
    return 0


if __name__ == "__main__":
    sys.exit(main())
