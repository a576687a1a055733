"""Aggregate search throughput of several `ard-mcp serve` processes sharing one store and one Chroma server.

Used by `scale.py --chroma-url ... --servers 1,2,3` (with `--store-url` the store is PostgreSQL, else the
SQLite store in one shared data directory): for each count, that many processes
start on loopback ports, each is waited for until its search copy has loaded (the "search copy:" log
line), and a closed-loop load of `clients` concurrent REST searches per process runs for `seconds`, the
requests spread over the processes in turn as a load balancer would. Closed loop: each client sends its
next query when the last one answered, so latency and throughput are measured together; the clients run
in this process (one asyncio loop), on the same cores as the servers. Beside each figure: how busy the
machine's CPUs were during the load (/proc/stat), which says whether more processes could have had more.
"""

from __future__ import annotations

import asyncio
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
def servers(count: int, store: list[str], chroma_url: str, repo: Path, timeout: float = 600) -> Iterator[list[str]]:
    """`count` serve processes on one store (`--store-url URL` or `--data-dir DIR`) and one Chroma server,
    each with its search copy loaded."""
    logs = Path(tempfile.mkdtemp(prefix="ard-throughput-"))
    env = {**os.environ, "ARD_MCP_LOG_LEVEL": "INFO", "ARD_MCP_CHROMA_URL": chroma_url}
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


async def _load(bases: list[str], queries: list[str], clients: int, seconds: float) -> dict[str, Any]:
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
            response = await http.post(f"{base}/search", json={"query": {"text": queries[i % len(queries)]}})
            if response.status_code == 200:
                latencies.append((time.perf_counter() - started) * 1000)
            else:
                errors += 1
            i += clients

    limits = httpx.Limits(max_connections=clients * 2, max_keepalive_connections=clients * 2)
    async with httpx.AsyncClient(timeout=60, limits=limits) as http:
        for base in bases:  # one request each first: connections open, nothing cold is timed
            await http.post(f"{base}/search", json={"query": {"text": queries[0]}})
        began, busy_before = time.perf_counter(), _cpu_times()
        await asyncio.gather(*(client(http, k) for k in range(clients)))
        elapsed, busy_after = time.perf_counter() - began, _cpu_times()
    return {
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


def measure(
    counts: list[int], store: list[str], chroma_url: str, repo: Path, queries: list[str], clients_per_process: int, seconds: float
) -> list[dict[str, Any]]:
    """Throughput and latency for each process count, one after another."""
    out = []
    for count in counts:
        with servers(count, store, chroma_url, repo) as bases:
            out.append(asyncio.run(_load(bases, queries, clients_per_process * count, seconds)))
    return out
