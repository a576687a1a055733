"""The command line's side of calling agents and running package servers: the `serve` flags for both, and the
`invocations` (the audit log) and `packages` (approvals) commands."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from ard_mcp.config import env
from ard_mcp.invocation.policy import PUBLISHER_SERVED, Limits
from ard_mcp.packages.sandbox import Confinement
from ard_mcp.surfaces.cli.option_values import csv_list, env_number, truthy

DEFAULT_MEMORY_MIB = Confinement().memory_bytes >> 20


def invocation_options(parser: argparse.ArgumentParser) -> None:
    """Calling agents through the registry (`ard_mcp.invocation.policy`)."""
    parser.add_argument(
        "--allow-invocation",
        action="store_true",
        default=truthy(env("ALLOW_INVOCATION")),
        help="over HTTP, let callers with the invoke scope call the agents they find (call_agent, POST /agents/{id}/invoke); "
        "off by default (ARD_MCP_ALLOW_INVOCATION)",
    )
    parser.add_argument(
        "--no-invocation",
        action="store_true",
        default=truthy(env("NO_INVOCATION")),
        help="over stdio, where the local user's host may call agents by default, turn that off (ARD_MCP_NO_INVOCATION)",
    )
    parser.add_argument(
        "--invoke-trust",
        default=env("INVOKE_TRUST", ",".join(PUBLISHER_SERVED)),
        help="comma-separated trust statuses an entry must have to be called (ARD_MCP_INVOKE_TRUST; default %(default)s: "
        "never invalid or third-party)",
    )
    parser.add_argument(
        "--agent-credentials",
        type=Path,
        default=Path(c) if (c := env("AGENT_CREDENTIALS")) else None,
        help="the operator's credentials for agents, one 'TARGET bearer TOKEN' or 'TARGET Header-Name: VALUE' per line, TARGET an "
        "endpoint URL (that origin, under that path) or a publisher domain (its agents, at hosts on its domain, over https; "
        "http+https:DOMAIN for plain http too); callers' own credentials are never forwarded (ARD_MCP_AGENT_CREDENTIALS)",
    )
    parser.add_argument(
        "--invoke-timeout",
        type=float,
        default=env_number("INVOKE_TIMEOUT", Limits().total, float),
        metavar="SECONDS",
        help="the most one call of an agent may take, a running A2A task followed to its end included (ARD_MCP_INVOKE_TIMEOUT; "
        "default %(default)g)",
    )
    package_options(parser)


def package_options(parser: argparse.ArgumentParser) -> None:
    """Package servers: npm and PyPI packages installed and started in a sandbox (`ard_mcp.packages`)."""
    parser.add_argument(
        "--allow-package-servers",
        action="store_true",
        default=truthy(env("ALLOW_PACKAGE_SERVERS")),
        help="over HTTP, start the package servers approved with 'ard-mcp packages allow' when a caller calls them; off by default "
        "(ARD_MCP_ALLOW_PACKAGE_SERVERS)",
    )
    parser.add_argument(
        "--no-package-servers",
        action="store_true",
        default=truthy(env("NO_PACKAGE_SERVERS")),
        help="over stdio, where the person's host may install and start a package server they consent to, turn that off "
        "(ARD_MCP_NO_PACKAGE_SERVERS)",
    )
    parser.add_argument(
        "--package-registry",
        action="append",
        default=list(csv_list(env("PACKAGE_REGISTRIES"))),
        metavar="REGISTRY=URL",
        help="another registry packages may be installed from, npm=URL or pypi=URL (a simple index), repeatable; a package's own "
        "registryBaseUrl is honoured only when listed (ARD_MCP_PACKAGE_REGISTRIES, comma-separated)",
    )
    parser.add_argument(
        "--no-public-package-registries",
        action="store_true",
        default=truthy(env("NO_PUBLIC_PACKAGE_REGISTRIES")),
        help="install only from the --package-registry ones, not from registry.npmjs.org or pypi.org "
        "(ARD_MCP_NO_PUBLIC_PACKAGE_REGISTRIES)",
    )
    parser.add_argument(
        "--package-installer-config",
        action="store_true",
        default=truthy(env("PACKAGE_INSTALLER_CONFIG")),
        help="let npm and pip reach the allowed registries with your own configuration: npm reads your user npmrc (~/.npmrc, or "
        "npm_config_userconfig), pip your netrc and the cert, client-cert, timeout, retries and trusted-host of your pip.conf; the "
        "registry, the proxy that allows only the allowed registries and scripts off still win; off by default "
        "(ARD_MCP_PACKAGE_INSTALLER_CONFIG)",
    )
    parser.add_argument(
        "--allow-unpinned-packages",
        action="store_true",
        default=truthy(env("ALLOW_UNPINNED_PACKAGES")),
        help="install a package whose description pins no version (or says latest) at its newest version (ARD_MCP_ALLOW_UNPINNED_PACKAGES)",
    )
    parser.add_argument(
        "--allow-unsandboxed-packages",
        action="store_true",
        default=truthy(env("ALLOW_UNSANDBOXED_PACKAGES")),
        help="where no sandbox can be had (no bubblewrap), start package servers without one, with the rights of this process: "
        "only for packages you would run yourself (ARD_MCP_ALLOW_UNSANDBOXED_PACKAGES)",
    )
    parser.add_argument(
        "--allow-interpreter-code",
        action="store_true",
        default=truthy(env("ALLOW_INTERPRETER_CODE")),
        help="let an entry give the interpreter of its package arguments that run other code (python -c/-m, node --require/--eval, "
        "a script of its own); refused by default (ARD_MCP_ALLOW_INTERPRETER_CODE)",
    )
    parser.add_argument(
        "--package-secrets",
        type=Path,
        default=Path(p) if (p := env("PACKAGE_SECRETS")) else None,
        help="values of the environment variables package servers declare, 'NAME=value' or 'registry:name NAME=value' a line; "
        "else ard-mcp's own environment as ARD_MCP_PACKAGE_<NAME> (ARD_MCP_PACKAGE_SECRETS)",
    )
    parser.add_argument(
        "--package-memory",
        type=int,
        default=env_number("PACKAGE_MEMORY", DEFAULT_MEMORY_MIB, int),
        metavar="MIB",
        help="what one package server may allocate (ARD_MCP_PACKAGE_MEMORY; default %(default)s)",
    )


def invocation_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: Callable[[argparse.ArgumentParser], None]
) -> None:
    invocations = commands.add_parser(
        "invocations",
        help="print the invocation audit log: the newest calls of agents through this registry",
        description="Every call of an agent through the registry (call_agent, POST /agents/{id}/invoke, get_agent_tools of a "
        "remote MCP server) is logged in <data-dir>/invocations.jsonl: who, which entry and tool, the endpoint, the outcome, "
        "the status, how long and how many bytes, never the arguments or the answer. This prints the newest first.",
    )
    common(invocations)
    invocations.add_argument("--limit", type=int, default=50, metavar="N", help="how many (default %(default)s, at most 1000)")
    invocations.add_argument("--json", action="store_true", help="one JSON object a line instead of a table")

    packages = commands.add_parser(
        "packages",
        help="approve, list and revoke package servers (npm and PyPI packages started in a sandbox)",
        description="A package server is installed and started only once its launch is approved: the package's registry, name "
        "and version, where it is installed from, every argument and declared variable, and then the files its first install "
        "gave. The person approves through their host (over stdio), or the operator here. Over HTTP only what is approved here runs.",
    )
    actions = packages.add_subparsers(dest="action", required=True)
    allow = actions.add_parser(
        "allow",
        help="approve one launch: plan:DIGEST as a refusal named it, or REGISTRY:NAME@VERSION with the launch's arguments and variables",
    )
    allow.add_argument("key", metavar="plan:DIGEST|REGISTRY:NAME@VERSION")
    allow.add_argument("--network", action="store_true", help="let it reach the network (off: it runs with none)")
    allow.add_argument("--web-pages", action="store_true", help="let it ask the person to open web pages it names (off by default)")
    allow.add_argument("--source", metavar="URL", help="the registry it is installed from (default: the public npm registry or PyPI)")
    allow.add_argument("--runtime-hint", metavar="HINT", help="the runtimeHint of its description (node, python, npx, uvx)")
    allow.add_argument("--runtime-arg", action="append", default=[], metavar="ARG", help="a runtime argument, in order (repeatable)")
    allow.add_argument("--arg", action="append", default=[], metavar="ARG", help="a package argument, in order (repeatable)")
    allow.add_argument(
        "--variable", action="append", default=[], metavar="NAME[=DEFAULT]", help="a variable it declares, with its default (repeatable)"
    )
    allow.add_argument("--folder", metavar="PATH", help="the folder it works on, where its launch takes one")
    allow.add_argument("--file", metavar="PATH", help="the file it works on (its folder is given with it), where its launch takes one")
    allow.add_argument("--writable", action="store_true", help="let it change files in that folder (off: read only)")
    revoke = actions.add_parser("revoke", help="take an approval back: the next call of that launch is refused or asked again")
    revoke.add_argument("key", metavar="plan:DIGEST|REGISTRY:NAME@VERSION")
    for action in (allow, revoke, actions.add_parser("list", help="the approved launches")):
        common(action)
