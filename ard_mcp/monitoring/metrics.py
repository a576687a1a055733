"""The registry's Prometheus metrics: each defined once here, recorded by the layer that knows it, scraped at
`GET /metrics` (`exposition`); docs/monitoring.md lists them with what to alert on.

Nothing is recorded until `enable()`, which `serve` over HTTP calls: until then every function below returns at
its first line and prometheus_client is not imported (57 ms, which stdio's first `tools/list` must not wait for).
Labels are bounded by construction: a route's template, never its path; a tool's name only where the server has
that tool; an upstream's origin among the most asked few, the rest `other` (`upstreams`); methods, statuses and
outcomes from fixed sets. A label a client could choose would grow the registry's memory and every scrape
without bound.

With `PROMETHEUS_MULTIPROC_DIR` set when the process starts, prometheus_client keeps each value in a file of that
directory, one per process, and a scrape adds up every process's (`exposition`): several worker processes behind
one address answer one `/metrics` between them."""

from __future__ import annotations

import atexit
import logging
import os
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ard_mcp.monitoring.upstreams import DEFAULT_LIMIT, OTHER, UpstreamLabels

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

log = logging.getLogger(__name__)
MULTIPROCESS_DIR = "PROMETHEUS_MULTIPROC_DIR"
UPSTREAM_LIMIT = "ARD_MCP_METRICS_UPSTREAMS"  # how many upstream origins are labelled by name (`upstreams`)
OUTCOMES = ("ok", "failed", "late")
SECONDS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
RESULTS = (0, 1, 2, 3, 5, 10, 20, 50, 100)
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"})


class _Metrics:
    """The metric families, made once per process."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics

        disable_created_metrics()  # type: ignore[no-untyped-call]  # a `_created` series beside every counter and histogram doubles a scrape for a start time
        self.registry = CollectorRegistry()
        r = self.registry
        self.http = Histogram(
            "ard_mcp_http_request_duration_seconds",
            "HTTP requests by route template, method and status, and how long each took (its _count counts them)",
            ["route", "method", "status"],
            buckets=SECONDS,
            registry=r,
        )
        self.tools = Histogram(
            "ard_mcp_mcp_tool_call_duration_seconds",
            "MCP tool calls by tool and outcome (ok, error), and how long each took",
            ["tool", "outcome"],
            buckets=SECONDS,
            registry=r,
        )
        self.searches = Histogram(
            "ard_mcp_search_duration_seconds",
            "Searches by the confidence of their answer (high, low; none: no results), and how long each took",
            ["confidence"],
            buckets=SECONDS,
            registry=r,
        )
        self.results = Histogram("ard_mcp_search_results", "Results on the page a search returned", buckets=RESULTS, registry=r)
        self.stages = Histogram(
            "ard_mcp_search_stage_duration_seconds",
            "A ranking's own stages: embedding the query, and ranking the candidates (the embedding left out)",
            ["stage"],
            buckets=SECONDS,
            registry=r,
        )
        self.crawled = Counter(
            "ard_mcp_crawl_documents",
            "Documents crawls and refreshes looked at, by outcome and how each was found",
            ["status", "via"],
            registry=r,
        )
        self.upstreams = Histogram(
            "ard_mcp_upstream_request_duration_seconds",
            "Federated searches' calls of upstream registries by origin and outcome (ok, failed, late: cut off by the deadline), "
            "and how long each took",
            ["upstream", "outcome"],
            buckets=SECONDS,
            registry=r,
        )
        self.skipped = Counter(
            "ard_mcp_upstream_skipped", "Upstream calls left out because the upstream's circuit breaker was open", ["upstream"], registry=r
        )
        self.breakers = Gauge(
            "ard_mcp_upstream_breaker_open",
            "1 while an upstream's circuit breaker is open (it kept failing, so it is not asked), as of the last search that would ask it",
            ["upstream"],
            multiprocess_mode="livemax",
            registry=r,
        )
        self.invocations = Histogram(
            "ard_mcp_invocation_duration_seconds",
            "Agent calls (action call) and tool-list fetches (action tools) through the registry, refused ones included, by protocol "
            "and outcome, and how long each took",
            ["action", "protocol", "outcome"],
            buckets=SECONDS,
            registry=r,
        )
        self.answered = Counter(
            "ard_mcp_invocation_response_bytes",
            "Bytes of the agents' answers as the registry returned them",
            ["action", "protocol"],
            registry=r,
        )
        self.packages = Gauge(
            "ard_mcp_package_servers_running", "Package servers running (started, not yet stopped)", multiprocess_mode="livesum", registry=r
        )
        self.limited = Counter(
            "ard_mcp_rate_limited",
            "Requests refused by a rate limit, by limit (reads, writes, invocations, auth_failures)",
            ["limit"],
            registry=r,
        )
        shared = bool(os.environ.get(MULTIPROCESS_DIR))
        self.upstream_labels = UpstreamLabels(upstream_limit(), dropped=None if shared else self._unlabelled)
        self.open_others: set[str] = set()  # origins counted as `other` whose breaker is open
        if shared:
            from prometheus_client.multiprocess import mark_process_dead

            atexit.register(mark_process_dead, os.getpid())  # this process's live gauges leave the sums when it ends
        else:  # the process's own CPU, memory and file descriptors; in multiprocess mode they would be summed across processes
            from prometheus_client import GC_COLLECTOR, PLATFORM_COLLECTOR, PROCESS_COLLECTOR

            for collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
                r.register(collector)

    def _unlabelled(self, origin: str) -> None:
        """`origin` lost its label to a more asked upstream: its series leave the scrape."""
        for outcome in OUTCOMES:
            self.upstreams.remove(origin, outcome)
        self.skipped.remove(origin)
        self.breakers.remove(origin)


def upstream_limit() -> int:
    """`ARD_MCP_METRICS_UPSTREAMS`, or the default where it is unset or not a count (said once, at start)."""
    text = os.environ.get(UPSTREAM_LIMIT, "").strip()
    if text.isdigit():
        return int(text)
    if text:
        log.warning("%s=%r is not a count: %d upstreams are labelled by name", UPSTREAM_LIMIT, text, DEFAULT_LIMIT)
    return DEFAULT_LIMIT


_on: _Metrics | None = None


def enable() -> None:
    """Record from now on (once per process; what is recorded adds up across the apps a process builds)."""
    global _on  # noqa: PLW0603 (one switch a process, turned on once)
    if _on is None:
        _on = _Metrics()


def enabled() -> bool:
    return _on is not None


def registry() -> CollectorRegistry | None:
    """This process's metrics (`exposition` reads them); None until `enable()`."""
    return _on.registry if _on is not None else None


def origin(url: str) -> str:
    """`scheme://host[:port]` of a URL: an upstream's label, without a path or a user's credentials."""
    parts = urlsplit(url)
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return f"{parts.scheme}://{parts.hostname or ''}{port}"


def request(route: str, method: str, status: int, seconds: float) -> None:
    if _on is not None:
        _on.http.labels(route, method if method in METHODS else "other", str(status)).observe(seconds)


def tool_call(tool: str, outcome: str, seconds: float) -> None:
    if _on is not None:
        _on.tools.labels(tool, outcome).observe(seconds)


def search(seconds: float, results: int, confidence: str) -> None:
    if _on is not None:
        _on.searches.labels(confidence).observe(seconds)
        _on.results.observe(results)


def stage(name: str, seconds: float) -> None:
    if _on is not None:
        _on.stages.labels(name).observe(seconds)


def crawled(status: str, via: str) -> None:
    if _on is not None:
        _on.crawled.labels(status, via).inc()


def upstream(url: str, outcome: str, seconds: float) -> None:
    if _on is not None:
        _on.upstreams.labels(_on.upstream_labels.asked(origin(url)), outcome).observe(seconds)


def upstream_skipped(url: str) -> None:
    if _on is not None:
        _on.skipped.labels(_on.upstream_labels.asked(origin(url))).inc()


def breaker(url: str, is_open: bool) -> None:
    """An upstream's breaker as of a search that would ask it; `other`'s is 1 while any of the others' is open."""
    if _on is None:
        return
    named = origin(url)
    label = _on.upstream_labels.label(named)
    if label != OTHER:
        _on.open_others.discard(named)
        _on.breakers.labels(label).set(1 if is_open else 0)
        return
    if is_open:
        _on.open_others.add(named)
    else:
        _on.open_others.discard(named)
    _on.breakers.labels(OTHER).set(1 if _on.open_others else 0)


def invocation(action: str, protocol: str | None, outcome: str, seconds: float, size: int) -> None:
    if _on is not None:
        _on.invocations.labels(action, protocol or "none", outcome).observe(seconds)
        if size:
            _on.answered.labels(action, protocol or "none").inc(size)


def package_servers(change: int) -> None:
    """One started (+1) or stopped (-1)."""
    if _on is not None:
        _on.packages.inc(change)


def rate_limited(limit: str) -> None:
    if _on is not None:
        _on.limited.labels(limit).inc()
