"""The command line's flags: each with an `ARD_MCP_*` environment fallback (MCP hosts configure servers
through environment variables), so `ard-mcp --help` documents every setting in one place."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ard_mcp import __version__
from ard_mcp.config import default_data_dir, env, shipped_model_dir
from ard_mcp.formats.limits import DEFAULT_MAX_ENTRY_BYTES
from ard_mcp.surfaces.cli.host_config import host_config_commands
from ard_mcp.surfaces.cli.invocation_arguments import invocation_commands, invocation_options
from ard_mcp.surfaces.cli.monitoring_arguments import log_options, monitoring_options
from ard_mcp.surfaces.cli.option_values import csv_list, env_number, truthy
from ard_mcp.surfaces.cli.snapshot_command import snapshot_commands, snapshot_options
from ard_mcp.surfaces.rest.ratelimit import DEFAULT_RATE_LIMITS
from ard_mcp.surfaces.rest.settings import DEFAULT_BODY_TIMEOUT, DEFAULT_HEADER_TIMEOUT, DEFAULT_MAX_BODY_BYTES, KEEP_ALIVE_SECONDS
from ard_mcp.trust.policy import TRUST_POLICIES

TRANSPORTS = ("stdio", "sse", "streamable-http")


def model_dir(value: str) -> Path:
    """A model directory, or the name of a shipped model (`tools`, `minilm`): a bare name that is not a
    directory here."""
    path = Path(value)
    if path.is_dir() or value != path.name:  # a path ("./tools", "models/tools"), not a bare name
        return path
    return shipped_model_dir(value) or path


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(env("DATA_DIR") or default_data_dir()),
        help="where the catalog and its index live (ARD_MCP_DATA_DIR; default %(default)s)",
    )
    parser.add_argument(
        "--model-dir",
        type=model_dir,
        default=model_dir(m) if (m := env("MODEL_DIR")) else None,
        help="embedding model directory with model.json, or a shipped model by name: `tools` (the default, the encoder trained "
        "for tool retrieval) or `minilm` (the general-purpose model it started from) (ARD_MCP_MODEL_DIR)",
    )
    parser.add_argument(
        "--chroma-url",
        default=env("CHROMA_URL"),
        help="use the Chroma server at http://HOST:PORT (`chroma run`) instead of embedded Chroma; several ard-mcp "
        "processes may then share it and the data directory (ARD_MCP_CHROMA_URL)",
    )
    parser.add_argument(
        "--store-url",
        default=env("STORE_URL"),
        help="keep the catalog in the PostgreSQL database at postgresql://USER[:PASSWORD]@HOST[:PORT]/DB instead of "
        "SQLite in the data directory; any number of processes may share it; with --chroma-url too, no data directory "
        "is used (ARD_MCP_STORE_URL)",
    )
    parser.add_argument("--log-level", default=env("LOG_LEVEL", "INFO"), help="logging level on stderr (ARD_MCP_LOG_LEVEL)")
    log_options(parser)
    parser.add_argument(
        "--max-entry-bytes",
        type=int,
        default=env_number("MAX_ENTRY_BYTES", DEFAULT_MAX_ENTRY_BYTES, int),
        help="larger entries are refused when registered or ingested (ARD_MCP_MAX_ENTRY_BYTES; default %(default)s)",
    )


def ranking_options(parser: argparse.ArgumentParser) -> None:
    """How a search ranks, beyond the model (commands that search)."""
    parser.add_argument(
        "--rerank",
        type=Path,
        default=Path(r) if (r := env("RERANK")) else None,
        metavar="DIR",
        help="rescore each search's top 20 candidates with this cross-encoder (bench/train_reranker.py; docs/reranker.md); off by "
        "default: it costs more than a whole search on a small CPU (ARD_MCP_RERANK)",
    )


def federation_options(parser: argparse.ArgumentParser) -> None:
    """Which registries a search may also ask (ARD §8)."""
    parser.add_argument(
        "--upstream",
        action="append",
        default=list(csv_list(env("UPSTREAMS"))),
        metavar="URL",
        help="an upstream registry's ARD base URL (POST URL/search), repeatable (ARD_MCP_UPSTREAMS, comma-separated)",
    )
    parser.add_argument(
        "--upstream-token-file",
        type=Path,
        default=Path(t) if (t := env("UPSTREAM_TOKEN_FILE")) else None,
        metavar="FILE",
        help="bearer tokens for upstreams, one 'URL TOKEN' per line (ARD_MCP_UPSTREAM_TOKEN_FILE)",
    )
    parser.add_argument(
        "--no-registry-upstreams",
        action="store_true",
        default=truthy(env("NO_REGISTRY_UPSTREAMS")),
        help="do not ask the registries the catalog holds as application/ai-registry+json entries (ARD_MCP_NO_REGISTRY_UPSTREAMS)",
    )


def crawl_options(parser: argparse.ArgumentParser) -> None:
    """What the crawler and the server's background refresh share (and trust checks: both fetch from the web)."""
    parser.add_argument(
        "--trust-policy",
        choices=TRUST_POLICIES,
        default=env("TRUST_POLICY", "show"),
        help="show: serve every entry with its trust status (filter trust.status), third-party claims ranked lower; demote: rank "
        "invalid and self-asserted entries lower too; refuse-invalid: refuse entries whose trust manifest fails its check; "
        "publisher-only: refuse third-party claims as well (ARD_MCP_TRUST_POLICY; default %(default)s)",
    )
    parser.add_argument(
        "--allow-private-networks",
        action="store_true",
        default=truthy(env("ALLOW_PRIVATE_NETWORKS")),
        help="let the crawler fetch from loopback, private and reserved addresses; never link-local or cloud metadata ones "
        "(ARD_MCP_ALLOW_PRIVATE_NETWORKS)",
    )
    parser.add_argument(
        "--dns-server", default=env("DNS_SERVER"), metavar="HOST[:PORT]", help="resolve names through this DNS server (ARD_MCP_DNS_SERVER)"
    )
    parser.add_argument(
        "--refresh-interval",
        type=float,
        default=env_number("REFRESH_INTERVAL", 3600.0, float),
        help="seconds between refreshes of a crawled document that gives no max-age (ARD_MCP_REFRESH_INTERVAL; default %(default)s)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ard-mcp", description="Agent discovery registry (ARD v0.9) as an MCP server.")
    parser.add_argument("--version", action="version", version=f"ard-mcp {__version__}")
    commands = parser.add_subparsers(dest="command")

    serve = commands.add_parser("serve", help="run the MCP server")
    _common(serve)
    ranking_options(serve)
    crawl_options(serve)
    federation_options(serve)
    invocation_options(serve)
    monitoring_options(serve)
    serve.add_argument(
        "--transport", choices=TRANSPORTS, default=env("TRANSPORT", "stdio"), help="(ARD_MCP_TRANSPORT; default %(default)s)"
    )
    serve.add_argument(
        "--shared",
        action="store_true",
        help="over stdio, share one back-end with every other host on this data directory (started when none runs, stopped "
        "ARD_MCP_BACKEND_IDLE seconds after its last host leaves; default 60); what `host-config` writes",
    )
    serve.add_argument("--backend", action="store_true", help=argparse.SUPPRESS)  # the back-end a --shared front-end starts
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
        "--mcp-requires-token",
        action="store_true",
        default=truthy(env("MCP_REQUIRES_TOKEN")),
        help="with --oauth-issuer: every MCP request needs a token (reads too), and /.well-known/oauth-protected-resource "
        "names the issuer so MCP clients can sign in; the REST reads stay public (ARD_MCP_MCP_REQUIRES_TOKEN)",
    )
    serve.add_argument(
        "--allow-anonymous-writes",
        action="store_true",
        default=truthy(env("ALLOW_ANONYMOUS_WRITES")),
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
        help="comma-separated origins allowed by CORS, whose pages may also write and use /mcp (ARD_MCP_CORS_ORIGINS; default: CORS off)",
    )
    serve.add_argument(
        "--max-body-bytes",
        type=int,
        default=int(env("MAX_BODY_BYTES", str(DEFAULT_MAX_BODY_BYTES)) or DEFAULT_MAX_BODY_BYTES),
        help="larger request bodies get 413 (ARD_MCP_MAX_BODY_BYTES; default %(default)s)",
    )
    serve.add_argument(
        "--body-timeout",
        type=float,
        default=env_number("BODY_TIMEOUT", DEFAULT_BODY_TIMEOUT, float),
        metavar="SECONDS",
        help="a request body not received within this gets 408 (ARD_MCP_BODY_TIMEOUT; default %(default)g)",
    )
    serve.add_argument(
        "--header-timeout",
        type=float,
        default=env_number("HEADER_TIMEOUT", DEFAULT_HEADER_TIMEOUT, float),
        metavar="SECONDS",
        help="a connection whose request headers are not complete within this of its opening (or of the request's first byte) "
        f"is closed, with a 408 when part of a request arrived; idle kept-alive connections close after {KEEP_ALIVE_SECONDS} s "
        "(ARD_MCP_HEADER_TIMEOUT; default %(default)g)",
    )
    for kind, default, what in (
        ("read", DEFAULT_RATE_LIMITS.reads, "searches, listings and other reads a minute per client address and per token"),
        ("write", DEFAULT_RATE_LIMITS.writes, "registrations and deletions a minute per client address and per token"),
        ("invoke", DEFAULT_RATE_LIMITS.invocations, "calls of agents through the registry a minute per client address and per token"),
        ("auth-failure", DEFAULT_RATE_LIMITS.auth_failures, "requests with an invalid token a minute per client address"),
    ):
        name = f"{kind.upper().replace('-', '_')}_RATE"
        serve.add_argument(
            f"--{kind}-rate",
            type=int,
            default=env_number(name, default, int),
            metavar="N",
            help=f"{what}, then 429; 0 for no limit (ARD_MCP_{name}; default %(default)s)",
        )
    serve.add_argument(
        "--rate-limit-loopback",
        action="store_true",
        default=truthy(env("RATE_LIMIT_LOOPBACK")),
        help="apply the rate limits to loopback clients too (ARD_MCP_RATE_LIMIT_LOOPBACK)",
    )

    snapshot_options(serve)
    invocation_commands(commands, _common)
    snapshot_commands(commands, _common)
    host_config_commands(commands, _common)

    ingest = commands.add_parser("ingest", help="load ai-catalog.json files into the registry")
    _common(ingest)
    ingest.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    ingest.add_argument("--json", action="store_true", help="print the summary as JSON")

    crawl = commands.add_parser(
        "crawl",
        help="fill the registry from the web: publishers' catalogs (well-known URI, robots.txt, HTML links, DNS), A2A cards, "
        "MCP server descriptions and MCP registries",
        description="TARGET is a domain (example.com), an origin (http://example.test:8080/) or the URL of a manifest, an HTML page, "
        "an A2A agent card or an MCP server.json / server card. Safe by default: http(s) only, no private or loopback addresses "
        "(checked after DNS and on every redirect), robots.txt honoured, sizes and times bounded.",
    )
    _common(crawl)
    crawl.add_argument("targets", nargs="*", metavar="TARGET")
    crawl.add_argument(
        "--mcp-registry", action="append", default=[], metavar="URL", help="import every server of an MCP registry (repeatable)"
    )
    crawl.add_argument("--refresh", action="store_true", help="fetch again the remembered documents that are due (with their validators)")
    crawl.add_argument("--force", action="store_true", help="with --refresh: every remembered document, due or not")
    crawl.add_argument("--max-depth", type=int, default=3, help="nested catalogs followed by URL (default %(default)s)")
    crawl.add_argument("--max-documents", type=int, default=100, help="documents one crawl fetches at most (default %(default)s)")
    crawl.add_argument("--json", action="store_true", help="print the report as JSON")
    crawl_options(crawl)

    search = commands.add_parser("search", help="search the registry and print the search_agents JSON")
    _common(search)
    ranking_options(search)
    search.add_argument("text")
    search.add_argument(
        "--filter", type=json.loads, default=None, help='ARD filter as JSON, e.g. \'{"type": ["application/mcp-server-card+json"]}\''
    )
    search.add_argument("--page-size", type=int, default=10)
    search.add_argument("--page-token", default=None)
    search.add_argument(
        "--detail",
        choices=("compact", "minimal", "summary", "full"),
        default="compact",
        help="as search_agents: compact (default) is one brief line per result, full the whole entries with evidence",
    )

    reindex = commands.add_parser("reindex", help="rebuild the vector index from the stored catalog (after a crash or a model change)")
    _common(reindex)

    evaluate = commands.add_parser("eval", help="measure search quality on your own labelled queries (JSON lines)")
    _common(evaluate)
    ranking_options(evaluate)
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
        "data directory, so it works while a server runs on it, and needs neither the model nor Chroma. With --store-url it "
        "reads the PostgreSQL store, in one snapshot likewise.",
    )
    _common(export)
    export.add_argument(
        "path", nargs="?", default="-", metavar="PATH", help="file to write, replaced only once complete; - (default) is stdout"
    )
    export.add_argument(
        "--served", action="store_true", help="write entries as served (schema-valid: at most five representative queries), not as stored"
    )

    check = commands.add_parser(
        "check",
        help="list stored entries that cannot be read, and repair or remove them",
        description="Read every stored entry as a search would and list those that cannot be read (written by an older "
        "version under looser rules, or edited by hand), with why. Reads leave such entries out, so the registry keeps "
        "serving; this is how an operator finds and clears them. Exits 1 while any remains. Run it with the server stopped "
        "(it claims the data directory), or against a shared PostgreSQL store.",
    )
    _common(check)
    check.add_argument("--repair", action="store_true", help="register each one again through today's rules; keeps those it fixes")
    check.add_argument("--remove", action="store_true", help="delete those that still cannot be read (after --repair, if given)")

    backup = commands.add_parser(
        "backup",
        help="copy the catalog store (catalog.sqlite3) with SQLite's online backup, safe while a server runs",
        description="Copy the data directory's catalog.sqlite3 to DEST with SQLite's online backup API: one consistent snapshot, "
        "taken read-only while a server on the same data directory keeps serving and writing (the store is in WAL mode; the "
        "directory is not claimed, since the claim guards embedded Chroma, which this does not open). chroma/ is not copied: "
        "it is derived. To restore, copy the backup to <data-dir>/catalog.sqlite3 of an empty data directory and run "
        "`ard-mcp reindex`, which rebuilds the vector index from the stored vectors without running the model. A PostgreSQL "
        "store (--store-url) is backed up with pg_dump instead; this command then says so.",
    )
    _common(backup)
    backup.add_argument(
        "dest", type=Path, metavar="DEST", help="file to write (replaced only once complete), or a directory to hold catalog.sqlite3"
    )
    return parser
