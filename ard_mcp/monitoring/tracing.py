"""OpenTelemetry traces, when the standard OTEL_* variables ask for them (the `[otel]` extra); docs/monitoring.md
shows the spans a request makes.

Off unless `OTEL_TRACES_EXPORTER` names an exporter or an OTLP endpoint is given: the specification's default
exporter (otlp to localhost:4318) would have every unconfigured registry post its spans to whatever listens there.
Off, this module does not import OpenTelemetry's SDK (chromadb does, for itself) and a span is a shared
`nullcontext`. On, spans are batched (`OTEL_BSP_SCHEDULE_DELAY` and the other `OTEL_BSP_*`) and posted as
OTLP/protobuf over HTTP (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_HEADERS`, ...), named by
`OTEL_SERVICE_NAME` (default `ard-mcp`); what is left is sent as the process exits.

What crosses to another service is the W3C `traceparent` alone (`outgoing`, and the MCP SDK's own propagation,
which `configure` holds to it whether tracing is on or off: `propagation`): it names a trace and a span and
nothing else. `tracestate` and baggage are not passed on: a caller may have put anything in them, and upstream
registries and agents are third parties."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Mapping
from contextvars import copy_context
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ard_mcp import __version__

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

log = logging.getLogger(__name__)
SERVICE = "ard-mcp"
Attributes = Mapping[str, str | int | float | bool]
_T = TypeVar("_T")
_OFF: contextlib.nullcontext[None] = contextlib.nullcontext()
_tracer: Tracer | None = None


def wanted(environ: Mapping[str, str]) -> bool:
    """Whether the environment asks for traces: an exporter other than `none` named, or an OTLP endpoint given, and
    the SDK not disabled (`OTEL_SDK_DISABLED=true`)."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter:
        return exporter != "none"
    return bool(environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"))


def configure(environ: Mapping[str, str] = os.environ) -> bool:
    """Hold the process's propagation to `traceparent` (`propagation.contain`), and turn tracing on where the
    environment asks for it (`wanted`); whether it is on. An exporter or protocol this registry does not speak,
    or the extra not installed, is said on stderr, and tracing stays off."""
    global _tracer  # noqa: PLW0603 (one switch a process, turned on once)
    from ard_mcp.monitoring.propagation import contain

    contain()
    if not wanted(environ):
        return False
    exporter = environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() or "otlp"
    protocol = (environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf").strip()
    if exporter != "otlp" or protocol != "http/protobuf":
        log.warning("tracing stays off: ard-mcp exports otlp over http/protobuf (not exporter %r, protocol %r)", exporter, protocol)
        return False
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        log.warning("tracing stays off: the OTEL_* variables ask for traces, but %s; pip install 'ard-mcp[otel]'", exc)
        return False
    resource = Resource.create()
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": SERVICE}))
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    _tracer = provider.get_tracer("ard_mcp", __version__)
    log.info("tracing: spans of %s go to %s", resource.attributes.get("service.name"), _endpoint(environ))
    return True


def _endpoint(environ: Mapping[str, str]) -> str:
    given = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if given:
        return given
    return environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318").rstrip("/") + "/v1/traces"


def enabled() -> bool:
    return _tracer is not None


def span(
    name: str,
    attributes: Attributes | None = None,
    *,
    parent: Mapping[str, str] | None = None,
    kind: Literal["internal", "server"] = "internal",
) -> contextlib.AbstractContextManager[Span | None]:
    """A span of the current one (or, given `parent`, of the span its `traceparent` names: a request's caller),
    current while the block runs; the block's exception, if any, is recorded on it. Nothing with tracing off."""
    if _tracer is None:
        return _OFF
    from opentelemetry.trace import SpanKind

    context = _propagator().extract(parent) if parent is not None else None
    return _tracer.start_as_current_span(
        name, context=context, kind=SpanKind.SERVER if kind == "server" else SpanKind.INTERNAL, attributes=attributes
    )


def ended(span: Span | None, attributes: Attributes, failed: bool = False) -> None:
    """What came of a span's work: attributes, and an error status where it failed."""
    if span is None:
        return
    span.set_attributes(attributes)
    if failed:
        from opentelemetry.trace import StatusCode

        span.set_status(StatusCode.ERROR)


def outgoing() -> dict[str, str]:
    """The `traceparent` header naming the current span, for a request to another service; empty with tracing off
    or outside any span."""
    if _tracer is None:
        return {}
    carrier: dict[str, str] = {}
    _propagator().inject(carrier)
    return carrier


def current_ids() -> tuple[str, str] | None:
    """The current trace and span ids in hex, for a log line; None with tracing off or outside any span."""
    if _tracer is None:
        return None
    from opentelemetry.trace import get_current_span

    context = get_current_span().get_span_context()
    return (format(context.trace_id, "032x"), format(context.span_id, "016x")) if context.is_valid else None


def in_context(fn: Callable[..., _T]) -> Callable[..., _T]:
    """`fn`, to run on another thread in this one's context (so the current span is the parent of the spans it
    opens); `fn` itself with tracing off."""
    if _tracer is None:
        return fn
    return partial(copy_context().run, fn)


def _propagator() -> Any:
    from ard_mcp.monitoring.propagation import PROPAGATOR

    return PROPAGATOR
