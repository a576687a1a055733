"""The protocol clients against real agents on loopback (`tests.agent_servers`): an MCP server over streamable
HTTP and over SSE, an A2A agent, an AIDIP HTTP agent. Every connection goes through the network policy's
guarded transport; what it must refuse (cloud metadata, other origins) is refused without connecting
(`loopback_only` holds any host a connection was tried to)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import httpx
import pytest
from google.protobuf.json_format import MessageToDict

from ard_mcp.errors import AgentError, AgentTimeout, AgentUnreachable, InvalidArgument
from ard_mcp.invocation.calls import Target, TransportFactory
from ard_mcp.invocation.clients import client_for
from ard_mcp.invocation.clients.a2a_agent import ANY_SKILL, INPUT
from ard_mcp.invocation.clients.http_agent import ANY_OPERATION, HttpAgentClient
from ard_mcp.invocation.credentials import AgentCredentials, Credentialed
from ard_mcp.invocation.policy import Limits
from ard_mcp.net.guard import GuardedTransport, NetworkPolicy, SystemResolver
from tests.agent_servers import (
    A2A_PATH,
    STEPS,
    Locked,
    Recording,
    a2a_agent,
    a2a_card,
    aidip_agent,
    lying_mcp_agent,
    mcp_agent,
    paged_mcp_agent,
    serving,
)

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

LIMITS = Limits(connect=5, total=20, max_bytes=64_000)
QUICK = Limits(connect=5, total=0.2, max_bytes=64_000)  # shorter than any slow answer of the agents
SMALL = Limits(connect=5, total=20, max_bytes=2_000)


def guarded() -> httpx.AsyncBaseTransport:
    """The invocation's transport in these tests: loopback allowed, link-local and cloud metadata never."""
    return GuardedTransport(NetworkPolicy(allow_private=True), SystemResolver())


def keyed(url: str, value: str = "operator-secret") -> TransportFactory:
    """The guarded transport with the operator's `X-API-Key` for the origin of `url` (a credentials-file line)."""
    credential = AgentCredentials.parse(f"{url} X-API-Key: {value}").chosen("agents.example", url)
    assert credential is not None
    return lambda: Credentialed(guarded(), credential)


# -- MCP ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mcp_servers() -> Iterator[dict[str, tuple[str, Recording]]]:
    """The one MCP server, over each transport: the endpoint URL and the requests it saw."""
    server = mcp_agent()
    streamable = Recording(server.streamable_http_app(streamable_http_path="/mcp"))
    sse = Recording(server.sse_app())
    with serving(lambda base: streamable) as one, serving(lambda base: sse) as other:
        yield {"streamable-http": (one + "/mcp", streamable), "sse": (other + "/sse", sse)}


@pytest.fixture(params=["streamable-http", "sse"])
def mcp(request: pytest.FixtureRequest, mcp_servers: dict[str, tuple[str, Recording]]) -> tuple[Target, Recording]:
    url, recording = mcp_servers[request.param]
    return Target("mcp", url, transport_kind=request.param, limits=LIMITS), recording


async def test_mcp_tools_are_listed_with_their_descriptions_and_schemas(mcp: tuple[Target, Recording]) -> None:
    tools = {t.name: t for t in await client_for("mcp").tools(mcp[0], guarded)}
    assert tools.keys() == {
        "forecast",
        "count",
        "broken",
        "refuses",
        "slow",
        "verbose",
        "sneaky",
        "ask_the_person",
        "ask_the_model",
        "the_roots",
        "keep_asking",
    }
    assert tools["forecast"].description == "The forecast for a city.\nSecond line, left out of summaries."
    assert tools["forecast"].inputSchema is not None and "city" in tools["forecast"].inputSchema["properties"]


async def test_mcp_call_gives_structured_content_and_sends_the_operators_headers(mcp: tuple[Target, Recording]) -> None:
    target, recording = mcp
    recording.headers.clear()
    origin = target.url.rsplit("/", 1)[0]  # over SSE the messages go to the path the server names: a line for the origin
    outcome = await client_for("mcp").call(target, keyed(origin), "forecast", {"city": "Oslo"}, None)
    assert outcome.result == {"city": "Oslo", "high_c": 21.5, "summary": "Sunny in Oslo"} and not outcome.is_error
    assert "Sunny in Oslo" in outcome.texts
    assert recording.headers and set(recording.seen("x-api-key")) == {"operator-secret"}


async def test_mcp_progress_reaches_the_caller(mcp: tuple[Target, Recording]) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total, message))

    outcome = await client_for("mcp").call(mcp[0], guarded, "count", {"n": 3}, progress)
    assert outcome.result == {"result": "counted to 3"}
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_mcp_tool_error_is_the_agents_result(mcp: tuple[Target, Recording]) -> None:
    outcome = await client_for("mcp").call(mcp[0], guarded, "broken", {}, None)
    assert outcome.is_error and outcome.result[0]["type"] == "text"
    assert any("the forecast service is down" in text for text in outcome.texts)


async def test_mcp_protocol_error_is_an_agent_error(mcp: tuple[Target, Recording]) -> None:
    with pytest.raises(AgentError, match="the city is unknown") as raised:
        await client_for("mcp").call(mcp[0], guarded, "refuses", {}, None)
    assert raised.value.http_status == 400


async def test_mcp_call_over_the_time_limit_times_out(mcp: tuple[Target, Recording]) -> None:
    started = time.monotonic()
    with pytest.raises(AgentTimeout, match=r"within 0\.2 s"):
        await client_for("mcp").call(replace(mcp[0], limits=QUICK), guarded, "slow", {}, None)
    assert time.monotonic() - started < 2


async def test_mcp_answer_over_the_size_limit_is_refused(mcp: tuple[Target, Recording]) -> None:
    with pytest.raises(AgentUnreachable, match="over the limit of 2000"):
        await client_for("mcp").call(replace(mcp[0], limits=SMALL), guarded, "verbose", {"size": 5_000}, None)


async def test_mcp_endpoint_that_is_no_mcp_server_is_unreachable(mcp: tuple[Target, Recording]) -> None:
    wrong = mcp[0].url.rsplit("/", 1)[0] + "/nothing-here"
    with pytest.raises(AgentUnreachable, match="no MCP server answered"):
        await client_for("mcp").tools(replace(mcp[0], url=wrong), guarded)


@pytest.mark.parametrize("kind", ["streamable-http", "sse"])
async def test_mcp_server_that_refuses_the_credentials_is_the_agents_401(kind: str) -> None:
    server = mcp_agent()
    app = server.sse_app() if kind == "sse" else server.streamable_http_app(streamable_http_path="/mcp")
    with serving(lambda base: Locked(app)) as base:
        locked = Target("mcp", base + ("/sse" if kind == "sse" else "/mcp"), transport_kind=kind, limits=LIMITS)
        with pytest.raises(AgentError, match=r"refused the request \(401\): check this agent's credentials") as raised:
            await client_for("mcp").call(locked, guarded, "forecast", {"city": "Oslo"}, None)
        assert raised.value.http_status == 401
        opened = keyed(base, Locked.KEY)
        assert (await client_for("mcp").call(locked, opened, "forecast", {"city": "Oslo"}, None)).result["city"] == "Oslo"


@pytest.mark.parametrize("kind", ["streamable-http", "sse"])
async def test_mcp_connections_go_through_the_network_policy(kind: str, loopback_only: list[str]) -> None:
    with pytest.raises(AgentUnreachable, match="network policy"):
        await client_for("mcp").tools(Target("mcp", "http://169.254.169.254/mcp", transport_kind=kind), guarded)
    assert loopback_only == []


@pytest.mark.parametrize(("pages", "listed"), [(3, 6), (None, 40)])
async def test_mcp_tools_are_read_from_every_page_up_to_a_bound(pages: int | None, listed: int) -> None:
    with serving(lambda base: paged_mcp_agent(pages).streamable_http_app(streamable_http_path="/mcp")) as base:
        tools = await client_for("mcp").tools(Target("mcp", base + "/mcp", limits=LIMITS), guarded)
    assert len(tools) == listed and tools[0].name == "tool_0_0"


async def test_an_answer_that_breaks_its_own_output_schema_is_the_agents_failure() -> None:
    """The SDK's client checks structured content against the tool's declared output schema and raises a bare
    RuntimeError; the caller gets the registry's 502 naming it, never an unnamed error (a 500 over REST)."""
    with (
        serving(lambda base: lying_mcp_agent().streamable_http_app(streamable_http_path="/mcp")) as base,
        pytest.raises(AgentUnreachable, match="output schema") as caught,
    ):
        await client_for("mcp").call(Target("mcp", base + "/mcp", limits=LIMITS), guarded, "forecast", {}, None)
    assert caught.value.http_status == 502 and "'warm' is not of type 'number'" in str(caught.value)


# -- A2A ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def a2a_server() -> Iterator[tuple[str, Recording]]:
    """The A2A agent's base URL (its card names it) and the requests it saw."""
    made: dict[str, Recording] = {}

    def app(base: str) -> Recording:
        return made.setdefault(base, Recording(a2a_agent(base)))

    with serving(app) as base:
        yield base, made[base]


@pytest.fixture
def a2a(a2a_server: tuple[str, Recording]) -> Target:
    base = a2a_server[0]
    return Target("a2a", base + A2A_PATH, transport_kind="JSONRPC", card=MessageToDict(a2a_card(base)), limits=LIMITS)


async def test_a2a_skills_are_the_tools_without_a_call(a2a: Target, loopback_only: list[str]) -> None:
    offline = Target("a2a", "http://192.0.2.1/a2a", card=a2a.card)
    tools = await client_for("a2a").tools(offline, guarded)
    assert [t.name for t in tools] == ["echo", "later", "steps", "fail"]
    assert tools[0].description == f"Sends back what it was sent.\nMore detail.\n{INPUT}"
    assert tools[0].inputSchema is not None and tools[0].inputSchema["properties"]["text"]["type"] == "string"
    registered = Target("a2a", a2a.url, operations=({"name": "summarize", "description": "Summaries."},))
    assert [t.name for t in await client_for("a2a").tools(registered, guarded)] == ["summarize"]
    assert [t.name for t in await client_for("a2a").tools(Target("a2a", a2a.url), guarded)] == [ANY_SKILL]
    assert loopback_only == []


async def test_a2a_message_carries_text_data_skill_and_headers(a2a: Target, a2a_server: tuple[str, Recording]) -> None:
    recording = a2a_server[1]
    recording.headers.clear()
    outcome = await client_for("a2a").call(a2a, keyed(a2a.url), "echo", {"text": "hello", "city": "Oslo"}, None)
    assert outcome.result == {"parts": [{"text": "hello"}, {"data": {"city": "Oslo"}}, {"text": "skill=echo"}]}
    assert not outcome.is_error and outcome.texts == ["hello", "Oslo", "skill=echo"]
    assert set(recording.seen("x-api-key")) == {"operator-secret"} and set(recording.seen("a2a-version")) == {"1.0"}


async def test_a2a_running_task_is_followed_to_its_end(a2a: Target) -> None:
    outcome = await client_for("a2a").call(a2a, guarded, "later", {"text": "the report"}, None)
    assert outcome.result["state"] == "completed" and not outcome.is_error
    assert outcome.result["artifacts"][0]["parts"] == [{"text": "done: the report"}] and outcome.texts == ["done: the report"]


async def test_a2a_task_progress_is_told_while_it_is_polled(a2a: Target, a2a_server: tuple[str, Recording]) -> None:
    told: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        told.append((done, total, message))

    a2a_server[1].headers.clear()
    outcome = await client_for("a2a").call(a2a, guarded, "steps", {"text": "the report"}, progress)
    assert outcome.result["state"] == "completed" and outcome.texts == ["done: the report"]
    assert [done for done, _, _ in told] == list(range(1, len(told) + 1)) and told[-1][2] == "completed"
    assert told[0][2] is not None and told[0][2].startswith(("submitted", "working"))
    assert "text/event-stream" not in a2a_server[1].seen("accept")  # the card says the agent does not stream: polled


async def test_a2a_streaming_agent_tells_every_status_update(a2a_server: tuple[str, Recording]) -> None:
    made: dict[str, Recording] = {}
    with serving(lambda base: made.setdefault(base, Recording(a2a_agent(base, streaming=True)))) as base:
        card = MessageToDict(a2a_card(base, streaming=True))
        streaming = Target("a2a", base + A2A_PATH, transport_kind="JSONRPC", card=card, limits=LIMITS)
        told: list[str | None] = []

        async def progress(done: float, total: float | None, message: str | None) -> None:
            told.append(message)

        outcome = await client_for("a2a").call(streaming, guarded, "steps", {"text": "the report"}, progress)
        assert outcome.result["state"] == "completed" and outcome.texts == ["done: the report"]
        assert [m for m in told if m and "step" in m] == [f"working: step {i} of {STEPS}" for i in range(1, STEPS + 1)]
        assert told[-1] == "completed" and "text/event-stream" in made[base].seen("accept")
        made[base].headers.clear()
        quiet = await client_for("a2a").call(streaming, guarded, "steps", {"text": "x"}, None)  # no progress asked: polled
        assert quiet.result["state"] == "completed" and "text/event-stream" not in made[base].seen("accept")


async def test_a2a_failed_task_is_an_error_result(a2a: Target) -> None:
    outcome = await client_for("a2a").call(a2a, guarded, "fail", {"text": "x"}, None)
    assert outcome.is_error and outcome.result["state"] == "failed"
    assert outcome.result["message"] == [{"text": "no such skill: fail"}]


async def test_a2a_task_followed_within_the_time_limit(a2a: Target) -> None:
    started = time.monotonic()
    with pytest.raises(AgentTimeout, match=r"within 0\.2 s"):
        await client_for("a2a").call(replace(a2a, limits=QUICK), guarded, "later", {"text": "x"}, None)
    assert time.monotonic() - started < 1


async def test_a2a_answer_over_the_size_limit_is_refused(a2a: Target) -> None:
    with pytest.raises(AgentUnreachable, match=r"answer is \d+ bytes, over the limit of 2000"):  # as Content-Length says
        await client_for("a2a").call(replace(a2a, limits=SMALL), guarded, "echo", {"text": "x" * 3_000}, None)


async def test_a2a_version_0_3_card_is_called_as_0_3(a2a: Target, a2a_server: tuple[str, Recording]) -> None:
    card = {
        "name": "Old Echo",
        "description": "An A2A 0.3 card.",
        "url": a2a.url,
        "version": "1",
        "protocolVersion": "0.3.0",
        "preferredTransport": "JSONRPC",
        "capabilities": {},
        "defaultInputModes": ["text"],
        "defaultOutputModes": ["text"],
        "skills": [{"id": "echo", "name": "Echo", "description": "Echoes.", "tags": []}],
    }
    a2a_server[1].headers.clear()
    outcome = await client_for("a2a").call(replace(a2a, card=card), guarded, "echo", {"text": "hi"}, None)
    assert outcome.result == {"parts": [{"text": "hi"}, {"text": "skill=echo"}]}
    assert set(a2a_server[1].seen("a2a-version")) == {"0.3"}


@pytest.mark.parametrize(
    ("url", "kind", "refusal"),
    [("http://169.254.169.254/a2a", "JSONRPC", "network policy"), ("http://192.0.2.1/a2a", "GRPC", "binding GRPC")],
)
async def test_a2a_refusals_connect_nowhere(a2a: Target, url: str, kind: str, refusal: str, loopback_only: list[str]) -> None:
    with pytest.raises(AgentUnreachable, match=refusal):
        await client_for("a2a").call(Target("a2a", url, transport_kind=kind, card=a2a.card), guarded, "echo", {"text": "x"}, None)
    with pytest.raises(InvalidArgument, match="not a skill"):
        await client_for("a2a").call(Target("a2a", url, card=a2a.card), guarded, "unknown", {"text": "x"}, None)
    assert loopback_only == []


def test_the_a2a_sdk_is_imported_only_to_call_an_agent() -> None:
    """Importing the clients (and listing an A2A agent's skills) leaves the large SDK unloaded: the server's
    start-up and first tools/list do not pay for it."""
    probe = (
        "import sys, anyio; from ard_mcp.invocation.clients import client_for; from ard_mcp.invocation.calls import Target; "
        "anyio.run(client_for('a2a').tools, Target('a2a', 'http://192.0.2.1/'), None); print('a2a' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "False", result.stderr


# -- AIDIP HTTP agent --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def aidip() -> Iterator[str]:
    with serving(lambda base: aidip_agent()) as base:
        yield base


OPERATIONS: tuple[dict[str, Any], ...] = (
    {"name": "translateText", "description": "Translates text.\nAll of it.", "inputs": {"type": "object", "required": ["text"]}},
    {"name": "detectLanguage"},
)


async def test_http_tools_are_the_operations_without_a_call(loopback_only: list[str]) -> None:
    tools = await client_for("http").tools(Target("http", "http://192.0.2.1/agent", operations=OPERATIONS), guarded)
    assert [(t.name, t.description, t.inputSchema) for t in tools] == [
        ("translateText", "Translates text.\nAll of it.", {"type": "object", "required": ["text"]}),
        ("detectLanguage", None, None),
    ]
    assert [t.name for t in await client_for("http").tools(Target("http", "http://192.0.2.1/agent"), guarded)] == [ANY_OPERATION]
    assert loopback_only == []


async def test_http_call_posts_the_input_and_names_the_operation_where_there_are_several(aidip: str) -> None:
    one = Target("http", aidip + "/translate", operations=OPERATIONS[:1], limits=LIMITS)
    outcome = await client_for("http").call(one, guarded, "translateText", {"text": "hi", "target_language": "fr"}, None)
    assert outcome.result == {"translated_text": "[fr] hi", "echo": {"text": "hi", "target_language": "fr"}} and not outcome.is_error
    assert outcome.texts == ["[fr] hi", "hi", "fr"]
    several = Target("http", aidip + "/translate", operations=OPERATIONS, limits=LIMITS)
    outcome = await client_for("http").call(several, guarded, "detectLanguage", {"target_language": "en"}, None)
    assert outcome.result["echo"] == {"target_language": "en", "operation": "detectLanguage"}
    with pytest.raises(InvalidArgument, match="not an operation"):
        await client_for("http").call(several, guarded, ANY_OPERATION, {}, None)


async def test_http_call_sends_the_operators_headers_and_follows_a_redirect_on_its_origin(aidip: str) -> None:
    outcome = await client_for("http").call(Target("http", aidip + "/headers"), keyed(aidip), ANY_OPERATION, {}, None)
    assert outcome.result == {"key": "operator-secret"}
    outcome = await client_for("http").call(Target("http", aidip + "/moved"), guarded, ANY_OPERATION, {"target_language": "de"}, None)
    assert outcome.result["translated_text"] == "[de] "


async def test_http_call_tells_how_long_it_has_waited_while_the_agent_works(aidip: str) -> None:
    told: list[tuple[float, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        told.append((done, message))

    patient = HttpAgentClient(waiting_every=0.5)
    outcome = await patient.call(Target("http", aidip + "/slow", limits=LIMITS), guarded, ANY_OPERATION, {}, progress)
    assert outcome.result == {"late": True}
    assert len(told) >= 3 and 0.5 <= told[0][0] < 2 and told[0][1] == f"waiting for the agent's answer ({told[0][0]:g} s)"
    assert [done for done, _ in told] == sorted(done for done, _ in told)
    with pytest.raises(AgentError, match="failed with 500"):  # failures come as they do without progress
        await patient.call(Target("http", aidip + "/fails", limits=LIMITS), guarded, ANY_OPERATION, {}, progress)
    with pytest.raises(AgentTimeout, match=r"within 0\.2 s"):
        await patient.call(Target("http", aidip + "/slow", limits=QUICK), guarded, ANY_OPERATION, {}, progress)


@pytest.mark.parametrize(
    ("path", "error", "status", "message"),
    [
        ("/translate", AgentError, 400, r"answered 400: Required field 'target_language' is missing. \(InvalidInput\)"),
        ("/unauthorized", AgentError, 401, r"answered 401: No API key. \(Unauthorized\)"),
        ("/teapot", AgentError, 418, "answered 418: I am a teapot"),
        ("/fails", AgentError, 502, "failed with 500: boom"),  # reached: the agent's own failure, not an unreachable agent
        ("/slow", AgentTimeout, 504, "within 0.2 s"),
        ("/huge", AgentUnreachable, 502, "over the limit of 64000 bytes"),
        ("/malformed", AgentUnreachable, 502, "malformed JSON"),
        ("/html", AgentUnreachable, 502, "text/html, not JSON"),
        ("/loop", AgentUnreachable, 502, "redirected more than 3 times"),
    ],
)
async def test_http_answers_that_are_not_results(aidip: str, path: str, error: type[Exception], status: int, message: str) -> None:
    limits = QUICK if path == "/slow" else LIMITS
    with pytest.raises(error, match=message) as raised:
        await client_for("http").call(Target("http", aidip + path, limits=limits), guarded, ANY_OPERATION, {"text": "x"}, None)
    assert getattr(raised.value, "http_status", None) == status


@pytest.mark.parametrize(
    ("path", "refusal"),
    [
        ("/to-metadata", "another origin, http://169.254.169.254"),
        ("/to-private", "another origin, http://10.0.0.1"),
        ("/to-other-host", "another origin, http://localhost"),
    ],
)
async def test_http_redirects_off_the_origin_are_not_followed(aidip: str, path: str, refusal: str, loopback_only: list[str]) -> None:
    with pytest.raises(AgentUnreachable, match=refusal):
        await client_for("http").call(Target("http", aidip + path), keyed(aidip), ANY_OPERATION, {}, None)
    assert loopback_only == []


async def test_http_connections_go_through_the_network_policy(loopback_only: list[str]) -> None:
    with pytest.raises(AgentUnreachable, match="network policy"):
        await client_for("http").call(Target("http", "http://169.254.169.254/latest"), guarded, ANY_OPERATION, {}, None)
    with pytest.raises(AgentUnreachable, match="could not reach the agent"):
        await client_for("http").call(Target("http", "http://192.0.2.1/agent", limits=LIMITS), guarded, ANY_OPERATION, {}, None)
    assert loopback_only == ["192.0.2.1"]
