"""What the Prometheus metrics cost a search (docs/monitoring.md states the figures).

The LiveMCPBench catalog is ingested into a data directory, copied for a second process; then two processes
serve `POST /search` through the whole HTTP app (`build_app`, under httpx's in-process ASGI transport: no
network), one with the metrics on, as `serve` runs, one with them off. They search in turns, one search each
at a time with the dev set's query texts in the same order (which of the two goes first alternates), so a busy
moment of a shared machine falls on both alike; the first `warm` searches of each are not counted (the model,
the caches). Each round starts a fresh pair, the copies and the start order swapped between the conditions, since
two processes doing the same work differ by themselves (`--control` runs both with the metrics off to show how
much). Prints the median and p90 of each and the difference of the medians; then the cost of the
recording alone, timed in a loop of what one REST search records, off and on: on a shared machine a search's
own spread is far wider than that cost. Traces are off in both (off, they cost nothing by construction:
`ard_mcp.monitoring.tracing`).

    python bench/monitoring.py [--searches 150] [--rounds 4] [--warm 30] [--data ../shared/data] [--control]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]

_WORKER = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import anyio, httpx
from ard_mcp.monitoring import metrics
if sys.argv[3] == "off":
    metrics.enable = lambda: None  # the app turns them on as it is built
from ard_mcp.assembly.app import build_app
from ard_mcp.config import Config
from ard_mcp.surfaces.rest.settings import HttpSettings

async def main() -> None:
    texts = json.loads(sys.argv[4])
    app = build_app(Config(Path(sys.argv[2])), HttpSettings(), warm=False)
    transport = httpx.ASGITransport(app=app)
    async with app.router.lifespan_context(app), httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as client:
        print("ready", flush=True)
        while line := await anyio.to_thread.run_sync(sys.stdin.readline):
            started = time.perf_counter()
            answer = await client.post("/search", json={"query": {"text": texts[int(line)]}, "federation": "none"})
            took = (time.perf_counter() - started) * 1000
            assert answer.status_code == 200, answer.text
            print(took, flush=True)
        if sys.argv[3] == "on":  # and counted
            assert "ard_mcp_search_duration_seconds_count" in (await client.get("/metrics")).text

anyio.run(main)
"""


class _Worker:
    """A process serving searches one at a time: a query's index in, its time in ms out."""

    def __init__(self, data_dir: Path, condition: str, texts: list[str]) -> None:
        args = [sys.executable, "-c", _WORKER, str(REPO), str(data_dir), condition, json.dumps(texts)]
        env = {**os.environ, "ARD_MCP_LOG_LEVEL": "WARNING"}
        self.process = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        assert self.process.stdout is not None and self.process.stdout.readline().strip() == "ready"

    def search(self, index: int) -> float:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{index}\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        assert self.process.wait(timeout=60) == 0


def recording_cost(calls: int) -> tuple[float, float]:
    """Microseconds per search of what a REST search records (its route matched, its two ranking stages, the search,
    the request), `calls` times in a row, with the metrics off and then on: the cost itself, without a search's noise."""
    sys.path.insert(0, str(REPO))
    from ard_mcp.assembly.app import build_app
    from ard_mcp.config import Config
    from ard_mcp.monitoring import metrics
    from ard_mcp.monitoring.requests import route_of
    from ard_mcp.monitoring.stages import stage
    from ard_mcp.surfaces.rest.settings import HttpSettings

    enable = metrics.enable
    metrics.enable = lambda: None  # building the app turns them on: measure them off first
    with tempfile.TemporaryDirectory() as tmp:
        routes = build_app(Config(Path(tmp)), HttpSettings(), warm=False).routes
    scope = {"type": "http", "method": "POST", "path": "/search", "root_path": "", "headers": []}
    took = []
    for turn_on in (False, True):
        if turn_on:
            enable()
        started = time.perf_counter()
        for _ in range(calls):
            route = route_of(routes, scope)
            with stage("ranking"), stage("embedding"):
                pass
            metrics.search(0.05, 10, "high")
            metrics.request(route, "POST", 200, 0.06)
        took.append((time.perf_counter() - started) / calls * 1e6)
    return took[0], took[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--searches", type=int, default=150, help="searches of each process each round")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--warm", type=int, default=30)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--control", action="store_true", help="both processes with the metrics off: the noise floor")
    args = parser.parse_args()
    catalog = args.data / "livemcpbench"
    texts = [json.loads(line)["query"] for line in (catalog / "queries.dev.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    times: dict[str, list[float]] = {"off": [], "on": []}
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "ingested"
        started = time.perf_counter()
        ingest = [sys.executable, "-m", "ard_mcp", "ingest", str(catalog / "catalog.json"), "--data-dir", str(data_dir)]
        subprocess.run(ingest, check=True, cwd=REPO, capture_output=True)
        for copy in ("a", "b"):  # one for each process, alike
            shutil.copytree(data_dir, Path(tmp) / copy, ignore=shutil.ignore_patterns("*.lock"))
        print(f"ingested {catalog / 'catalog.json'} in {time.perf_counter() - started:.0f} s; {len(texts)} query texts")
        for turn in range(args.rounds):  # each copy (and the process started first) serves each condition in turn
            started_first = ("off", "on") if turn % 2 == 0 else ("on", "off")
            # --control: both off, to see how far apart two processes doing the same work are on this machine now
            workers = {c: _Worker(Path(tmp) / d, "off" if args.control else c, texts) for c, d in zip(started_first, "ab", strict=True)}
            try:
                for i in range(args.warm + args.searches):
                    for condition in ("off", "on") if i % 2 else ("on", "off"):
                        took = workers[condition].search(i % len(texts))
                        if i >= args.warm:
                            times[condition].append(took)
            finally:
                for worker in workers.values():
                    worker.close()
    for condition, samples in times.items():
        p50, p90 = np.percentile(samples, 50), np.percentile(samples, 90)
        print(f"metrics {condition:>3}: {len(samples)} searches, p50 {p50:.2f} ms, p90 {p90:.2f} ms")
    delta = np.percentile(times["on"], 50) - np.percentile(times["off"], 50)
    print(f"difference of the medians: {delta:+.3f} ms ({delta / np.percentile(times['off'], 50):+.1%})")
    paired = np.median(np.array(times["on"]) - np.array(times["off"]))
    print(f"median of the paired differences (the same query, on minus off): {paired:+.3f} ms")
    off, on = recording_cost(20_000)
    print(f"what a search records, alone: {on:.1f} us with the metrics on, {off:.1f} us off (route matching and empty stages)")


if __name__ == "__main__":
    main()
