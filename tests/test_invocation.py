"""From finding to using (issue #32): an MCP client attached only to ard-mcp finds, inspects and calls a remote MCP
server's tool, an A2A agent's skill and an AIDIP agent's operation it was never configured for, and REST's
`POST /agents/{id}/invoke` does the same; every rule of the invocation policy is checked. Real agents on
loopback (`tests.agent_servers`), the real registry, real MCP clients."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict
from mcp import Client

from ard_mcp.config import Config
from ard_mcp.formats import registration
from ard_mcp.formats.entry_facts import trust_values
from ard_mcp.invocation.audit import AuditLog
from ard_mcp.invocation.credentials import AgentCredentials
from ard_mcp.invocation.policy import InvocationPolicy, Limits
from ard_mcp.redaction import REDACTED
from ard_mcp.registry import Registry
from ard_mcp.surfaces.auth import Principal, TokenStore
from ard_mcp.surfaces.mcp.server import build_server
from ard_mcp.surfaces.rest.settings import HttpSettings
from ard_mcp.surfaces.services import Services
from tests.agent_servers import Locked, a2a_agent, a2a_card, aidip_agent, mcp_agent, serving
from tests.http_support import running

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

POLICY = InvocationPolicy(enabled=True, allow_private_networks=True, limits=Limits(connect=2.0, total=2.0))
OPERATOR, CALLER, READER = "operator-token-0123456789", "caller-token-0123456789ab", "reader-token-0123456789ab"
TOKENS = TokenStore(
    {
        OPERATOR: Principal("operator", ("*",), invoke=True),
        CALLER: Principal("caller", (), invoke=True),
        READER: Principal("reader", ("agents.example",)),
    }
)
WEATHER_MCP = "urn:air:weather.example:mcp:forecast"
ECHO = "urn:air:agents.example:echo"
AGENTS = "urn:air:agents.example:"
TRANSLATOR = AGENTS + "translate"


@pytest.fixture(scope="module")
def agents() -> Iterator[dict[str, str]]:
    """One of each agent: base URLs by kind."""
    server = mcp_agent()
    with (
        serving(lambda base: server.streamable_http_app(streamable_http_path="/mcp")) as mcp,
        serving(lambda base: aidip_agent()) as aidip,
        serving(a2a_agent) as a2a,
    ):
        yield {"mcp": mcp + "/mcp", "aidip": aidip, "a2a": a2a}


def mcp_entry(url: str, identifier: str = WEATHER_MCP) -> dict[str, Any]:
    return {
        "identifier": identifier,
        "displayName": "Weather MCP",
        "type": "application/mcp-server-card+json",
        "description": "Weather forecasts for any city, over MCP.",
        "data": {"name": "weather", "remotes": [{"type": "streamable-http", "url": url}]},
    }


def aidip_entry(base: str, name: str = "translate", path: str = "/translate") -> dict[str, Any]:
    return {
        "id": f"urn:air:agents.example:{name}",
        "name": "Translator",
        "description": "Translates text into another language.",
        "endpoint": base + path,
        "publisher": "Agents Example",
        "capabilities": ["translation"],
        "operations": [{"name": "translateText", "description": "Translate a text.", "inputs": {"type": "object"}}],
    }


def _text(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


async def test_a_client_attached_only_to_the_registry_finds_inspects_and_calls_all_three(tmp_path: Path, agents: dict[str, str]) -> None:
    server = build_server(Config(tmp_path / "data"), warm=False, services=Services("http://registry.test", invocation=POLICY))
    card = {
        "identifier": ECHO,
        "displayName": "Echo Agent",
        "type": "application/a2a-agent-card+json",
        "description": "Echoes what it is sent, works a while, or fails.",
        "data": MessageToDict(a2a_card(agents["a2a"])),
    }
    async with Client(server) as client:
        for entry in (mcp_entry(agents["mcp"]), card):
            registered = await client.call_tool("register_agent", {"entry": entry})
            assert not registered.is_error, registered.content
        found = _text(await client.call_tool("search_agents", {"text": "weather forecast for a city"}))
        assert found["results"][0]["identifier"] == WEATHER_MCP
        tools = _text(await client.call_tool("get_agent_tools", {"identifier": WEATHER_MCP}))
        listed = {t["name"]: t for t in tools["tools"]}
        assert tools["protocol"] == "mcp" and tools["endpoint"] == agents["mcp"]
        assert listed["forecast"] == {"name": "forecast", "description": "The forecast for a city.", "arguments": "city: string"}
        assert listed["count"]["arguments"] == "n: integer"
        full = _text(await client.call_tool("get_agent_tools", {"identifier": WEATHER_MCP, "tool": "forecast"}))
        assert full["tools"][0]["description"].endswith("Second line, left out of summaries.")
        assert full["tools"][0]["inputSchema"]["required"] == ["city"]
        steps: list[float] = []

        async def progress(done: float, total: float | None, message: str | None) -> None:
            steps.append(done)

        called = await client.call_tool(
            "call_agent", {"identifier": WEATHER_MCP, "tool": "count", "arguments": {"n": 3}}, progress_callback=progress
        )
        answer = _text(called)
        assert answer["thirdPartyContent"] is True and answer["trust"]["status"] == "self-asserted" and not answer["isError"]
        assert steps == [1, 2, 3]
        forecast = _text(
            await client.call_tool("call_agent", {"identifier": WEATHER_MCP, "tool": "forecast", "arguments": {"city": "Oslo"}})
        )
        assert forecast["result"] == {"city": "Oslo", "high_c": 21.5, "summary": "Sunny in Oslo"}
        echo_id = _text(await client.call_tool("search_agents", {"text": "an agent that echoes what it is sent"}))["results"][0][
            "identifier"
        ]
        assert echo_id == ECHO
        skills = _text(await client.call_tool("get_agent_tools", {"identifier": echo_id}))
        assert [t["name"] for t in skills["tools"]] == ["echo", "later", "steps", "fail"]
        later = _text(await client.call_tool("call_agent", {"identifier": echo_id, "tool": "later", "arguments": {"text": "hi"}}))
        assert later["protocol"] == "a2a" and later["result"]["state"] == "completed"
        told: list[str | None] = []

        async def status(done: float, total: float | None, message: str | None) -> None:
            told.append(message)

        steps = await client.call_tool(
            "call_agent", {"identifier": echo_id, "tool": "steps", "arguments": {"text": "hi"}}, progress_callback=status
        )
        assert _text(steps)["result"]["state"] == "completed" and told[-1] == "completed"
        sneaky = _text(await client.call_tool("call_agent", {"identifier": WEATHER_MCP, "tool": "sneaky"}))
        assert sneaky["warnings"] and "instruction override" in sneaky["warnings"][0]
    outcomes = [(r.tool, r.outcome) for r in AuditLog(tmp_path / "data").newest(10)]
    assert outcomes[:5] == [("sneaky", "ok"), ("steps", "ok"), ("later", "ok"), ("forecast", "ok"), ("count", "ok")]


def _registry_with(data: Path, entries: list[tuple[dict[str, Any], set[tuple[str, str]] | None]], hide: str | None = None) -> None:
    """Register AIDIP agents (with the trust finding given, where one is); `hide` one from all but someone else."""
    registry = Registry(Config(data))
    try:
        for raw, owned in entries:
            entry = registration.to_entry(raw)
            if entry["identifier"] == hide:
                entry["metadata"] = {**entry["metadata"], "visibleTo": "someone-else"}
            registry.indexer.register(entry, owned=owned)
    finally:
        registry.close()


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_rest_invoke_answers_the_agents_json_and_its_errors(tmp_path: Path, agents: dict[str, str]) -> None:
    data = tmp_path / "data"
    slow = aidip_entry(agents["aidip"], "slow", "/slow")
    _registry_with(data, [(aidip_entry(agents["aidip"]), None), (slow, None)])
    settings = HttpSettings(tokens=TOKENS, invocation=POLICY)
    async with running(data, settings) as client:
        ok = await client.post(f"/agents/{TRANSLATOR}/invoke", json={"text": "hello", "target_language": "fr"}, headers=_bearer(CALLER))
        assert ok.status_code == 200, ok.text
        assert ok.json()["translated_text"] == "[fr] hello"
        assert ok.headers["ard-third-party-content"] == "true" and ok.headers["ard-invocation-endpoint"].endswith("/translate")
        bad = await client.post(f"/agents/{TRANSLATOR}/invoke", json={"text": "hello"}, headers=_bearer(CALLER))
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "AgentError"
        assert "target_language" in bad.json()["error"]["message"]
        late = await client.post(f"/agents/{AGENTS}slow/invoke", json={}, headers=_bearer(CALLER))
        assert late.status_code == 504 and late.json()["error"]["code"] == "AgentTimeout"
        log = await client.get("/invocations", headers=_bearer(OPERATOR))
        assert [r["outcome"] for r in log.json()["records"]] == ["timeout", "agent-error", "ok"]
        assert (await client.get("/invocations", headers=_bearer(CALLER))).status_code == 403
        spec = (await client.get("/openapi.json")).json()
        assert set(spec["paths"]["/agents/{id}/invoke"]["post"]["responses"]) >= {"200", "400", "401", "403", "404", "502", "504"}


async def test_an_mcp_agent_refusing_the_registrys_credentials_is_passed_back_as_its_401(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with serving(lambda base: Locked(mcp_agent().streamable_http_app(streamable_http_path="/mcp"))) as base:
        _registry_with(data, [(mcp_entry(base + "/mcp"), None)])
        async with running(data, HttpSettings(tokens=TOKENS, invocation=POLICY)) as client:
            refused = await client.post(f"/agents/{WEATHER_MCP}/invoke?operation=forecast", json={"city": "Oslo"}, headers=_bearer(CALLER))
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "AgentError"
    assert "check this agent's credentials" in refused.json()["error"]["message"]
    assert "www-authenticate" not in refused.headers  # the agent's refusal, not a challenge to the registry's caller
    assert [(r.outcome, r.status) for r in AuditLog(data).newest(1)] == [("agent-error", 401)]


async def test_the_policy_is_enforced_on_every_rule(tmp_path: Path, agents: dict[str, str]) -> None:
    data = tmp_path / "data"
    claim = trust_values("third-party", "served by evil.example, which is neither agents.example nor a host it delegates to")
    hidden = aidip_entry(agents["aidip"], "hidden")
    impostor = aidip_entry(agents["aidip"], "impostor")
    _registry_with(data, [(aidip_entry(agents["aidip"]), None), (hidden, None), (impostor, claim)], hide=f"{AGENTS}hidden")
    body = {"text": "hello", "target_language": "fr"}
    async with running(data, HttpSettings(tokens=TOKENS)) as client:  # invocation not allowed: the default over HTTP
        off = await client.post(f"/agents/{TRANSLATOR}/invoke", json=body, headers=_bearer(CALLER))
        assert off.status_code == 403 and "--allow-invocation" in off.json()["error"]["message"]
    async with running(data, HttpSettings(tokens=TOKENS, invocation=POLICY)) as client:
        unauthenticated = await client.post(f"/agents/{TRANSLATOR}/invoke", json=body)
        assert unauthenticated.status_code == 401
        no_scope = await client.post(f"/agents/{TRANSLATOR}/invoke", json=body, headers=_bearer(READER))
        assert no_scope.status_code == 403 and "invoke scope" in no_scope.json()["error"]["message"]
        assert (await client.post(f"/agents/{AGENTS}hidden/invoke", json=body, headers=_bearer(CALLER))).status_code == 404
        third = await client.post(f"/agents/{AGENTS}impostor/invoke", json=body, headers=_bearer(CALLER))
        assert third.status_code == 403 and "third-party" in third.json()["error"]["message"]
        foreign = await client.post(
            f"/agents/{TRANSLATOR}/invoke", json=body, headers={**_bearer(CALLER), "Origin": "https://evil.example"}
        )
        assert foreign.status_code == 403
    assert [r.outcome for r in AuditLog(data).newest(10)] == ["refused", "not-found", "refused", "refused"]


async def test_the_callers_token_never_reaches_the_agent_and_the_operators_credential_does(tmp_path: Path, agents: dict[str, str]) -> None:
    data = tmp_path / "data"
    headers_agent = aidip_entry(agents["aidip"], "headers", "/headers")
    _registry_with(data, [(headers_agent, None)])
    credentials = tmp_path / "agents.txt"
    credentials.write_text(f"{agents['aidip']}/headers X-API-Key: operator-key\n", encoding="utf-8")
    policy = InvocationPolicy(enabled=True, allow_private_networks=True, credentials=AgentCredentials.load(credentials))
    async with running(data, HttpSettings(tokens=TOKENS, invocation=policy)) as client:
        answer = await client.post(f"/agents/{AGENTS}headers/invoke", json={}, headers=_bearer(CALLER))
    # the agent got the operator's key: its echo comes back redacted, as every known secret does
    assert answer.status_code == 200 and answer.json() == {"key": REDACTED}


async def test_an_agent_at_a_private_address_is_refused_unless_the_operator_allows_it(tmp_path: Path, agents: dict[str, str]) -> None:
    data = tmp_path / "data"
    _registry_with(data, [(aidip_entry(agents["aidip"]), None)])
    policy = InvocationPolicy(enabled=True)  # the crawler's rules: loopback is private
    async with running(data, HttpSettings(tokens=TOKENS, invocation=policy)) as client:
        refused = await client.post(f"/agents/{TRANSLATOR}/invoke", json={"target_language": "fr"}, headers=_bearer(CALLER))
    assert refused.status_code == 502 and "127.0.0.1" in refused.json()["error"]["message"]


async def test_a_resolved_entry_is_kept_a_second_for_its_viewer_only(tmp_path: Path, agents: dict[str, str]) -> None:
    from ard_mcp.errors import NotFound
    from ard_mcp.invocation.policy import LOCAL
    from ard_mcp.invocation.service import RESOLVED_TTL, Invoker
    from ard_mcp.search.visibility import ANONYMOUS, EVERYONE

    data = tmp_path / "data"
    _registry_with(data, [(aidip_entry(agents["aidip"]), None)], hide=TRANSLATOR)
    registry = Registry(Config(data))
    invoker = Invoker(registry, POLICY)
    body = {"text": "hello", "target_language": "fr"}
    try:
        owner = EVERYONE  # sees the hidden entry; an anonymous caller does not
        assert (await invoker.call(TRANSLATOR, None, body, owner, LOCAL)).result["translated_text"] == "[fr] hello"
        with pytest.raises(NotFound):  # kept for the viewer who may see it, never for another
            await invoker.call(TRANSLATOR, None, body, ANONYMOUS, LOCAL)
        registry.deregister(TRANSLATOR, None, EVERYONE)
        time.sleep(RESOLVED_TTL)
        with pytest.raises(NotFound):
            await invoker.call(TRANSLATOR, None, body, owner, LOCAL)
    finally:
        await invoker.aclose()
        registry.close()


async def test_an_offline_entry_says_why(tmp_path: Path) -> None:
    server = build_server(Config(tmp_path / "data"), warm=False, services=Services("http://registry.test", invocation=POLICY))
    local_only = {**mcp_entry("http://unused.example/mcp"), "data": {"name": "local", "packages": [{"registryType": "pypi"}]}}
    async with Client(server) as client:
        await client.call_tool("register_agent", {"entry": local_only})
        tools = _text(await client.call_tool("get_agent_tools", {"identifier": WEATHER_MCP}))
        refused = await client.call_tool("call_agent", {"identifier": WEATHER_MCP, "tool": "x"})
    assert tools["tools"] == [] and "no package to start it from" in tools["offline"]
    assert refused.is_error and "cannot be called through this registry" in refused.content[0].text


def test_the_token_files_fourth_column_grants_the_invoke_scope(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text("ops ops-token-0123456789abcd - invoke\nci ci-token-0123456789abcdef example.com\n", encoding="utf-8")
    tokens = TokenStore.load(path)
    ops, ci = (tokens.principal({"authorization": f"Bearer {t}"}) for t in ("ops-token-0123456789abcd", "ci-token-0123456789abcdef"))
    assert ops == Principal("ops", (), invoke=True) and ci == Principal("ci", ("example.com",))
    assert tokens.caller({"authorization": "Bearer ops-token-0123456789abcd"}).may_invoke
    assert not tokens.caller({"authorization": "Bearer ci-token-0123456789abcdef"}).may_invoke


def test_a_listed_tool_is_a_line_and_its_arguments() -> None:
    from ard_mcp.invocation.calls import ToolSummary
    from ard_mcp.invocation.compact import compact

    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "A long explanation nobody needs in a list."},
            "days": {"type": "integer"},
            "unit": {"enum": ["celsius", "fahrenheit"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "when": {"type": ["string", "null"]},
            "extra": {},
        },
        "required": ["city"],
    }
    tool = ToolSummary(name="forecast", description="The forecast for a city. It covers seven days.\nMore.", inputSchema=schema)
    assert compact(tool) == ToolSummary(
        name="forecast",
        description="The forecast for a city.",
        arguments="city: string, days?: integer, unit?: celsius|fahrenheit, tags?: string[], when?: string|null, extra?: any",
    )
    assert compact(ToolSummary(name="x", description="y" * 300)).description == "y" * 79 + "…"
    assert compact(ToolSummary(name="x", description="word " * 30)).description == ("word " * 15).strip() + "…"  # cut at a word


def test_long_enums_and_argument_lists_are_abbreviated() -> None:
    from ard_mcp.invocation.calls import ToolSummary
    from ard_mcp.invocation.compact import MAX_OPTIONAL, compact

    regions = ["KR", "BR", "EUNE", "EUW", "LAN", "LAS", "NA", "OCE"]
    schema = {
        "type": "object",
        "properties": {
            "region": {"type": "string", "enum": regions},
            "mode": {"enum": ["RANKED", "FLEX", "URF"]},
            "name": {"enum": ["a-very-long-enumeration-value-that-goes-on-and-on", "b"]},
            "title": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            **{f"option_{i}": {"type": "number"} for i in range(10)},
        },
        "required": ["region", "mode", "name"],
    }
    arguments = compact(ToolSummary(name="x", inputSchema=schema)).arguments
    assert arguments is not None
    assert arguments.startswith("region: KR|BR|EUNE|…(+5), mode: RANKED|FLEX|URF, name: a-very-long-enumeration…|…(+1), title?: string")
    assert arguments.endswith(f"option_{MAX_OPTIONAL - 2}?: number, +{11 - MAX_OPTIONAL} optional")
    assert compact(ToolSummary(name="x", inputSchema={"type": "object", "properties": {}})).arguments is None


async def test_the_tools_a_server_listed_are_kept_on_its_entry_and_found_by_search(tmp_path: Path, agents: dict[str, str]) -> None:
    """An entry that describes no tools is found by what its server's tools do once the server listed them; a
    publisher's own tools are never replaced, the trust finding stays, and an unchanged list writes nothing."""
    server = build_server(Config(tmp_path / "data"), warm=False, services=Services("http://registry.test", invocation=POLICY))
    bare = {**mcp_entry(agents["mcp"]), "displayName": "Loopback server", "description": "An MCP server on this machine."}
    described = {**mcp_entry(agents["mcp"], "urn:air:weather.example:mcp:described"), "displayName": "Described server"}
    described["description"] = "A server that lists a tool of its own."
    described["data"] = {**described["data"], "tools": [{"name": "own_tool", "description": "The publisher's own."}]}
    task = "the weather forecast for a city"
    async with Client(server) as client:
        for entry in (bare, described):
            assert not (await client.call_tool("register_agent", {"entry": entry})).is_error
        before = _text(await client.call_tool("search_agents", {"text": task, "detail": "full"}))
        assert WEATHER_MCP not in [r["identifier"] for r in before["results"] if r["score"] >= 50]
        for identifier in (WEATHER_MCP, described["identifier"]):
            assert not (await client.call_tool("get_agent_tools", {"identifier": identifier})).is_error
        after = _text(await client.call_tool("search_agents", {"text": task, "detail": "full"}))
        kept = _text(await client.call_tool("get_agent", {"identifier": WEATHER_MCP}))
        own = _text(await client.call_tool("get_agent", {"identifier": described["identifier"]}))
    assert after["results"][0]["identifier"] == WEATHER_MCP
    assert "forecast" in {t["name"] for t in kept["data"]["tools"]} and kept["metadata"]["toolsObservedAt"]
    assert own["data"]["tools"] == [{"name": "own_tool", "description": "The publisher's own."}]
    registry = Registry(Config(tmp_path / "data"))
    try:
        tools = [{"name": t["name"], "description": t["description"]} for t in kept["data"]["tools"]]
        assert registry.indexer.observe_tools(WEATHER_MCP, tools, "2026-11-28T00:00:00Z") is False  # the same list: nothing written
        assert registry.trust_of(WEATHER_MCP) is not None and registry.trust_of(WEATHER_MCP).status == "self-asserted"  # type: ignore[union-attr]
    finally:
        registry.close()
