"""A package server's environment: only the variables it declares, their values from the operator.

A server started by a desktop host inherits the user's whole environment, every token in it included. Here
it gets the variables its package description declares and nothing else (the sandbox clears the rest), and
their values never come from the person through the host: the MCP spec forbids asking for secrets in a form,
and a value typed into a host goes through a model. So a value comes from the operator's package secrets
file (`--package-secrets FILE`: `NAME=value`, or `registry:name NAME=value` for one package alone, the most
specific first), else from ard-mcp's own environment under `ARD_MCP_PACKAGE_<NAME>`, else the declared
default. Never from ard-mcp's environment under the plain name: an entry anyone can register may declare
`AWS_SECRET_ACCESS_KEY`, and the operator's own would then be handed to its code. A required variable with
none of these is an error naming it and where to put it, before anything starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ard_mcp.errors import InvalidArgument
from ard_mcp.packages.specs import PackageSpec
from ard_mcp.secret_files import read_secrets

ENVIRON_PREFIX = "ARD_MCP_PACKAGE_"  # a declared NAME's value in ard-mcp's environment: ARD_MCP_PACKAGE_NAME, set for packages


@dataclass(frozen=True)
class PackageSecrets:
    """The operator's values: `(package, name) -> value`, the package `""` for a line that names none."""

    values: Mapping[tuple[str, str], str] = field(default_factory=dict)
    source: str = "--package-secrets FILE"

    @classmethod
    def load(cls, path: Path) -> PackageSecrets:
        found: dict[tuple[str, str], str] = {}
        for number, line in enumerate(read_secrets(path, "package secrets file").splitlines(), 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            head, equals, value = text.partition("=")
            scope, _, name = head.strip().rpartition(" ")
            if not equals or not name or " " in scope.strip():
                raise ValueError(f"package secrets file {path}, line {number}: expected 'NAME=value' or 'registry:name NAME=value'")
            found[(scope.strip(), name)] = value
        return cls(found, f"the package secrets file {path}")


def _package(spec: PackageSpec) -> str:
    return f"{spec.registry}:{spec.name}"


def server_environment(spec: PackageSpec, secrets: PackageSecrets, environ: Mapping[str, str]) -> dict[str, str]:
    """The variables `spec` declares, with the operator's values; InvalidArgument naming a required one that has none."""
    found: dict[str, str] = {}
    for variable in spec.environment:
        found_in_environ = environ.get(ENVIRON_PREFIX + variable.name)
        value = secrets.values.get((_package(spec), variable.name), secrets.values.get(("", variable.name), found_in_environ))
        if value is None:
            value = variable.default
        if value is not None:
            found[variable.name] = value
        elif variable.required:
            raise InvalidArgument(
                f"{spec.key()} needs {variable.name}{' (a secret)' if variable.secret else ''}"
                f"{': ' + variable.description if variable.description else ''}; the operator puts "
                f"'{_package(spec)} {variable.name}=...' in {secrets.source} or sets {ENVIRON_PREFIX}{variable.name} in ard-mcp's "
                "environment"
            )
    return found
