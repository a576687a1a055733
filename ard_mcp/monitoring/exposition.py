"""What a scrape reads: this process's metrics, or with `PROMETHEUS_MULTIPROC_DIR` every process's added up, and
the index's size, read at the scrape.

The index's size is the store's (agents, and the examples the index embeds), counted when asked rather than
kept in a gauge: any process sharing the store may change it, and the store keeps its counts until it
changes, so a scrape costs a query only after a write."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ard_mcp.monitoring import metrics

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric
    from prometheus_client.registry import Collector

Sizes = Callable[[], tuple[int, int] | None]  # agents and examples, or None while no index is open


class _IndexSize:
    def __init__(self, sizes: Sizes) -> None:
        self._sizes = sizes

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.core import GaugeMetricFamily

        found = self._sizes()
        if found is None:
            return
        agents, examples = found
        yield GaugeMetricFamily("ard_mcp_index_agents", "Entries in the catalog", value=agents)
        yield GaugeMetricFamily("ard_mcp_index_examples", "Examples the index embeds (descriptions, tools, skills, queries)", examples)


class _Scrape:
    def __init__(self, *parts: Collector) -> None:
        self._parts = parts

    def collect(self) -> Iterator[Metric]:
        for part in self._parts:
            yield from part.collect()


def collector(sizes: Sizes) -> Collector:
    """Everything a scrape reads (`metrics.enable()` first)."""
    own = metrics.registry()
    assert own is not None, "metrics are enabled before they are served"
    if os.environ.get(metrics.MULTIPROCESS_DIR):
        from prometheus_client.multiprocess import MultiProcessCollector

        return _Scrape(MultiProcessCollector(None), _IndexSize(sizes))  # type: ignore[no-untyped-call]
    return _Scrape(own, _IndexSize(sizes))


def render(sizes: Sizes, accept: str | None) -> tuple[bytes, str]:
    """The metrics text in the format the scraper accepts (Prometheus text, or OpenMetrics when asked), and its
    content type. Reads the store: call it off the event loop."""
    from prometheus_client.exposition import choose_encoder

    encoder, content_type = choose_encoder(accept or "")
    return encoder(collector(sizes)), content_type
