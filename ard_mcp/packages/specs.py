"""The package an MCP server entry can be installed from: read from the entry's inline server description
(`entry["data"]`, a current server.json or the registry seed's older record) into a `PackageSpec`, or an
`Unusable` saying why none can be.

Only npm and PyPI packages speaking stdio are installed here (`install`), and the seed's `unknown` registry,
which the installer resolves to one of the two by asking both. A container image, a NuGet or MCPB package, a
package that serves streamable HTTP or SSE from a port, and one whose command line the person would have to
complete (`inputs`) are unusable, each with a reason that names the package and what stops it. The first
usable package of an entry wins; when none is, the first package's reason is given.

Measured on the 471 records of the MCP registry seed (tests/test_package_install.py prints the counts): 264
give a spec (182 of them from the `unknown` registry, 61 npm, 21 PyPI; 244 before a launcher that runs the
package itself was left out, `inputs`); 7 have no package, 26 only a container image, 77 a name no registry
can hold (a GitHub `owner/repo`), and the arguments of 72 need the person's input and of 25 belong to a
launcher.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ard_mcp.errors import InvalidArgument
from ard_mcp.packages import names
from ard_mcp.packages.inputs import EnvVar, Unfillable, arguments, environment, field

__all__ = ["EnvVar", "PackageSpec", "Unusable", "package_of", "parse_key"]

_CONTAINERS = ("docker", "oci")
_INTERPRETERS = ("node", "python", "python3")  # runtime hints whose arguments go to the interpreter this room runs
_LAUNCHER_CONSENT = ("-y", "--yes")  # npx's "install without asking": the install here asks the person itself


@dataclass(frozen=True)
class PackageSpec:
    registry: str  # "npm" | "pypi" | "unknown" (the seed's: resolved by the installer)
    name: str
    version: str | None
    registry_base_url: str | None
    runtime_arguments: tuple[str, ...]
    package_arguments: tuple[str, ...]
    environment: tuple[EnvVar, ...]
    runtime_hint: str | None = None  # `runtimeHint` as the record gives it (node, python, npx, uvx)

    def key(self) -> str:
        """`npm:@scope/name@1.2.3`: the package and version (what runs is `plans.LaunchPlan`)."""
        return f"{self.registry}:{self.name}" + (f"@{self.version}" if self.version else "")


@dataclass(frozen=True)
class Unusable:
    """Why an entry has no package to install. `kind`: no-package, container, registry, transport, name,
    needs-input, launcher or malformed."""

    reason: str
    kind: str


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _transport(package: Mapping[str, Any]) -> str:
    transport = package.get("transport")
    kind = transport.get("type") if isinstance(transport, Mapping) else transport
    return (_text(kind) or "stdio").lower()


def _runtime_arguments(package: Mapping[str, Any], shown: str) -> tuple[str, ...] | Unusable:
    """Arguments for the interpreter (`runtimeHint` node or python) go before the script; those of a launcher
    this room does not use (npx, uvx) cannot be honoured, apart from npx's `-y`, which only skips its prompt."""
    hint = (_text(field(package, "runtimeHint", "runtime_hint")) or "").lower()
    try:
        found = arguments(field(package, "runtimeArguments", "runtime_arguments"), seed=False)
    except Unfillable as exc:
        return Unusable(f"{shown}: runtime {exc}", exc.kind)
    if hint in _INTERPRETERS:
        return found
    kept = tuple(a for a in found if a not in _LAUNCHER_CONSENT)
    if kept:
        launcher = hint or "its default launcher"
        return Unusable(f"{shown}: runtime arguments {' '.join(kept)!r} are for {launcher}, which is not used here", "launcher")
    return ()


def _spec(package: Mapping[str, Any]) -> PackageSpec | Unusable:
    registry = (_text(field(package, "registryType", "registry_type")) or _text(package.get("registry_name")) or "").lower()
    raw_name = _text(package.get("identifier")) or _text(package.get("name")) or ""
    version = _text(package.get("version"))
    shown = f"{registry or 'a package of no registry'} package {raw_name or '(unnamed)'}" + (f" {version}" if version else "")
    if registry in _CONTAINERS:
        return Unusable(f"{shown}: a container image, which is not run here (npm and PyPI packages are)", "container")
    if registry not in (*names.REGISTRIES, "unknown"):
        return Unusable(f"{shown}: {registry or 'no'} registry, and only npm and PyPI packages are installed here", "registry")
    transport = _transport(package)
    if transport != "stdio":
        return Unusable(f"{shown}: it serves {transport} from a port of its own; only stdio package servers are run here", "transport")
    if not names.valid_name(registry, raw_name):
        holder = registry if registry != "unknown" else "npm or PyPI"
        return Unusable(f"{shown}: {raw_name!r} is not a package name {holder} can hold", "name")
    runtime = _runtime_arguments(package, shown)
    if isinstance(runtime, Unusable):
        return runtime
    seed = "registry_name" in package
    try:
        package_arguments = arguments(field(package, "packageArguments", "package_arguments"), seed, raw_name)
    except Unfillable as exc:
        return Unusable(f"{shown}: {exc}", exc.kind)
    name = names.canonical_pypi(raw_name) if registry == "pypi" else raw_name
    return PackageSpec(
        registry=registry,
        name=name,
        version=names.pinned_version(registry, version) or version,
        registry_base_url=_text(field(package, "registryBaseUrl", "registry_base_url")),
        runtime_arguments=runtime,
        package_arguments=package_arguments,
        environment=environment(field(package, "environmentVariables", "environment_variables"), seed),
        runtime_hint=_text(field(package, "runtimeHint", "runtime_hint")),
    )


def package_of(entry: Mapping[str, Any]) -> PackageSpec | Unusable:
    """The first npm, PyPI or unknown-registry stdio package of `entry` (a stored catalog entry) whose command
    line can be filled without the person; else why there is none."""
    data = entry.get("data")
    if not isinstance(data, Mapping):
        return Unusable("the entry holds no server description (no inline data) to read packages from", "no-package")
    packages = [p for p in data["packages"] if isinstance(p, Mapping)] if isinstance(data.get("packages"), list) else []
    if not packages:
        remote = " (it lists remote endpoints: it runs elsewhere)" if data.get("remotes") else ""
        return Unusable(f"the server description lists no packages{remote}", "no-package")
    found = [_spec(p) for p in packages]
    return next((s for s in found if isinstance(s, PackageSpec)), found[0])


def parse_key(text: str) -> tuple[str, str, str | None]:
    """`registry:name@version` (version optional) as (registry, name, version), the name spelled as keys spell
    it (PyPI's normalized); InvalidArgument saying what is wrong with it."""
    registry, colon, rest = text.strip().partition(":")
    if not colon or registry not in names.REGISTRIES:
        raise InvalidArgument(f"package {text!r}: expected npm:NAME@VERSION or pypi:NAME@VERSION (such as npm:@scope/server@1.2.3)")
    at = rest.rfind("@")
    name, version = (rest[:at], rest[at + 1 :]) if at > 0 else (rest, None)
    if not names.valid_name(registry, name):
        raise InvalidArgument(f"package {text!r}: {name!r} is not a {registry} package name")
    if version is not None and not version.strip():
        raise InvalidArgument(f"package {text!r}: nothing after '@'; give the version, or leave out the '@'")
    return registry, names.canonical_pypi(name) if registry == "pypi" else name, names.pinned_version(registry, version) or version
