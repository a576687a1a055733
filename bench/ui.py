"""The web page's cost (issue 34): how much rendering adds to a search's own time, and how big the pages are.

    python bench/ui.py [--size 2000] [--queries 100] [--shared DIR] [--data-dir DIR] [--json OUT]

Builds a catalog of `--size` agents from the real entries in `<shared>/data` the way `bench/scale.py` does
(`synth.Generator`, seeded; ingested with `register_many(manifest_entries(...))`), or reuses `--data-dir` when
it already holds one. Then, for each of `--queries` dev queries (LiveMCPBench, MetaTool), in turns:

- **core**: the page's calls of the registry (`search_view.fetch`), exactly what `POST /search` and
  `POST /explore` ask it for the same page: `Registry.search` with its ARD results (evidence included) and
  `Registry.explore` over the five facets the page shows;
- **page extra**: the page's own work on what those calls answered: building its rows, facet and paging
  links (`search_view.build`) and rendering `search.html`. Measured apart from the core calls on the same
  answer, so the figure does not drown in the noise of the search's own time on a busy machine; its CPU time
  is reported beside its wall time (on a machine other work keeps busy, the wall time is mostly waiting).

Also the entry page (the top result of each query, with the query as its task) and the HTML bytes of both
pages, raw and gzip-compressed (what a browser receives from a compressing proxy). The issue's target is at
most 10 ms of rendering at the 100,000-agent benchmark size; building that catalog takes hours of model time
on a small machine, so the default is a smaller size: the page's own work grows with the page (10 rows, 5
facets of at most 8 values), not with the catalog, and the figures say which size they were measured at.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

import synth  # noqa: E402

from ard_mcp.config import Config  # noqa: E402
from ard_mcp.formats.manifests import manifest_entries  # noqa: E402
from ard_mcp.registry import Registry  # noqa: E402
from ard_mcp.search.query import SearchQuery  # noqa: E402
from ard_mcp.search.visibility import EVERYONE  # noqa: E402
from ard_mcp.ui.entry_view import entry_view  # noqa: E402
from ard_mcp.ui.render import environment  # noqa: E402
from ard_mcp.ui.search_view import PageState, build, fetch  # noqa: E402

CSRF = "x" * 43  # the length of a real token (secrets.token_urlsafe(32))


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def queries(shared: Path, count: int) -> list[str]:
    out: list[str] = []
    for name in ("livemcpbench", "metatool"):
        path = shared / "data" / name / "queries.dev.jsonl"
        out += [json.loads(line)["query"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return out[:count]


def ingest(registry: Registry, shared: Path, size: int, seed: int) -> None:
    entries = synth.Generator(synth.Sources.load(shared), seed=seed).entries(size)
    manifest = {"specVersion": "1.0", "host": {"displayName": f"ard-mcp web page benchmark ({size} agents)"}, "entries": entries}
    start = time.perf_counter()
    report = registry.indexer.register_many(manifest_entries(manifest))
    log(f"ingested {size:,} agents in {time.perf_counter() - start:.0f} s ({report.as_dict()['added']} added)")


def search_page(registry: Registry, text: str) -> tuple[float, float, float, str]:
    """(the registry's time, the page's own time and its own CPU time, the HTML) of one search page. The page's
    work is pure Python on one thread, so its CPU time is what its wall time is on an idle machine."""
    start = time.perf_counter()
    found = fetch(registry, PageState(text), EVERYONE)
    fetched, cpu = time.perf_counter(), time.thread_time()
    html = environment().get_template("search.html").render(view=build(PageState(text), found), csrf=CSRF, signed_in=False)
    return (fetched - start) * 1000, (time.perf_counter() - fetched) * 1000, (time.thread_time() - cpu) * 1000, html


def entry_page(registry: Registry, identifier: str, text: str) -> tuple[float, str]:
    start = time.perf_counter()
    view = entry_view(registry, identifier, text, EVERYONE)
    html = environment().get_template("entry.html").render(view=view, task=text, csrf=CSRF, signed_in=False, operator=False)
    return (time.perf_counter() - start) * 1000, html


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
        "mean": statistics.fmean(ordered),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=2000, help="agents in the catalog (default %(default)s)")
    parser.add_argument("--queries", type=int, default=100, help="dev queries to time (default %(default)s)")
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared", help="the shared folder with data/ (default %(default)s)")
    parser.add_argument("--data-dir", type=Path, default=None, help="reuse (or build once into) this data directory")
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument("--json", type=Path, default=HERE / "ui-results.json", help="where to write the results (default %(default)s)")
    args = parser.parse_args(argv)

    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="ard-ui-bench-"))
    registry = Registry(Config(data_dir))
    try:
        if registry.store.count() == 0:
            ingest(registry, args.shared, args.size, args.seed)
        size = registry.store.count()
        texts = queries(args.shared, args.queries)
        for text in texts[:5]:  # warm: the model, the caches, the templates
            search_page(registry, text)
        cores, extra, extra_cpu, entries, search_bytes, entry_bytes = [], [], [], [], [], []
        for text in texts:
            core, own, own_cpu, html = search_page(registry, text)
            cores.append(core)
            extra.append(own)
            extra_cpu.append(own_cpu)
            search_bytes.append((len(html.encode()), len(gzip.compress(html.encode()))))
            top = registry.search(SearchQuery.of(text, page_size=1), viewer=EVERYONE).results()
            if top:
                took, html = entry_page(registry, top[0].identifier, text)
                entries.append(took)
                entry_bytes.append((len(html.encode()), len(gzip.compress(html.encode()))))
        results: dict[str, Any] = {
            "agents": size,
            "queries": len(texts),
            "core_ms": summary(cores),
            "search_page_ms": summary([c + e for c, e in zip(cores, extra, strict=True)]),
            "page_extra_ms": summary(extra),
            "page_extra_cpu_ms": summary(extra_cpu),
            "load_average": os.getloadavg(),
            "cpus": os.cpu_count(),
            "entry_page_ms": summary(entries),
            "search_page_bytes": {"mean": statistics.fmean(b for b, _ in search_bytes), "max": max(b for b, _ in search_bytes)},
            "search_page_gzip_bytes": {"mean": statistics.fmean(g for _, g in search_bytes), "max": max(g for _, g in search_bytes)},
            "entry_page_bytes": {"mean": statistics.fmean(b for b, _ in entry_bytes), "max": max(b for b, _ in entry_bytes)},
            "entry_page_gzip_bytes": {"mean": statistics.fmean(g for _, g in entry_bytes), "max": max(g for _, g in entry_bytes)},
            "target": "page_extra_ms p50 <= 10 at 100,000 agents",
        }
    finally:
        registry.close()
    args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    print(f"web page at {results['agents']:,} agents, {results['queries']} queries (ms: p50 / p95)")
    print(f"  (load average {results['load_average'][0]:.1f} on {results['cpus']} CPUs)")
    for key in ("core_ms", "search_page_ms", "page_extra_ms", "page_extra_cpu_ms", "entry_page_ms"):
        print(f"  {key:<16} {results[key]['p50']:8.2f} / {results[key]['p95']:8.2f}")
    for key in ("search_page_bytes", "search_page_gzip_bytes", "entry_page_bytes", "entry_page_gzip_bytes"):
        print(f"  {key:<24} mean {results[key]['mean']:9,.0f}  max {results[key]['max']:9,}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
