"""A newcomer's first steps, as the README writes them: the tour runs as written while the server from the
set-up holds the default data directory, and prints what the README says it prints; the command line
says nothing at INFO that a person did not ask about; an HTTP server's start line says where its web page is."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters

from tests import processes

pytestmark = pytest.mark.slow  # the model, and real servers

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def _person(home: Path) -> dict[str, str]:
    """A person's shell: their own home (so the default data directory is theirs), this install's bin first
    on PATH, the default log level."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARD_MCP_") and k not in ("XDG_DATA_HOME",)}
    return env | {"HOME": str(home), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}", "ARD_MCP_NO_SNAPSHOT": "1"}


def _tour() -> str:
    section = README[README.index("## A 30-second tour") :]
    return section[section.index("```bash\n") + len("```bash\n") : section.index("\n```", section.index("```bash"))]


def _sample() -> dict[str, Any]:
    """The README's sample answer: the first result's fields and the page's, as written."""
    block = README[README.index("```json", README.index("## A 30-second tour")) :]
    block = block[: block.index("\n```\n", 7)]
    fields = dict(re.findall(r'^\s*"(\w+)": (".*?"|\d+),?$', block, re.MULTILINE))
    return {key: json.loads(value) for key, value in fields.items()}


@pytest.mark.sqlite_only
def test_the_tour_runs_as_written_beside_a_running_server(tmp_path: Path) -> None:
    env = _person(tmp_path)

    async def tour_while_serving() -> subprocess.CompletedProcess[str]:
        server = StdioServerParameters(command=sys.executable, args=["-m", "ard_mcp", "serve"], env=env, cwd=str(tmp_path))
        async with Client(server) as client:  # the set-up's server, holding ~/.local/share/ard-mcp
            await client.call_tool("list_agents", {"pageSize": 1})
            return await anyio.to_thread.run_sync(
                lambda: subprocess.run(["bash", "-ec", _tour()], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
            )

    run = anyio.run(tour_while_serving)
    assert run.returncode == 0, f"stdout:\n{run.stdout[-2000:]}\nstderr:\n{run.stderr[-3000:]}"
    assert "added 11, updated 0, unchanged 0, rejected 0, warnings 0" in run.stdout + run.stderr
    assert "added 11, updated 0, unchanged 0, rejected 0, warnings 0" in README

    first, _ = json.JSONDecoder().raw_decode(run.stdout[run.stdout.index("{") :])
    sample = _sample()
    shown = {key: first["results"][0][key] for key in ("identifier", "displayName", "description", "score", "fit", "match", "trust")}
    assert shown == {key: sample[key] for key in shown}, "README.md's sample answer differs from what the tour's first search prints"
    assert (first["totalResults"], first["confidence"]) == (sample["totalResults"], sample["confidence"])
    assert "loaded embedding model" not in run.stderr, run.stderr  # once printed before every command's answer


def test_an_http_servers_start_line_says_where_its_web_page_is(tmp_path: Path) -> None:
    port = processes.free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "ard_mcp", "serve", "--transport", "streamable-http", "--port", str(port), "--data-dir", str(tmp_path)],
        env={**processes.quiet_env(tmp_path), "ARD_MCP_LOG_LEVEL": "INFO"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = next(line for line in process.stderr if "serving MCP at" in line)
        page = f"http://127.0.0.1:{port}/"
        assert f"serving MCP at {page}mcp, the web page at {page} " in line
        processes.wait_for(f"{page}healthz", process, "ard-mcp serve")
        answer = httpx.get(page, headers={"accept": "text/html"}, timeout=30)  # as a browser asks
        assert answer.status_code == 200 and "text/html" in answer.headers["content-type"]
    finally:
        process.terminate()
        process.communicate(timeout=30)


MINE = {  # the catalog getting-started.md describes: an updatedAt without a zone, an identifier that is no URN
    "specVersion": "1.0",
    "entries": [
        {
            "identifier": "urn:air:example.com:tools:tides",
            "displayName": "Tide Tables",
            "type": "application/mcp-server-card+json",
            "description": "High and low tides for a harbour.",
            "url": "https://example.com/tides.json",
            "updatedAt": "2026-05-01T12:00:00",
        },
        {
            "identifier": "tide-tables",
            "displayName": "Tide Tables 2",
            "type": "application/mcp-server-card+json",
            "description": "Tides.",
            "url": "https://example.com/tides2.json",
        },
    ],
}


def test_getting_started_shows_what_ingest_prints_for_a_rejection(tmp_path: Path) -> None:
    page = (REPO / "docs" / "getting-started.md").read_text(encoding="utf-8")
    block = page[page.index("```text\n", page.index("## Quick start")) + len("```text\n") :]
    lines = block[: block.index("```")].strip().splitlines()
    (tmp_path / "mine.json").write_text(json.dumps(MINE), encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "ard_mcp", "ingest", "mine.json", "--data-dir", str(tmp_path / "d")],
        cwd=tmp_path,
        env=_person(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines() == lines
    assert " INFO " not in run.stderr, run.stderr  # at the default log level a command says nothing it was not asked


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl, which the page's examples use")
def test_the_http_pages_aidip_search_example_finds_what_it_registered(tmp_path: Path) -> None:
    """docs/http-api.md's AIDIP commands as written, up to its `POST /agents/search`, against a live server."""
    page = (REPO / "docs" / "http-api.md").read_text(encoding="utf-8")
    section = page[page.index("## AIDIP") :]
    block = section[section.index("```bash\n") + len("```bash\n") : section.index("\n```", section.index("```bash"))]
    lines = block.splitlines()
    at = next(i for i, line in enumerate(lines) if "/agents/search" in line)
    commands = "\n".join(lines[: at + 2])  # the search is a line and its continuation
    with processes.serving(tmp_path, "--transport", "streamable-http") as base:
        script = commands.replace("localhost:8000", base.removeprefix("http://"))
        run = subprocess.run(["bash", "-ec", script], env={**os.environ, "TOKEN": ""}, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    answers, at = [], 0
    while at < len(run.stdout.rstrip()):  # the answers back to back, as curl prints them
        value, at = json.JSONDecoder().raw_decode(run.stdout, at)
        answers.append(value)
    answer = answers[-1]
    assert [a["id"] for a in answer] == ["agent-12345"] and answer[0]["fit"] == "high"
