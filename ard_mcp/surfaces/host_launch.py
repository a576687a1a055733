"""What a person's MCP host runs for an MCP server entry: its remote URL, or the `npx -y NAME@VERSION` (npm) or
`uvx NAME==VERSION` (PyPI) command that starts its package, as a `host_blocks.Launch`; or why there is none.

The package is read by `packages.specs.package_of`, the code that starts package servers for `call_agent`, so
its name, pinned version, arguments and variables are read one way everywhere. That code refuses more than a
host needs refused, though: it runs the installed package itself, so an argument of the MCP registry seed that
belongs to the launcher (`uvx mcp-google-sheets`, written down as the argument `mcp-google-sheets`) makes the
package unusable for it. A host runs the launcher, so here that is what it is: the seed's words after `uvx`
or `npx` are read as such a command line (the package's own name, `--from NAME SCRIPT`, `-m MODULE`,
`--with`, `--python`), and only what needs a source checkout or a git source is refused (issue #55: the
page offered a host a configuration for 5 of 60 package entries). A seed package of no named registry is npm's
where its name (`@scope/name`) or its launcher (`npx`, `uvx`, `-m`) says so. Nothing here reaches the network.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ard_mcp.invocation.calls import Target
from ard_mcp.invocation.targets import Offline
from ard_mcp.packages import names
from ard_mcp.packages.inputs import FILE, FOLDER, Unfillable, arguments
from ard_mcp.packages.specs import EnvVar, PackageSpec, Unusable, package_of
from ard_mcp.surfaces.host_blocks import Launch, Variable

_PLACEHOLDERS = {FOLDER: "/path/to/your/folder", FILE: "/path/to/your/file"}
_PYTHON_LAUNCH = {"uvx", "uv", "-m", "--from", "--with", "--python"}
_SOURCE = re.compile(r"\.(?:py|js|mjs|cjs|ts)$|/", re.IGNORECASE)  # a script file or path of a source checkout
_PROGRAMS = {"run", "python", "python3", "node", "uv", "--directory"}


@dataclass(frozen=True)
class PackageRun:
    """The package an entry starts from, and the command a host starts it with (None, with `problem`, when none
    can be given)."""

    registry: str  # npm, pypi, or unknown (the seed's, when nothing says which)
    name: str
    version: str | None
    command: tuple[str, ...] | None
    environment: tuple[EnvVar, ...]
    problem: str | None = None

    @property
    def command_line(self) -> str | None:
        return shlex.join(self.command) if self.command else None


def _spelled(registry: str, name: str, version: str | None) -> str:
    """The package with its version, as its launcher takes it: `name@1.2.3` (npx), `name==1.2.3` (uvx)."""
    if not version:
        return name
    if registry == "npm":
        return f"{name}@{version}"
    pinned = names.pinned_version("pypi", version)
    if pinned:
        return f"{name}=={pinned}"
    return name + version if version[0] in "<>=!~" else name


def _resolved(spec: PackageSpec, words: tuple[str, ...] = ()) -> str:
    """npm or pypi for a seed package of no named registry, where its name, runtime hint or launcher words say."""
    if spec.registry != "unknown":
        return spec.registry
    hint = (spec.runtime_hint or "").lower()
    if spec.name.startswith("@") or hint in ("npx", "node") or "npx" in words:
        return "npm"  # a PyPI name holds no '@' or '/'
    if hint in ("uvx", "python", "python3") or _PYTHON_LAUNCH & set(words):
        return "pypi"
    return "unknown"


def _run(spec: PackageSpec, registry: str, command: list[str] | str) -> PackageRun:
    name = names.canonical_pypi(spec.name) if registry == "pypi" else spec.name
    if isinstance(command, str):
        return PackageRun(registry, name, spec.version, None, spec.environment, command)
    return PackageRun(registry, name, spec.version, tuple(_PLACEHOLDERS.get(a, a) for a in command), spec.environment)


def _command(spec: PackageSpec) -> PackageRun:
    """The command of a package whose arguments are all the server's; a folder or file the person gives it
    (`packages.grants`) is a placeholder they replace with its path."""
    registry = _resolved(spec)
    name = names.canonical_pypi(spec.name) if registry == "pypi" else spec.name
    spelled = _spelled(registry, name, spec.version)
    if registry == "npm":
        node = [f"--node-options={' '.join(spec.runtime_arguments)}"] if spec.runtime_arguments else []
        return _run(spec, registry, ["npx", "-y", *node, spelled, *spec.package_arguments])
    if registry == "pypi":
        if spec.runtime_arguments:
            why = f"its arguments for the Python interpreter ({' '.join(spec.runtime_arguments)}) cannot be passed through uvx"
            return _run(spec, registry, why)
        return _run(spec, registry, ["uvx", spelled, *spec.package_arguments])
    npm = shlex.join(["npx", "-y", _spelled("npm", spec.name, spec.version)])
    pypi = shlex.join(["uvx", f"{spec.name}=={spec.version}" if spec.version else spec.name])
    return _run(
        spec,
        registry,
        f"its description does not say whether {spec.name} is an npm or a PyPI package (ard-mcp asks both when it starts "
        f"it; this page asks neither): on npm it would start with {npm}, on PyPI with {pypi}",
    )


def _same(word: str, package: str) -> bool:
    """Whether `word` names the package (a seed writes `@scope/name` as `name` too, and any PyPI spelling)."""
    return names.canonical_pypi(word) in (names.canonical_pypi(package), names.canonical_pypi(package.rpartition("/")[2]))


def _launched(spec: PackageSpec, words: list[str]) -> PackageRun:
    """The command a host runs for a seed package whose arguments begin with its launcher's: `words` are what
    the seed wrote after `uvx` or `npx` (or what `uv run` / `python` would take, which is refused)."""
    registry = _resolved(spec, tuple(words))
    name = names.canonical_pypi(spec.name) if registry == "pypi" else spec.name
    rest = list(words)
    if rest and rest[0] in ("uvx", "npx"):
        rest.pop(0)
    options: list[str] = []
    source = script = module = None
    while rest:
        word = rest[0]
        if word in ("-y", "--yes") and registry == "npm":
            rest.pop(0)
        elif word in ("--with", "--python", "--from") and len(rest) > 1 and registry == "pypi":
            value = rest[1]
            del rest[:2]
            if word == "--python" or (word == "--with" and not _same(value, spec.name)):
                options += [word, value]
            elif word == "--from" and value.startswith(("git+", "git@")):
                return _run(spec, registry, f"it runs from the git source {value}, not from the package")
            elif word == "--from" and not _same(value, spec.name):
                return _run(spec, registry, f"it runs the package {value}, not {spec.name}")
            elif word == "--from":
                source = name
        elif word == "-m" and len(rest) > 1 and registry == "pypi":
            module = rest[1]
            del rest[:2]
            break
        elif _same(word, spec.name):
            rest.pop(0)  # the package's own command, as `uvx NAME` or `npx NAME` take it
            source = None  # `--from NAME NAME` is `NAME`
            break
        elif word in _PROGRAMS or _SOURCE.search(word) or word.startswith(("git+", "git@")):
            return _run(spec, registry, f"it runs {word!r} from a source checkout, which the package does not have")
        else:
            if source:
                script = rest.pop(0)  # the console script `--from` names
            break
    if source and not (script or module):
        return _run(spec, registry, f"it names no command to run from {spec.name} (`uvx --from {spec.name} COMMAND`)")
    spelled = _spelled(registry, name, spec.version)
    if registry == "npm":
        return _run(spec, registry, ["npx", "-y", spelled, *rest])
    if registry != "pypi" or spec.runtime_arguments:
        return _command(spec)  # says why: no registry named, or interpreter arguments uvx cannot pass
    if module:
        return _run(spec, registry, ["uvx", *options, "--from", spelled, "python", "-m", module, *rest])
    if script:
        return _run(spec, registry, ["uvx", *options, "--from", spelled, script, *rest])
    return _run(spec, registry, ["uvx", *options, spelled, *rest])


def _words(argument: Mapping[str, Any], package: str) -> list[str]:
    """An argument's argv words, those of a launcher included (`inputs.arguments` refuses those for the seed);
    Unfillable for one the person would have to fill in."""
    try:
        return list(arguments([argument], True, package))
    except Unfillable as exc:
        if exc.kind != "launcher":
            raise
    value = str(argument.get("value") or argument.get("default") or "")
    name = str(argument.get("name") or "")
    whole = argument.get("type") == "positional" or value.startswith(name)
    return value.split() if whole else [*name.split(), *value.split()]


def _from_launcher(data: Mapping[str, Any]) -> PackageRun | None:
    """The first seed package whose launcher words make a command a host can run; else the first that says why
    its launcher words make none."""
    refused = None
    for raw in data.get("packages") or []:
        if not isinstance(raw, Mapping) or "registry_name" not in raw:
            continue
        bare = package_of({"data": {"packages": [{k: v for k, v in raw.items() if k != "package_arguments"}]}})
        if not isinstance(bare, PackageSpec):
            continue
        listed = raw.get("package_arguments")
        try:
            words = [w for a in (listed if isinstance(listed, list) else []) if isinstance(a, Mapping) for w in _words(a, bare.name)]
        except Unfillable:
            continue
        found = _launched(bare, words)
        if found.command is not None:
            return found
        refused = refused or found
    return refused


def package_run(stored: Mapping[str, Any]) -> PackageRun | Unusable:
    """The package of an MCP server entry (a stored catalog entry) as a host runs it, or why it has none."""
    spec = package_of(stored)
    if isinstance(spec, PackageSpec):
        return _command(spec)
    data = stored.get("data")
    if spec.kind == "launcher" and isinstance(data, Mapping):
        return _from_launcher(data) or spec
    return spec


def server_name(identifier: str) -> str:
    """A key for the host's server list: the identifier's last part, in the characters hosts accept."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", identifier.rsplit(":", 1)[-1]).strip("-")[:64] or "server"


def variables(environment: tuple[EnvVar, ...]) -> tuple[Variable, ...]:
    """What the host must set: each required variable, with its default when it has one; optional ones are the
    person's to add."""
    return tuple(Variable(v.name, v.default, v.secret, v.description) for v in environment if v.required)


def launch_of(target: Target | Offline, run: PackageRun | Unusable) -> Launch | None:
    """What a host runs for the entry: its remote (what the registry would call), else its package's command."""
    if isinstance(target, Target) and target.package is None:
        return Launch.remote(target.url, "sse" if target.transport_kind == "sse" else "http")
    if isinstance(run, PackageRun) and run.command is not None:
        return Launch(run.command, variables(run.environment))
    return None
