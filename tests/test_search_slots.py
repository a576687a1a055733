"""Searches run at most `search_slot_count()` at once in a process, over REST and MCP alike (issue #57: with one
thread per request, 16 concurrent searches on 2 cores took the GIL from each other; bench/throughput.py has the
figures). Real app, real MCP client and real registry; only `Registry.search` is wrapped, to count how many run
at once and to make each last long enough that they would overlap if nothing bounded them."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from ard_mcp.config import Config
from ard_mcp.registry import Registry
from ard_mcp.surfaces import services as services_module
from ard_mcp.surfaces.mcp.server import build_server
from ard_mcp.surfaces.services import Services, search_slot_count
from tests.conftest import SAMPLE
from tests.http_support import running

pytestmark = pytest.mark.anyio
SLOTS = 2
SEARCH_S = 0.05


class Overlap:
    """The most `Registry.search` calls seen running at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.now = self.most = self.calls = 0

    def enter(self) -> None:
        with self._lock:
            self.now += 1
            self.calls += 1
            self.most = max(self.most, self.now)

    def leave(self) -> None:
        with self._lock:
            self.now -= 1


@pytest.fixture
def overlap(monkeypatch: pytest.MonkeyPatch) -> Iterator[Overlap]:
    seen = Overlap()
    search = Registry.search

    def counted(self: Registry, *args: Any, **kwargs: Any) -> Any:
        seen.enter()
        try:
            time.sleep(SEARCH_S)
            return search(self, *args, **kwargs)
        finally:
            seen.leave()

    monkeypatch.setattr(Registry, "search", counted)
    monkeypatch.setattr(services_module, "search_slot_count", lambda: SLOTS)
    yield seen


def test_a_process_searches_twice_its_usable_cores_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    assert search_slot_count() == 2 * len(os.sched_getaffinity(0))
    monkeypatch.delattr(os, "sched_getaffinity")  # as on macOS
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    assert search_slot_count() == 6
    monkeypatch.setattr(os, "cpu_count", lambda: None)  # "cannot be determined"
    assert search_slot_count() == 2


async def test_rest_searches_beyond_the_slots_wait_for_one(data_dir: Path, overlap: Overlap) -> None:
    async with running(data_dir) as client:
        for document in SAMPLE:
            assert (await client.post("/agents", json=document)).status_code == 201
        statuses: list[int] = []

        async def search(text: str) -> None:
            response = await client.post("/search", json={"query": {"text": text}, "federation": "none"})
            statuses.append(response.status_code)

        async with anyio.create_task_group() as group:
            for i in range(4 * SLOTS):
                group.start_soon(search, f"weather forecast for a city {i}")
    assert statuses == [200] * (4 * SLOTS)
    assert overlap.calls == 4 * SLOTS
    assert overlap.most == SLOTS  # bounded, and still in parallel


async def test_mcp_searches_share_the_slots(data_dir: Path, overlap: Overlap) -> None:
    server = build_server(Config(data_dir), warm=False, services=Services("test"))
    async with Client(server) as client:
        for document in SAMPLE:
            await client.call_tool("register_agent", {"entry": document})
        answers: list[bool] = []

        async def search(text: str) -> None:
            result = await client.call_tool("search_agents", {"text": text, "federation": "none"})
            answers.append(not result.is_error)

        async with anyio.create_task_group() as group:
            for i in range(3 * SLOTS):
                group.start_soon(search, f"translate a document {i}")
    assert answers == [True] * (3 * SLOTS)
    assert overlap.most == SLOTS
