"""What the operator decides about package servers (light to import: the command line builds it).

Over stdio the caller is the local person's own host: package servers are on, each asked for first
(`consent`). Over HTTP they are off unless the operator turns them on, and then only what was approved
beforehand runs (`ard-mcp packages allow`): a remote caller is not the person whose machine runs the code.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ard_mcp.packages.environment import PackageSecrets
from ard_mcp.packages.install import Registries
from ard_mcp.packages.sandbox import Confinement


@dataclass(frozen=True)
class PackagePolicy:
    enabled: bool = False
    ask: bool = False  # the person may be asked through their host (stdio); else only approved packages run
    turned_on_by: str = "its operator can turn them on with --allow-package-servers"
    registries: Registries = field(default_factory=Registries)
    allow_unpinned: bool = False
    allow_unsandboxed: bool = False
    allow_interpreter_code: bool = False  # runtime arguments that make the interpreter run other code (`interpreter_flags`)
    confinement: Confinement = field(default_factory=Confinement)
    secrets: PackageSecrets = field(default_factory=PackageSecrets)
