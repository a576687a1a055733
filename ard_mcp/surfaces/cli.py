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
from typing import Any

from ard_mcp import __version__
from ard_mcp.config import Config, default_data_dir, env
from ard_mcp.errors import ArdError
from ard_mcp.formats.limits import DEFAULT_MAX_ENTRY_BYTES, EntryLimits
from ard_mcp.surfaces.rest.ratelimit import DEFAULT_RATE_LIMITS, RateLimits
from ard_mcp.surfaces.rest.settings import DEFAULT_MAX_BODY_BYTES, is_loopback

log = logging.getLogger("ard_mcp")
TRANSPORTS = ("stdio", "sse", "streamable-http")


class ProgressBar:
    """A one-line progress bar on stderr (stdout may be a pipe the user is reading JSON from)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.started = time.monotonic()
        self.tty = sys.stderr.isatty()
        self.last = -1.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self.last < (0.1 if self.tty else 5.0):
            return
        self.last = now
        width = 30
        filled = int(width * done / total) if total else width
        rate = done / max(now - self.started, 1e-6)
        line = f"{self.label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} texts ({rate:.0f}/s)"
        sys.stderr.write(("\r" + line) if self.tty else line + "\n")
        if self.tty and done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(env("DATA_DIR") or default_data_dir()),
        help="where the catalog and its index live (ARD_MCP_DATA_DIR; default %(default)s)",
    )
    parser.add_argument(
        "--model-dir",
        type=Path,
        default=Path(m) if (m := env("MODEL_DIR")) else None,
        help="embedding model directory with model.json (ARD_MCP_MODEL_DIR; default: the bundled model)",
    )
    parser.add_argument(
        "--chroma-url",
        default=env("CHROMA_URL"),
        help="use the Chroma server at http://HOST:PORT (`chroma run`) instead of embedded Chroma; several ard-mcp "
        "processes may then share it and the data directory (ARD_MCP_CHROMA_URL)",
    )
    parser.add_argument("--log-level", default=env("LOG_LEVEL", "INFO"), help="logging level on stderr (ARD_MCP_LOG_LEVEL)")
    parser.add_argument(
        "--max-entry-bytes",
        type=int,
        default=_env_int("MAX_ENTRY_BYTES", DEFAULT_MAX_ENTRY_BYTES),
        help="larger entries are refused when registered or ingested (ARD_MCP_MAX_ENTRY_BYTES; default %(default)s)",
    )


def _env_int(name: str, default: int) -> int:
    value = env(name)
    try:
        return int(value) if value is not None else default
    except ValueError:
        raise SystemExit(f"ard-mcp: ARD_MCP_{name} must be an integer (got {value!r})") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ard-mcp", description="Agent discovery registry (ARD v0.9) as an MCP server.")
    parser.add_argument("--version", action="version", version=f"ard-mcp {__version__}")
    commands = parser.add_subparsers(dest="command")

    serve = commands.add_parser("serve", help="run the MCP server")
    _common(serve)
    serve.add_argument(
        "--transport", choices=TRANSPORTS, default=env("TRANSPORT", "stdio"), help="(ARD_MCP_TRANSPORT; default %(default)s)"
    )
    serve.add_argument("--host", default=env("HOST", "127.0.0.1"), help="HTTP bind address (ARD_MCP_HOST; default %(default)s)")
    serve.add_argument("--port", type=int, default=int(env("PORT", "8000") or 8000), help="HTTP port (ARD_MCP_PORT; default %(default)s)")
    serve.add_argument(
        "--public-url",
        default=env("PUBLIC_URL"),
        help="URL this registry is reached at, reported as each result's source (ARD_MCP_PUBLIC_URL)",
    )
    serve.add_argument(
        "--token-file",
        type=Path,
        default=Path(t) if (t := env("TOKEN_FILE")) else None,
        help="bearer tokens for writes over HTTP, one '[name] token [publisher domains]' per line (ARD_MCP_TOKEN_FILE)",
    )
    serve.add_argument(
        "--oauth-issuer",
        default=env("OAUTH_ISSUER"),
        help="accept bearer JWTs from this OAuth issuer too; scopes ard:publish:<domain> say which publishers a token may "
        "write (ARD_MCP_OAUTH_ISSUER)",
    )
    serve.add_argument(
        "--oauth-audience",
        default=env("OAUTH_AUDIENCE"),
        help="the aud a JWT must name (ARD_MCP_OAUTH_AUDIENCE; default: the registry's URL, --public-url or the bound address)",
    )
    serve.add_argument(
        "--oauth-jwks-url",
        default=env("OAUTH_JWKS_URL"),
        help="where the issuer's signing keys are (ARD_MCP_OAUTH_JWKS_URL; default: jwks_uri of its OpenID / OAuth metadata)",
    )
    serve.add_argument(
        "--allow-anonymous-writes",
        action="store_true",
        default=_truthy(env("ALLOW_ANONYMOUS_WRITES")),
        help="serve a non-loopback address without a token file: anyone who reaches it can write (ARD_MCP_ALLOW_ANONYMOUS_WRITES)",
    )
    serve.add_argument(
        "--allowed-hosts",
        default=env("ALLOWED_HOSTS"),
        help="comma-separated Host headers to answer (name or name:port or name:*; * for any) (ARD_MCP_ALLOWED_HOSTS; "
        "default: loopback names on a loopback address, any otherwise)",
    )
    serve.add_argument(
        "--cors-origins",
        default=env("CORS_ORIGINS"),
        help="comma-separated origins allowed by CORS (ARD_MCP_CORS_ORIGINS; default: CORS off)",
    )
    serve.add_argument(
        "--max-body-bytes",
        type=int,
        default=int(env("MAX_BODY_BYTES", str(DEFAULT_MAX_BODY_BYTES)) or DEFAULT_MAX_BODY_BYTES),
        help="larger request bodies get 413 (ARD_MCP_MAX_BODY_BYTES; default %(default)s)",
    )
    for kind, default, what in (
        ("read", DEFAULT_RATE_LIMITS.reads, "searches, listings and other reads a minute per client address and per token"),
        ("write", DEFAULT_RATE_LIMITS.writes, "registrations and deletions a minute per client address and per token"),
        ("auth-failure", DEFAULT_RATE_LIMITS.auth_failures, "requests with an invalid token a minute per client address"),
    ):
        name = f"{kind.upper().replace('-', '_')}_RATE"
        serve.add_argument(
            f"--{kind}-rate",
            type=int,
            default=_env_int(name, default),
            metavar="N",
            help=f"{what}, then 429; 0 for no limit (ARD_MCP_{name}; default %(default)s)",
        )
    serve.add_argument(
        "--rate-limit-loopback",
        action="store_true",
        default=_truthy(env("RATE_LIMIT_LOOPBACK")),
        help="apply the rate limits to loopback clients too (ARD_MCP_RATE_LIMIT_LOOPBACK)",
    )

    ingest = commands.add_parser("ingest", help="load ai-catalog.json files into the registry")
    _common(ingest)
    ingest.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    ingest.add_argument("--json", action="store_true", help="print the summary as JSON")

    search = commands.add_parser("search", help="search the registry and print the search_agents JSON")
    _common(search)
    search.add_argument("text")
    search.add_argument(
        "--filter", type=json.loads, default=None, help='ARD filter as JSON, e.g. \'{"type": ["application/mcp-server-card+json"]}\''
    )
    search.add_argument("--page-size", type=int, default=10)
    search.add_argument("--page-token", default=None)

    reindex = commands.add_parser("reindex", help="rebuild the vector index from the stored catalog (after a crash or a model change)")
    _common(reindex)

    evaluate = commands.add_parser("eval", help="measure search quality on your own labelled queries (JSON lines)")
    _common(evaluate)
    evaluate.add_argument(
        "--queries", type=Path, required=True, metavar="FILE.jsonl", help='lines of {"query", "relevant", "relevant_any_of"}'
    )
    evaluate.add_argument("--json", action="store_true", help="print the report as JSON")

    export = commands.add_parser(
        "export",
        help="write the whole registry as one ai-catalog.json manifest",
        description="Write every stored entry as one ARD v0.9 ai-catalog.json manifest, streamed in batches (flat memory at any "
        "size). Entries are written as stored, with every representative query, so `ard-mcp ingest` of the file into an empty "
        "data directory restores the same entries; an entry registered with one query or more than five is then outside the "
        "schema's 2-5 (ingest reads it back with a warning), and --served writes entries as served instead (the first five, a "
        "lone one left out), always schema-valid. Reads the store read-only without claiming the "
        "data directory, so it works while a server runs on it, and needs neither the model nor Chroma.",
    )
    _common(export)
    export.add_argument(
        "path", nargs="?", default="-", metavar="PATH", help="file to write, replaced only once complete; - (default) is stdout"
    )
    export.add_argument(
        "--served", action="store_true", help="write entries as served (schema-valid: at most five representative queries), not as stored"
    )

    backup = commands.add_parser(
        "backup",
        help="copy the catalog store (catalog.sqlite3) with SQLite's online backup, safe while a server runs",
        description="Copy the data directory's catalog.sqlite3 to DEST with SQLite's online backup API: one consistent snapshot, "
        "taken read-only while a server on the same data directory keeps serving and writing (the store is in WAL mode; the "
        "directory is not claimed, since the claim guards embedded Chroma, which this does not open). chroma/ is not copied: "
        "it is derived. To restore, copy the backup to <data-dir>/catalog.sqlite3 of an empty data directory and run "
        "`ard-mcp reindex`, which rebuilds the vector index from the stored vectors without running the model.",
    )
    _common(backup)
    backup.add_argument(
        "dest", type=Path, metavar="DEST", help="file to write (replaced only once complete), or a directory to hold catalog.sqlite3"
    )
    return parser


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def _csv(value: str | None) -> tuple[str, ...]:
    return tuple(part.strip() for part in (value or "").split(",") if part.strip())


def _config(args: argparse.Namespace) -> Config:
    return Config(
        data_dir=args.data_dir,
        model_dir=args.model_dir,
        source_url=getattr(args, "public_url", None),
        chroma_url=args.chroma_url,
        limits=EntryLimits(max_entry_bytes=args.max_entry_bytes),
    )


def _serve(args: argparse.Namespace) -> int:
    if args.transport == "stdio":
        from ard_mcp.index import datadir
        from ard_mcp.surfaces.mcp_server import build_server

        config = _config(args)
        # The server claims the directory as it starts; trying first makes a directory in use a clear error
        # and exit status, not a traceback out of the server's task group.
        datadir.release(datadir.claim(config.data_dir, shared=config.chroma_url is not None))
        build_server(config).run()
        return 0
    return _serve_http(args)


def _serve_http(args: argparse.Namespace) -> int:
    """MCP and the REST routes in one app; refuses to expose open writes beyond this machine by accident."""
    from ard_mcp.registry import Registry
    from ard_mcp.surfaces.auth import TokenStore
    from ard_mcp.surfaces.rest.app import serve
    from ard_mcp.surfaces.rest.settings import HttpSettings

    try:
        tokens = TokenStore.load(args.token_file) if args.token_file else TokenStore()
        if args.oauth_issuer:
            from ard_mcp.surfaces.oauth import JwtVerifier

            audience = args.oauth_audience or HttpSettings(host=args.host, port=args.port).named(_config(args)).source
            verifier = JwtVerifier(args.oauth_issuer, audience, args.oauth_jwks_url)
            verifier.prefetch()
            tokens = tokens.with_verifier(verifier)
    except ValueError as exc:
        print(f"ard-mcp: {exc}", file=sys.stderr)
        return 2
    if not tokens.configured and not is_loopback(args.host) and not args.allow_anonymous_writes:
        print(
            f"ard-mcp: refusing to serve on {args.host} without a token: anyone who can reach it could register and delete entries. "
            f"Give --token-file FILE (ARD_MCP_TOKEN_FILE), or --allow-anonymous-writes if that is what you want.",
            file=sys.stderr,
        )
        return 2
    if args.max_body_bytes < 1:
        print("ard-mcp: --max-body-bytes must be positive", file=sys.stderr)
        return 2
    allowed = _csv(args.allowed_hosts) or None
    rates = RateLimits(args.read_rate, args.write_rate, args.auth_failure_rate, args.rate_limit_loopback)
    settings = HttpSettings(
        args.transport, args.host, args.port, allowed, _csv(args.cors_origins), args.max_body_bytes, tokens, rate_limits=rates
    )
    if allowed is None and not is_loopback(args.host):
        log.warning("answering any Host header on %s; pass --allowed-hosts with the names clients use", args.host)
    config = settings.named(_config(args))
    registry = Registry(config)  # opened before listening, so a data directory in use is a clear error
    mcp_path = "/sse" if args.transport == "sse" else "/mcp"
    log.info(
        "serving MCP at http://%s:%d%s and the REST API (/search, /discover, /agents, ...) on the same port", args.host, args.port, mcp_path
    )
    if not tokens.configured:
        log.info("no token file: writes are open to every client that can reach this address")
    serve(config, settings, registry, args.log_level)
    return 0


def _ingest(args: argparse.Namespace) -> int:
    from ard_mcp.formats.manifests import file_entries
    from ard_mcp.index.indexer import IngestReport
    from ard_mcp.registry import Registry

    registry = Registry(_config(args))
    total = IngestReport()
    try:
        for path in args.paths:
            try:
                total.add(registry.indexer.register_many(file_entries(path), ProgressBar(f"embedding {path.name}")))
            except ArdError as exc:
                total.rejected.append(exc.message)
    finally:
        registry.close()
    if args.json:
        print(json.dumps(total.as_dict(), indent=2))
    else:
        print(
            f"added {total.added}, updated {total.updated}, unchanged {total.unchanged}, rejected {len(total.rejected)}, "
            f"warnings {len(total.warnings)}"
        )
        for reason in total.rejected:
            print(f"  rejected {reason}")
        for warning in total.warnings:
            print(f"  warning {warning}")
    return 1 if total.rejected and not (total.added or total.updated or total.unchanged) else 0


def _search(args: argparse.Namespace) -> int:
    from ard_mcp.registry import Registry
    from ard_mcp.search.query import SearchQuery

    registry = Registry(_config(args))
    try:
        response = registry.search(SearchQuery.of(args.text, args.filter, page_size=args.page_size, page_token=args.page_token)).response()
    finally:
        registry.close()
    print(json.dumps(response.model_dump(mode="json", by_alias=True), indent=2, ensure_ascii=False))
    return 0


def _reindex(args: argparse.Namespace) -> int:
    from ard_mcp.registry import Registry

    registry = Registry(_config(args), rebuilding=True)
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
        print(f"ard-mcp: {exc}", file=sys.stderr)
        return 2
    registry = Registry(_config(args))
    try:
        report = evaluate(registry_search(registry), judgements)
    finally:
        registry.close()
    print(json.dumps(report.to_dict(), indent=2) if args.json else format_table(report))
    return 0


def _export(args: argparse.Namespace) -> int:
    from ard_mcp.index.export import export, replacing

    reported = [time.monotonic()]

    def progress(done: int, total: int) -> None:  # stdout may be the manifest itself: progress is logged to stderr
        if done == total or time.monotonic() - reported[0] >= 5.0:
            reported[0] = time.monotonic()
            log.info("exported %d of %d entries", done, total)

    if args.path == "-":
        try:
            written = export(args.data_dir, sys.stdout.buffer, served=args.served, progress=progress)
            sys.stdout.flush()
        except BrokenPipeError:  # the reader stopped early (`| head`); quiet, and no second report at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
        where = "stdout"
    else:
        with replacing(Path(args.path)) as out:
            written = export(args.data_dir, out, served=args.served, progress=progress)
        where = args.path
    print(f"exported {written} entries to {where}", file=sys.stderr)
    return 0


def _backup(args: argparse.Namespace) -> int:
    from ard_mcp.index.backup import backup

    copy = backup(args.data_dir, args.dest)
    print(f"backed up {copy.agents} agents ({copy.size / 2**20:.1f} MiB) to {copy.path}")
    return 0


COMMANDS: dict[str, Any] = {
    "serve": _serve,
    "ingest": _ingest,
    "search": _search,
    "reindex": _reindex,
    "eval": _eval,
    "export": _export,
    "backup": _backup,
}


def main(argv: list[str] | None = None) -> int:
    """Run a subcommand; with none, `serve` (so `uvx ard-mcp` in an MCP host config starts the server)."""
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        argv = ["serve", *argv]
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True
    )
    for noisy in ("chromadb", "httpx", "mcp.server.lowlevel"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        return int(COMMANDS[args.command](args))
    except ArdError as exc:
        print(f"ard-mcp: {exc.message}", file=sys.stderr)
        return 2
