"""The command line's side of package servers: the policy `serve` runs with, and `ard-mcp packages`."""

from __future__ import annotations

import argparse
import dataclasses

from ard_mcp.errors import InvalidArgument
from ard_mcp.packages.consent import Approvals
from ard_mcp.packages.environment import PackageSecrets
from ard_mcp.packages.install import Registries
from ard_mcp.packages.runtime import APPROVED_FROM_CLI
from ard_mcp.packages.sandbox import Confinement
from ard_mcp.packages.settings import PackagePolicy
from ard_mcp.packages.specs import parse_key
from ard_mcp.surfaces.terminal_text import shown

STDIO_OFF = "it was started with --no-package-servers; start it without to run them"


def _registries(args: argparse.Namespace) -> Registries:
    """The public registries unless refused, after the operator's own (which come first: a package without a
    registryBaseUrl is installed from the first of its kind)."""
    added: dict[str, list[str]] = {"npm": [], "pypi": []}
    for item in args.package_registry:
        kind, equals, url = item.partition("=")
        if not equals or kind.strip() not in added or not url.strip().startswith(("http://", "https://")):
            raise SystemExit(f"ard-mcp: --package-registry {item!r}: expected npm=URL or pypi=URL")
        added[kind.strip()].append(url.strip())
    public = Registries() if not args.no_public_package_registries else Registries(npm=(), pypi=())
    return Registries(npm=(*added["npm"], *public.npm), pypi=(*added["pypi"], *public.pypi))


def package_policy(args: argparse.Namespace, *, stdio: bool) -> PackagePolicy:
    """On over stdio unless --no-package-servers, each package asked for first; over HTTP off unless
    --allow-package-servers, and then only the approved ones."""
    try:
        secrets = PackageSecrets.load(args.package_secrets) if args.package_secrets else PackageSecrets()
    except ValueError as exc:
        raise SystemExit(f"ard-mcp: {exc}") from None
    if args.package_memory <= 0:
        raise SystemExit("ard-mcp: --package-memory must be positive")
    return PackagePolicy(
        enabled=not args.no_package_servers if stdio else args.allow_package_servers,
        ask=stdio,
        turned_on_by=STDIO_OFF if stdio else PackagePolicy.turned_on_by,
        registries=_registries(args),
        allow_unpinned=args.allow_unpinned_packages,
        allow_unsandboxed=args.allow_unsandboxed_packages,
        confinement=dataclasses.replace(Confinement(), memory_bytes=args.package_memory << 20),
        secrets=secrets,
    )


def packages_command(args: argparse.Namespace) -> int:
    """`ard-mcp packages allow|revoke|list`."""
    approvals = Approvals(args.data_dir / "packages")
    if args.action == "list":
        found = approvals.all()
        for approval in found:
            print(shown(f"{approval.key}  {'network' if approval.network else 'no network'}  approved {approval.at} by {approval.by}"))
        if not found:
            print(f"no package server is approved in {approvals.path}")
        return 0
    registry, name, version = parse_key(args.key)
    if not version:
        raise InvalidArgument(f"package {args.key!r}: name one version (REGISTRY:NAME@VERSION); an approval is for one version")
    key = f"{registry}:{name}@{version}"
    if args.action == "allow":
        approvals.allow(key, args.network, APPROVED_FROM_CLI)
        print(shown(f"approved {key}{' with network access' if args.network else ''}"))
        return 0
    if not approvals.revoke(key):
        raise InvalidArgument(f"{key} is not approved; 'ard-mcp packages list' shows what is")
    print(shown(f"revoked {key}"))
    return 0
