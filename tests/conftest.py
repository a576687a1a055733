"""Shared fixtures: a real registry (embedded Chroma + the bundled ONNX model) in a temp dir, once on each
store: SQLite, and PostgreSQL (a real server the session starts, one fresh database per test) where the
machine has PostgreSQL; tests that use `registry` or `loaded` run on both."""

from __future__ import annotations

import copy
import dataclasses
import ipaddress
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpcore
import pytest

from ard_mcp.config import Config
from ard_mcp.formats.messages import SearchResult
from ard_mcp.registry import Registry
from ard_mcp.search.query import SearchQuery
from tests import postgres_server, processes
from tests.dns_responder import DnsResponder

REPO = Path(__file__).resolve().parents[1]
# Every `ard-mcp serve` a test starts over stdio on a new data directory starts it empty, as the tests expect,
# not with the bundled snapshot of public MCP servers a person's first start gets; tests/test_snapshot.py
# starts its servers without this.
os.environ.setdefault("ARD_MCP_NO_SNAPSHOT", "1")
SPECS = REPO / "tests" / "specs"  # vendored, pinned: see specs/README.md
ARD_SPEC = SPECS / "ard-spec"  # ARD v0.9
SHARED_DATA = Path(os.environ.get("ARD_MCP_SHARED_DATA") or REPO.parent / "shared" / "data")
"""The benchmark catalogs (LiveMCPBench, MetaTool and the MCP registry seed as ai-catalog manifests, each
folder's SOURCE.txt says where from). They are not in the repository, so a plain clone lacks them and the
two tests that read them skip with `NO_SHARED_DATA` as the reason."""
NO_SHARED_DATA = (
    f"needs the benchmark catalogs, which are not part of the repository: {SHARED_DATA}/<livemcpbench, metatool, "
    "mcp-registry-seed>/catalog.json (the workspace's shared/data folder, beside the checkout as ../shared/data); "
    "put a copy there or set ARD_MCP_SHARED_DATA=DIR to run this test"
)
ARD_SCHEMAS = ARD_SPEC / "spec" / "schemas"

WEATHER: dict[str, Any] = {
    "identifier": "urn:air:example.com:weather:forecast",
    "displayName": "Weather Forecast Server",
    "type": "application/mcp-server-card+json",
    "description": "Current conditions and multi-day forecasts for any city.",
    "tags": ["weather", "forecast"],
    "capabilities": ["get_forecast", "get_current_conditions"],
    "updatedAt": "2026-05-01T10:00:00Z",
    "metadata": {"region": "global", "free": True},
    "data": {
        "name": "weather",
        "tools": [
            {"name": "get_forecast", "description": "Daily temperature, rain probability and wind for the next 7 days in a city."},
            {"name": "get_current_conditions", "description": "The temperature and sky conditions right now at a location."},
        ],
    },
}

INVOICES: dict[str, Any] = {
    "identifier": "urn:air:acme-finance.com:billing:invoice-agent",
    "displayName": "Invoice Agent",
    "type": "application/a2a-agent-card+json",
    "description": "Creates, sends and reconciles customer invoices.",
    "tags": ["finance", "invoicing"],
    "url": "https://acme-finance.com/agents/invoice.json",
    "representativeQueries": ["bill my client for last month's consulting hours", "which invoices are overdue"],
    "trustManifest": {
        "identity": "spiffe://acme-finance.com/billing",
        "identityType": "spiffe",
        "attestations": [{"type": "SOC2-Type2", "uri": "https://acme-finance.com/soc2.pdf", "mediaType": "application/pdf"}],
    },
}

PDF: dict[str, Any] = {
    "identifier": "urn:air:docs.example.org:convert:pdf-forge",
    "displayName": "PDF Forge",
    "type": "application/mcp-server-card+json",
    "description": "Document conversion toolkit.",
    "tags": ["documents"],
    "data": {
        "tools": [
            {"name": "markdownToPdf", "description": "Render a Markdown file as a PDF document."},
            {"name": "merge_pdfs", "description": "Combine several PDF files into one."},
        ]
    },
}

TRANSLATE: dict[str, Any] = {
    "identifier": "urn:air:lingua.example.net:translate",
    "displayName": "Lingua Translator",
    "type": "application/a2a-agent-card+json",
    "description": "Translates text and documents between 40 languages.",
    "tags": ["language"],
    "data": {
        "name": "Lingua",
        "skills": [
            {
                "id": "translate",
                "name": "translate_text",
                "description": "Translate a passage into another language.",
                "examples": ["say this in Japanese"],
            }
        ],
    },
}

SKILL: dict[str, Any] = {
    "identifier": "urn:air:github.com:alice-dev:pptx-creator",
    "displayName": "pptx-creator",
    "type": "application/ai-skill",
    "url": "https://github.com/alice-dev/pptx-creator",
    "description": "Create PowerPoint slide decks that follow brand guidelines.",
    "tags": ["documents", "presentations"],
}

SAMPLE = [WEATHER, INVOICES, PDF, TRANSLATE, SKILL]


def entry(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A deep copy of a sample entry with some fields changed (None removes a field)."""
    out = copy.deepcopy(base)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def results(registry: Registry, text: str) -> list[SearchResult]:
    """The first page of ARD results for a task, as `search_agents` returns them."""
    return registry.search(SearchQuery.of(text)).response().results


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--store",
        choices=("sqlite", "postgres"),
        default="sqlite",
        help="postgres: run the suite again with every registry the tests open (in-process, or in a server or CLI "
        "process) kept in PostgreSQL, a fresh database per data directory; tests already run on both stores and "
        "SQLite-only ones are left out",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--store") != "postgres":
        return
    left_out = ("postgres", "sqlite_only")
    kept = [item for item in items if not any(item.get_closest_marker(m) for m in left_out)]
    config.hook.pytest_deselected(items=[item for item in items if item not in kept])
    items[:] = kept


@pytest.fixture(scope="session", autouse=True)
def every_registry_on_the_chosen_store(request: pytest.FixtureRequest) -> Iterator[None]:
    """With `--store postgres`, a registry opened on a data directory keeps its catalog in a PostgreSQL
    database of that directory's own (the same one when the directory is opened again), in this process and
    in the server and CLI processes the tests start (`processes.quiet_env`)."""
    if request.config.getoption("--store") != "postgres":
        yield
        return
    import ard_mcp.registry
    from ard_mcp.index import store

    server: postgres_server.PostgresServer = request.getfixturevalue("postgres")
    databases: dict[Path, str] = {}
    opened = store.open_store

    def database_of(data_dir: Path) -> str:
        key = data_dir.resolve()
        if key not in databases:
            databases[key] = server.new_database()
        return databases[key]

    def open_store(config: Config) -> store.Store:
        if config.store_url is None:
            config = dataclasses.replace(config, store_url=database_of(config.data_dir))
        return opened(config)

    patch = pytest.MonkeyPatch()
    patch.setattr(ard_mcp.registry, "open_store", open_store)
    patch.setattr(processes, "database_of", database_of)
    yield
    patch.undo()


@pytest.fixture(scope="session", autouse=True)
def offline_dns() -> Iterator[str]:
    """A DNS server on loopback that knows no name, for every crawl a test starts (server processes too, through
    `ARD_MCP_DNS_SERVER`): a fuzzed target never sends a query off this machine, and fails in a millisecond
    where a dead address would cost the resolver's whole timeout per lookup."""
    with DnsResponder() as dns:
        address = f"127.0.0.1:{dns.port}"
        before = os.environ.get("ARD_MCP_DNS_SERVER")
        os.environ["ARD_MCP_DNS_SERVER"] = address
        try:
            yield address
        finally:
            if before is None:
                os.environ.pop("ARD_MCP_DNS_SERVER", None)
            else:
                os.environ["ARD_MCP_DNS_SERVER"] = before


def keep_connections_on_loopback(patch: pytest.MonkeyPatch) -> list[str]:
    """Lets httpx connect to loopback only (the tests' own servers; the guard's connections and a plain
    client's both go through httpcore's anyio backend): any other connection fails as a refused one would,
    instead of leaving the machine. The list holds the other hosts asked for, so a test can say it stayed
    empty: a test of refused addresses that regresses, or a fuzzed crawl target that spells a public address
    as a number (`16843009`), reaches nothing."""
    refused: list[str] = []
    connect = httpcore.AnyIOBackend.connect_tcp

    async def connect_tcp(self: httpcore.AnyIOBackend, host: str, port: int, *args: Any, **kwargs: Any) -> httpcore.AsyncNetworkStream:
        if host == "localhost" or _is_loopback(host):
            return await connect(self, host, port, *args, **kwargs)
        refused.append(host)
        raise httpcore.ConnectError(f"{host}:{port}: the tests connect to loopback only")

    patch.setattr(httpcore.AnyIOBackend, "connect_tcp", connect_tcp)
    return refused


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    return keep_connections_on_loopback(monkeypatch)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture(scope="session")
def postgres() -> Iterator[postgres_server.PostgresServer]:
    if not postgres_server.AVAILABLE:
        pytest.skip("no PostgreSQL binaries on this machine")
    server = postgres_server.PostgresServer()
    yield server
    server.stop()


STORES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def _store_url(request: pytest.FixtureRequest) -> str | None:
    if request.param == "sqlite":
        return None
    server: postgres_server.PostgresServer = request.getfixturevalue("postgres")
    return server.new_database()


@pytest.fixture(params=STORES)
def store_url(request: pytest.FixtureRequest) -> str | None:
    """None for the embedded SQLite store, or the URL of a fresh PostgreSQL database."""
    return _store_url(request)


@pytest.fixture(scope="module", params=STORES)
def module_store_url(request: pytest.FixtureRequest) -> str | None:
    """`store_url` for a module's shared registry."""
    return _store_url(request)


@pytest.fixture
def registry(data_dir: Path, store_url: str | None) -> Iterator[Registry]:
    reg = Registry(Config(data_dir, store_url=store_url))
    yield reg
    reg.close()


@pytest.fixture
def loaded(registry: Registry) -> Registry:
    report = registry.indexer.register_many((f"entries[{i}]", e) for i, e in enumerate(SAMPLE))
    assert report.added == len(SAMPLE) and not report.rejected
    return registry
