"""The stages of a search, timed apart: a span for each, and each one's own time in
`ard_mcp_search_stage_duration_seconds`.

A stage inside another (the query's embedding inside the ranking) is left out of the outer one's time, so the
two histograms say where a slow search spent its time without subtracting one quantile from another, which
means nothing. The inner stage's time reaches the outer one through a context variable: stages on other threads
(the lexical side of a ranking) are spans only."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from ard_mcp.monitoring import metrics, tracing

_INNER: ContextVar[list[float] | None] = ContextVar("ard_mcp_inner_stages", default=None)


@contextmanager
def stage(name: str) -> Iterator[None]:
    if not (metrics.enabled() or tracing.enabled()):
        yield
        return
    with tracing.span(name):
        inner = [0.0]  # the time of the stages inside this one
        token = _INNER.set(inner)
        started = time.perf_counter()
        try:
            yield
        finally:
            took = time.perf_counter() - started
            _INNER.reset(token)
            outer = _INNER.get()
            if outer is not None:
                outer[0] += took
            metrics.stage(name, took - inner[0])
