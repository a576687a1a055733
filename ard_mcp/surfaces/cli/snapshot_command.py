"""`ard-mcp snapshot show|add|remove`: the bundled snapshot of public MCP servers a new registry starts with.

Why a command: the snapshot is added on its own only to a new data directory served over stdio (a
person's own registry, empty until they fill it). An operator's registry, a registry served over HTTP and
one that already holds entries get it only when asked (`add`); a person who wants their own entries only
removes it (`remove`), and it stays removed. The live registry is one command away too: `ard-mcp crawl
--mcp-registry https://registry.modelcontextprotocol.io` updates the servers both list in place.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from ard_mcp.config import Config, env
from ard_mcp.index import snapshot
from ard_mcp.surfaces.cli.console import ProgressBar, print_ingest
from ard_mcp.surfaces.cli.option_values import truthy

LIVE_REGISTRY = "https://registry.modelcontextprotocol.io"


def snapshot_options(serve: argparse.ArgumentParser) -> None:
    """`serve`'s flag: start a new data directory empty."""
    serve.add_argument(
        "--no-snapshot",
        action="store_true",
        default=truthy(env("NO_SNAPSHOT")),
        help="over stdio, a new data directory starts with the bundled snapshot of public MCP servers (`ard-mcp snapshot`); "
        "this starts it empty instead (ARD_MCP_NO_SNAPSHOT)",
    )


def starter(args: argparse.Namespace) -> Path | None:
    """The snapshot `serve` gives a new data directory: over stdio, with a store of its own (SQLite and
    embedded Chroma in the data directory, not a shared PostgreSQL or Chroma server), unless told not to."""
    if args.transport != "stdio" or args.no_snapshot or args.store_url or args.chroma_url:
        return None
    return snapshot.BUNDLED if snapshot.BUNDLED.is_file() else None


def snapshot_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: Callable[[argparse.ArgumentParser], None]
) -> None:
    parser = commands.add_parser(
        "snapshot",
        help="the bundled snapshot of public MCP servers: show it, add it to this registry or remove it",
        description="ard-mcp ships a snapshot of public MCP catalogs (the official MCP registry's seed, Docker's MCP catalog "
        "and the MCP servers README's lists), with each source's licence and commit and the vectors of the default model. "
        "A new data directory served over stdio starts with it; nothing else gets it unless asked. Each entry it adds says "
        f"where it came from in metadata.source and metadata.snapshot. For the live registry instead: `ard-mcp crawl "
        f"--mcp-registry {LIVE_REGISTRY}`. Run `add` and `remove` with the server stopped (they claim the data directory).",
    )
    actions = parser.add_subparsers(dest="action", required=True)
    for name, text in (
        ("show", "what the snapshot holds, where from, and how many of its entries this registry holds"),
        ("add", "add the snapshot's servers to this registry (any registry; an entry changed since is left as it is)"),
        (
            "remove",
            "remove the servers the snapshot added (not those a crawl or a registration has replaced since); a later start adds nothing",
        ),
    ):
        common(actions.add_parser(name, help=text))


def snapshot_command(args: argparse.Namespace, config: Config) -> int:
    bundled = snapshot.read()
    from ard_mcp.registry import Registry

    registry = Registry(config)  # before anything is printed: a directory in use is refused (and retried) with no output
    try:
        if args.action == "show":
            print(f"{bundled.id}: {bundled.summary()}, vectors for {bundled.model_id}")
            for source in bundled.sources:
                where = f"{source['url']} at {source['commit'][:12]}"
                print(f"  {source['name']}: {source['servers']} servers from {where} ({source['licence']})")
        if args.action == "add":
            print_ingest(snapshot.add(registry.store, registry.indexer, registry.model_spec.id, bundled, ProgressBar("embedding snapshot")))
        elif args.action == "remove":
            removed = snapshot.remove(registry.store, registry.indexer, _added(snapshot.state(registry.store), bundled.id))
            print(f"removed {len(removed)} entries of the snapshot; a later start adds nothing (`ard-mcp snapshot add` adds it again)")
        else:
            state = snapshot.state(registry.store)
            held = snapshot.held(registry.store, _added(state, bundled.id))
            print(f"this registry ({config.data_dir}): {held} entries of the snapshot" + (", removed" if state == snapshot.REMOVED else ""))
    finally:
        registry.close()
    return 0


def _added(state: str | None, bundled: str) -> list[str]:
    """The snapshot ids whose entries this registry may hold: the bundled one and the one it was given."""
    return sorted({bundled} | ({state} if state not in (None, snapshot.REMOVED) else set()))
