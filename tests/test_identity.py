"""The registry's own identity and the `source` of its results: never `localhost` as a publisher (naming
guide §2), a reachable URL over HTTP, a valid local URI over stdio."""

from __future__ import annotations

from pathlib import Path

import pytest

from ard_mcp.config import Config
from ard_mcp.formats.identifiers import check_identifier
from ard_mcp.surfaces.rest.settings import HttpSettings
from tests.conftest import WEATHER
from tests.http_support import running

LOCAL = "urn:air:ard-mcp.localhost:registry:ard-mcp"


@pytest.mark.parametrize(
    ("source_url", "identifier"),
    [
        (None, LOCAL),
        ("https://Registry.Example.org/api/", "urn:air:registry.example.org:registry:ard-mcp"),
        ("http://127.0.0.1:8000/", LOCAL),
        ("http://[::1]:8000/", LOCAL),
        ("http://localhost:8000/", LOCAL),
        ("http://intranet:8000/", LOCAL),  # a bare host name is not a domain a publisher could own
    ],
)
def test_identity_follows_the_public_url(tmp_path: Path, source_url: str | None, identifier: str) -> None:
    config = Config(tmp_path, source_url=source_url)
    assert config.identifier == identifier
    assert check_identifier(config.identifier) == identifier
    assert config.source == (source_url or identifier)


@pytest.mark.parametrize(
    ("host", "url"),
    [("127.0.0.1", "http://127.0.0.1:8123/"), ("::1", "http://[::1]:8123/"), ("reg.example.org", "http://reg.example.org:8123/")],
)
def test_http_names_the_registry_by_its_bound_address(tmp_path: Path, host: str, url: str) -> None:
    settings = HttpSettings(host=host, port=8123)
    assert settings.named(Config(tmp_path)).source == url
    assert settings.named(Config(tmp_path, source_url="https://pub.example.org/")).source == "https://pub.example.org/"


def test_a_wildcard_bind_is_named_by_this_machine(tmp_path: Path) -> None:
    source = HttpSettings(host="0.0.0.0", port=9000).named(Config(tmp_path)).source
    assert source.startswith("http://") and source.endswith(":9000/") and "0.0.0.0" not in source


@pytest.mark.slow
@pytest.mark.anyio
async def test_served_identity_and_source_without_a_public_url(tmp_path: Path) -> None:
    async with running(tmp_path / "data", HttpSettings(port=8765)) as client:
        assert (await client.post("/agents", json=WEATHER)).status_code == 201
        own = (await client.get("/.well-known/ard.json")).json()["entries"][0]
        assert own["identifier"] == LOCAL and own["url"] == "http://127.0.0.1:8765/"
        results = (await client.post("/search", json={"query": {"text": "weather forecast"}})).json()["results"]
        assert results and {r["source"] for r in results} == {"http://127.0.0.1:8765/"}
