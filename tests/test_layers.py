"""The package's architecture, checked from its source: net → formats → index → search → registry → the
rooms that use the registry (web, trust, federation, evaluation) → surfaces, no module importing from a
layer above its own, rooms on one layer importing only the rooms they name, no import cycles, no module a
newcomer cannot hold."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ard_mcp"
MAX_LINES = 410
LAYERS = {  # a module may import from its own layer and those below
    "ard_mcp": 0,
    "ard_mcp.errors": 0,
    "ard_mcp.secret_files": 0,
    "ard_mcp.redaction": 0,  # keeping known secrets out of what is said: every layer that speaks uses it
    "ard_mcp.net": 1,  # reaching other hosts: needs nothing of the registry, and every room that fetches stands on it
    "ard_mcp.monitoring": 1,  # metrics, traces, request ids: needs nothing of the registry, and every layer records into it
    "ard_mcp.formats": 2,
    "ard_mcp.config": 2,  # names the registry with an identifier, so it reads them through formats
    "ard_mcp.index": 3,
    "ard_mcp.search": 4,
    "ard_mcp.registry": 5,
    "ard_mcp.evaluation": 6,
    "ard_mcp.web": 6,
    "ard_mcp.trust": 6,
    "ard_mcp.federation": 6,
    "ard_mcp.invocation": 6,  # calling what was found: stands on the registry (entries, visibility) and the network layer
    "ard_mcp.packages": 6,  # installing and starting package servers, sandboxed: what invocation calls for an entry without a remote
    "ard_mcp.surfaces": 7,
    "ard_mcp.ui": 7,  # the web page: a surface like REST, whose app mounts it (and whose guard knows its form posts)
    "ard_mcp.assembly": 8,  # the HTTP app and the command line: surfaces and the web page put together, above both
    "ard_mcp.entry": 9,  # the command: a host's `serve --shared` to the front-end at once, the rest to assembly
    "ard_mcp.__main__": 9,
}
# Rooms of one layer and the others each may import. The crawler checks trust manifests as entries arrive;
# trust and federation fetch through `ard_mcp.net`, never through the crawler, so no two rooms depend on
# each other and a fetch is made one way wherever it is made.
ROOMS: dict[str, set[str]] = {
    "ard_mcp.web": {"ard_mcp.trust"},
    "ard_mcp.trust": set(),
    "ard_mcp.federation": {"ard_mcp.trust"},  # remote results are checked by this registry's own verifier
    "ard_mcp.evaluation": set(),
    "ard_mcp.invocation": {"ard_mcp.packages"},  # a package server is started by its room, then called like a remote one
    "ard_mcp.packages": set(),
}
# What only the index and search layers may use: surfaces reach storage and ranking through the registry.
INTERNALS = (
    "ard_mcp.index.store",
    "ard_mcp.index.records",
    "ard_mcp.index.vectors",
    "ard_mcp.index.embedding",
    "ard_mcp.index.resident",
    "ard_mcp.index.lexical",
    "ard_mcp.search.ranking",
)


def _name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(module: str) -> set[str]:
    """Every ard_mcp module `module` imports, wherever the import statement is (in a function too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ard_mcp"):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.add(full if full in MODULES else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("ard_mcp"))
    return found


def _placed(module: str) -> str:
    """The longest prefix naming a layer (`ard_mcp` alone is the root)."""
    return max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)


def _layer_of(module: str) -> int:
    return LAYERS[_placed(module)]


def test_every_module_belongs_to_a_layer() -> None:
    unplaced = [m for m in MODULES if m != "ard_mcp" and _placed(m) == "ard_mcp"]
    assert unplaced == [], "place these in a layer (LAYERS) or move them into one"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_imports_from_a_layer_above_its_own(module: str) -> None:
    upward = sorted(i for i in _imports(module) if _layer_of(i) > _layer_of(module))
    assert upward == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _placed(m) in ROOMS))
def test_rooms_import_only_the_rooms_they_name(module: str) -> None:
    room = _placed(module)
    others = {_placed(i) for i in _imports(module)} & ROOMS.keys()
    assert sorted(others - {room} - ROOMS[room]) == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith(("ard_mcp.surfaces", "ard_mcp.ui"))))
def test_surfaces_hold_no_ranking_or_storage_logic(module: str) -> None:
    assert sorted(i for i in _imports(module) if i.startswith(INTERNALS)) == []


def test_the_surfaces_never_import_the_web_page() -> None:
    """The page is a surface beside REST and MCP, using them; what mounts it is the assembly, above both."""
    assert (
        sorted(f"{m} -> {i}" for m in MODULES if m.startswith("ard_mcp.surfaces") for i in _imports(m) if i.startswith("ard_mcp.ui")) == []
    )


def test_there_are_no_import_cycles() -> None:
    graph = {m: {i for i in _imports(m) if i in MODULES and i != m} for m in MODULES}
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            pytest.fail("import cycle: " + " -> ".join([*path[path.index(module) :], module]))
        if module in done:
            return
        for imported in sorted(graph[module]):
            visit(imported, [*path, module])
        done.add(module)

    for module in MODULES:
        visit(module, [])


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_is_too_long_to_hold(module: str) -> None:
    assert len(MODULES[module].read_text(encoding="utf-8").splitlines()) <= MAX_LINES


def test_the_checks_see_what_they_check() -> None:
    """Not vacuous: the registry imports the store, the CLI the registry, and each is placed."""
    assert "ard_mcp.index.store" in _imports("ard_mcp.registry")
    assert "ard_mcp.index.store.base" in _imports("ard_mcp.index.store.sqlite")
    assert "ard_mcp.registry" in _imports("ard_mcp.assembly.cli")
    assert _layer_of("ard_mcp.assembly.app") == 8 and _layer_of("ard_mcp.index.store.sqlite") == 3
    assert "ard_mcp.net.fetcher" in _imports("ard_mcp.trust.keys") and "ard_mcp.trust.service" in _imports("ard_mcp.web.crawler")
