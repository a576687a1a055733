"""`GET /metrics`: the registry's Prometheus metrics (`ard_mcp.monitoring`), for its operator.

Who reads them: anyone where the registry has no tokens (an open registry on loopback; off loopback only
`--allow-anonymous-writes` serves without tokens, and has made everyone an operator), else a token that may
write every publisher, as for the invocation log: the metrics show the traffic's shape, the upstreams asked and
the tools called. With `--metrics-address` they are served at that address instead, to whoever reaches it (the
operator's network keeps it to the scraper), and the registry's own port has no `/metrics`."""

from __future__ import annotations

import logging

import anyio
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ard_mcp.errors import ArdError, InvalidArgument, PermissionDenied
from ard_mcp.monitoring import metrics
from ard_mcp.monitoring.exposition import IndexSize, collector, render
from ard_mcp.registry import Registry
from ard_mcp.surfaces.rest.errors import Dialect, error_response
from ard_mcp.surfaces.rest.routes import state_of
from ard_mcp.surfaces.rest.settings import HttpSettings

log = logging.getLogger(__name__)
NEEDED_FOR = "reading the metrics (an operator's token)"


def metrics_routes(settings: HttpSettings) -> list[Route]:
    """Turn this process's metrics on, and the route that serves them, unless a separate address does. The
    route keeps the app's last index size (`IndexSize`): a scrape during a store outage answers with it."""
    metrics.enable()
    if settings.metrics_address is not None:
        return []
    index = IndexSize()

    async def serve(request: Request) -> Response:
        return await _metrics(request, index)

    return [Route("/metrics", serve, methods=["GET"])]


def index_size(registry: Registry | None) -> tuple[int, int, int] | None:
    """The index's agents, examples and agents whose vectors are queued; None while no registry is open."""
    if registry is None:
        return None
    return registry.store.count(), registry.store.example_count(), registry.store.pending_count()


async def _metrics(request: Request, index: IndexSize) -> Response:
    state = state_of(request)
    try:
        if not state.settings.tokens.writer(request.headers, NEEDED_FOR).may_write("*"):
            raise PermissionDenied("the metrics are for operators: they need a token that may write every publisher (*)")
    except ArdError as exc:
        return error_response(Dialect.ARD, exc)

    def scraped() -> tuple[bytes, str]:
        index.refresh(lambda: index_size(state.registry))
        return render(index, request.headers.get("accept"))

    body, content_type = await anyio.to_thread.run_sync(scraped)
    return Response(body, headers={"Content-Type": content_type})


def serve_metrics_at(address: tuple[str, int], registry: Registry) -> None:
    """Serve the metrics at `address` from a thread of this process (prometheus_client's own HTTP server)."""
    from prometheus_client import start_http_server

    metrics.enable()
    host, port = address
    try:
        start_http_server(port, host, registry=collector(IndexSize(lambda: index_size(registry))))
    except OSError as exc:  # in use, not this machine's address: said as a start-up error, not a traceback
        raise InvalidArgument(f"--metrics-address {host}:{port}: cannot listen there ({exc.strerror or exc})") from None
    log.info("serving the metrics at http://%s:%d/metrics, to whoever can reach that address", f"[{host}]" if ":" in host else host, port)
