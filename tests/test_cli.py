"""The command line as a user runs it: ingest with a summary, search printing the tool's JSON, eval, and
`serve` typed into a terminal (a real pseudo-terminal on its stdin)."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import PDF, REPO, SAMPLE, WEATHER, entry
from tests.processes import quiet_env

pytestmark = pytest.mark.slow  # the model, Chroma or a server


def ard(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ard_mcp", *args, "--data-dir", str(data_dir)],
        env=quiet_env(data_dir),
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_ingest_search_and_eval(tmp_path: Path) -> None:
    catalog = tmp_path / "ai-catalog.json"
    bad = entry(WEATHER, identifier="urn:air:example.com:weather:bad", url="https://example.com/x.json")
    catalog.write_text(json.dumps({"host": {"displayName": "Test"}, "entries": [*SAMPLE, bad]}))  # no specVersion: read as 1.0
    data_dir = tmp_path / "data"

    first = ard("ingest", str(catalog), data_dir=data_dir)
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines()[0] == f"added {len(SAMPLE)}, updated 0, unchanged 0, rejected 1, warnings 1"
    assert f"  rejected {catalog}: entries[5]: exactly one of url and data" in first.stdout  # outside the working directory: as given
    assert f"  warning {catalog}: specVersion: missing; read as 1.0" in first.stdout
    assert f"embedding {catalog} [" in first.stderr  # the progress bar goes to stderr

    again = ard("ingest", str(catalog), "--json", data_dir=data_dir)
    assert json.loads(again.stdout)["unchanged"] == len(SAMPLE)
    assert f"embedding {catalog}: nothing new to embed" in again.stderr and "0/0" not in again.stderr

    found = ard("search", "merge several pdf files into one", "--page-size", "2", data_dir=data_dir)
    assert found.returncode == 0, found.stderr
    response = json.loads(found.stdout)
    assert response["results"][0]["identifier"] == PDF["identifier"]
    assert len(response["results"]) <= 2 and response["confidence"] == "high"
    assert "match" in response["results"][0]  # compact by default, as search_agents

    full = ard("search", "merge several pdf files into one", "--detail", "full", data_dir=data_dir)
    assert json.loads(full.stdout)["results"][0]["evidence"]["matchedExamples"]

    refused = ard("search", "anything", "--filter", '{"colour": ["red"]}', data_dir=data_dir)
    assert refused.returncode == 2 and "'colour' is not supported" in refused.stderr

    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        json.dumps({"id": "a", "query": "combine two PDF documents", "relevant": [PDF["identifier"]], "category": "docs"})
        + "\n"
        + json.dumps({"id": "b", "query": "sky conditions in Rome right now", "relevant": {WEATHER["identifier"]: 2}})
        + "\n"
    )
    report = ard("eval", "--queries", str(queries), "--json", data_dir=data_dir)
    assert report.returncode == 0, report.stderr
    overall = json.loads(report.stdout)["overall"]
    assert overall["queries"] == 2 and overall["ndcg@10"] == 1.0

    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "x"}\n')
    failed = ard("eval", "--queries", str(broken), data_dir=data_dir)
    assert failed.returncode == 2 and "line 1" in failed.stderr


def test_ingest_names_files_apart_and_sums_up_repeated_warnings(tmp_path: Path) -> None:
    """Three files called catalog.json were told apart by nothing, and a v0.5 catalog printed one identical
    warning per entry (733 lines for the benchmark catalogs)."""
    v05 = [entry(e, identifier=e["identifier"].replace("urn:air:", "urn:ai:")) for e in SAMPLE]
    for site, entries in (("one", v05[:3]), ("two", v05[3:])):
        (tmp_path / site).mkdir()
        (tmp_path / site / "catalog.json").write_text(json.dumps({"specVersion": "1.0", "entries": entries}))
    (tmp_path / "two" / "broken").mkdir()
    (tmp_path / "two" / "broken" / "catalog.json").write_text("{")
    paths = ["one/catalog.json", "two/catalog.json", str(tmp_path / "two" / "broken" / "catalog.json")]
    done = subprocess.run(
        [sys.executable, "-m", "ard_mcp", "ingest", *paths, "--data-dir", str(tmp_path / "data")],
        env={**quiet_env(tmp_path / "data"), "PYTHONPATH": str(REPO)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"added {len(SAMPLE)}, updated 0, unchanged 0, rejected 1, warnings {len(SAMPLE)}"
    assert lines[1].startswith("  rejected two/broken/catalog.json: not valid JSON")  # under the working directory: relative
    first = f"identifier: urn:ai: is the v0.5 prefix; stored as {SAMPLE[0]['identifier']} (look-ups by either spelling find it)"
    assert lines[2:] == [f"  warning {len(SAMPLE)} entries: {first} (first at one/catalog.json: entries[0]; --json lists each)"]
    assert "embedding one/catalog.json [" in done.stderr and "embedding two/catalog.json [" in done.stderr


def test_ingest_refuses_entries_over_the_configured_size(tmp_path: Path) -> None:
    catalog = tmp_path / "ai-catalog.json"
    catalog.write_text(json.dumps({"specVersion": "1.0", "entries": [WEATHER]}))
    refused = ard("ingest", str(catalog), "--json", "--max-entry-bytes", "300", data_dir=tmp_path / "data")
    report = json.loads(refused.stdout)
    assert refused.returncode == 1 and report["added"] == 0
    assert report["rejected"][0].endswith("bytes of JSON, over the limit of 300 (see --max-entry-bytes)")


def _serve_in_a_terminal(data_dir: Path) -> tuple[subprocess.Popen[str], int]:
    """`ard-mcp serve` with a pseudo-terminal as stdin, as a person starts it; returns it and the terminal's
    master side, once the server has said what it waits for."""
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "ard_mcp", "serve", "--data-dir", str(data_dir)],
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=quiet_env(data_dir),
        text=True,
    )
    os.close(slave)
    assert process.stderr is not None
    ready, _, _ = select.select([process.stderr], [], [], 60)
    first = process.stderr.readline() if ready else ""  # written at once, with a flush
    if not first.startswith("ard-mcp: waiting"):
        process.kill()
        process.wait(timeout=10)
        os.close(master)
    assert first.startswith("ard-mcp: waiting for an MCP client on stdin"), first
    assert "--transport streamable-http" in first and "Ctrl-C" in first
    return process, master


def test_serve_in_a_terminal_says_what_it_waits_for_and_stops_on_the_first_ctrl_c(tmp_path: Path) -> None:
    process, master = _serve_in_a_terminal(tmp_path / "data")
    try:
        time.sleep(0.5)  # into its wait for a client
        process.send_signal(signal.SIGINT)  # what Ctrl-C sends the terminal's foreground process
        started = time.monotonic()
        stdout, stderr = process.communicate(timeout=30)  # once: no second Ctrl-C, no Enter
    finally:
        os.close(master)
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
    assert process.returncode == 130, stderr  # 128 + SIGINT, as shells report an interrupted command
    assert time.monotonic() - started < 15
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert "ard-mcp: stopping" in stderr and stdout == ""
    # the data directory was released: the next command may open it
    assert ard("search", "anything", data_dir=tmp_path / "data").returncode == 0


def test_serve_in_a_terminal_stops_at_end_of_input(tmp_path: Path) -> None:
    process, master = _serve_in_a_terminal(tmp_path / "data")
    try:
        os.write(master, b"\x04")  # Ctrl-D at the start of a line: end of input, as a host closing stdin
        _, stderr = process.communicate(timeout=30)
    finally:
        os.close(master)
    assert process.returncode == 0 and "Traceback" not in stderr, stderr


def test_serve_from_a_host_says_nothing_on_stderr_about_waiting(tmp_path: Path) -> None:
    """A host's stdin is a pipe: the line is for people, and a host's log would only collect it."""
    done = subprocess.run(
        [sys.executable, "-m", "ard_mcp", "serve", "--data-dir", str(tmp_path / "data")],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        env=quiet_env(tmp_path / "data"),
    )
    assert done.returncode == 0 and "waiting for an MCP client" not in done.stderr, done.stderr
