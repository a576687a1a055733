"""The command line's side of package servers: the policy `serve` runs with, and `ard-mcp packages`."""

from __future__ import annotations

import argparse
import dataclasses
import json

from ard_mcp.errors import InvalidArgument
from ard_mcp.packages.consent import Approval, Approvals
from ard_mcp.packages.environment import PackageSecrets
from ard_mcp.packages.grants import Grant, checked, needed
from ard_mcp.packages.install import Registries
from ard_mcp.packages.plans import PREFIX, LaunchPlan
from ard_mcp.packages.runtime import APPROVED_FROM_CLI, screened
from ard_mcp.packages.sandbox import Confinement
from ard_mcp.packages.settings import PackagePolicy
from ard_mcp.packages.specs import parse_key
from ard_mcp.surfaces.cli.terminal_text import shown

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
        allow_interpreter_code=args.allow_interpreter_code,
        confinement=dataclasses.replace(Confinement(), memory_bytes=args.package_memory << 20),
        secrets=secrets,
    )


def _plan(args: argparse.Namespace, approvals: Approvals) -> LaunchPlan:
    """The launch `allow` names: a refused one by its digest, or one built from the key and the options."""
    if args.key.startswith(PREFIX):
        found = approvals.requested(args.key.removeprefix(PREFIX))
        if found is None:
            raise InvalidArgument(
                f"{args.key}: no refused launch has that digest in {approvals.requested_path}; call the entry first (the refusal "
                "names its launch), or give REGISTRY:NAME@VERSION with its arguments and variables"
            )
        return found
    registry, name, version = parse_key(args.key)
    if not version:
        raise InvalidArgument(f"package {args.key!r}: name one version (REGISTRY:NAME@VERSION); an approval is for one version")
    variables = tuple((name.strip(), default if equals else None) for name, equals, default in (v.partition("=") for v in args.variable))
    return LaunchPlan(
        registry=registry,
        name=name,
        version=version,
        source=(args.source or Registries().urls(registry)[0]).rstrip("/"),
        runtime_hint=args.runtime_hint,
        runtime_arguments=tuple(args.runtime_arg),
        package_arguments=tuple(args.arg),
        variables=variables,
    )


def _grant(args: argparse.Namespace, plan: LaunchPlan) -> Grant | None:
    """The folder or file `--folder`/`--file` gives a launch that takes one (checked as the host's answer would be);
    for one that takes none, the folder `--folder` gives it as its root, if any."""
    kind = needed(plan.package_arguments)
    if kind is None and args.file:
        raise InvalidArgument(f"{plan.key}: its launch takes no file; give it a folder as its root with --folder, or nothing")
    if kind is None:
        return checked(args.folder, "folder", args.writable, args.data_dir) if args.folder else None
    given = args.folder if kind == "folder" else args.file
    if not given:
        raise InvalidArgument(f"{plan.key} works on a {kind} of yours: name it with --{kind} PATH (add --writable to let it change files)")
    return checked(given, kind, args.writable, args.data_dir)


def _described(approval: Approval) -> str:
    plan = approval.plan
    parts = [
        f"{plan.key}  {PREFIX}{plan.digest}",
        "network" if approval.network else "no network",
        *(["web pages"] if approval.web_pages else []),
        f"from {plan.source}",
        *([f"runtime arguments {json.dumps(list(plan.runtime_arguments))}"] if plan.runtime_arguments else []),
        *([f"arguments {json.dumps(list(plan.package_arguments))}"] if plan.package_arguments else []),
        *([f"variables {', '.join(name for name, _ in plan.variables)}"] if plan.variables else []),
        *([f"{grant.kind} {grant.path} ({'writable' if grant.writable else 'read-only'})"] if (grant := approval.grant) else []),
        f"files {approval.integrity or '(pinned on its first install)'}",
        *([f"FILES CHANGED to {approval.changed}: refused until approved again"] if approval.changed else []),
        f"approved {approval.at} by {approval.by}",
    ]
    return "  ".join(parts)


def packages_command(args: argparse.Namespace) -> int:
    """`ard-mcp packages allow|revoke|list`."""
    approvals = Approvals(args.data_dir / "packages")
    if args.action == "list":
        found = approvals.all()
        for approval in found:
            print(shown(_described(approval)))
        if not found:
            print(f"no package server is approved in {approvals.path}")
        return 0
    if args.action == "allow":
        plan = _plan(args, approvals)
        refused = screened(plan, allow_interpreter_code=True)
        if refused is not None:
            raise InvalidArgument(f"{plan.key} cannot be approved: {refused}")
        approved = approvals.allow(plan, args.network, APPROVED_FROM_CLI, web_pages=args.web_pages, grant=_grant(args, plan))
        print(shown(f"approved {_described(approved)}"))
        return 0
    gone = approvals.revoke(args.key.removeprefix(PREFIX) if args.key.startswith(PREFIX) else _key(args.key))
    if not gone:
        raise InvalidArgument(f"{args.key} is not approved; 'ard-mcp packages list' shows what is")
    print(shown(f"revoked {gone} approved launch{'es' if gone > 1 else ''} of {args.key}"))
    return 0


def _key(text: str) -> str:
    registry, name, version = parse_key(text)
    return f"{registry}:{name}" + (f"@{version}" if version else "")
