"""`/readyz` apart from `/healthz`: readiness follows the store and the vector index, liveness only the process;
and a search while the Chroma server is down is answered 503, as one while the store is down is.

The outages are real: a PostgreSQL server of the test's own is stopped (fast shutdown, as a restart or a
failover does) and started again, then the Chroma server, under one running `ard-mcp serve`."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from ard_mcp.surfaces.rest.readiness import CHECK_SECONDS
from tests import postgres_server
from tests.deployment_support import ChromaServer, until_status
from tests.http_support import running
from tests.processes import serving

pytestmark = [pytest.mark.slow]


@pytest.mark.anyio
async def test_readyz_answers_and_is_documented(tmp_path: Path) -> None:
    async with running(tmp_path / "data") as client:
        deadline = time.monotonic() + 60  # the first probe opens the vector index and loads the model (warm=False)
        while (ready := await client.get("/readyz")).status_code != 200 and time.monotonic() < deadline:
            assert ready.status_code == 503 and "still opening" in ready.json()["message"], ready.text
        assert ready.status_code == 200, ready.text
        body = ready.json()
        assert body["status"] == "ready" and set(body["checks"]) == {"store", "vectorIndex"}
        assert (await client.get("/healthz")).json()["agents"] == 0
        openapi = (await client.get("/openapi.json")).json()
    responses = openapi["paths"]["/readyz"]["get"]["responses"]
    assert responses["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/Ready")
    assert responses["503"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorBody")


def _probe(url: str) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    answer = httpx.get(url, timeout=30)
    return answer, time.monotonic() - started


@pytest.mark.postgres  # a server of its own, so it runs once, not again in the --store postgres pass
@pytest.mark.skipif(not postgres_server.AVAILABLE, reason="no PostgreSQL binaries on this machine")
def test_readiness_follows_postgres_and_chroma_outages(tmp_path: Path) -> None:
    quick = CHECK_SECONDS + 1.5  # a probe is answered within its checks' deadline, outage or not
    database = postgres_server.PostgresServer()
    try:
        with (
            ChromaServer(tmp_path / "chroma") as chroma,
            serving(tmp_path / "data", "--transport", "streamable-http", "--store-url", database.url(), "--chroma-url", chroma.url) as base,
        ):
            ready = until_status(f"{base}/readyz", 200, within=60)  # warm-up: the model and the index load in the background
            assert ready.status_code == 200, ready.text
            assert set(ready.json()["checks"]) == {"store", "vectorIndex"}

            database.halt()
            down, took = _probe(f"{base}/readyz")
            assert down.status_code == 503 and took < quick, (down.status_code, took, down.text)
            error = down.json()
            assert error["errorCode"] == "UNAVAILABLE" and error["error"]["code"] == "UNAVAILABLE"
            assert "the store (PostgreSQL)" in error["message"] and "vector index" not in error["message"], error
            alive, took = _probe(f"{base}/healthz")  # liveness does not wait for the store
            assert alive.status_code == 200 and "agents" not in alive.json() and took < quick, (alive.text, took)

            database.start()
            back = until_status(f"{base}/readyz", 200, within=30)
            assert back.status_code == 200, back.text
            assert httpx.get(f"{base}/healthz", timeout=30).json()["agents"] == 0

            chroma.stop()
            down, took = _probe(f"{base}/readyz")
            assert down.status_code == 503 and took < quick, (down.status_code, took, down.text)
            message = down.json()["message"]
            assert "the vector index (Chroma server)" in message and chroma.url not in message and "store" not in message, message
            assert httpx.get(f"{base}/healthz", timeout=30).status_code == 200
            search = httpx.post(f"{base}/search", json={"query": {"text": "rain tomorrow"}}, timeout=30)  # was a 500 internal error
            assert search.status_code == 503 and search.json()["errorCode"] == "UNAVAILABLE", search.text

            chroma.start()
            back = until_status(f"{base}/readyz", 200, within=30)
            assert back.status_code == 200, back.text
    finally:
        database.stop()
