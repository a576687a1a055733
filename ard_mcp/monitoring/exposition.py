"""What a scrape reads: this process's metrics, or with `PROMETHEUS_MULTIPROC_DIR` every process's added up, and
the index's size as last read from the store.

The index's size is the store's (agents, and the examples the index embeds), read at the scrape rather than
kept in a gauge: any process sharing the store may change it, and the store keeps its counts until it
changes, so a scrape costs a query only after a write. But a scrape must not depend on the store: when
PostgreSQL was down, `/metrics` answered 500 with a traceback in the log at every scrape, and Prometheus saw no
series at all exactly while the alerts on errors had something to say. So `IndexSize` keeps the last size it
read, with its age (`ard_mcp_index_age_seconds`), reads in a thread of its own under a deadline (a store
behind a dropped network path hangs rather than refuses), lets no second read start while one is still
waiting (and, while the store is known to be failing, waits only a moment for it), and logs one WARNING
when the store stops answering and one line when it answers again."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ard_mcp.monitoring import metrics

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric
    from prometheus_client.registry import Collector

log = logging.getLogger(__name__)
Sizes = Callable[[], tuple[int, int, int] | None]  # agents, examples and agents with queued vectors; None while no index is open
READ_SECONDS = 2.0  # how long a scrape waits for the store's counts before answering with the last ones
FAILING_SECONDS = 0.25  # ... while the last read failed: a pool that cannot connect takes a second or more to say so


class IndexSize:
    """The index's size for a scrape: read from `sizes` at each collection (`refresh`), kept when the read fails
    or is late. One per served app, so the last size is the last size of this app's registry."""

    def __init__(self, sizes: Sizes | None = None, deadline: float = READ_SECONDS) -> None:
        self.sizes = sizes
        self.deadline = deadline
        self._last: tuple[int, int, int] | None = None
        self._read_at = 0.0  # time.monotonic() of the last read that answered
        self._failing: str | None = None  # why the store does not answer, while it does not
        self._reading: threading.Event | None = None  # set when the read in flight has returned
        self._lock = threading.Lock()

    def refresh(self, sizes: Sizes | None = None) -> None:
        """Read the size, waiting at most `deadline` (a read still in flight from an earlier scrape is waited
        for, not doubled); the last size stands when it fails or is late."""
        read = sizes or self.sizes
        if read is None:
            return
        with self._lock:
            if self._reading is None or self._reading.is_set():
                self._reading = threading.Event()
                threading.Thread(target=self._read, args=(read, self._reading), name="ard-mcp-index-size", daemon=True).start()
            reading = self._reading
        wait = self.deadline if self._failing is None else min(self.deadline, FAILING_SECONDS)
        if not reading.wait(wait):
            self._failed(f"no answer within {wait:g} s")

    def _read(self, sizes: Sizes, done: threading.Event) -> None:
        try:
            found = sizes()
        except Exception as exc:  # whatever the store raises: the scrape goes on with the last size
            self._failed(f"{type(exc).__name__}: {str(exc).strip()[:300]}")
        else:
            with self._lock:
                if found is not None:
                    self._last, self._read_at = found, time.monotonic()
                recovered, self._failing = self._failing is not None, None
            if recovered:
                log.info("the metrics read the index's size from the store again")
        finally:
            done.set()

    def _failed(self, why: str) -> None:
        with self._lock:
            first, self._failing = self._failing is None, why
        if first:  # once per outage, not once per scrape
            log.warning("the metrics cannot read the index's size from the store (%s): the last size read is served, with its age", why)

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.core import GaugeMetricFamily

        if self.sizes is not None:
            self.refresh()
        with self._lock:
            last, read_at = self._last, self._read_at
        if last is None:
            return
        agents, examples, queued = last
        yield GaugeMetricFamily("ard_mcp_index_agents", "Entries in the catalog (as last read from the store)", value=agents)
        yield GaugeMetricFamily(
            "ard_mcp_index_examples", "Examples the index embeds (descriptions, tools, skills, queries; as last read)", value=examples
        )
        yield GaugeMetricFamily(
            "ard_mcp_index_vectors_queued",
            "Entries saved whose vectors wait for the vector index (Chroma): more than 0 for long is an outage being ridden out",
            value=queued,
        )
        yield GaugeMetricFamily(
            "ard_mcp_index_age_seconds",
            "Seconds since the index's size was last read from the store (grows while the store does not answer)",
            value=round(time.monotonic() - read_at, 3),
        )


class _Scrape:
    def __init__(self, *parts: Collector) -> None:
        self._parts = parts

    def collect(self) -> Iterator[Metric]:
        for part in self._parts:
            yield from part.collect()


def collector(index: IndexSize | Sizes) -> Collector:
    """Everything a scrape reads (`metrics.enable()` first); a bare `Sizes` is read at each scrape, with nothing
    kept from one to the next."""
    own = metrics.registry()
    assert own is not None, "metrics are enabled before they are served"
    size = index if isinstance(index, IndexSize) else IndexSize(index)
    if os.environ.get(metrics.MULTIPROCESS_DIR):
        from prometheus_client.multiprocess import MultiProcessCollector

        return _Scrape(MultiProcessCollector(None), size)  # type: ignore[no-untyped-call]
    return _Scrape(own, size)


def render(index: IndexSize | Sizes, accept: str | None) -> tuple[bytes, str]:
    """The metrics text in the format the scraper accepts (Prometheus text, or OpenMetrics when asked), and its
    content type. May wait up to `READ_SECONDS` for the store: call it off the event loop."""
    from prometheus_client.exposition import choose_encoder

    encoder, content_type = choose_encoder(accept or "")
    return encoder(collector(index)), content_type
