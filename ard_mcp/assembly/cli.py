"""`ard-mcp`: serve the registry over MCP, ingest catalogs, search, rebuild the vector index.

Heavy imports (the MCP SDK, chromadb, onnxruntime) happen inside the subcommands, so `ard-mcp --help`
is instant and `serve` reaches the MCP handshake before the model has loaded.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import IO, Any

from ard_mcp.assembly.settings import config_of, crawl_of, federation_of
from ard_mcp.errors import ArdError, DataDirInUse, InvalidArgument
from ard_mcp.monitoring import tracing
from ard_mcp.surfaces.cli.arguments import build_parser
from ard_mcp.surfaces.cli.console import ProgressBar, print_crawl, print_ingest
from ard_mcp.surfaces.cli.host_config import host_config_command
from ard_mcp.surfaces.cli.log_setup import configure_logging
from ard_mcp.surfaces.cli.option_values import csv_list
from ard_mcp.surfaces.cli.snapshot_command import snapshot_command
from ard_mcp.surfaces.cli.terminal_text import shown, shown_json
from ard_mcp.surfaces.rest.ratelimit import RateLimits
from ard_mcp.surfaces.rest.settings import is_loopback
from ard_mcp.surfaces.sharing.frontend import command_words

log = logging.getLogger("ard_mcp")


def _serve(args: argparse.Namespace) -> int:
    tracing.configure()  # when the OTEL_* variables ask for traces
    if args.transport != "stdio":
        return _serve_http(args)
    from ard_mcp.assembly.stdio import serve_stdio

    return serve_stdio(args, sys.argv[1:])


def _serve_http(args: argparse.Namespace) -> int:
    """MCP and the REST routes in one app; refuses to expose open writes beyond this machine by accident."""
    from ard_mcp.assembly.app import serve
    from ard_mcp.registry import Registry
    from ard_mcp.surfaces.auth import TokenStore
    from ard_mcp.surfaces.rest.settings import HttpSettings

    try:
        tokens = TokenStore.load(args.token_file) if args.token_file else TokenStore()
        if args.oauth_issuer:
            from ard_mcp.surfaces.oauth import JwtVerifier

            audience = args.oauth_audience or HttpSettings(host=args.host, port=args.port).named(config_of(args)).source
            verifier = JwtVerifier(args.oauth_issuer, audience, args.oauth_jwks_url)
            verifier.prefetch()
            tokens = tokens.with_verifier(verifier)
    except ValueError as exc:
        print(shown(f"ard-mcp: {exc}"), file=sys.stderr)
        return 2
    if not tokens.configured and not is_loopback(args.host) and not args.allow_anonymous_writes:
        print(
            f"ard-mcp: refusing to serve on {args.host} without a token: anyone who can reach it could register and delete entries. "
            f"Give --token-file FILE (ARD_MCP_TOKEN_FILE), or --allow-anonymous-writes if that is what you want.",
            file=sys.stderr,
        )
        return 2
    if args.max_body_bytes < 1 or args.body_timeout <= 0 or args.header_timeout <= 0:
        print("ard-mcp: --max-body-bytes, --body-timeout and --header-timeout must be positive", file=sys.stderr)
        return 2
    allowed = csv_list(args.allowed_hosts) or None
    if args.mcp_requires_token and not args.oauth_issuer:
        print("ard-mcp: --mcp-requires-token needs --oauth-issuer (the authorization server MCP clients sign in with)", file=sys.stderr)
        return 2
    rates = RateLimits(
        reads=args.read_rate,
        writes=args.write_rate,
        invocations=args.invoke_rate,
        auth_failures=args.auth_failure_rate,
        loopback=args.rate_limit_loopback,
    )
    settings = HttpSettings(
        args.transport,
        args.host,
        args.port,
        allowed,
        csv_list(args.cors_origins),
        args.max_body_bytes,
        tokens,
        rate_limits=rates,
        body_timeout=args.body_timeout,
        header_timeout=args.header_timeout,
        mcp_issuer=args.oauth_issuer if args.mcp_requires_token else None,
        crawl=crawl_of(args),
        federation=federation_of(args),
        trust_policy=args.trust_policy,
        invocation=_invocation_settings().invocation_policy(args, stdio=False),
        metrics_address=args.metrics_address,
    )
    if allowed is None and not is_loopback(args.host):
        log.warning("answering any Host header on %s; pass --allowed-hosts with the names clients use", args.host)
    config = settings.named(config_of(args))
    registry = Registry(config)  # opened before listening, so a data directory in use is a clear error
    if args.metrics_address is not None:
        from ard_mcp.surfaces.rest.metrics import serve_metrics_at

        serve_metrics_at(args.metrics_address, registry)
    mcp_path = "/sse" if args.transport == "sse" else "/mcp"
    base = f"http://{f'[{args.host}]' if ':' in args.host else args.host}:{args.port}"
    log.info("serving MCP at %s%s, the web page at %s/ and the REST API (/search, /agents, ...) on the same port", base, mcp_path, base)
    if not tokens.configured:
        log.info("no token file: writes are open to every client that can reach this address")
    serve(config, settings, registry, args.log_level)
    return 0


def _ingest(args: argparse.Namespace) -> int:
    from ard_mcp.formats.manifests import file_entries, shown_path
    from ard_mcp.index.indexer import IngestReport
    from ard_mcp.registry import Registry

    registry = Registry(config_of(args))
    total = IngestReport()
    try:
        for path in args.paths:
            try:
                total.add(registry.indexer.register_many(file_entries(path), ProgressBar(f"embedding {shown_path(path)}")))
            except ArdError as exc:
                total.rejected.append(exc.message)
    finally:
        registry.close()
    if args.json:
        print(shown_json(json.dumps(total.as_dict(), indent=2)))
    else:
        print_ingest(total)
    return 1 if total.rejected and not (total.added or total.updated or total.unchanged) else 0


def _crawl(args: argparse.Namespace) -> int:
    import anyio

    from ard_mcp.registry import Registry
    from ard_mcp.web.report import CrawlRequest
    from ard_mcp.web.service import run_crawl

    request = CrawlRequest(targets=args.targets, mcpRegistries=args.mcp_registry, refresh=args.refresh, force=args.force)
    if not (request.targets or request.mcpRegistries or request.refresh):
        raise SystemExit("ard-mcp crawl: give a TARGET, --mcp-registry URL or --refresh")
    registry = Registry(config_of(args))
    say = (lambda message: print(shown(message), file=sys.stderr)) if not args.json else None
    try:
        report = anyio.run(run_crawl, registry, crawl_of(args), request, ProgressBar("embedding"), say)
    finally:
        registry.close()
    if args.json:
        print(shown_json(report.model_dump_json(indent=2)))
    else:
        print_crawl(report)
    return 1 if report.failed else 0


def _search(args: argparse.Namespace) -> int:
    """Through the back-end of this registry where one can serve it (`surfaces.cli.search`), else in this process; the
    input is checked here first either way, so a refusal reads as it always did."""
    from ard_mcp.search.query import SearchQuery
    from ard_mcp.search.visibility import EVERYONE
    from ard_mcp.surfaces.cli import search as cli_search

    trimmed = None if args.detail == "compact" else args.detail
    query = SearchQuery.of(args.text, args.filter, detail=trimmed, page_size=args.page_size, page_token=args.page_token)
    asked = cli_search.arguments(args.text, args.filter, args.page_size, args.page_token, args.detail)
    served = cli_search.served(args, config_of, asked)
    if served is not None:
        return served
    from ard_mcp.registry import Registry

    registry = Registry(config_of(args))
    try:
        page = registry.search(query, viewer=EVERYONE)  # the local operator sees every entry
        response = page.brief() if args.detail == "compact" else page.response()
    finally:
        registry.close()
    cli_search.print_search(response.model_dump(mode="json", by_alias=True))
    return 0


def _reindex(args: argparse.Namespace) -> int:
    from ard_mcp.registry import Registry

    registry = Registry(config_of(args), rebuilding=True)
    try:
        examples = registry.reindex(ProgressBar("reindexing"))
        agents = registry.store.count()
    finally:
        registry.close()
    print(f"reindexed {examples} examples of {agents} agents")
    return 0


def _eval(args: argparse.Namespace) -> int:
    from ard_mcp.evaluation.judgements import load_queries
    from ard_mcp.evaluation.report import evaluate, format_table, registry_search
    from ard_mcp.registry import Registry

    try:
        judgements = load_queries(args.queries)
    except (OSError, ValueError) as exc:
        print(shown(f"ard-mcp: {exc}"), file=sys.stderr)
        return 2
    registry = Registry(config_of(args))
    try:
        report = evaluate(registry_search(registry), judgements)
    finally:
        registry.close()
    print(shown_json(json.dumps(report.to_dict(), indent=2)) if args.json else format_table(report))
    return 0


def _export(args: argparse.Namespace) -> int:
    from ard_mcp.index.export import export, export_postgres, replacing

    reported = [time.monotonic()]

    def progress(done: int, total: int) -> None:  # stdout may be the manifest itself: progress is logged to stderr
        if done == total or time.monotonic() - reported[0] >= 5.0:
            reported[0] = time.monotonic()
            log.info("exported %d of %d entries", done, total)

    def read(out: IO[bytes]) -> int:
        if args.store_url:
            return export_postgres(args.store_url, out, served=args.served, progress=progress)
        return export(args.data_dir, out, served=args.served, progress=progress)

    if args.path == "-":
        try:
            written = read(sys.stdout.buffer)
            sys.stdout.flush()
        except BrokenPipeError:  # the reader stopped early (`| head`); quiet, and no second report at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
        where = "stdout"
    else:
        with replacing(Path(args.path)) as out:
            written = read(out)
        where = args.path
    print(f"exported {written} entries to {where}", file=sys.stderr)
    return 0


def _check(args: argparse.Namespace) -> int:
    from ard_mcp.index.repair import check_store
    from ard_mcp.registry import Registry

    registry = Registry(config_of(args))
    try:
        report = check_store(registry.store, registry.indexer, repair=args.repair, remove=args.remove)
    finally:
        registry.close()
    print(f"checked {report.checked} entries: {len(report.unreadable)} cannot be read")
    for identifier in report.repaired:
        print(shown(f"  repaired {identifier}"))
    for identifier in report.removed:
        print(shown(f"  removed  {identifier}"))
    for identifier, why in report.still_unreadable:
        print(shown(f"  unreadable {identifier}: {why}"))
    if report.still_unreadable:
        print("repair with --repair (registers each again through today's rules) or remove with --remove", file=sys.stderr)
    return 1 if report.still_unreadable else 0


def _backup(args: argparse.Namespace) -> int:
    from ard_mcp.index.backup import backup

    if args.store_url:
        raise InvalidArgument(
            "the catalog is in PostgreSQL (--store-url): back it up with PostgreSQL's own tools, e.g. "
            "`pg_dump --format=custom --file=ard.dump DBNAME` (restore with pg_restore); `ard-mcp export` writes its entries as a manifest"
        )

    copy = backup(args.data_dir, args.dest)
    print(f"backed up {copy.agents} agents ({copy.size / 2**20:.1f} MiB) to {copy.path}")
    return 0


COMMANDS: dict[str, Any] = {
    "serve": _serve,
    "ingest": _ingest,
    "crawl": _crawl,
    "search": _search,
    "reindex": _reindex,
    "eval": _eval,
    "export": _export,
    "check": _check,
    "backup": _backup,
    "invocations": lambda args: _invocation_settings().print_invocations(args),
    "packages": lambda args: _package_settings().packages_command(args),
    "snapshot": lambda args: snapshot_command(args, config_of(args)),
    "host-config": host_config_command,
}


def _invocation_settings() -> ModuleType:
    """Imported when a command needs it: with the package settings it pulls in the MCP SDK (0.4 s here), which a
    host's plain `serve` imports in the background (`stdio`), after its first answers."""
    from ard_mcp.surfaces.cli import invocation_settings

    return invocation_settings


def _package_settings() -> ModuleType:
    from ard_mcp.surfaces.cli import package_settings

    return package_settings


def main(argv: list[str] | None = None) -> int:
    """Run a subcommand; with none, `serve` (so `uvx ard-mcp` in an MCP host config starts the server)."""
    args = build_parser().parse_args(command_words(sys.argv[1:] if argv is None else argv))
    configure_logging(args.log_level, args.log_format)
    for attempt in range(2):
        try:
            return int(COMMANDS[args.command](args))
        except DataDirInUse as exc:
            if attempt == 0 and _idle_backend_stopped(args):
                continue
            print(shown(f"ard-mcp: {exc.message}"), file=sys.stderr)
        except ArdError as exc:
            print(shown(f"ard-mcp: {exc.message}"), file=sys.stderr)
        return 2
    return 2


def _idle_backend_stopped(args: argparse.Namespace) -> bool:
    """Whether a back-end with no host held the directory and has let it go (one a search started lingers a
    while), so the command may run after all (each command claims the directory before it prints anything)."""
    from ard_mcp.surfaces.sharing.frontend import stop_idle

    return stop_idle(args.data_dir.expanduser().absolute())
