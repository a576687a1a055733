"""Kept MCP sessions (`invocation.clients.mcp_sessions`) against a real MCP server on loopback: kept per endpoint
and credential, lent to one call at a time (sequential calls share one, concurrent calls each get their own);
closed when the call it is lent to fails (and opened afresh by the next), when idle, past the pool's bound,
at shutdown; never kept for SSE; every connection still through the network policy. One caller's timeout,
oversize answer or refused call never reaches another caller's call."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from typing import Any

import anyio
import mcp_types
import pytest
from mcp import MCPError

from ard_mcp.errors import AgentError, AgentTimeout, AgentUnreachable, ArdError
from ard_mcp.invocation.calls import Target, TransportFactory
from ard_mcp.invocation.clients.mcp_agent import McpAgentClient
from ard_mcp.invocation.clients.mcp_sessions import SessionPool, refused_only
from ard_mcp.invocation.credentials import AgentCredentials, Credentialed
from ard_mcp.invocation.policy import Limits
from tests.agent_servers import Locked, Recording, mcp_agent, serving
from tests.test_invocation_clients import LIMITS, QUICK, guarded

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


@pytest.fixture(scope="module")
def agent() -> Iterator[tuple[str, str, Recording, Recording]]:
    """The MCP server over streamable HTTP and over SSE: both URLs and the requests each saw."""
    server = mcp_agent()
    streamable = Recording(server.streamable_http_app(streamable_http_path="/mcp"))
    sse = Recording(server.sse_app())
    with serving(lambda base: streamable) as one, serving(lambda base: sse) as other:
        yield one + "/mcp", other + "/sse", streamable, sse


@pytest.fixture
async def pool() -> AsyncIterator[SessionPool]:
    async with anyio.create_task_group() as group:
        sessions = SessionPool(group, max_sessions=4, idle_s=30)
        yield sessions
        group.cancel_scope.cancel()


def target(agent: tuple[str, str, Recording, Recording], key: str | None = None) -> Target:
    """The streamable-HTTP endpoint, with the operator's `X-API-Key: key` for it where `key` is given."""
    credential = AgentCredentials.parse(f"{agent[0]} X-API-Key: {key}" if key else "").chosen("agents.example", agent[0])
    return Target("mcp", agent[0], transport_kind="streamable-http", credential=credential, limits=LIMITS)


def transport(of: Target) -> TransportFactory:
    """What the invoker hands a call to `of`: the guarded transport, with the target's credential where it has one."""
    credential = of.credential
    return guarded if credential is None else lambda: Credentialed(guarded(), credential)


async def test_sequential_calls_share_a_session_and_concurrent_calls_get_their_own(
    pool: SessionPool, agent: tuple[str, str, Recording, Recording]
) -> None:
    client, recording = McpAgentClient(pool), agent[2]
    assert (await client.call(target(agent), guarded, "forecast", {"city": "Oslo"}, None)).result["city"] == "Oslo"
    recording.headers.clear()
    for city in ("Bergen", "Tromsø"):
        assert (await client.call(target(agent), guarded, "forecast", {"city": city}, None)).result["city"] == city
    assert len(recording.headers) == 2 and len(pool) == 1  # one request a call: no probe, no tools/list, no new session
    answers: list[str] = []

    async def one(city: str) -> None:
        answers.append((await client.call(target(agent), guarded, "forecast", {"city": city}, None)).result["city"])

    async with anyio.create_task_group() as group:
        for i in range(6):
            group.start_soon(one, f"city {i}")
    assert sorted(answers) == [f"city {i}" for i in range(6)]
    assert 1 < len(pool) <= 4  # sessions of their own, the idle ones past the pool's bound closed


async def test_credentials_key_the_session_and_the_pool_is_bounded(agent: tuple[str, str, Recording, Recording]) -> None:
    async with anyio.create_task_group() as group:
        pool = SessionPool(group, max_sessions=2, idle_s=30)
        client, recording = McpAgentClient(pool), agent[2]
        for key in ("one", "two", "three"):
            recording.headers.clear()
            keyed = target(agent, key)
            await client.call(keyed, transport(keyed), "forecast", {"city": "Oslo"}, None)
            assert set(recording.seen("x-api-key")) == {key}  # each credential's calls on a session of its own
        assert len(pool) == 2  # the least recently used one was closed
        group.cancel_scope.cancel()


async def test_a_failed_call_closes_its_session_and_the_next_opens_another(
    pool: SessionPool, agent: tuple[str, str, Recording, Recording]
) -> None:
    client, recording = McpAgentClient(pool), agent[2]
    await client.call(target(agent), guarded, "forecast", {"city": "Oslo"}, None)
    with pytest.raises(AgentError, match="the city is unknown"):  # the agent's refusal of one call: the session stays
        await client.call(target(agent), guarded, "refuses", {}, None)
    assert len(pool) == 1
    with pytest.raises(AgentTimeout):
        await client.call(replace(target(agent), limits=replace(QUICK, total=0.3)), guarded, "slow", {}, None)
    with pytest.raises(AgentTimeout):  # a timeout closes its session (keyed by the limits too)
        await client.call(replace(target(agent), limits=replace(QUICK, total=0.3)), guarded, "slow", {}, None)
    recording.headers.clear()
    small = replace(target(agent), limits=Limits(connect=5, total=20, max_bytes=4_000))  # the tools/list fits
    with pytest.raises(AgentUnreachable, match="over the limit of 4000"):
        await client.call(small, guarded, "verbose", {"size": 5_000}, None)
    assert (await client.call(small, guarded, "forecast", {"city": "Oslo"}, None)).result["city"] == "Oslo"
    assert len(recording.headers) > 2  # the second call opened a new session: more than its one request


async def test_one_callers_failure_never_reaches_another_callers_call(
    pool: SessionPool, agent: tuple[str, str, Recording, Recording]
) -> None:
    """Same endpoint, same limits: while one call times out, another's answer is over the size cap and a third is
    refused, the calls around them (one of them in flight across the timeout) all get their own answers."""
    client = McpAgentClient(pool)
    shared = replace(target(agent), limits=Limits(connect=5, total=1.5, max_bytes=4_000))
    await client.call(shared, guarded, "forecast", {"city": "Oslo"}, None)  # a session kept, for all to share if they could
    failures: dict[str, tuple[type[ArdError], str, float]] = {}
    answers: list[str] = []
    started = time.monotonic()

    async def failing(name: str, tool: str, arguments: dict[str, Any]) -> None:
        try:
            await client.call(shared, guarded, tool, arguments, None)
        except ArdError as exc:
            failures[name] = (type(exc), exc.message, time.monotonic() - started)

    async def good(delay: float, tool: str, arguments: dict[str, Any]) -> None:
        await anyio.sleep(delay)
        answers.append(str((await client.call(shared, guarded, tool, arguments, None)).result))

    async with anyio.create_task_group() as group:
        group.start_soon(failing, "timeout", "slow", {"seconds": 3})
        group.start_soon(failing, "oversize", "verbose", {"size": 5_000})
        group.start_soon(failing, "refused", "refuses", {})
        group.start_soon(good, 1.0, "slow", {"seconds": 1.0})  # in flight when the first call times out at 1.5 s
        for i in range(8):
            group.start_soon(good, i * 0.25, "forecast", {"city": f"city {i}"})
    assert failures["timeout"][:2] == (AgentTimeout, "the agent did not finish within 1.5 s") and failures["timeout"][2] < 2.5
    assert failures["oversize"][0] is AgentUnreachable and "over the limit of 4000" in failures["oversize"][1]
    assert failures["refused"][0] is AgentError and "the city is unknown" in failures["refused"][1]
    assert len(answers) == 9 and "{'result': 'late'}" in answers


def test_only_the_agents_refusal_of_one_call_keeps_its_session() -> None:
    assert refused_only(MCPError(mcp_types.INVALID_PARAMS, "the city is unknown"))
    assert refused_only(MCPError(4001, "an error code of the agent's own"))
    for code in (mcp_types.INVALID_REQUEST, mcp_types.CONNECTION_CLOSED, mcp_types.INTERNAL_ERROR, mcp_types.REQUEST_TIMEOUT):
        assert not refused_only(MCPError(code, "Session terminated"))
    assert not refused_only(TimeoutError()) and not refused_only(AgentUnreachable("over the limit"))


async def test_idle_sessions_close_and_shutdown_closes_all(agent: tuple[str, str, Recording, Recording]) -> None:
    async with anyio.create_task_group() as group:
        pool = SessionPool(group, idle_s=0.2)
        client = McpAgentClient(pool)
        await client.call(target(agent), guarded, "forecast", {"city": "Oslo"}, None)
        assert len(pool) == 1
        with anyio.fail_after(5):
            while len(pool):
                await anyio.sleep(0.05)
        await client.call(target(agent), guarded, "forecast", {"city": "Oslo"}, None)
        other = target(agent, "other")
        await client.call(other, transport(other), "forecast", {"city": "Oslo"}, None)
        assert len(pool) == 2
        pool.close_all()
        assert len(pool) == 0
        group.cancel_scope.cancel()


async def test_sse_sessions_are_not_kept(pool: SessionPool, agent: tuple[str, str, Recording, Recording]) -> None:
    sse = Target("mcp", agent[1], transport_kind="sse", limits=LIMITS)
    assert (await McpAgentClient(pool).call(sse, guarded, "forecast", {"city": "Oslo"}, None)).result["city"] == "Oslo"
    assert len(pool) == 0


async def test_a_kept_session_connects_through_the_network_policy(pool: SessionPool, loopback_only: list[str]) -> None:
    refused = Target("mcp", "http://169.254.169.254/mcp", transport_kind="streamable-http", limits=LIMITS)
    for _ in range(2):  # a failed opening is not kept: the second call is refused again, not served from the pool
        with pytest.raises(AgentUnreachable, match="network policy"):
            await McpAgentClient(pool).call(refused, guarded, "forecast", {"city": "Oslo"}, None)
    assert loopback_only == [] and len(pool) == 0


async def test_callers_waiting_on_a_refused_session_each_get_the_agents_401(pool: SessionPool) -> None:
    with serving(lambda base: Locked(mcp_agent().streamable_http_app(streamable_http_path="/mcp"))) as base:
        locked = Target("mcp", base + "/mcp", transport_kind="streamable-http", limits=LIMITS)
        statuses: list[int] = []

        async def one() -> None:
            with pytest.raises(AgentError) as raised:
                await McpAgentClient(pool).call(locked, guarded, "forecast", {"city": "Oslo"}, None)
            statuses.append(raised.value.http_status)

        async with anyio.create_task_group() as group:
            for _ in range(3):
                group.start_soon(one)
    assert statuses == [401, 401, 401] and len(pool) == 0
