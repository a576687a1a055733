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

(plain `serve`, like `serve --shared`, answers the handshake and first `tools/list` from what a back-end of the
same install and settings answered before, kept in the user's cache folder, shared by the runs: so from the
second run on for each set of flags);
- shared, kept answers: `serve --shared` (what `host-config` writes) started again on a directory whose
  back-end has stopped: its front-end answers the handshake from what it kept the last time
  (`sharing.link.Hello`) while the back-end starts, and the first search goes through that back-end;
- shared, new directory: `serve --shared` on a new data directory of a user whose other directory was served
  with the same settings: its handshake and first `tools/list` from what that back-end answered (the
  machine's kept answers), the snapshot added by the back-end it starts;
- shared, first ever: the same with nothing kept on the machine (a new cache folder): what a host waits for
  the first time an install is attached without `host-config`;
- shared, first ever, host-config run: the same after `ard-mcp host-config` prepared it (`--write`, or printing
  the entry, asks a scratch back-end each protocol version's first questions), as a person attaching a host does.

Each line gives the handshake, the first `tools/list` (asked right after it, as hosts do) and the first answer.

`--quick` leaves out the other model's case (10-30 s a run here), for comparing changes to the first start
in one sitting on a shared machine. Prints one line per case: the median and each run's seconds.
docs/benchmarks.md has the figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

TASK = "read and write files in a folder"
IDLE_S = 0.5  # the back-end's idle time in the shared case


async def first_answer(data_dir: Path, *flags: str, cache: Path | None = None) -> tuple[float, float, float, str]:
    """(seconds to the handshake, to the first `tools/list`, to the first answer, its first result's name);
    `cache`: the user's cache folder (the machine's kept answers of `serve --shared`)."""
    env = _env(cache or data_dir.parent / "cache")
    server = StdioServerParameters(command=sys.executable, args=["-m", "ard_mcp", "serve", "--data-dir", str(data_dir), *flags], env=env)
    started = time.monotonic()
    async with Client(server) as client:
        handshake = time.monotonic() - started
        await client.list_tools()
        listed = time.monotonic() - started
        result = await client.call_tool("search_agents", {"text": TASK, "pageSize": 3})
        answered = time.monotonic() - started
    found = (result.structured_content or {}).get("results") or [{"displayName": "(nothing)"}]
    return handshake, listed, answered, found[0]["displayName"]


def _env(cache: Path) -> dict[str, str]:
    """The server's environment: `cache` as the user's cache folder (where `serve --shared` keeps answers)."""
    env = {k: v for k, v in os.environ.items() if k != "ARD_MCP_NO_SNAPSHOT"} | {"ARD_MCP_LOG_LEVEL": "WARNING"}
    return env | {"ARD_MCP_BACKEND_IDLE": str(IDLE_S), "XDG_CACHE_HOME": str(cache)}


def prepared(data_dir: Path, cache: Path) -> tuple[float, float, float, str]:
    """`first_answer` of `serve --shared` on an install's first start, after `host-config` prepared it (what
    `host-config --write`, or printing the entry, does before a host starts it)."""
    command = [sys.executable, "-m", "ard_mcp", "host-config", "cursor", "--prepare-only", "--data-dir", str(data_dir)]
    subprocess.run(command, env=_env(cache), capture_output=True, check=True, timeout=300)
    return anyio.run(partial(first_answer, data_dir, "--shared", cache=cache))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="leave out the other model's case")
    args = parser.parse_args()
    first_starts = {"snapshot": (), "snapshot, another model": ("--model-dir", "minilm"), "empty": ("--no-snapshot",)}
    if args.quick:
        del first_starts["snapshot, another model"]
    cases: dict[str, list[tuple[float, float, float, str]]] = {}
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
            new = partial(first_answer, Path(tmp) / f"shared-new-{run}", "--shared")
            cases.setdefault("shared, new directory", []).append(anyio.run(new))
            first = partial(first_answer, Path(tmp) / f"shared-first-{run}", "--shared", cache=Path(tmp) / f"cache-{run}")
            cases.setdefault("shared, first ever", []).append(anyio.run(first))
            ready = prepared(Path(tmp) / f"shared-ready-{run}", Path(tmp) / f"cache-ready-{run}")
            cases.setdefault("shared, first ever, host-config run", []).append(ready)
    print(f"{os.cpu_count()} CPUs; seconds from starting `ard-mcp serve` over stdio, median of {args.runs}")
    for case, runs in cases.items():
        handshake, listed, answer = (statistics.median(r[i] for r in runs) for i in range(3))
        each = ", ".join(f"{r[2]:.2f}" for r in runs)
        print(
            f"{case:24} handshake {handshake:5.2f}  tools/list {listed:5.2f}  first answer {answer:5.2f}  ({each});",
            f"first result: {runs[0][3]}",
        )


if __name__ == "__main__":
    main()
