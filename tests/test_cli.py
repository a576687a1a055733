"""The command line as a user runs it: ingest with a summary, search printing the tool's JSON, eval."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PDF, SAMPLE, WEATHER, entry
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
    assert "  rejected ai-catalog.json: entries[5]: exactly one of url and data" in first.stdout
    assert "  warning ai-catalog.json: specVersion: missing; read as 1.0" in first.stdout
    assert "embedding ai-catalog.json" in first.stderr  # the progress bar goes to stderr

    again = ard("ingest", str(catalog), "--json", data_dir=data_dir)
    assert json.loads(again.stdout)["unchanged"] == len(SAMPLE)

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


def test_ingest_refuses_entries_over_the_configured_size(tmp_path: Path) -> None:
    catalog = tmp_path / "ai-catalog.json"
    catalog.write_text(json.dumps({"specVersion": "1.0", "entries": [WEATHER]}))
    refused = ard("ingest", str(catalog), "--json", "--max-entry-bytes", "300", data_dir=tmp_path / "data")
    report = json.loads(refused.stdout)
    assert refused.returncode == 1 and report["added"] == 0
    assert report["rejected"][0].endswith("bytes of JSON, over the limit of 300 (see --max-entry-bytes)")
