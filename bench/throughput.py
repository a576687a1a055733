"""Search throughput: what one search costs a serve process, against the query embedding it contains; and the
aggregate throughput of several `ard-mcp serve` processes sharing one store and one Chroma server.

Run alone (`python bench/throughput.py [--data-dir DIR]`), it measures one process at saturation: a fresh data
directory gets the bundled snapshot (1,683 public servers, `ard-mcp snapshot add`), one `serve` process answers
REST `POST /search` under `--clients` closed-loop clients, and for each of `--rounds` rounds it prints the
searches/s, the serve process's CPU time per search (all its threads, from /proc), and the query-embedding
time of the same run: the same query texts embedded here, one at a time as a search does
(`Embedder.embed_with_parts` with the text's steps), while the server is idle. The ratio of the two, CPU per
search over the embedding's CPU, is marked PASS at most 2.0 (issue 57: "a search that costs at most two
embeddings"), so it holds on any machine; it is printed, not asserted. Every request's text is made unique
(` #N` appended), so no query vector is reused from the server's cache (`Embedder.embed_query`): the figure is
the cost of a new task; `--repeat` sends the texts as they are, to measure repeated tasks. `--repo DIR` serves
another checkout, but the embedding figure is always this checkout's (`load_embedder` here): compare the CPU
per search of two trees, not their ratios, unless their embedders are the same.

`python bench/throughput.py --chroma-url URL --processes N` measures scaling instead: one process, then N, on
the snapshot in one data directory and the Chroma server at URL (`chroma run`), each process with `--clients`
clients; it prints each count's searches/s, the ratio to one process and the processes' CPU per search
(`scaling`). Also used by `scale.py --chroma-url ... --servers 1,2,3` (with `--store-url` the store is PostgreSQL, else the
SQLite store in one shared data directory): for each count, that many processes
start on loopback ports, each is waited for until its search copy has loaded (the "search copy:" log
line), and a closed-loop load of `clients` concurrent REST searches per process runs for `seconds`, the
requests spread over the processes in turn as a load balancer would. Closed loop: each client sends its
next query when the last one answered, so latency and throughput are measured together; the clients run
in this process (one asyncio loop), on the same cores as the servers. Beside each figure: how busy the
machine's CPUs were during the load (/proc/stat), which says whether more processes could have had more.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import numpy as np

READY_LINE = "search copy:"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def servers(
    count: int, store: list[str], chroma_url: str | None, repo: Path, timeout: float = 600, pids: list[int] | None = None
) -> Iterator[list[str]]:
    """`count` serve processes on one store (`--store-url URL` or `--data-dir DIR`) and one Chroma server (None:
    embedded Chroma, one process), each with its search copy loaded; their process ids are added to `pids`."""
    logs = Path(tempfile.mkdtemp(prefix="ard-throughput-"))
    env = {**os.environ, "ARD_MCP_LOG_LEVEL": "INFO"}
    if chroma_url is not None:
        env["ARD_MCP_CHROMA_URL"] = chroma_url
    started: list[tuple[subprocess.Popen[bytes], Path, str]] = []
    try:
        for i in range(count):
            port = _free_port()
            log = logs / f"serve-{i}.log"
            process = subprocess.Popen(
                [sys.executable, "-m", "ard_mcp", "serve", "--transport", "streamable-http", "--port", str(port), *store],
                env=env,
                cwd=repo,
                stdout=subprocess.DEVNULL,
                stderr=log.open("wb"),
            )
            started.append((process, log, f"http://127.0.0.1:{port}"))
            if pids is not None:
                pids.append(process.pid)
        deadline = time.monotonic() + timeout
        for process, log, _ in started:
            while READY_LINE not in log.read_text(errors="replace"):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"a serve process did not load its search copy: {log.read_text(errors='replace')[-2000:]}")
                time.sleep(0.2)
        yield [base for _, _, base in started]
    finally:
        for process, _, _ in started:
            process.terminate()
        for process, _, _ in started:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


async def _load(
    bases: list[str], queries: list[str], clients: int, seconds: float, pids: list[int] | None = None, unique: bool = False
) -> dict[str, Any]:
    """Closed-loop REST searches; with `pids`, the CPU time those processes spent per search; with `unique`, each
    request's text made unique (no query vector reused from a server's cache)."""
    latencies: list[float] = []
    errors = 0
    stop = time.perf_counter() + seconds
    turn = iter(range(1 << 62))

    async def client(http: httpx.AsyncClient, offset: int) -> None:
        nonlocal errors
        i = offset
        while time.perf_counter() < stop:
            n = next(turn)
            base = bases[n % len(bases)]
            started = time.perf_counter()
            text = queries[i % len(queries)] + (f" #{n}" if unique else "")
            response = await http.post(f"{base}/search", json={"query": {"text": text}})
            if response.status_code == 200:
                latencies.append((time.perf_counter() - started) * 1000)
            else:
                errors += 1
            i += clients

    limits = httpx.Limits(max_connections=clients * 2, max_keepalive_connections=clients * 2)
    async with httpx.AsyncClient(timeout=60, limits=limits) as http:
        for base in bases:  # one request each first: connections open, nothing cold is timed
            await http.post(f"{base}/search", json={"query": {"text": queries[0]}})
        began, busy_before, cpu_before = time.perf_counter(), _cpu_times(), _process_cpu(pids or [])
        await asyncio.gather(*(client(http, k) for k in range(clients)))
        elapsed, busy_after, cpu_after = time.perf_counter() - began, _cpu_times(), _process_cpu(pids or [])
    return {
        "server_cpu_ms_per_search": (cpu_after - cpu_before) * 1000 / len(latencies) if pids and latencies else None,
        "processes": len(bases),
        "clients": clients,
        "seconds": elapsed,
        "requests": len(latencies),
        "errors": errors,
        "throughput_rps": len(latencies) / elapsed,
        "p50_ms": float(np.percentile(latencies, 50)) if latencies else None,
        "p99_ms": float(np.percentile(latencies, 99)) if latencies else None,
        "cpu_busy": (busy_after[0] - busy_before[0]) / max(1, busy_after[1] - busy_before[1]),  # share of all CPUs' time
    }


def _cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs together."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def _process_cpu(pids: list[int]) -> float:
    """CPU seconds (user + system, every thread) the processes have used so far."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / tick


def measure(
    counts: list[int],
    store: list[str],
    chroma_url: str,
    repo: Path,
    queries: list[str],
    clients_per_process: int,
    seconds: float,
    unique: bool = False,
) -> list[dict[str, Any]]:
    """Throughput, latency and the processes' CPU per search for each process count, one after another."""
    out = []
    for count in counts:
        pids: list[int] = []
        with servers(count, store, chroma_url, repo, pids=pids) as bases:
            out.append(asyncio.run(_load(bases, queries, clients_per_process * count, seconds, pids, unique)))
    return out


def scaling(args: argparse.Namespace) -> list[dict[str, Any]]:
    """One process, then `--processes` of them, on one store and one Chroma server: what N processes give
    against one (issue 57: at least 0.8 N on N cores), and the CPU a search costs them in each case. With
    fewer cores than processes plus clients the throughput cannot scale, so the CPU per search is the figure
    that says whether the processes hold each other up (a shared lock, the store): if it stays flat, N
    processes on N free cores give N times one. The clients run in this process, on the same cores."""
    data_dir = _snapshot_data_dir(args)
    store = ["--store-url", args.store_url] if args.store_url else ["--data-dir", str(data_dir)]
    queries = dev_queries(args.shared)
    rows = measure(sorted({1, args.processes}), store, args.chroma_url, args.repo, queries, args.clients, args.seconds, unique=True)
    one = rows[0]
    for row in rows:
        print(
            f"{row['processes']} process(es): {row['throughput_rps']:.1f} searches/s "
            f"({row['throughput_rps'] / one['throughput_rps']:.2f} x one; p50 {row['p50_ms']:.0f} / p99 {row['p99_ms']:.0f} ms), "
            f"{row['server_cpu_ms_per_search']:.2f} ms CPU per search; CPUs {row['cpu_busy']:.0%} busy ({os.cpu_count()} cores)",
            flush=True,
        )
    return rows


# -- one process: the CPU a search costs against the query embedding it contains ----------------------------
TARGET = 2.0  # CPU per search at most this many query embeddings (issue 57)


def dev_queries(shared: Path) -> list[str]:
    """The benchmark sources' dev queries (LiveMCPBench's long tasks, then MetaTool's short ones), in file order."""
    out: list[str] = []
    for name in ("livemcpbench", "metatool"):
        path = shared / "data" / name / "queries.dev.jsonl"
        out += [json.loads(line)["query"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return out


def embedding_cost(texts: list[str], model_dir: Path | None) -> dict[str, float]:
    """Mean wall and CPU ms (this process, the model's threads included) of embedding each text as a search
    does: the text and its steps in one pass of the model (`embed_with_parts`), one query at a time."""
    from ard_mcp.config import default_model_dir
    from ard_mcp.index.embedding import load_embedder
    from ard_mcp.search.ranking import split_intents

    embedder = load_embedder(model_dir or default_model_dir())
    for text in texts[:10]:
        embedder.embed_with_parts(text, split_intents(text))
    wall, cpu = time.perf_counter(), time.process_time()
    for text in texts:
        embedder.embed_with_parts(text, split_intents(text))
    return {"wall_ms": (time.perf_counter() - wall) * 1000 / len(texts), "cpu_ms": (time.process_time() - cpu) * 1000 / len(texts)}


def _snapshot_data_dir(args: argparse.Namespace) -> Path:
    """`--data-dir`, or a new one holding the bundled snapshot (its vectors in `--chroma-url`'s server if given)."""
    data_dir: Path = args.data_dir or Path(tempfile.mkdtemp(prefix="ard-throughput-data-")) / "data"
    if not (data_dir / "catalog.sqlite3").exists() and args.store_url is None:
        env = {**os.environ, **({"ARD_MCP_CHROMA_URL": args.chroma_url} if args.chroma_url else {})}
        add = [sys.executable, "-m", "ard_mcp", "snapshot", "add", "--data-dir", str(data_dir)]
        subprocess.run(add, cwd=args.repo, env=env, check=True)
    return data_dir


def one_process(args: argparse.Namespace) -> list[dict[str, Any]]:
    data_dir = _snapshot_data_dir(args)
    store = ["--store-url", args.store_url] if args.store_url else ["--data-dir", str(data_dir)]
    queries = dev_queries(args.shared)
    rounds: list[dict[str, Any]] = []
    pids: list[int] = []
    with servers(1, store, args.chroma_url, args.repo, pids=pids) as bases:
        for k in range(args.rounds):
            row = asyncio.run(_load(bases, queries, args.clients, args.seconds, pids, unique=not args.repeat))
            picked = [queries[(k * args.embeddings + i) % len(queries)] for i in range(args.embeddings)]
            sample = picked if args.repeat else [f"{text} #e{k}.{i}" for i, text in enumerate(picked)]
            embedding = embedding_cost(sample, args.model_dir)
            row.update(embedding_wall_ms=embedding["wall_ms"], embedding_cpu_ms=embedding["cpu_ms"])
            row["ratio"] = row["server_cpu_ms_per_search"] / embedding["cpu_ms"]
            rounds.append(row)
            print(_line(f"round {k + 1}", row), flush=True)
    middle = {key: float(np.median([r[key] for r in rounds])) for key in _FIGURES}
    print(_line(f"median of {len(rounds)}", middle))
    return rounds


_FIGURES = ("throughput_rps", "p50_ms", "p99_ms", "server_cpu_ms_per_search", "embedding_wall_ms", "embedding_cpu_ms", "ratio", "cpu_busy")


def _line(label: str, row: dict[str, Any]) -> str:
    verdict = "PASS" if row["ratio"] <= TARGET else "FAIL"
    return (
        f"{label}: {row['throughput_rps']:.1f} searches/s (p50 {row['p50_ms']:.0f} / p99 {row['p99_ms']:.0f} ms), "
        f"{row['server_cpu_ms_per_search']:.2f} ms CPU per search; query embedding {row['embedding_cpu_ms']:.2f} ms CPU "
        f"({row['embedding_wall_ms']:.2f} ms wall); ratio {row['ratio']:.2f} (target <= {TARGET:.1f}: {verdict}); "
        f"CPUs {row['cpu_busy']:.0%} busy"
    )


def main() -> None:
    repo = Path(__file__).resolve().parent.parent
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, help="a data directory to serve (default: a new one with the bundled snapshot)")
    parser.add_argument("--store-url", help="a PostgreSQL store instead (with --chroma-url)")
    parser.add_argument("--chroma-url", help="a Chroma server (default: embedded Chroma)")
    parser.add_argument("--model-dir", type=Path, help="the model the server uses, if not the default (for the embedding figure)")
    parser.add_argument("--repo", type=Path, default=repo, help="the checkout whose `ard_mcp` serves (default: this one)")
    parser.add_argument("--shared", type=Path, default=repo.parent / "shared", help="where data/*/queries.dev.jsonl are")
    parser.add_argument("--clients", type=int, default=16, help="concurrent closed-loop clients (default %(default)s)")
    parser.add_argument("--seconds", type=float, default=20.0, help="load time per round (default %(default)s)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; the medians are printed last (default %(default)s)")
    parser.add_argument("--embeddings", type=int, default=200, help="query texts embedded per round (default %(default)s)")
    parser.add_argument("--repeat", action="store_true", help="send the query texts as they are (repeated tasks: cached vectors)")
    parser.add_argument("--json", type=Path, help="write the rounds here")
    parser.add_argument(
        "--processes", type=int, help="instead: one process, then this many, --clients each (needs --chroma-url; see `scaling`)"
    )
    args = parser.parse_args()
    if args.processes is not None:
        if args.chroma_url is None:
            parser.error("--processes needs --chroma-url: processes share a vector index only through a Chroma server")
        rows = scaling(args)
        if args.json:
            args.json.write_text(json.dumps({"processes": rows}, indent=2))
        return
    rounds = one_process(args)
    if args.json:
        args.json.write_text(json.dumps({"rounds": rounds, "target": TARGET}, indent=2))


if __name__ == "__main__":
    main()
