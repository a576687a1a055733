"""The registry's, the crawler's and federation's settings from a parsed command line: one reading of the flags
for every command and for both ways `serve` runs (HTTP in `cli`, stdio in `stdio`)."""

from __future__ import annotations

import argparse
import dataclasses

from ard_mcp.config import Config
from ard_mcp.federation.settings import FederationSettings, load_upstreams
from ard_mcp.formats.limits import EntryLimits
from ard_mcp.surfaces.cli.snapshot_command import starter
from ard_mcp.trust.policy import demoted_by
from ard_mcp.web.settings import CrawlSettings
from ard_mcp.web.sources import Schedule


def config_of(args: argparse.Namespace) -> Config:
    return Config(
        data_dir=args.data_dir,
        model_dir=args.model_dir,
        rerank_dir=getattr(args, "rerank", None),
        source_url=getattr(args, "public_url", None),
        chroma_url=args.chroma_url,
        store_url=args.store_url,
        limits=EntryLimits(max_entry_bytes=args.max_entry_bytes),
        demote_trust=demoted_by(getattr(args, "trust_policy", "show")),
        starter=starter(args) if args.command == "serve" else None,
    )


def federation_of(args: argparse.Namespace) -> FederationSettings:
    """Upstreams from `--upstream` (a bad URL or token file is a clear error at start, not at the first search)."""
    try:
        upstreams = load_upstreams(args.upstream, args.upstream_token_file)
    except (ValueError, OSError) as exc:
        raise SystemExit(f"ard-mcp: {exc}") from None
    return FederationSettings(
        upstreams=upstreams, registry_entries=not args.no_registry_upstreams, allow_private_networks=args.allow_private_networks
    )


def crawl_of(args: argparse.Namespace) -> CrawlSettings:
    """The crawler's settings from the flags `arguments.crawl_options` adds (to `crawl` and `serve`)."""
    if not hasattr(args, "allow_private_networks"):
        return CrawlSettings()
    base = CrawlSettings()
    depth, documents = getattr(args, "max_depth", base.limits.max_depth), getattr(args, "max_documents", base.limits.max_documents)
    interval = args.refresh_interval
    return CrawlSettings(
        allow_private_networks=args.allow_private_networks,
        dns_server=args.dns_server,
        limits=dataclasses.replace(base.limits, max_depth=depth, max_documents=documents),
        schedule=Schedule(interval=interval or base.schedule.interval, min_interval=min(base.schedule.min_interval, interval or 60.0)),
        background_refresh=interval > 0,
        trust_policy=args.trust_policy,
    )
