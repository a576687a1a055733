"""The command line's side of invocation: the policy `serve` runs with, and `ard-mcp invocations`."""

from __future__ import annotations

import argparse
import dataclasses

from ard_mcp.invocation.credentials import AgentCredentials
from ard_mcp.invocation.policy import InvocationPolicy, Limits
from ard_mcp.surfaces.cli.option_values import csv_list
from ard_mcp.surfaces.cli.package_settings import package_policy
from ard_mcp.surfaces.cli.terminal_text import shown, shown_json


def invocation_policy(args: argparse.Namespace, *, stdio: bool) -> InvocationPolicy:
    """On over stdio unless --no-invocation (the caller is the local user's own host), off over HTTP unless
    --allow-invocation; the crawler's network rules (--allow-private-networks) for the agents' addresses; the package
    installers with the operator's own npm and pip configuration where --package-installer-config says so."""
    if args.invoke_timeout <= 0:
        raise SystemExit("ard-mcp: --invoke-timeout must be positive")
    try:
        credentials = AgentCredentials.load(args.agent_credentials) if args.agent_credentials else AgentCredentials()
    except ValueError as exc:
        raise SystemExit(f"ard-mcp: {exc}") from None
    packages = package_policy(args, stdio=stdio)
    registries = dataclasses.replace(packages.registries, installer_config=args.package_installer_config)
    return InvocationPolicy(
        enabled=not args.no_invocation if stdio else args.allow_invocation,
        turned_on_by="it was started with --no-invocation; start it without to call agents" if stdio else InvocationPolicy.turned_on_by,
        allowed_trust=csv_list(args.invoke_trust),
        allow_private_networks=args.allow_private_networks,
        limits=dataclasses.replace(Limits(), total=args.invoke_timeout),
        credentials=credentials,
        packages=dataclasses.replace(packages, registries=registries),
    )


def print_invocations(args: argparse.Namespace) -> int:
    from ard_mcp.invocation.audit import AuditLog

    records = AuditLog(args.data_dir).newest(args.limit)
    for record in records:
        if args.json:
            print(shown_json(record.model_dump_json()))
        else:
            outcome = record.outcome if record.status is None else f"{record.outcome} {record.status}"
            what = record.tool if record.action == "call" else f"(tool list{' of ' + record.tool if record.tool else ''})"
            print(shown(f"{record.at}  {record.caller:<16} {outcome:<16} {record.durationMs:>8.1f} ms  {record.identifier} {what}"))
    if not records and not args.json:
        print(f"no invocations logged in {AuditLog(args.data_dir).path}")
    return 0
