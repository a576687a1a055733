"""The crawler through each surface: the `crawl_catalogs` MCP tool (with progress notifications), `POST /crawl`
(write-guarded: a crawl writes entries of any publisher) and `ard-mcp crawl` as a real process."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client

from ard_mcp.config import Config
from ard_mcp.surfaces.auth import Principal, TokenStore
from ard_mcp.surfaces.mcp.server import build_server
from ard_mcp.surfaces.rest.settings import HttpSettings
from ard_mcp.web.settings import CrawlSettings
from tests.conftest import PDF, WEATHER
from tests.http_support import running
from tests.processes import quiet_env
from tests.test_crawl import manifest
from tests.web_publisher import Publisher

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

LOCAL = CrawlSettings(allow_private_networks=True)
ADMIN, SCOPED = "admin-token-0123456789abcdef", "scoped-token-0123456789abcdef"


@pytest.fixture
def site() -> Iterator[Publisher]:
    with Publisher() as publisher:
        publisher.put("/.well-known/ai-catalog.json", manifest(WEATHER, PDF))
        yield publisher


async def test_mcp_tool_crawls_and_reports_progress(data_dir: Path, site: Publisher) -> None:
    server = build_server(Config(data_dir), warm=False, crawl=LOCAL)
    progress: list[tuple[float, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, message))

    async with Client(server) as client:
        result = await client.call_tool("crawl_catalogs", {"targets": [site.origin + "/"]}, progress_callback=on_progress)
        assert not result.is_error, result.content
        report = result.structured_content
        assert report is not None and report["added"] == 2
        assert json.loads(result.content[0].text) == report  # type: ignore[union-attr]
        assert any("ai-catalog.json" in (m or "") for _, m in progress)

        found = await client.call_tool("search_agents", {"text": "weather forecast for a city"})
        assert found.structured_content is not None
        assert found.structured_content["results"][0]["identifier"] == WEATHER["identifier"]

        refused = await client.call_tool("crawl_catalogs", {})
        assert refused.is_error and "give at least one target" in refused.content[0].text  # type: ignore[union-attr]


async def test_mcp_tool_refuses_private_targets_by_default(data_dir: Path, site: Publisher) -> None:
    async with Client(build_server(Config(data_dir), warm=False)) as client:
        result = await client.call_tool("crawl_catalogs", {"targets": [site.origin + "/"]})
        assert result.structured_content is not None
        assert result.structured_content["added"] == 0 and "loopback" in result.structured_content["errors"][0]
    assert site.requests == []


async def test_rest_crawl_needs_a_token_for_every_publisher(data_dir: Path, site: Publisher) -> None:
    tokens = TokenStore({ADMIN: "admin", SCOPED: Principal("scoped", ("example.com",))})
    settings = HttpSettings(tokens=tokens, crawl=LOCAL)
    body = {"targets": [site.origin + "/"]}
    async with running(data_dir, settings) as client:
        anonymous = await client.post("/crawl", json=body)
        scoped = await client.post("/crawl", json=body, headers={"Authorization": f"Bearer {SCOPED}"})
        bad = await client.post("/crawl", json={"targets": "not a list"}, headers={"Authorization": f"Bearer {ADMIN}"})
        done = await client.post("/crawl", json=body, headers={"Authorization": f"Bearer {ADMIN}"})
        listed = await client.get("/agents", params={"filter": "metadata.crawlVia = 'well-known'"})

    assert anonymous.status_code == 401
    assert scoped.status_code == 403 and "every publisher" in scoped.text
    assert bad.status_code == 400 and "targets" in bad.text
    assert done.status_code == 200, done.text
    assert done.json()["added"] == 2 and done.json()["sources"][0]["status"] == "ingested"
    assert {e["identifier"] for e in listed.json()["items"]} == {WEATHER["identifier"], PDF["identifier"]}


def test_cli_crawl_then_refresh(tmp_path: Path, site: Publisher) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "ard_mcp", "crawl", "--data-dir", str(tmp_path / "data"), "--json", *args]
        return subprocess.run(command, env=quiet_env(tmp_path / "data"), capture_output=True, text=True, timeout=300)

    refused = cli(site.origin + "/")
    assert refused.returncode == 1 and "--allow-private-networks" in json.loads(refused.stdout)["errors"][0]

    first = cli("--allow-private-networks", site.origin + "/")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["added"] == 2

    again = cli("--allow-private-networks", "--refresh", "--force")
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert [s["status"] for s in report["sources"]] == ["not-modified"] and report["added"] == report["updated"] == 0
