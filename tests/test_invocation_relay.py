"""A faithful proxy (issue #45): what a server called through ard-mcp asks mid-call (sampling, elicitation, its
roots) reaches the host of the call, as it would attached directly; where the host cannot take it (no such
capability, no channel for a request mid-call, a REST caller) the server gets a clear error, never a hang.
A real MCP server on loopback whose tools ask, the real registry, the SDK's client as the host."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from pydantic import FileUrl

from ard_mcp.config import Config
from ard_mcp.invocation.policy import InvocationPolicy, Limits
from ard_mcp.surfaces.auth import Principal, TokenStore
from ard_mcp.surfaces.mcp.server import build_server
from ard_mcp.surfaces.rest.settings import HttpSettings
from ard_mcp.surfaces.services import Services
from tests.agent_servers import legacy_only, mcp_agent, serving
from tests.http_support import running

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

POLICY = InvocationPolicy(enabled=True, allow_private_networks=True, limits=Limits(connect=2.0, total=10.0))
ASKING = "urn:air:weather.example:mcp:asking"


def _asking(base: str) -> dict[str, Any]:
    """The entry of the MCP server at `base`."""
    return {
        "identifier": ASKING,
        "displayName": "Asking weather",
        "type": "application/mcp-server-card+json",
        "description": "Forecasts, asking the person and the model along the way.",
        "data": {"name": "asking", "remotes": [{"type": "streamable-http", "url": base + "/mcp"}]},
    }


@pytest.fixture(scope="module")
def asking() -> Iterator[dict[str, Any]]:
    with serving(lambda base: mcp_agent().streamable_http_app(streamable_http_path="/mcp")) as base:
        yield _asking(base)


async def _called(tmp_path: Path, entry: dict[str, Any], tools: list[str], **host: Any) -> list[Any]:
    server = build_server(Config(tmp_path / "data"), warm=False, services=Services("http://registry.test", invocation=POLICY))
    async with Client(server, **host) as client:
        assert not (await client.call_tool("register_agent", {"entry": entry})).is_error
        return [await client.call_tool("call_agent", {"identifier": ASKING, "tool": tool}) for tool in tools]


def _result(called: Any) -> str:
    assert not called.is_error, called.content
    return str(json.loads(called.content[0].text)["result"]["result"])


async def test_what_a_called_server_asks_reaches_the_host(tmp_path: Path, asking: dict[str, Any]) -> None:
    asked: list[str] = []

    async def elicit(context: ClientRequestContext, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult:
        asked.append(params.message)
        return mcp_types.ElicitResult(action="accept", content={"name": "Bergen"})

    async def sample(context: ClientRequestContext, params: mcp_types.CreateMessageRequestParams) -> mcp_types.CreateMessageResult:
        asked.append(str(params.messages[0].content))
        return mcp_types.CreateMessageResult(role="assistant", content=mcp_types.TextContent(type="text", text="mild"), model="host")

    async def roots(context: ClientRequestContext) -> mcp_types.ListRootsResult:
        return mcp_types.ListRootsResult(roots=[mcp_types.Root(uri=FileUrl("file:///home/me/project"))])

    host = {"mode": "legacy", "elicitation_callback": elicit, "sampling_callback": sample, "list_roots_callback": roots}
    person, model, listed = await _called(tmp_path, asking, ["ask_the_person", "ask_the_model", "the_roots"], **host)
    assert [_result(person), _result(model), _result(listed)] == ["Sunny in Bergen", "the model said: mild", "file:///home/me/project"]
    assert asked[0].endswith(' asks (passed on by ard-mcp, not ard-mcp\'s own question): "Which city?"')
    assert "Summarise the weather." in asked[1]


@pytest.mark.parametrize(
    ("host", "why"),
    [
        ({"mode": "legacy"}, "the host did not declare elicitation"),
        (
            {"elicitation_callback": lambda context, params: None},
            "the host's protocol gives a server no channel for a request in the middle of a call",
        ),  # 2026-07-28
    ],
)
async def test_a_request_the_host_cannot_take_is_refused_saying_why(
    tmp_path: Path, asking: dict[str, Any], host: dict[str, Any], why: str
) -> None:
    (refused,) = await _called(tmp_path, asking, ["ask_the_person"], **host)
    assert refused.is_error and f"ard-mcp did not pass this on: {why}" in refused.content[0].text


async def test_a_rest_caller_has_no_host_to_ask(tmp_path: Path, asking: dict[str, Any]) -> None:
    token = "caller-token-0123456789abcdef"
    settings = HttpSettings(tokens=TokenStore({token: Principal("caller", ("*",), invoke=True)}), invocation=POLICY)
    async with running(tmp_path / "data", settings) as rest:
        bearer = {"Authorization": f"Bearer {token}"}
        assert (await rest.post("/agents", json=asking, headers=bearer)).status_code == 201
        refused = await rest.post(f"/agents/{ASKING}/invoke", params={"operation": "ask_the_person"}, json={}, headers=bearer)
    assert refused.status_code == 400 and "ard-mcp did not pass this on: the call it serves has no host to ask" in refused.text


async def test_what_a_called_server_asks_is_marked_as_its_own_and_bounded(tmp_path: Path) -> None:
    """Issue #53: a called server's questions imitating ard-mcp's consent question, asking for a key, sending the
    person to a page, and pushing prompts without end. What reaches the host says whose it is, in the server's
    quoted words; a secret field and a page are refused; each call, and each minute, is bounded."""
    questions: list[str] = []
    prompts: list[str | None] = []

    async def elicit(context: ClientRequestContext, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult:
        questions.append(params.message)
        return mcp_types.ElicitResult(action="accept", content={"network": True})

    async def sample(context: ClientRequestContext, params: mcp_types.CreateMessageRequestParams) -> mcp_types.CreateMessageResult:
        prompts.append(params.system_prompt)
        return mcp_types.CreateMessageResult(role="assistant", content=mcp_types.TextContent(type="text", text="ok"), model="host")

    with serving(lambda base: legacy_only(mcp_agent()).streamable_http_app(streamable_http_path="/mcp")) as base:
        entry = _asking(base)
        server = build_server(Config(tmp_path / "data"), warm=False, services=Services("http://registry.test", invocation=POLICY))
        async with Client(server, mode="legacy", elicitation_callback=elicit, sampling_callback=sample) as client:
            assert not (await client.call_tool("register_agent", {"entry": entry})).is_error

            async def asked(times: int, *kinds: str) -> list[str]:
                arguments = {"times": times, "kinds": list(kinds)}
                called = await client.call_tool("call_agent", {"identifier": ASKING, "tool": "keep_asking", "arguments": arguments})
                said: list[str] = json.loads(_result(called))
                return said

            secret, page = await asked(1, "key", "page")
            first, second, third = await asked(5, "form"), await asked(5, "form"), await asked(1, "form")
            sampled = await asked(12, "sample")

    assert "a form may not ask for a secret (field 'apiKey')" in secret
    assert "asked to send the person to a web page (URL mode), which the person has not allowed it" in page
    voice = f"{base}/mcp asks (passed on by ard-mcp, not ard-mcp's own question): "
    assert len(questions) == 6 and all(q.startswith(voice + '"[ard-mcp] Verified: ') and "\n" not in q for q in questions)
    assert first[:3] == second[:3] == ["accept"] * 3
    assert all("already made 3 question requests in this call" in s for s in first[3:] + second[3:])
    assert "already made 6 question requests in the last minute" in third[0]
    assert sampled[:10] == ["sampled: ok"] * 10 and all("already made 10 sampling requests in this call" in s for s in sampled[10:])
    assert len(prompts) == 10 and all(p == voice.rstrip() for p in prompts)
