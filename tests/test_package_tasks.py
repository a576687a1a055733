"""Everyday tasks with real package servers, from a host attached only to ard-mcp over stdio (issue #54): the person
gives a folder, or a file, when asked, and the server works on it in its sandbox; what it is given it can read,
and nothing beside it. Real `@modelcontextprotocol/server-filesystem` (npm) and `mcp-server-sqlite` (PyPI),
installed at test time, a real `ard-mcp serve`, real bubblewrap."""

from __future__ import annotations

import json
import sqlite3
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.session import ClientRequestContext

from ard_mcp.formats import mcp_server
from ard_mcp.index import snapshot
from ard_mcp.packages.grants import needed
from ard_mcp.packages.sandbox import SandboxUnavailable, check_available
from ard_mcp.packages.specs import PackageSpec, package_of
from tests.processes import quiet_env

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


def _server(name: str, description: str, package: dict[str, Any]) -> dict[str, Any]:
    """The entry a crawl of the official MCP registry makes of this server.json."""
    return mcp_server.to_entry({"name": name, "description": description, "version": package["version"], "packages": [package]})


FILESYSTEM = _server(
    "io.modelcontextprotocol/server-filesystem",
    "Reads, writes, lists and searches the files of the folders it is given.",
    {
        "registryType": "npm",
        "identifier": "@modelcontextprotocol/server-filesystem",
        "version": "2026.8.31",
        "transport": {"type": "stdio"},
        "packageArguments": [
            {"type": "positional", "valueHint": "allowed_directory", "description": "A directory it may use.", "isRequired": True}
        ],
    },
)
SQLITE = _server(
    "io.modelcontextprotocol/server-sqlite",
    "Runs SQL queries on a SQLite database file and describes its tables.",
    {
        "registryType": "pypi",
        "identifier": "mcp-server-sqlite",
        "version": "2025.4.25",
        "transport": {"type": "stdio"},
        "packageArguments": [
            {"type": "named", "name": "--db-path", "description": "The SQLite database file.", "isRequired": True, "format": "filepath"}
        ],
    },
)


def _sandbox_or_skip() -> None:
    try:
        check_available()
    except SandboxUnavailable as exc:
        pytest.skip(f"no sandbox here: {exc}")


def _shop(folder: Path) -> Path:
    """A person's SQLite file: a table of fruit and their prices."""
    database = folder / "shop.sqlite"
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE fruit (name TEXT, price REAL)")
        db.executemany("INSERT INTO fruit VALUES (?, ?)", [("apple", 0.5), ("pear", 0.75)])
    return database


def _text(result: Any) -> str:
    return "".join(block.text for block in result.content if isinstance(block, mcp_types.TextContent))


def _result_text(result: Any) -> str:
    assert not result.is_error, _text(result)
    found = json.loads(_text(result))["result"]
    return "".join(block.get("text", "") for block in found) if isinstance(found, list) else json.dumps(found)


async def test_a_folder_and_a_file_the_person_gives_are_what_the_servers_work_on(tmp_path: Path) -> None:
    _sandbox_or_skip()
    data, project, databases, other = tmp_path / "data", tmp_path / "project", tmp_path / "databases", tmp_path / "other"
    for folder in (project, databases, other):
        folder.mkdir()
    (project / "notes.md").write_text("the plan\n")
    (project / "src").mkdir()
    (other / "private.txt").write_text("not given\n")
    database = _shop(databases)
    for path in (project, project / "src", databases, other):
        path.chmod(0o755)  # readable by the sandbox's uid, as a person's own folders are to themselves
    for path in (project / "notes.md", database, other / "private.txt"):
        path.chmod(0o644)
    asked: list[str] = []

    async def person(context: ClientRequestContext, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult:
        asked.append(params.message)
        given = str(project) if "server-filesystem" in params.message else str(database)
        return mcp_types.ElicitResult(action="accept", content={"network": False, "path": given, "writable": False})

    server = StdioServerParameters(command=sys.executable, args=["-m", "ard_mcp", "serve", "--data-dir", str(data)], env=quiet_env(data))
    with anyio.fail_after(300):
        async with Client(server, elicitation_callback=person) as client:
            for entry in (FILESYSTEM, SQLITE):
                assert not (await client.call_tool("register_agent", {"entry": entry})).is_error

            async def call(entry: dict[str, Any], tool: str, arguments: dict[str, Any]) -> Any:
                return await client.call_tool("call_agent", {"identifier": entry["identifier"], "tool": tool, "arguments": arguments})

            listed = _result_text(await call(FILESYSTEM, "list_directory", {"path": str(project)}))
            outside = await call(FILESYSTEM, "read_text_file", {"path": str(other / "private.txt")})
            rows = _result_text(await call(SQLITE, "read_query", {"query": "SELECT name FROM fruit ORDER BY price"}))
            again = _result_text(await call(FILESYSTEM, "list_directory", {"path": str(project)}))
    assert "[FILE] notes.md" in listed and "[DIR] src" in listed and again == listed
    assert "not given" not in _text(outside)  # a folder it was not given is not there to read
    assert rows.index("apple") < rows.index("pear")
    assert len(asked) == 2 and all("of yours: type its full path below" in question for question in asked)
    approved = json.loads((data / "packages" / "approved.json").read_text())["approved"]
    assert sorted((a["grant"]["kind"], a["grant"]["path"]) for a in approved) == [("file", str(database)), ("folder", str(project))]


def _bundled(package: str) -> dict[str, Any]:
    """The bundled snapshot's entry whose packages include `package` (a catalog listed the server; its package
    was found when the snapshot was built)."""
    found = [
        e for e in snapshot.read().entries if package in {p.get("identifier") or p.get("name") for p in e["data"].get("packages") or []}
    ]
    assert len(found) == 1, [e["identifier"] for e in found]
    return found[0]


@contextmanager
def _web_page(folder: Path) -> Iterator[str]:
    """A page served on loopback, as a person's "fetch this page" names one."""
    (folder / "article.html").write_text(
        "<html><head><title>Sourdough</title></head><body><article><h1>Feeding a starter</h1>"
        "<p>Feed it <b>equal weights</b> of flour and water every day.</p></article></body></html>"
    )
    handler = partial(SimpleHTTPRequestHandler, directory=str(folder))
    with ThreadingHTTPServer(("127.0.0.1", 0), handler) as web:
        thread = threading.Thread(target=web.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{web.server_address[1]}/article.html"
        finally:
            web.shutdown()


async def test_five_everyday_tasks_from_a_fresh_install(tmp_path: Path) -> None:
    """Issue #54's five tasks, from a host attached only to ard-mcp over stdio on a fresh install (the bundled
    snapshot, nothing else), a person who answers each question: the time in a city, the files of a folder they
    give, something remembered and recalled after ard-mcp restarts, a page fetched as markdown (network ticked),
    and a query on their SQLite file (the file they give). Each server is the snapshot's entry found by a search;
    SQLite's `--db-path` is the image command Docker's catalog gives, carried to its PyPI package when the
    snapshot was built, so the person is asked for their file."""
    _sandbox_or_skip()
    data, project, web, databases = tmp_path / "data", tmp_path / "project", tmp_path / "web", tmp_path / "databases"
    for folder in (project, web, databases):
        folder.mkdir()
        folder.chmod(0o755)  # readable by the sandbox's uid, as a person's own folders are to themselves
    (project / "todo.txt").write_text("water the plants\n")
    (project / "todo.txt").chmod(0o644)
    database = _shop(databases)
    database.chmod(0o644)
    servers = {
        "time": _bundled("mcp-server-time"),
        "files": _bundled("@modelcontextprotocol/server-filesystem"),
        "memory": _bundled("@modelcontextprotocol/server-memory"),
        "fetch": _bundled("mcp-server-fetch"),
        "sqlite": _bundled("mcp-server-sqlite"),
    }
    spec = package_of(servers["files"])
    assert isinstance(spec, PackageSpec) and needed(spec.package_arguments) is None  # no argument: roots are its folders
    asked: list[str] = []

    async def person(context: ClientRequestContext, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult:
        asked.append(params.message)
        message = params.message
        given = str(project) if "server-filesystem" in message else str(database) if "mcp-server-sqlite" in message else ""
        return mcp_types.ElicitResult(action="accept", content={"network": "mcp-server-fetch" in message, "path": given, "writable": False})

    fresh = {k: v for k, v in quiet_env().items() if k not in ("ARD_MCP_NO_SNAPSHOT", "ARD_MCP_STORE_URL")}  # a fresh install's defaults
    server = StdioServerParameters(command=sys.executable, args=["-m", "ard_mcp", "serve", "--data-dir", str(data)], env=fresh)
    sister = {"entities": [{"name": "Ana", "entityType": "person", "observations": ["my sister; her birthday is May 3"]}]}
    found: dict[str, list[str]] = {}
    with _web_page(web) as page, anyio.fail_after(600):
        async with Client(server, elicitation_callback=person) as client:

            async def call(entry: dict[str, Any], tool: str, arguments: dict[str, Any]) -> Any:
                return await client.call_tool("call_agent", {"identifier": entry["identifier"], "tool": tool, "arguments": arguments})

            for task, words in (
                ("time", "current time in a timezone"),
                ("files", "read and list files in a folder"),
                ("memory", "knowledge graph memory"),
                ("fetch", "fetch a web page"),
                ("sqlite", "run SQL queries on a SQLite database"),
            ):
                answer = (await client.call_tool("search_agents", {"text": words, "pageSize": 10})).structured_content
                found[task] = [r["identifier"] for r in (answer or {}).get("results", [])]
            tokyo = _result_text(await call(servers["time"], "get_current_time", {"timezone": "Asia/Tokyo"}))
            listed = _result_text(await call(servers["files"], "list_directory", {"path": str(project)}))
            remembered = _result_text(await call(servers["memory"], "create_entities", sister))
            fetched = _result_text(await call(servers["fetch"], "fetch", {"url": page}))
            rows = _result_text(await call(servers["sqlite"], "read_query", {"query": "SELECT name FROM fruit ORDER BY price"}))
        async with Client(server, elicitation_callback=person) as client:  # ard-mcp started again
            recalled = _result_text(
                await client.call_tool("call_agent", {"identifier": servers["memory"]["identifier"], "tool": "read_graph"})
            )
    assert {task: servers[task]["identifier"] in found[task] for task in found} == dict.fromkeys(found, True), found
    assert "Asia/Tokyo" in tokyo
    assert "[FILE] todo.txt" in listed
    assert "Ana" in remembered and "her birthday is May 3" in recalled
    assert "# Feeding a starter" in fetched and "**equal weights**" in fetched, fetched  # markdown, not the page's HTML
    assert rows.index("apple") < rows.index("pear")
    assert len(asked) == 5  # each server asked about once, before its first start; the restart asks nothing
    approved = {
        a["launch"]["name"]: (a["network"], a.get("grant"))
        for a in json.loads((data / "packages" / "approved.json").read_text())["approved"]
    }
    assert approved["@modelcontextprotocol/server-filesystem"] == (False, {"path": str(project), "kind": "folder", "writable": False})
    assert approved["mcp-server-fetch"][0] is True and approved["mcp-server-time"] == (False, None)
    assert approved["mcp-server-sqlite"] == (False, {"path": str(database), "kind": "file", "writable": False})
