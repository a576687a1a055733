"""Time to first answer: how long a person waits for the first search of a new registry served over stdio.

    python bench/first_answer.py [--runs 3]

Each run starts `ard-mcp serve` over stdio on a new data directory, as a host does, with the MCP SDK's
client, and times from starting the process to the MCP handshake and to the first `search_agents` answer
("read and write files in a folder"). Cases:

- snapshot: the bundled snapshot with its vectors (what a person gets);
- snapshot, another model: `--model-dir minilm`, whose id is not the one the vectors were made with, so
  every text of the snapshot is embedded at the first start (what shipping the vectors saves);
- empty: `--no-snapshot`, the model and an empty registry only;
- second start: the snapshot's data directory started again;
- shared, kept answers: `serve --shared` (what `host-config` writes) started again on a directory whose
  back-end has stopped: its front-end answers the handshake from what it kept the last time
  (`sharing.link.Hello`) while the back-end starts, and the first search goes through that back-end.

`--quick` leaves out the other model's case (10-30 s a run here), for comparing changes to the first start
in one sitting on a shared machine. Prints one line per case: the median and each run's seconds.
docs/benchmarks.md has the figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

TASK = "read and write files in a folder"
IDLE_S = 0.5  # the back-end's idle time in the shared case


async def first_answer(data_dir: Path, *flags: str) -> tuple[float, float, str]:
    """(seconds to the handshake, seconds to the first answer, its first result's name)."""
    env = {k: v for k, v in os.environ.items() if k != "ARD_MCP_NO_SNAPSHOT"} | {"ARD_MCP_LOG_LEVEL": "WARNING"}
    env["ARD_MCP_BACKEND_IDLE"] = str(IDLE_S)
    server = StdioServerParameters(command=sys.executable, args=["-m", "ard_mcp", "serve", "--data-dir", str(data_dir), *flags], env=env)
    started = time.monotonic()
    async with Client(server) as client:
        handshake = time.monotonic() - started
        result = await client.call_tool("search_agents", {"text": TASK, "pageSize": 3})
        answered = time.monotonic() - started
    found = (result.structured_content or {}).get("results") or [{"displayName": "(nothing)"}]
    return handshake, answered, found[0]["displayName"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="leave out the other model's case")
    args = parser.parse_args()
    first_starts = {"snapshot": (), "snapshot, another model": ("--model-dir", "minilm"), "empty": ("--no-snapshot",)}
    if args.quick:
        del first_starts["snapshot, another model"]
    cases: dict[str, list[tuple[float, float, str]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(args.runs):
            for case, flags in first_starts.items():
                data_dir = Path(tmp) / f"{case}-{run}"
                cases.setdefault(case, []).append(anyio.run(first_answer, data_dir, *flags))
            cases.setdefault("second start", []).append(anyio.run(first_answer, Path(tmp) / f"snapshot-{run}"))
            shared = Path(tmp) / f"shared-{run}"
            anyio.run(first_answer, shared, "--shared")  # the front-end keeps the back-end's answers
            time.sleep(IDLE_S + 2)  # the back-end stops after its idle time
            cases.setdefault("shared, kept answers", []).append(anyio.run(first_answer, shared, "--shared"))
    print(f"{os.cpu_count()} CPUs; seconds from starting `ard-mcp serve` over stdio, median of {args.runs}")
    for case, runs in cases.items():
        handshake = statistics.median(r[0] for r in runs)
        answer = statistics.median(r[1] for r in runs)
        each = ", ".join(f"{r[1]:.2f}" for r in runs)
        print(f"{case:24} handshake {handshake:5.2f}  first answer {answer:5.2f}  ({each}); first result: {runs[0][2]}")


if __name__ == "__main__":
    main()
