"""Cross-site writes (issue #30.4): a web page the user visits must not write to, or crawl from, the registry on
their machine. A browser sends a POST without a CORS preflight when its body is a form, plain text or has no
Content-Type at all, so a REST write needs a JSON Content-Type. Reads are answered as before."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ard_mcp.surfaces.rest.settings import HttpSettings
from ard_mcp.web.settings import CrawlSettings
from tests.conftest import PDF, WEATHER
from tests.http_support import running
from tests.test_crawl import manifest
from tests.web_publisher import Publisher

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

LOCAL = CrawlSettings(allow_private_networks=True)


@pytest.fixture
def site() -> Iterator[Publisher]:
    with Publisher() as publisher:
        publisher.put("/.well-known/ai-catalog.json", manifest(WEATHER, PDF))
        yield publisher


async def test_writes_without_a_json_content_type_get_415(data_dir: Path, site: Publisher) -> None:
    entry, crawl = json.dumps(WEATHER), json.dumps({"targets": [site.origin + "/"]})
    async with running(data_dir, HttpSettings(crawl=LOCAL)) as client:
        registered = await client.post("/agents", content=entry)  # no Content-Type: what fetch() sends for a Blob
        crawled = await client.post("/crawl", content=crawl)
        updated = await client.put(f"/agents/{WEATHER['identifier']}", content=entry)
        listed = (await client.get("/agents")).json()["items"]
        search = await client.post("/search", content=json.dumps({"query": {"text": "weather"}}))
        charset = await client.post("/agents", content=entry, headers={"content-type": "application/json; charset=utf-8"})
        suffixed = await client.post("/agents", content=json.dumps(PDF), headers={"content-type": "application/ai-catalog+json"})

    assert registered.status_code == 415 and registered.json()["error"]["code"] == "UnsupportedMediaType"
    assert "Content-Type: application/json (got no Content-Type)" in registered.json()["error"]["message"]
    assert crawled.status_code == 415 and crawled.json()["errorCode"] == "UNSUPPORTED_MEDIA_TYPE"
    assert updated.status_code == 415
    assert listed == [] and site.requests == []  # nothing stored, nothing fetched
    assert search.status_code == 200  # a read is no write: answered as before
    assert charset.status_code == 201 and suffixed.status_code == 201
