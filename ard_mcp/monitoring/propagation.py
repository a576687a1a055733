"""What of a trace's context this process passes on: the W3C `traceparent` alone, whether tracing is on or off.

The MCP SDK propagates trace context by itself, through OpenTelemetry's global propagator (tracecontext and
baggage unless `OTEL_PROPAGATORS` says otherwise): its server reads it from a request's `_meta`, its client
writes it into every request's `_meta`. So a host's `_meta.baggage` and `tracestate`, anything the host put
there, went on to every agent `call_agent` called, tracing or not. `contain()` makes the process's propagator
read and write `traceparent` and nothing else: it names a trace and a span, and agents and upstream
registries are third parties. Imports OpenTelemetry's API (the MCP SDK already has), never its SDK."""

from __future__ import annotations

from opentelemetry.context import Context
from opentelemetry.propagate import set_global_textmap
from opentelemetry.propagators.textmap import (
    CarrierT,
    Getter,
    Setter,
    TextMapPropagator,
    default_getter,
    default_setter,
)
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

TRACEPARENT = "traceparent"


class TraceparentOnly(TextMapPropagator):
    """W3C Trace Context without `tracestate`: a caller's vendor data stays with the caller."""

    def __init__(self) -> None:
        self._w3c = TraceContextTextMapPropagator()

    def extract(self, carrier: CarrierT, context: Context | None = None, getter: Getter[CarrierT] = default_getter) -> Context:
        found = getter.get(carrier, TRACEPARENT)
        return self._w3c.extract({TRACEPARENT: found[0]} if found else {}, context)

    def inject(self, carrier: CarrierT, context: Context | None = None, setter: Setter[CarrierT] = default_setter) -> None:
        written: dict[str, str] = {}
        self._w3c.inject(written, context)
        if TRACEPARENT in written:
            setter.set(carrier, TRACEPARENT, written[TRACEPARENT])

    @property
    def fields(self) -> set[str]:
        return {TRACEPARENT}


PROPAGATOR = TraceparentOnly()


def contain() -> None:
    """Make `TraceparentOnly` the process's propagator (the MCP SDK's too)."""
    set_global_textmap(PROPAGATOR)
