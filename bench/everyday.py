"""Everyday tasks over the bundled snapshot: is the right server first, in the top 3, and is the registry's
confidence right about it (issue #56's dev set).

    python bench/everyday.py [--tasks bench/everyday_tasks.jsonl] [--data-dir D] [--misses] [--model-dir M]

The tasks (`bench/everyday_tasks.jsonl`) were written in plain words by someone who had not seen the
catalog (a third naming the product the person uses, the rest plain needs, some that nothing may do), then
labelled against the whole snapshot with every server that does each: one `relevant_any_of` group, any one
member of which answers the task; a task nothing does has `"relevant": []`. Each task runs through the
product's own search on a registry holding the bundled snapshot, as `search_agents` runs it by default
(`ard-mcp snapshot add`, then `Registry.search`), and the script prints, for all tasks and per kind
(`named`: names a product; `plain`):

* right first / right in the top 3, over the tasks that have an answer;
* confident and wrong: the first result is not right and is marked high fit (what a host believes at once);
  and, stricter, the first result is not right on a page the registry vouches for;
* right doubted: a right server in the top 3 on a page marked low-confidence;
* no-answer vouched for: tasks nothing does answered with a page the registry vouches for;
* duplicates: pages whose top 3 show one server twice (the same repository or package from two sources).

Targets (issue #56): right in the top 3 >= 95%, right first >= 85%, confident and wrong <= 3%. Printed,
not asserted. `--misses` lists each task whose first result is not right, with what came first.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ard_mcp.config import Config  # noqa: E402
from ard_mcp.evaluation.judgements import Judgement, load_queries  # noqa: E402
from ard_mcp.formats.identifiers import normalize_identifier  # noqa: E402
from ard_mcp.index import snapshot  # noqa: E402
from ard_mcp.registry import Registry  # noqa: E402
from ard_mcp.search.query import SearchQuery  # noqa: E402
from ard_mcp.search.visibility import EVERYONE  # noqa: E402

TASKS = REPO / "bench" / "everyday_tasks.jsonl"
TARGETS = {"right in top 3": (0.95, ">="), "right first": (0.85, ">="), "confident and wrong": (0.03, "<=")}


@dataclass(frozen=True)
class Outcome:
    """One task's page, as a host reads it."""

    judgement: Judgement
    first: list[str]  # the identifiers of the page's first results, in order
    names: list[str]  # their display names
    fits: list[str]  # their fit bands
    confident: bool
    duplicated: bool  # the top 3 shows one server twice

    @property
    def right(self) -> frozenset[str]:
        return frozenset(m for r in self.judgement.requirements for m in r.members)

    @property
    def answerable(self) -> bool:
        return bool(self.right)

    def right_within(self, k: int) -> bool:
        return any(i in self.right for i in self.first[:k])

    @property
    def wrong_and_high(self) -> bool:
        return bool(self.first) and not self.right_within(1) and self.fits[0] == "high"

    @property
    def wrong_and_vouched(self) -> bool:
        return bool(self.first) and not self.right_within(1) and self.confident


def _server_key(entry: dict[str, object]) -> str:
    """What makes two entries one server: its repository, else its first package, else its name."""
    data = entry.get("data") if isinstance(entry.get("data"), dict) else {}
    assert isinstance(data, dict)
    repository = data.get("repository") if isinstance(data.get("repository"), dict) else {}
    url = str((repository or {}).get("url") or "").lower().rstrip("/").removesuffix(".git")
    if url:  # a monorepo's servers are told apart by their folder
        return f"{url}/{(repository or {}).get('subfolder') or ''}".rstrip("/")
    packages = data.get("packages") if isinstance(data.get("packages"), list) else []
    if packages and isinstance(packages[0], dict):
        return f"{packages[0].get('registryType')}:{packages[0].get('identifier')}"
    return str(entry.get("displayName") or entry.get("identifier")).lower()


def run(registry: Registry, tasks: Sequence[Judgement]) -> list[Outcome]:
    outcomes = []
    for judgement in tasks:
        page = registry.search(SearchQuery.of(judgement.query, page_size=10), viewer=EVERYONE)
        response = page.brief()
        keys = [_server_key(c.agent.entry) for c in page.candidates[:3]]
        outcomes.append(
            Outcome(
                judgement,
                [normalize_identifier(c.agent.identifier) for c in page.candidates],
                [str(c.agent.entry.get("displayName") or c.agent.identifier) for c in page.candidates],
                [str(r.fit) for r in response.results],
                page.confident,
                len(set(keys)) < len(keys),
            )
        )
    return outcomes


def _share(hits: Iterable[bool]) -> tuple[int, int]:
    values = list(hits)
    return sum(values), len(values)


def figures(outcomes: Sequence[Outcome]) -> dict[str, tuple[int, int]]:
    answerable = [o for o in outcomes if o.answerable]
    unanswerable = [o for o in outcomes if not o.answerable]
    return {
        "right first": _share(o.right_within(1) for o in answerable),
        "right in top 3": _share(o.right_within(3) for o in answerable),
        "confident and wrong": _share(o.wrong_and_high for o in answerable),
        "wrong on a vouched page": _share(o.wrong_and_vouched for o in answerable),
        "right doubted": _share(not o.confident for o in answerable if o.right_within(3)),
        "no-answer vouched for": _share(o.confident for o in unanswerable),
        "duplicates in top 3": _share(o.duplicated for o in outcomes),
    }


def table(outcomes: Sequence[Outcome]) -> str:
    groups = {"all": list(outcomes)}
    for kind in sorted({o.judgement.kind or "-" for o in outcomes}):
        groups[kind] = [o for o in outcomes if (o.judgement.kind or "-") == kind]
    columns = {name: figures(group) for name, group in groups.items()}
    header = f"{'':<26}" + "".join(f"{f'{name} ({len(groups[name])})':>18}" for name in groups) + "   target"
    lines = [header]
    for metric in columns["all"]:
        cells = []
        for name in groups:
            hit, total = columns[name][metric]
            cells.append(f"{f'{hit}/{total} = {hit / total:.1%}' if total else '-':>18}")
        target = TARGETS.get(metric)
        verdict = ""
        if target is not None:
            hit, total = columns["all"][metric]
            share = hit / total if total else 0.0
            passed = share >= target[0] if target[1] == ">=" else share <= target[0]
            verdict = f"   {target[1]} {target[0]:.0%} {'PASS' if passed else 'FAIL'}"
        lines.append(f"{metric:<26}" + "".join(cells) + verdict)
    return "\n".join(lines)


def misses(outcomes: Sequence[Outcome]) -> str:
    lines = []
    for o in outcomes:
        if o.answerable and not o.right_within(1):
            rank = next((i + 1 for i, x in enumerate(o.first) if x in o.right), None)
            shown = ", ".join(f"{n} ({f})" for n, f in zip(o.names[:3], o.fits[:3], strict=False))
            lines.append(f"{o.judgement.id} [{'right at ' + str(rank) if rank else 'no right in 10'}] {o.judgement.query!r}: {shown}")
        elif not o.answerable and o.confident:
            lines.append(f"{o.judgement.id} [no answer, vouched for] {o.judgement.query!r}: {', '.join(o.names[:3])}")
    return "\n".join(lines)


def open_registry(data_dir: Path, model_dir: Path | None) -> Registry:
    """A registry holding the bundled snapshot (added once; a kept `--data-dir` is reused)."""
    registry = Registry(Config(data_dir=data_dir, model_dir=model_dir))
    if registry.store.count() == 0:
        snapshot.add(registry.store, registry.indexer, registry.model_spec.id, snapshot.read())
    return registry


def report(tasks_path: Path, data_dir: Path | None, model_dir: Path | None, show_misses: bool) -> str:
    """The everyday tasks' table (and misses), for this script and for `quality.py`."""
    tasks = load_queries(tasks_path)
    with tempfile.TemporaryDirectory() as scratch:
        registry = open_registry(data_dir or Path(scratch) / "everyday", model_dir)
        try:
            started = time.perf_counter()
            outcomes = run(registry, tasks)
            elapsed = (time.perf_counter() - started) / max(1, len(tasks))
        finally:
            registry.close()
    answerable = [o for o in outcomes if o.answerable]
    sizes = [len(o.right) for o in answerable]
    out = [
        f"everyday tasks ({tasks_path.name}): {len(tasks)} tasks, {len(answerable)} with an answer in the snapshot "
        f"(a median of {statistics.median(sizes) if sizes else 0:g} right servers each); {elapsed * 1000:.0f} ms a task",
        table(outcomes),
    ]
    if show_misses:
        out += ["", "misses:", misses(outcomes)]
    return "\n".join(out)


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=Path, default=TASKS)
    parser.add_argument("--data-dir", type=Path, help="keep the registry here between runs (default: a fresh one)")
    parser.add_argument("--model-dir", type=Path, help="another model (its tuning from its model.json)")
    parser.add_argument("--misses", action="store_true", help="list each task whose first result is not right")
    args = parser.parse_args(list(argv) if argv is not None else None)
    print(report(args.tasks, args.data_dir, args.model_dir, args.misses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
