"""The long version of the reliability suite (`tests/test_reliability.py`), and its figures as a table.

    python bench/soak.py [--seconds 60] [--clients 30] [--kills 12] [--serve-kills 4] [--entries 150]
                         [--fuzz-examples 200] [--rest-fuzz-examples 50] [--seed N] [--json OUT]

Runs `python -m pytest -m soak tests/test_reliability.py` with those sizes in `ARD_MCP_SOAK_*` (the test
file's defaults are the short version CI runs), has the tests write their figures to a JSON file
(`ARD_MCP_SOAK_REPORT`), and prints them as the Markdown table docs/reliability.md shows.
The exit status is pytest's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the concurrent clients run")
    parser.add_argument("--clients", type=int, default=30, help="concurrent clients (REST and MCP each)")
    parser.add_argument("--kills", type=int, default=12, help="rounds of SIGKILL during ingest")
    parser.add_argument("--serve-kills", type=int, default=4, help="rounds of SIGKILL of a server taking registrations")
    parser.add_argument("--entries", type=int, default=150, help="entries of the catalog killed during ingest")
    parser.add_argument("--fuzz-examples", type=int, default=200, help="fuzzed calls per MCP tool")
    parser.add_argument("--rest-fuzz-examples", type=int, default=50, help="fuzzed requests per REST route of a real server")
    parser.add_argument("--seed", type=int, default=0, help="random seed (0: a new one, printed in the figures)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    return parser.parse_args(argv)


def table(report: dict[str, Any], minutes: float) -> str:
    rows: list[tuple[str, str]] = []
    if ingest := report.get("ingest_kills"):
        rows.append(
            (
                f"SIGKILL during `ard-mcp ingest` ({ingest['entries']} entries), {ingest['rounds']} rounds",
                f"{ingest['killed_mid_write']} killed mid-write; 0 stored entries lost; integrity ok; "
                f"every entry found after restart + re-ingest; {ingest['orphan_vectors']} orphan vectors",
            )
        )
    if serve := report.get("serve_kills"):
        rows.append(
            (
                f"SIGKILL of `ard-mcp serve` under {serve['writers']} registering clients, {serve['rounds']} rounds",
                f"{serve['acknowledged']} acknowledged writes, 0 lost, all found after restart; "
                f"register p50 / p99 {serve['register_p50_ms']} / {serve['register_p99_ms']} ms",
            )
        )
    if soak := report.get("concurrency"):
        rows.append(
            (
                f"{soak['clients']} clients for {soak['seconds']:.0f} s, REST + MCP, search / register / delete",
                f"{soak['operations']} operations ({soak['per_second']}/s), {soak['errors']} errors (5xx, tool errors, hangs), "
                f"{soak['stale_searches']} stale reads, {soak['wrong_final']} lost or resurrected writes",
            )
        )
        rows.append(("… search p50 / p99", f"{soak['search_p50_ms']} / {soak['search_p99_ms']} ms"))
        rows.append(("… register or delete p50 / p99", f"{soak['write_p50_ms']} / {soak['write_p99_ms']} ms"))
    if fuzz := report.get("mcp_fuzz"):
        rows.append(
            (
                f"fuzzing the {fuzz['tools']} MCP tools ({fuzz['examples_per_tool']} examples each, in-memory client)",
                f"{fuzz['calls']} calls: {fuzz.get('result', 0)} results, {fuzz.get('tool error', 0)} tool errors, "
                f"{fuzz.get('protocol error', 0)} protocol errors; no unexpected exception, traceback or hang",
            )
        )
    if rest := report.get("rest_fuzz"):
        answered = ", ".join(f"{rest[k]} {k}" for k in sorted(rest) if k.endswith("xx"))
        rows.append(
            (
                f"fuzzing the {rest['routes']} REST routes of a real server ({rest['examples_per_route']} examples each)",
                f"{rest['requests']} requests: {answered}; no traceback, no hang",
            )
        )
    lines = ["| check | result |", "|---|---|", *(f"| {a} | {b} |" for a, b in rows), "", f"({minutes:.1f} minutes in all)"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        report_path = Path(tmp) / "soak.json"
        env = {
            **os.environ,
            "ARD_MCP_SOAK_SECONDS": str(args.seconds),
            "ARD_MCP_SOAK_CLIENTS": str(args.clients),
            "ARD_MCP_SOAK_KILLS": str(args.kills),
            "ARD_MCP_SOAK_SERVE_KILLS": str(args.serve_kills),
            "ARD_MCP_SOAK_INGEST_ENTRIES": str(args.entries),
            "ARD_MCP_SOAK_FUZZ_EXAMPLES": str(args.fuzz_examples),
            "ARD_MCP_SOAK_REST_FUZZ_EXAMPLES": str(args.rest_fuzz_examples),
            "ARD_MCP_SOAK_REPORT": str(report_path),
        }
        if args.seed:
            env["ARD_MCP_SOAK_SEED"] = str(args.seed)
        started = time.monotonic()
        status = subprocess.run(
            [sys.executable, "-m", "pytest", "-m", "soak", "-s", "-q", "-p", "no:cacheprovider", "tests/test_reliability.py"],
            cwd=REPO,
            env=env,
        ).returncode
        minutes = (time.monotonic() - started) / 60
        report = json.loads(report_path.read_text()) if report_path.exists() else {}
    print()
    print(table(report, minutes))
    if args.json:
        args.json.write_text(json.dumps({**report, "minutes": round(minutes, 1), "pytest_status": status}, indent=2))
    return status


if __name__ == "__main__":
    sys.exit(main())
