"""How to run an MCP server entry in a person's own MCP host, as the entry's page shows it: the package it starts
from and the command that starts it, and each host's block.

Nothing is decided here: the command is `surfaces.host_launch`'s and the blocks are `surfaces.host_blocks`'s,
the very functions `ard-mcp host-config HOST --entry ID` prints from, so the page and the command line offer
the same blocks for every host (issue #55, where they had drifted apart). What cannot be run (a container
image, a command line the person must complete, a source checkout) gets its reason instead of a block that
would not run. Nothing here reaches the network."""

from __future__ import annotations

from dataclasses import dataclass

from ard_mcp.formats import media_types
from ard_mcp.formats.catalog import CatalogEntry
from ard_mcp.invocation.calls import Target
from ard_mcp.invocation.targets import Offline
from ard_mcp.packages.specs import Unusable
from ard_mcp.surfaces.host_blocks import Block, blocks
from ard_mcp.surfaces.host_launch import PackageRun, launch_of, package_run, server_name

REGISTRY_NAMES = {"npm": "npm", "pypi": "PyPI", "unknown": "npm or PyPI (the description does not say which)"}


@dataclass(frozen=True)
class Hosts:
    package: PackageRun | None  # the package it starts from, when its description lists one
    package_problem: str | None  # when it lists packages and none can be started: why (`Unusable.reason`)
    configs: list[Block]
    missing: str | None  # for an MCP server with no configuration to give: why

    @property
    def registry(self) -> str | None:
        """The package's registry as a person names it (npm, PyPI)."""
        return REGISTRY_NAMES.get(self.package.registry, self.package.registry) if self.package else None


def hosts(entry: CatalogEntry, target: Target | Offline) -> Hosts:
    """The package and host blocks of an MCP server entry (none for any other kind of entry)."""
    if media_types.canonical_type(entry.type) != media_types.MCP_SERVER_CARD:
        return Hosts(None, None, [], None)
    run = package_run(entry.stored())
    package = run if isinstance(run, PackageRun) else None
    problem = run.reason if isinstance(run, Unusable) and run.kind != "no-package" else None
    launch = launch_of(target, run)
    if launch is None:
        offline = target.reason if isinstance(target, Offline) else None
        why = (package.problem if package else None) or offline or problem or "its description names no remote and no package"
        return Hosts(package, problem, [], why)
    return Hosts(package, problem, blocks(server_name(entry.identifier), launch), None)
