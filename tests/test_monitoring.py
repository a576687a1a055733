"""Monitoring (issue #48), against real parts: `ard-mcp serve` processes, a real MCP agent and an upstream registry
on loopback ports these tests start, a crawled website, and an OTLP collector that is a loopback HTTP listener
decoding what the exporter posts. The metrics are read with prometheus_client's own parser after known traffic
and must count it exactly; the traces must nest as docs/monitoring.md draws them and reach the agent and the
upstream as `traceparent`; the JSON logs must parse line by line."""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.server.mcpserver import Context, MCPServer
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse
from prometheus_client.parser import text_string_to_metric_families
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ard_mcp.monitoring import tracing
from ard_mcp.monitoring.json_logs import JsonFormatter
from ard_mcp.surfaces.auth import Principal, TokenStore
from ard_mcp.surfaces.rest.ratelimit import BURST_SECONDS
from ard_mcp.surfaces.rest.settings import HttpSettings
from tests.agent_servers import Recording, mcp_agent, serving
from tests.conftest import INVOICES, WEATHER
from tests.http_support import running
from tests.processes import free_port, quiet_env, wait_for
from tests.web_publisher import Publisher

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

FORECAST = "urn:air:weather.example:mcp:forecast"
OPERATOR, READER = "operator-token-0123456789", "reader-token-0123456789ab"
GOOD, ODD = "weather forecast for a city", "qwxz frobnicate the zorbulator"


def forecast_entry(url: str) -> dict[str, Any]:
    return {
        "identifier": FORECAST,
        "displayName": "Forecast MCP",
        "type": "application/mcp-server-card+json",
        "description": "Weather forecasts for any city, over MCP.",
        "data": {"name": "forecast", "remotes": [{"type": "streamable-http", "url": url}]},
    }


@contextmanager
def server(data_dir: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[tuple[str, Path]]:
    """`ard-mcp serve --transport streamable-http ARGS` with `env` added; yields its base URL and the file its
    stderr goes to (complete once the block ends). Nothing may reach stdout."""
    port = free_port()
    stderr = data_dir.parent / f"stderr-{port}.log"
    command = [sys.executable, "-m", "ard_mcp", "serve", "--transport", "streamable-http", "--port", str(port), "--data-dir", str(data_dir)]
    with open(stderr, "w", encoding="utf-8") as err:
        process = subprocess.Popen(
            [*command, *args], env={**quiet_env(data_dir), **(env or {})}, stdout=subprocess.PIPE, stderr=err, text=True
        )
        base = f"http://127.0.0.1:{port}"
        try:
            try:
                wait_for(f"{base}/healthz", process, "ard-mcp serve")
            except AssertionError:
                pytest.fail(f"ard-mcp serve did not start: {stderr.read_text(encoding='utf-8')[-3000:]}")
            yield base, stderr
        finally:
            process.terminate()
            stdout, _ = process.communicate(timeout=30)
    assert stdout == ""


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a scrape, parsed by prometheus_client: (name, labels) -> value."""
    return {(s.name, frozenset(s.labels.items())): s.value for family in text_string_to_metric_families(text) for s in family.samples}


def value(found: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    """A sample's value; 0 where the scrape has none (a series appears with its first count)."""
    return found.get((name, frozenset(labels.items())), 0.0)


def total(found: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    """The sum of the samples of `name` whose labels include `labels`."""
    return sum(v for (n, have), v in found.items() if n == name and set(labels.items()) <= have)


@pytest.fixture(scope="module")
def agent() -> Iterator[tuple[str, Recording]]:
    """A real MCP agent on loopback, its requests' headers recorded."""
    recording = Recording(mcp_agent().streamable_http_app(streamable_http_path="/mcp"))
    with serving(lambda base: recording) as base:
        yield base + "/mcp", recording


# -- metrics -----------------------------------------------------------------------------------------------
async def test_the_metrics_count_known_traffic(tmp_path: Path, agent: tuple[str, Recording]) -> None:
    """N searches over REST, M MCP tool calls, K invocations and one the rate limit refused, a crawl: each counted
    where docs/monitoring.md says, matching what the clients were answered and what the audit log holds."""
    n_good, n_odd, k = 3, 2, 2
    data = tmp_path / "data"
    rate = round(k * 60 / BURST_SECONDS)  # a burst of k calls, then a refusal (the bucket refills one in 60 / rate s)
    args = ("--allow-invocation", "--allow-private-networks", "--rate-limit-loopback", "--invoke-rate", str(rate))
    with Publisher() as site, server(data, *args) as (base, _):
        site.put("/.well-known/ai-catalog.json", {"specVersion": "1.0", "host": {"displayName": "Empty"}, "entries": []})
        async with httpx.AsyncClient(base_url=base, timeout=60) as http:
            for entry in (WEATHER, INVOICES, forecast_entry(agent[0])):
                assert (await http.post("/agents", json=entry)).status_code == 201
            results = 0
            for text in [GOOD] * n_good + [ODD] * n_odd:
                found = await http.post("/search", json={"query": {"text": text}})
                assert found.status_code == 200, found.text
                results += len(found.json()["results"])
            async with Client(f"{base}/mcp") as client:
                said: dict[str, str] = {}
                for text in (GOOD, ODD):
                    answer = await client.call_tool("search_agents", {"text": text})
                    assert not answer.is_error and answer.structured_content is not None
                    said[text] = answer.structured_content.get("confidence") or "none"
                    results += len(answer.structured_content["results"])
                assert (await client.call_tool("no_such_tool", {})).is_error
            for _ in range(k):
                called = await http.post(f"/agents/{FORECAST}/invoke?operation=forecast", json={"city": "Oslo"})
                assert called.status_code == 200, called.text
            assert (await http.post(f"/agents/{FORECAST}/invoke?operation=forecast", json={"city": "Oslo"})).status_code == 429
            crawl = await http.post("/crawl", json={"targets": [site.origin]})
            assert crawl.status_code == 200, crawl.text
            audit = (await http.get("/invocations")).json()["records"]
            scrape = await http.get("/metrics")
    assert scrape.status_code == 200 and scrape.headers["content-type"].startswith("text/plain")
    found = samples(scrape.text)
    requests = "ard_mcp_http_request_duration_seconds_count"
    assert value(found, requests, route="/search", method="POST", status="200") == n_good + n_odd
    assert value(found, requests, route="/agents", method="POST", status="201") == 3
    assert value(found, requests, route="/agents/{id:path}/invoke", method="POST", status="200") == k
    assert value(found, requests, route="/agents/{id:path}/invoke", method="POST", status="429") == 1
    assert total(found, requests, route="/mcp") >= 3  # the session's opening, its calls, its end
    tools = "ard_mcp_mcp_tool_call_duration_seconds_count"
    assert value(found, tools, tool="search_agents", outcome="ok") == 2 and value(found, tools, tool="unknown", outcome="error") == 1
    searches = "ard_mcp_search_duration_seconds_count"
    by_confidence = Counter({said[GOOD]: n_good + 1}) + Counter({said[ODD]: n_odd + 1})
    assert {c: value(found, searches, confidence=c) for c in ("high", "low", "none")} == {
        c: by_confidence[c] for c in ("high", "low", "none")
    }
    assert value(found, "ard_mcp_search_results_count") == n_good + n_odd + 2
    assert value(found, "ard_mcp_search_results_sum") == results
    for stage in ("embedding", "ranking"):
        assert value(found, "ard_mcp_search_stage_duration_seconds_count", stage=stage) == n_good + n_odd + 2
    invocations = "ard_mcp_invocation_duration_seconds_count"
    assert value(found, invocations, action="call", protocol="mcp", outcome="ok") == k
    assert value(found, invocations, action="call", protocol="none", outcome="refused") == 1
    assert value(found, "ard_mcp_invocation_response_bytes_total", action="call", protocol="mcp") == sum(r["bytes"] for r in audit)
    assert value(found, "ard_mcp_rate_limited_total", limit="invocations") == 1
    crawled = Counter((s["status"], s["via"]) for s in crawl.json()["sources"])
    assert crawled and dict(crawled) == {
        (dict(labels)["status"], dict(labels)["via"]): v for (n, labels), v in found.items() if n == "ard_mcp_crawl_documents_total"
    }
    assert value(found, "ard_mcp_index_agents") == 3 and value(found, "ard_mcp_index_examples") >= 3
    assert value(found, "ard_mcp_package_servers_running") == 0 and value(found, "process_resident_memory_bytes") > 0


async def test_metrics_are_open_on_an_open_loopback_registry_and_for_operators_otherwise(tmp_path: Path) -> None:
    async with running(tmp_path / "open") as client:
        assert (await client.get("/metrics")).status_code == 200
    tokens = TokenStore({OPERATOR: Principal("operator", ("*",)), READER: Principal("reader", ("agents.example",))})
    async with running(tmp_path / "tokens", HttpSettings(tokens=tokens)) as client:
        anonymous = await client.get("/metrics")
        assert anonymous.status_code == 401 and "reading the metrics" in anonymous.json()["error"]["message"]
        assert (await client.get("/metrics", headers={"Authorization": f"Bearer {READER}"})).status_code == 403
        read = await client.get("/metrics", headers={"Authorization": f"Bearer {OPERATOR}"})
        assert read.status_code == 200 and "ard_mcp_index_agents 0.0" in read.text


def test_a_separate_metrics_address_serves_them_there_alone(tmp_path: Path) -> None:
    """... to whoever reaches it, token or not, while the registry's own port has no /metrics."""
    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"operator {OPERATOR} *\n", encoding="utf-8")
    port = free_port()
    with server(tmp_path / "data", "--token-file", str(tokens), "--metrics-address", f"127.0.0.1:{port}") as (base, _):
        assert httpx.get(f"{base}/metrics", headers={"Authorization": f"Bearer {OPERATOR}"}).status_code == 404
        httpx.get(f"{base}/healthz")
        scrape = httpx.get(f"http://127.0.0.1:{port}/metrics")
    assert scrape.status_code == 200
    found = samples(scrape.text)
    assert value(found, "ard_mcp_index_agents") == 0
    assert value(found, "ard_mcp_http_request_duration_seconds_count", route="/healthz", method="GET", status="200") >= 2


def test_a_metrics_address_in_use_is_a_clear_start_up_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        command = ["serve", "--transport", "streamable-http", "--port", str(free_port()), "--metrics-address", address]
        result = subprocess.run(
            [sys.executable, "-m", "ard_mcp", *command, "--data-dir", str(tmp_path / "data")],
            env=quiet_env(tmp_path / "data"),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 2 and f"--metrics-address {address}: cannot listen there" in result.stderr
    assert "Traceback" not in result.stderr


def test_multiprocess_mode_adds_up_every_process(tmp_path: Path) -> None:
    """With PROMETHEUS_MULTIPROC_DIR, what each process recorded is in one scrape: two processes record a search
    each (and start a package server, one of them stopping it), a third reads the sum."""
    record = (
        "from ard_mcp.monitoring import metrics; metrics.enable(); metrics.search(0.01, 4, 'high'); "
        "metrics.package_servers(+1); metrics.package_servers(-1) if {stop} else None"
    )
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    for stop in (True, False):
        subprocess.run([sys.executable, "-c", record.format(stop=stop)], env=env, check=True, timeout=60)
    scrape = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from ard_mcp.monitoring import metrics, exposition; metrics.enable(); "
            "sys.stdout.write(exposition.render(lambda: (5, 7, 2), None)[0].decode())",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    found = samples(scrape.stdout)
    assert value(found, "ard_mcp_search_duration_seconds_count", confidence="high") == 2
    assert value(found, "ard_mcp_search_results_sum") == 8
    assert value(found, "ard_mcp_package_servers_running") == 0  # "livesum": the processes that started them have ended
    assert value(found, "ard_mcp_index_agents") == 5 and value(found, "ard_mcp_index_examples") == 7
    assert value(found, "ard_mcp_index_vectors_queued") == 2


# -- traces ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Span:
    name: str
    trace: str
    id: str
    parent: str
    service: str
    attributes: dict[str, Any]


@dataclass
class Collector:
    """An OTLP/HTTP collector: the exporter's protobuf posts to /v1/traces, decoded with opentelemetry-proto."""

    spans: list[Span] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def received(self, body: bytes) -> None:
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            service = next(a.value.string_value for a in resource.resource.attributes if a.key == "service.name")
            for scope in resource.scope_spans:
                for s in scope.spans:
                    attributes = {a.key: getattr(a.value, a.value.WhichOneof("value")) for a in s.attributes}
                    with self.lock:
                        self.spans.append(Span(s.name, s.trace_id.hex(), s.span_id.hex(), s.parent_span_id.hex(), service, attributes))

    def waited(self, which: Callable[[Span], bool], until: Callable[[list[Span]], bool]) -> list[Span]:
        """The spans `which` picks, once `until` holds for them (the exporter posts in batches)."""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with self.lock:
                found = [s for s in self.spans if which(s)]
            if until(found):
                return found
            time.sleep(0.05)
        pytest.fail(f"the collector has only {[s.name for s in found]}")

    def trace(self, trace_id: str, until: Callable[[list[Span]], bool]) -> list[Span]:
        return self.waited(lambda s: s.trace == trace_id, until)


@contextmanager
def collecting() -> Iterator[tuple[str, Collector]]:
    collector = Collector()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.path == "/v1/traces":
                collector.received(body)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    listener = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=listener.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.server_address[1]}", collector
    finally:
        listener.shutdown()
        listener.server_close()


def traceparent() -> tuple[str, str, str]:
    """A caller's trace: its id, its span's id, and the header naming them."""
    trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
    return trace_id, span_id, f"00-{trace_id}-{span_id}-01"


def one(spans: list[Span], name: str) -> Span:
    named = [s for s in spans if s.name == name]
    assert len(named) == 1, f"{name}: {[s.name for s in spans]}"
    return named[0]


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[str, Recording]]:
    """An upstream registry that knows nothing, its requests' headers recorded."""

    async def search(request: Request) -> JSONResponse:
        return JSONResponse({"results": []})

    recording = Recording(Starlette(routes=[Route("/search", search, methods=["POST"])]))
    with serving(lambda base: recording) as base:
        yield base, recording


async def test_traces_nest_and_reach_agents_and_upstreams_and_logs_name_them(
    tmp_path: Path, agent: tuple[str, Recording], upstream: tuple[str, Recording]
) -> None:
    """A REST search: the request's span (its caller's span its parent) → the search → the store's reads and the
    ranking → the embedding and the ranking's own store reads, and the upstream call, whose request carries this
    trace's traceparent. An MCP tool call: the HTTP request's span → the tool call's → its search. Two calls of an
    agent over one kept MCP session: each request carries its own call's traceparent. Each JSON log line of a
    request names its trace."""
    otel = {"OTEL_EXPORTER_OTLP_ENDPOINT": "", "OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_SERVICE_NAME": "ard-mcp-under-test"}
    args = ("--allow-invocation", "--allow-private-networks", "--upstream", upstream[0], "--no-registry-upstreams")
    with collecting() as (endpoint, collector):
        otel["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
        with server(tmp_path / "data", *args, "--log-format", "json", "--log-level", "INFO", env=otel) as (base, stderr):
            async with httpx.AsyncClient(base_url=base, timeout=60) as http:
                for entry in (WEATHER, forecast_entry(agent[0])):
                    assert (await http.post("/agents", json=entry)).status_code == 201
                searched, caller, header = traceparent()
                assert (await http.post("/search", json={"query": {"text": GOOD}}, headers={"traceparent": header})).status_code == 200
                calls = []
                for _ in range(2):
                    called, _, header = traceparent()
                    seen = len(agent[1].headers)
                    answer = await http.post(
                        f"/agents/{FORECAST}/invoke?operation=forecast", json={"city": "Oslo"}, headers={"traceparent": header}
                    )
                    assert answer.status_code == 200, answer.text
                    calls.append((called, agent[1].seen("traceparent")[seen:]))
            async with Client(f"{base}/mcp") as client:
                assert not (await client.call_tool("search_agents", {"text": GOOD})).is_error
            spans = collector.trace(
                searched, lambda found: {"POST /search", "upstream", "store.lexical", "store.page"} <= {s.name for s in found}
            )
            request = one(spans, "POST /search")
            assert request.parent == caller and request.service == "ard-mcp-under-test"
            assert request.attributes["http.route"] == "/search" and request.attributes["http.response.status_code"] == 200
            search = one(spans, "search")
            assert search.parent == request.id and search.attributes["ard.search.results"] >= 1
            ranking = one(spans, "ranking")
            assert {one(spans, n).parent for n in ("store.select", "ranking", "store.page")} == {search.id}
            assert {one(spans, n).parent for n in ("embedding", "store.lexical", "store.examples")} == {ranking.id}
            asked = one(spans, "upstream")
            assert asked.parent == request.id and asked.attributes["ard.upstream.outcome"] == "ok"
            assert [h for h in upstream[1].seen("traceparent") if h and searched in h] == [f"00-{searched}-{asked.id}-01"]
            for called, sent in calls:
                agent_call = one(collector.trace(called, lambda found: "agent call" in {s.name for s in found}), "agent call")
                assert agent_call.attributes == {"ard.invocation.protocol": "mcp", "ard.invocation.tool": "forecast"}
                assert sent and set(sent) == {f"00-{called}-{agent_call.id}-01"}  # every request of the call, on a kept session
            tool = one(collector.waited(lambda s: s.name == "tools/call search_agents", bool), "tools/call search_agents")
            mcp = collector.trace(tool.trace, lambda found: {"POST /mcp", "search"} <= {s.name for s in found})
            assert tool.parent in {s.id for s in mcp if s.name == "POST /mcp"}
            assert one(mcp, "search").parent == tool.id
    lines = [json.loads(line) for line in stderr.read_text(encoding="utf-8").splitlines()]
    assert lines and all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    access = [line for line in lines if line["logger"] == "uvicorn.access" and "POST /search" in line["message"]]
    assert len(access) == 1 and access[0]["trace_id"] == searched and access[0]["span_id"] == request.id
    assert len(access[0]["request_id"]) == 32


def test_upstream_calls_and_breakers_are_counted(tmp_path: Path, upstream: tuple[str, Recording]) -> None:
    """Federated searches with an upstream that answers and one that is down: the down one fails until its breaker
    opens (three failures), then is skipped, and the breaker gauge says which one is open."""
    dead = f"http://127.0.0.1:{free_port()}"
    args = ("--upstream", upstream[0], "--upstream", dead, "--no-registry-upstreams")
    with server(tmp_path / "data", *args) as (base, _):
        assert httpx.post(f"{base}/agents", json=WEATHER, timeout=60).status_code == 201
        for _ in range(4):
            assert httpx.post(f"{base}/search", json={"query": {"text": GOOD}}, timeout=60).status_code == 200
        found = samples(httpx.get(f"{base}/metrics").text)
    calls = "ard_mcp_upstream_request_duration_seconds_count"
    assert value(found, calls, upstream=upstream[0], outcome="ok") == 4
    assert value(found, calls, upstream=dead, outcome="failed") == 3 and value(found, "ard_mcp_upstream_skipped_total", upstream=dead) == 1
    assert value(found, "ard_mcp_upstream_breaker_open", upstream=dead) == 1
    assert ("ard_mcp_upstream_breaker_open", frozenset({("upstream", upstream[0])})) in found
    assert value(found, "ard_mcp_upstream_breaker_open", upstream=upstream[0]) == 0


def context_agent() -> MCPServer:
    """An MCP agent whose one tool answers the trace context its call came with, in `_meta` and in headers."""
    server = MCPServer("context-agent")

    @server.tool(description="The trace context of this call.")
    def context(ctx: Context) -> dict[str, Any]:
        meta = dict(ctx.request_context.meta or {})
        headers = ctx.headers or {}
        return {
            "meta": {k: meta[k] for k in ("traceparent", "tracestate", "baggage") if k in meta},
            "headers": {k: headers[k] for k in ("traceparent", "tracestate", "baggage") if k in headers},
        }

    return server


async def test_a_hosts_baggage_and_tracestate_go_no_further(tmp_path: Path) -> None:
    """The MCP SDK passes a request's `_meta` trace context on to the requests it makes for it; a host's baggage
    and tracestate are the host's, and an agent `call_agent` calls for it gets the traceparent alone (tracing off
    here: the host's own, carried through)."""
    identifier = "urn:air:weather.example:mcp:context"
    _, _, header = traceparent()
    with serving(lambda base: context_agent().streamable_http_app(streamable_http_path="/mcp")) as agent_base:
        entry = {**forecast_entry(agent_base + "/mcp"), "identifier": identifier}
        with server(tmp_path / "data", "--allow-invocation", "--allow-private-networks") as (base, _):
            assert httpx.post(f"{base}/agents", json=entry, timeout=60).status_code == 201
            async with Client(f"{base}/mcp") as client:
                meta = {"traceparent": header, "tracestate": "vendor=the-hosts-own", "baggage": "user.id=alice,session=s3cr3t"}
                called = await client.call_tool("call_agent", {"identifier": identifier, "tool": "context"}, meta=meta)
    assert not called.is_error, called.content
    assert json.loads(called.content[0].text)["result"] == {"meta": {"traceparent": header}, "headers": {}}


def test_tracing_is_off_and_free_unless_the_environment_asks() -> None:
    assert not tracing.wanted({})
    assert not tracing.wanted({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert not tracing.wanted({"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert tracing.wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert tracing.wanted({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"})
    assert tracing.wanted({"OTEL_TRACES_EXPORTER": "otlp"})
    probe = (  # off, neither the SDK nor an exporter is imported (the API is: the MCP SDK's own propagation uses it)
        "import sys; from ard_mcp.monitoring import tracing; on = tracing.configure({}); "
        "print(on, type(tracing.span('x')).__name__, tracing.outgoing(), "
        "[m for m in sys.modules if m.startswith(('opentelemetry.sdk', 'opentelemetry.exporter'))])"
    )
    result = subprocess.run([sys.executable, "-c", probe], env=quiet_env(), capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "False nullcontext {} []", result.stderr


def test_json_logs_are_one_object_a_line(tmp_path: Path) -> None:
    """... each with the id of the request being answered, which its error response names as its correlation id."""
    with server(tmp_path / "data", "--log-format", "json", "--log-level", "INFO") as (base, stderr):
        missing = httpx.get(f"{base}/agents/urn:air:nowhere.example:missing")
    assert missing.status_code == 404
    lines = stderr.read_text(encoding="utf-8").splitlines()
    parsed = [json.loads(line) for line in lines]
    assert parsed and all(p["time"].endswith("Z") and p["level"] in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"} for p in parsed)
    assert any(p["logger"] == "ard_mcp" and p["message"].startswith("serving MCP at") for p in parsed)
    access = [p for p in parsed if p["logger"] == "uvicorn.access" and "missing" in p["message"]]
    assert len(access) == 1 and access[0]["request_id"] == missing.headers["x-correlation-id"]
    assert "trace_id" not in access[0]  # no tracing here


def test_a_json_log_line_cannot_be_broken_or_send_terminal_escapes() -> None:
    """A quoted value with a line break and an escape sequence stays on one printable line, and parses back whole."""
    record = logging.LogRecord("ard_mcp.test", logging.WARNING, __file__, 1, "fetched %s", ('x\n{"forged": 1}\x1b[31m',), None)
    line = JsonFormatter().format(record)
    assert line.isascii() and line.isprintable()
    assert json.loads(line)["message"] == 'fetched x\n{"forged": 1}\x1b[31m'
