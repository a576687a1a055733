"""What a host can be handed by the call path, and what it is told when a call is refused (issue #44): tool lists
bounded, paged, narrowed by the task and screened as third-party text; tool names a reader cannot see never
called; an agent's failure a tool error, never a success; limits and bad arguments as errors a host can act
on; an SSE server that points elsewhere failed at once; every fetch and refusal in the audit log. Real MCP
servers on loopback, the real registry, the real SDK client."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from ard_mcp.assembly.app import build_app
from ard_mcp.config import Config
from ard_mcp.invocation.audit import AuditLog
from ard_mcp.invocation.policy import InvocationPolicy, Limits
from ard_mcp.surfaces.auth import Principal, TokenStore
from ard_mcp.surfaces.mcp.server import build_server
from ard_mcp.surfaces.rest.ratelimit import RateLimits
from ard_mcp.surfaces.rest.settings import HttpSettings
from ard_mcp.surfaces.services import Services
from tests.agent_servers import elsewhere_sse, many_tools_agent, mcp_agent, poisoned_agent, serving
from tests.http_support import BASE_URL

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

POLICY = InvocationPolicy(enabled=True, allow_private_networks=True, limits=Limits(connect=2.0, total=20.0))
CALLER = "caller-token-0123456789abcdef"
OPERATOR = "operator-token-0123456789abcd"


def entry(url: str, name: str = "agent", transport: str = "streamable-http") -> dict[str, Any]:
    return {
        "identifier": f"urn:air:tools.example:mcp:{name}",
        "displayName": name,
        "type": "application/mcp-server-card+json",
        "description": "An MCP server on loopback.",
        "data": {"name": name, "remotes": [{"type": transport, "url": url}]},
    }


def text_of(result: Any) -> str:
    return str(result.content[0].text)


@asynccontextmanager
async def registry_client(tmp_path: Path, *entries: dict[str, Any], policy: InvocationPolicy = POLICY) -> AsyncIterator[Client]:
    server = build_server(Config(tmp_path / "data"), warm=False, services=Services("http://registry.test", invocation=policy))
    async with Client(server) as client:
        for document in entries:
            registered = await client.call_tool("register_agent", {"entry": document})
            assert not registered.is_error, registered.content
        yield client


@pytest.fixture(scope="module")
def many() -> Iterator[str]:
    with serving(lambda base: many_tools_agent(5_000).streamable_http_app(streamable_http_path="/mcp")) as base:
        yield base + "/mcp"


async def test_a_5000_tool_server_is_listed_a_page_at_a_time_and_narrowed_by_the_task(tmp_path: Path, many: str) -> None:
    async with registry_client(tmp_path, entry(many, "many")) as client:
        first = await client.call_tool("get_agent_tools", {"identifier": "urn:air:tools.example:mcp:many"})
        page = json.loads(text_of(first))
        assert len(text_of(first)) < 5_000  # the whole list answered 643,061 characters
        assert page["total"] == 5_000 and len(page["tools"]) == 25 and page["thirdPartyContent"] is True
        second = json.loads(
            text_of(
                await client.call_tool(
                    "get_agent_tools", {"identifier": "urn:air:tools.example:mcp:many", "pageToken": page["nextPageToken"], "pageSize": 100}
                )
            )
        )
        assert second["tools"][0]["name"] == "records_op_25" and len(second["tools"]) == 100
        task = "will it rain in Oslo next week?"
        narrowed = json.loads(
            text_of(await client.call_tool("get_agent_tools", {"identifier": "urn:air:tools.example:mcp:many", "task": task}))
        )
        assert narrowed["tools"][0]["name"] == "weather_forecast", narrowed["tools"][:3]
        bad = await client.call_tool(
            "get_agent_tools", {"identifier": "urn:air:tools.example:mcp:many", "pageToken": page["nextPageToken"], "task": task}
        )
        assert bad.is_error and "belongs to a different query" in text_of(bad)
        called = await client.call_tool("call_agent", {"identifier": "urn:air:tools.example:mcp:many", "tool": "weather_forecast"})
        assert json.loads(text_of(called))["result"][0]["text"] == "weather_forecast"
        several = await client.call_tool("call_agent", {"identifier": "urn:air:tools.example:mcp:many"})
        assert several.is_error and "this agent has 5000 tools, so name the one to call" in text_of(several)
        assert text_of(several).endswith("and 4980 more")


async def test_tool_names_and_descriptions_are_screened_as_third_party_text(tmp_path: Path) -> None:
    called: list[str] = []
    with serving(lambda base: poisoned_agent(called).streamable_http_app(streamable_http_path="/mcp")) as base:
        async with registry_client(tmp_path, entry(base + "/mcp", "poisoned")) as client:
            listed = json.loads(text_of(await client.call_tool("get_agent_tools", {"identifier": "urn:air:tools.example:mcp:poisoned"})))
            for name in ("safe\u202etxt.exe", "clear\x1b[2J"):
                refused = await client.call_tool("call_agent", {"identifier": "urn:air:tools.example:mcp:poisoned", "tool": name})
                assert refused.is_error and "holds characters a reader cannot see" in text_of(refused)
                assert "\x1b" not in text_of(refused) and "\u202e" not in text_of(refused)
            one = await client.call_tool("get_agent_tools", {"identifier": "urn:air:tools.example:mcp:poisoned", "tool": "lookup"})
    assert [t["name"] for t in listed["tools"]] == ["lookup"] and listed["total"] == 1 and listed["thirdPartyContent"] is True
    assert listed["warnings"][0] == "2 tool(s) left out: their names hold characters a reader cannot see"
    assert any("request for secrets in tool lookup description (pass the user's credentials)" in w for w in listed["warnings"])
    assert json.loads(text_of(one))["warnings"] == listed["warnings"]
    assert called == []  # never sent to the agent
    logged = [(r.action, r.outcome, r.tool) for r in AuditLog(tmp_path / "data").newest(10)]
    assert ("tools", "ok", "") in logged  # the fetch from the remote server (the next list was the kept one)
    assert logged.count(("call", "invalid", "safe\u202etxt.exe")) == 1 and ("call", "invalid", "clear\x1b[2J") in logged


async def test_an_agents_failure_is_a_tool_error_and_a_502_never_a_success(tmp_path: Path) -> None:
    with serving(lambda base: mcp_agent().streamable_http_app(streamable_http_path="/mcp")) as base:
        weather = entry(base + "/mcp", "weather")
        async with registry_client(tmp_path, weather) as client:
            broken = await client.call_tool("call_agent", {"identifier": weather["identifier"], "tool": "broken"})
        assert broken.is_error and broken.structured_content is not None
        assert broken.structured_content["isError"] is True and "the forecast service is down" in json.dumps(broken.structured_content)
        tokens = TokenStore({CALLER: Principal("caller", (), invoke=True)})
        app = build_app(Config(tmp_path / "data"), HttpSettings(tokens=tokens, invocation=POLICY), warm=False)
        async with app.router.lifespan_context(app), httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL) as rest:
            failed = await rest.post(
                f"/agents/{weather['identifier']}/invoke",
                params={"operation": "broken"},
                json={},
                headers={"Authorization": f"Bearer {CALLER}"},
            )
    assert failed.status_code == 502 and failed.headers["ard-invocation-error"] == "true"
    assert failed.json()["error"]["code"] == "AgentError" and "the forecast service is down" in failed.json()["error"]["details"][0]
    assert [(r.caller, r.outcome, r.status) for r in AuditLog(tmp_path / "data").newest(2)] == [
        ("caller", "agent-error", None),
        ("local", "agent-error", None),
    ]


async def test_argument_errors_are_one_sentence(tmp_path: Path) -> None:
    async with registry_client(tmp_path) as client:
        missing = await client.call_tool("call_agent", {"arguments": "not an object"})
        paged = await client.call_tool("get_agent_tools", {"identifier": "urn:air:x.example:y", "pageSize": 1_000})
        search = await client.call_tool("search_agents", {"text": "weather", "pageSize": "many"})
    assert missing.is_error and text_of(missing) == "call_agent: identifier is required; arguments must be an object"
    assert paged.is_error and text_of(paged) == "get_agent_tools: pageSize input should be less than or equal to 100"
    assert search.is_error and text_of(search) == "search_agents: pageSize must be an integer"


async def test_an_sse_endpoint_event_naming_another_origin_fails_at_once(tmp_path: Path) -> None:
    with serving(lambda base: elsewhere_sse("http://127.0.0.2:9")) as base:
        sse = entry(base + "/sse", "elsewhere", transport="sse")
        async with registry_client(tmp_path, sse, policy=InvocationPolicy(enabled=True, allow_private_networks=True)) as client:
            started = time.monotonic()
            failed = await client.call_tool("call_agent", {"identifier": sse["identifier"], "tool": "x"})
    assert time.monotonic() - started < 10  # the invocation timeout is 60 s
    assert (
        failed.is_error
        and f"the SSE stream at {base}/sse named another origin for its messages, http://127.0.0.2:9/messages/" in text_of(failed)
    )


async def test_an_agent_on_a_private_network_is_refused_naming_the_option_for_calls(tmp_path: Path) -> None:
    with serving(lambda base: mcp_agent().streamable_http_app(streamable_http_path="/mcp")) as base:
        weather = entry(base + "/mcp", "weather")
        async with registry_client(tmp_path, weather, policy=InvocationPolicy(enabled=True)) as client:
            refused = await client.call_tool(
                "call_agent", {"identifier": weather["identifier"], "tool": "forecast", "arguments": {"city": "Oslo"}}
            )
    assert refused.is_error and "--allow-private-networks to call agents on private networks" in text_of(refused)
    assert "crawl" not in text_of(refused)


@asynccontextmanager
async def served_app(tmp_path: Path, limits: RateLimits) -> AsyncIterator[tuple[httpx.AsyncClient, Client]]:
    """The HTTP app with `limits` on loopback clients too: a REST client and an MCP client with the caller's token."""
    tokens = TokenStore({CALLER: Principal("caller", (), invoke=True), OPERATOR: Principal("operator", ("*",))})
    app = build_app(Config(tmp_path / "data"), HttpSettings(tokens=tokens, invocation=POLICY, rate_limits=limits), warm=False)
    bearer = {"Authorization": f"Bearer {CALLER}"}
    async with AsyncExitStack() as stack:
        await stack.enter_async_context(app.router.lifespan_context(app))
        rest = await stack.enter_async_context(httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL, headers=bearer))
        http = await stack.enter_async_context(httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), headers=bearer, timeout=60))
        mcp = await stack.enter_async_context(Client(streamable_http_client(f"{BASE_URL}/mcp", http_client=http)))
        yield rest, mcp


async def test_over_mcp_a_rate_limit_is_a_tool_error_with_the_retry_time_and_is_audited(tmp_path: Path) -> None:
    with serving(lambda base: mcp_agent().streamable_http_app(streamable_http_path="/mcp")) as base:
        weather = entry(base + "/mcp", "weather")
        async with served_app(tmp_path, RateLimits(reads=600, invocations=6, loopback=True)) as (rest, mcp):
            assert (await rest.post("/agents", json=weather, headers={"Authorization": f"Bearer {OPERATOR}"})).status_code == 201
            arguments = {"identifier": weather["identifier"], "tool": "forecast", "arguments": {"city": "Oslo"}}
            answers = [await mcp.call_tool("call_agent", arguments) for _ in range(3)]
            over_rest = await rest.post(f"/agents/{weather['identifier']}/invoke", params={"operation": "forecast"}, json={"city": "Oslo"})
    assert not answers[0].is_error  # a burst of one
    assert answers[1].is_error and "RATE_LIMIT_EXCEEDED: too many invocations from this client" in text_of(answers[1])
    assert "retry after" in text_of(answers[1])
    assert over_rest.status_code == 429 and int(over_rest.headers["retry-after"]) >= 1
    outcomes = [(r.outcome, r.status) for r in AuditLog(tmp_path / "data").newest(10)]
    assert outcomes[:3] == [("refused", 429), ("refused", 429), ("refused", 429)] and ("ok", None) in outcomes


async def test_over_mcp_a_read_limit_is_a_tool_error_too(tmp_path: Path) -> None:
    async with served_app(tmp_path, RateLimits(reads=36, loopback=True)) as (_, mcp):  # a burst of 6, the connection's included
        answers = [await mcp.call_tool("search_agents", {"text": "weather"}) for _ in range(8)]
    assert not answers[0].is_error
    refused = text_of(answers[-1])
    assert answers[-1].is_error and refused.startswith("RATE_LIMIT_EXCEEDED: too many reads from this client: at most 36 a minute")
    assert "retry after" in refused


def test_over_stdio_invocation_turned_off_names_the_option_that_did_it() -> None:
    from ard_mcp.errors import PermissionDenied
    from ard_mcp.surfaces.cli.arguments import build_parser
    from ard_mcp.surfaces.cli.invocation_settings import invocation_policy

    stdio = invocation_policy(build_parser().parse_args(["serve", "--no-invocation"]), stdio=True)
    with pytest.raises(PermissionDenied, match="it was started with --no-invocation; start it without to call agents"):
        stdio.check("urn:air:x.example:y", None, True)
    http = invocation_policy(build_parser().parse_args(["serve", "--transport", "streamable-http"]), stdio=False)
    with pytest.raises(PermissionDenied, match="its operator can turn it on with --allow-invocation"):
        http.check("urn:air:x.example:y", None, True)


async def test_a_body_nested_10000_deep_is_refused_not_a_server_error(tmp_path: Path) -> None:
    """The guard reads an MCP message to tell its tool calls apart; a body it cannot read is the SDK's parse
    error, never a RecursionError escaping as 500."""
    nested = b"[" * 10_000 + b"]" * 10_000
    async with served_app(tmp_path, RateLimits(loopback=True)) as (rest, _):
        mcp = await rest.post(
            "/mcp", content=nested, headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        )
        invoke = await rest.post("/agents/urn:air:x.example:y/invoke", content=nested, headers={"Content-Type": "application/json"})
    assert mcp.status_code == 400 and mcp.json()["error"]["code"] == -32700
    assert invoke.status_code == 400 and "nested deeper than 64 levels" in invoke.json()["error"]["message"]
