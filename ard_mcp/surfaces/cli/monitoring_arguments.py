"""The command line's side of monitoring (docs/monitoring.md): the log format every command takes, and where
`serve` answers a scraper. Traces take no flag: the standard OTEL_* variables drive them (`monitoring.tracing`)."""

from __future__ import annotations

import argparse

from ard_mcp.config import env

LOG_FORMATS = ("text", "json")


def log_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default=env("LOG_FORMAT", "text"),
        help="text: one escaped line a record; json: one JSON object a line (time, level, logger, message, request_id, trace_id) "
        "(ARD_MCP_LOG_FORMAT; default %(default)s)",
    )


def listen_address(value: str) -> tuple[str, int]:
    """HOST:PORT, the host a name, an IPv4 address or a bracketed IPv6 one ([::1]:9100)."""
    host, separator, port = value.rpartition(":")
    host = host.strip("[]")
    if not separator or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, e.g. 127.0.0.1:9100 (got {value!r})")
    return host, int(port)


def monitoring_options(parser: argparse.ArgumentParser) -> None:
    """Where `serve` answers a Prometheus scraper."""
    parser.add_argument(
        "--metrics-address",
        type=listen_address,
        default=env("METRICS_ADDRESS"),
        metavar="HOST:PORT",
        help="over HTTP, serve the Prometheus metrics at this separate address, open to whoever reaches it, and not at /metrics on "
        "the registry's port (there an operator's token reads them unless the registry has no tokens) (ARD_MCP_METRICS_ADDRESS)",
    )
