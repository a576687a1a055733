"""The ARD v0.9 conformance tool (vendored, `tests/specs/ard-spec/conformance`) against what we ship and
serve: `registry` mode against a live `ard-mcp serve`, `manifest` mode against `examples/ai-catalog.json`
and the served `/.well-known/ai-catalog.json` and `/.well-known/ard.json`. The spec's own example catalogs
ingest with no rejection and are found by a query a user of them would type."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import ARD_SPEC, REPO, WEATHER, entry
from tests.processes import quiet_env, serving

pytestmark = pytest.mark.slow
TOOL = ARD_SPEC / "conformance" / "bin" / "conformance-test"
EXAMPLES = sorted((ARD_SPEC / "conformance" / "examples").glob("*/*.json"))
LENIENT = entry(  # what real catalogs send: served normalised, so still conformant
    WEATHER,
    identifier="urn:ai:Example.com:weather~v2",
    updatedAt="2026-05-01T12:00:00",
    metadata={"limits": {"daily": 1000}},
    representativeQueries=["rain tomorrow?"],
    trustManifest={
        "identity": "did:web:example.com",
        "identityType": "x509",
        "attestations": [{"type": "SOC2", "uri": "https://example.com/a.pdf"}],
    },
)


V05_MCP = entry(WEATHER, identifier="urn:air:example.com:server:weather-v05", type="application/mcp-server+json")


def conformance(mode: str, target: str) -> str:
    """Run the tool; its output, after checking it found no error (its warnings are allowed, and shown)."""
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    done = subprocess.run([sys.executable, str(TOOL), mode, target], capture_output=True, text=True, timeout=120, env=env)
    output = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)
    assert done.returncode == 0 and "Validated with 0 critical specification errors" in output, output
    return output


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A live registry holding the spec's example catalogs (ingested with the CLI) and a lenient entry."""
    data_dir = tmp_path_factory.mktemp("conformance") / "data"
    ingested = subprocess.run(
        [sys.executable, "-m", "ard_mcp", "ingest", *map(str, EXAMPLES), "--json", "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        timeout=300,
        env=quiet_env(data_dir),
    )
    assert ingested.returncode == 0, ingested.stderr
    report = json.loads(ingested.stdout)
    assert report["rejected"] == [] and report["added"] >= len(EXAMPLES), report
    with serving(data_dir, "--transport", "streamable-http") as base:
        assert httpx.post(f"{base}/agents", json=LENIENT, timeout=60).status_code == 201
        assert httpx.post(f"{base}/agents", json=V05_MCP, timeout=60).status_code == 201
        yield base


def test_registry_mode_passes_against_a_live_server(served: str) -> None:
    output = conformance("registry", served)
    assert "POST /search" in output and "POST /explore" in output


@pytest.mark.parametrize("path", ["/.well-known/ai-catalog.json", "/.well-known/ard.json"])
def test_manifest_mode_passes_on_what_the_registry_serves(served: str, path: str) -> None:
    output = conformance("manifest", served + path)
    entries = {e["identifier"]: e for e in httpx.get(served + path, timeout=60).json()["entries"]}
    assert "urn:air:example.com:weather-v2" in entries  # the lenient entry, in the spelling the schema accepts
    # an entry registered with v0.5's MCP type is served with v0.9's (the tool warned 526 times on a real catalog),
    # and the registry's own entry has its representative queries
    assert entries[V05_MCP["identifier"]]["type"] == "application/mcp-server-card+json"
    warnings = [line for line in output.splitlines() if line.lstrip().startswith("⚠")]
    assert not [w for w in warnings if "mcp-server+json" in w or "[ard-mcp agent registry]" in w], warnings


def test_manifest_mode_passes_on_the_example_catalog() -> None:
    conformance("manifest", str(REPO / "examples" / "ai-catalog.json"))


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        ("is it windy in Chicago at the moment", "urn:air:acme.com:server:weather"),
        ("which company manufactures a medicine, looked up by its national drug code", "urn:air:fda.gov:api:drug-ndc"),
        ("my kitchen sink is clogged, who can come and fix it in Minneapolis", "urn:air:bobs-plumbing.example:"),
        ("how much rain fell in Boston each month last year", "urn:air:noaa.gov:api:climate-data-online"),
    ],
)
def test_the_spec_example_catalogs_are_found_by_what_users_ask(served: str, task: str, expected: str) -> None:
    results = httpx.post(f"{served}/search", json={"query": {"text": task}, "pageSize": 3}, timeout=60).json()["results"]
    assert any(r["identifier"].startswith(expected) for r in results), [r["identifier"] for r in results]
