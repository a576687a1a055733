"""The examples work end to end: a real `ard-mcp serve` subprocess driven over stdio by the MCP SDK (search_client.py),
and through it real agents found and called (use_agents.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the model, Chroma or a server

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "examples" / "search_client.py"
CATALOG = REPO / "examples" / "ai-catalog.json"

# The default query asks to turn a spreadsheet into a PDF: the PDF converter's convert_to_pdf tool is the answer.
EXPECTED_FIRST = "urn:air:paperforge.io:documents:pdf-converter"
# A result line: "  <score>  <identifier>  (<displayName>)".
RESULT_LINE = re.compile(r"^\s+(\d{1,3})\s+(urn:air:\S+)\s+\((.+)\)$")


def _identifiers(manifest: dict) -> set[str]:
    found = set()
    for entry in manifest["entries"]:
        found.add(entry["identifier"])
        if entry["type"] == "application/ai-catalog+json" and "data" in entry:
            found |= _identifiers(entry["data"])
    return found


def test_search_client_registers_searches_and_explores(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--data-dir", str(tmp_path / "registry")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert run.returncode == 0, f"stdout:\n{run.stdout}\nstderr:\n{run.stderr[-3000:]}"
    out = run.stdout

    # Every entry, nested bundle members included, was registered into the fresh data directory.
    identifiers = _identifiers(json.loads(CATALOG.read_text(encoding="utf-8")))
    created = set(re.findall(r"^\s*created\s+(urn:air:\S+)$", out, re.MULTILINE))
    assert created == identifiers

    # The first search result is the PDF converter, with its score and display name, and the evidence line names
    # the tool that matched.
    results = [m for line in out.splitlines() if (m := RESULT_LINE.match(line))]
    assert results, out
    score, first, name = results[0].groups()
    assert first == EXPECTED_FIRST, out
    assert name == "PaperForge PDF Converter" and 0 < int(score) <= 100
    assert all(m.group(2) in identifiers for m in results)
    assert re.search(r"best match: tool: convert to pdf", out, re.IGNORECASE), out
    assert "confidence high" in out, out
    assert re.search(r"get_agent: PaperForge PDF Converter, \d+ bytes of catalog entry", out), out

    # The facet counts cover the whole catalog: 5 MCP servers (one inside the bundle) and the single skill.
    assert "application/mcp-server-card+json (5)" in out
    assert 'text/markdown; profile="urn:air:agent-skills" (1)' in out
    assert re.search(r"^tags: finance \(4\)", out, re.MULTILINE), out


def test_use_agents_finds_lists_and_calls_an_mcp_server_and_an_a2a_agent(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, str(REPO / "examples" / "use_agents.py"), "--data-dir", str(tmp_path / "registry")],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
    )
    assert run.returncode == 0, f"stdout:\n{run.stdout}\nstderr:\n{run.stderr[-3000:]}"
    assert "found urn:air:units.example:mcp:converter (mcp at http://127.0.0.1:" in run.stdout
    assert 'call_agent convert_temperature -> {"result": 69.8}' in run.stdout
    assert "found urn:air:poems.example:agents:haiku (a2a at http://127.0.0.1:" in run.stdout
    assert re.search(r"call_agent haiku -> .*autumn leaves at dawn", run.stdout), run.stdout
