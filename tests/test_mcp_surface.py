"""What a host reads of ard-mcp besides its tools' answers (issue #47): the tool list within its budget and
still what hosts validate against, identifier completion for the agent resource, and the logging level.
Real MCP clients (in-memory); the schema rewriting itself on pydantic's own schemas."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import jsonschema
import pytest
from mcp import Client
from mcp.types import ResourceTemplateReference
from pydantic import BaseModel, Field

from ard_mcp.config import Config
from ard_mcp.formats.messages import AGENT_RESOURCE
from ard_mcp.invocation.policy import InvocationPolicy, Limits
from ard_mcp.registry import Registry
from ard_mcp.surfaces.auth import Principal, TokenStore
from ard_mcp.surfaces.mcp.protocol import MAX_COMPLETIONS
from ard_mcp.surfaces.mcp.server import build_server
from ard_mcp.surfaces.mcp.tool_schemas import advertised_input, advertised_output
from ard_mcp.surfaces.services import Services
from tests.agent_servers import mcp_agent, serving
from tests.conftest import SAMPLE, WEATHER, entry

BUDGET = 12_000  # characters of the whole tools/list result: bench/tool_surface.py prints where they go
AGENT = "urn:air:weather.example:mcp:forecast"


def size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def wire(tool: Any) -> dict[str, Any]:
    """A listed tool as the server sends it."""
    dumped: dict[str, Any] = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


# -- the schemas advertised, on pydantic's own ---------------------------------------------------------------
class Inner(BaseModel):
    name: str = Field(description="A name.")
    count: int = 0


class Outer(BaseModel):
    """A result with what pydantic writes long: nested models, unions with null, enums, descriptions."""

    items: list[Inner] = Field(description="The items.")
    mode: Literal["a", "b"] | None = None
    level: Literal["x"] | Literal["y", "z"] = "x"
    tags: list[str] | None = None
    anything: Any = None
    nested: Inner | None = None


OUTER_VALUES = [
    {"items": [], "level": "x"},
    {"items": [{"name": "n", "count": 2}], "mode": None, "level": "z", "tags": ["t"], "anything": {"k": [1]}, "nested": None},
    {"items": [{"name": "n"}], "mode": "b", "nested": {"name": "m", "count": 1}, "extra": "a newer server's field"},
]


@pytest.mark.parametrize("value", OUTER_VALUES)
def test_every_result_of_the_full_schema_meets_the_one_advertised(value: dict[str, Any]) -> None:
    full = Outer.model_json_schema()
    if "extra" not in value:
        jsonschema.validate(value, full)
    jsonschema.validate(value, advertised_output(full))


def test_the_advertised_output_schema_still_checks_what_every_result_has() -> None:
    advertised = advertised_output(Outer.model_json_schema())
    assert advertised == {"type": "object", "properties": {"items": {"type": "array"}}, "required": ["items"]}
    for wrong in ({}, {"items": "not a list"}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(wrong, advertised)


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ({"mode": "a", "level": "y"}, True),
        ({"mode": None, "tags": None, "nested": None}, True),
        ({"nested": {"name": "n"}, "items": [{"name": "m", "count": 3}]}, True),
        ({"mode": "c"}, False),
        ({"level": "w"}, False),
        ({"tags": [1]}, False),
        ({"nested": {"count": 1}}, False),
    ],
)
def test_an_input_schema_advertised_means_what_pydantics_means(value: dict[str, Any], valid: bool) -> None:
    full = Outer.model_json_schema()
    full["required"] = []  # as arguments: every one optional
    short = advertised_input(full)
    for schema in (full, short):
        assert jsonschema.Draft202012Validator(schema).is_valid(value) is valid, schema
    assert "title" not in json.dumps(short) and "$defs" not in short and "$ref" not in json.dumps(short)
    assert short["properties"]["mode"] == {"type": ["string", "null"], "enum": ["a", "b", None]}
    assert short["properties"]["level"] == {"type": "string", "enum": ["x", "y", "z"], "default": "x"}


# -- the server's own tool list and answers ------------------------------------------------------------------
@pytest.fixture(scope="module")
def agent_url() -> Iterator[str]:
    server = mcp_agent()
    with serving(lambda base: server.streamable_http_app(streamable_http_path="/mcp")) as base:
        yield base + "/mcp"


def _server(data_dir: Path, **services: Any) -> Any:
    return build_server(Config(data_dir, store_url=None), warm=False, **services)


@pytest.mark.anyio
async def test_the_tool_list_a_host_receives_stays_within_its_budget(data_dir: Path) -> None:
    """The whole tools/list result, output schemas included: 56,993 characters before issue #47."""
    async with Client(_server(data_dir)) as client:
        tools = [wire(t) for t in (await client.list_tools()).tools]
    total = size({"tools": tools})
    assert total <= BUDGET, f"tools/list is {total:,} characters: " + ", ".join(f"{t['name']} {size(t):,}" for t in tools)
    for tool in tools:
        assert "title" not in json.dumps(tool["inputSchema"]) or tool["name"] == "never", tool["name"]
        assert "$defs" not in json.dumps(tool) and "description" not in json.dumps(tool.get("outputSchema", {})), tool["name"]


@pytest.mark.slow
@pytest.mark.anyio
async def test_every_tools_structured_result_meets_its_advertised_output_schema(data_dir: Path, agent_url: str) -> None:
    """What the SDK's client checks on every call (it raises on a mismatch), checked here with jsonschema too;
    the text beside it is the same object as compact JSON."""
    policy = InvocationPolicy(enabled=True, allow_private_networks=True, limits=Limits(connect=2.0, total=2.0))
    server = _server(data_dir, services=Services("http://registry.test", invocation=policy))
    agent = {
        "identifier": AGENT,
        "displayName": "Weather MCP",
        "type": "application/mcp-server-card+json",
        "description": "Weather forecasts for any city, over MCP.",
        "data": {"name": "weather", "remotes": [{"type": "streamable-http", "url": agent_url}]},
    }
    calls: list[tuple[str, dict[str, Any]]] = [
        *[("register_agent", {"entry": item}) for item in [*SAMPLE, agent]],
        ("register_agent", {"entry": entry(WEATHER, description="Forecasts.")}),
        ("search_agents", {"text": "will it rain in Lisbon?"}),
        ("search_agents", {"text": "will it rain in Lisbon?", "detail": "full"}),
        ("search_agents", {"text": "operate a nuclear reactor", "detail": "minimal"}),
        ("discover_agents", {"query": "invoice reminders", "include_evidence": True, "detail": "full"}),
        ("explore_facets", {}),
        ("get_agent", {"identifier": WEATHER["identifier"]}),
        ("list_agents", {"pageSize": 2}),
        ("get_agent_tools", {"identifier": AGENT}),
        ("get_agent_tools", {"identifier": AGENT, "tool": "forecast"}),
        ("call_agent", {"identifier": AGENT, "tool": "forecast", "arguments": {"city": "Oslo"}}),
        ("call_agent", {"identifier": AGENT, "tool": "verbose", "arguments": {"size": 25}}),
        ("crawl_catalogs", {"refresh": True}),
        ("deregister_agent", {"identifier": WEATHER["identifier"]}),
    ]
    async with Client(server) as client:
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        seen = set()
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            text = result.content[0].text  # type: ignore[union-attr]
            assert not result.is_error, f"{name}: {text}"
            assert schemas[name] is not None, name
            jsonschema.validate(result.structured_content, schemas[name])
            assert text == json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":")), name
            seen.add(name)
    assert seen == schemas.keys()


@pytest.mark.slow
@pytest.mark.anyio
async def test_an_agents_short_answer_comes_back_as_compact_json(data_dir: Path, agent_url: str) -> None:
    """A 25-character answer was 441 characters of indented JSON beside its structured copy."""
    policy = InvocationPolicy(enabled=True, allow_private_networks=True, limits=Limits(connect=2.0, total=2.0))
    server = _server(data_dir, services=Services("http://registry.test", invocation=policy))
    agent = {
        "identifier": AGENT,
        "displayName": "Weather MCP",
        "type": "application/mcp-server-card+json",
        "data": {"name": "weather", "remotes": [{"type": "streamable-http", "url": agent_url}]},
    }
    async with Client(server) as client:
        await client.call_tool("register_agent", {"entry": agent})
        for tool, arguments in (("verbose", {"size": 25}), ("broken", {})):
            result = await client.call_tool("call_agent", {"identifier": AGENT, "tool": tool, "arguments": arguments})
            text = result.content[0].text  # type: ignore[union-attr]
            assert text == json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))
        assert result.is_error  # the agent's own failure: the whole answer, as an error
        assert len(text) < 441


# -- completion and logging -------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.anyio
async def test_the_agent_resources_identifier_completes_from_the_catalog(data_dir: Path) -> None:
    server = _server(data_dir)
    many = [entry(WEATHER, identifier=f"urn:air:many.example:agent:n{i:03d}") for i in range(MAX_COMPLETIONS + 5)]
    ref = ResourceTemplateReference(type="ref/resource", uri=AGENT_RESOURCE)
    async with Client(server) as client:
        for item in [*SAMPLE, *many]:
            assert not (await client.call_tool("register_agent", {"entry": item})).is_error
        weather = await client.complete(ref, {"name": "identifier", "value": "urn:air:example.com:weather"})
        everything = await client.complete(ref, {"name": "identifier", "value": "urn:air:many.example:"})
        nothing = await client.complete(ref, {"name": "identifier", "value": "urn:air:nowhere"})
        other = await client.complete(ResourceTemplateReference(type="ref/resource", uri="ard://other/{x}"), {"name": "x", "value": ""})
        capabilities = client.server_capabilities
    assert weather.completion.values == [WEATHER["identifier"]] and weather.completion.has_more is False
    assert everything.completion.values == [m["identifier"] for m in many[:MAX_COMPLETIONS]] and everything.completion.has_more
    assert nothing.completion.values == [] and other.completion.values == []
    assert capabilities.completions is not None


@pytest.mark.slow
@pytest.mark.anyio
async def test_completion_offers_only_what_the_caller_may_see(data_dir: Path) -> None:
    """Over HTTP an entry visible only to some principals is completed for them, never for others."""
    hidden = entry(WEATHER, identifier="urn:air:example.com:weather:private", metadata={"visibleTo": ["someone-else"]})
    ref = ResourceTemplateReference(type="ref/resource", uri=AGENT_RESOURCE)
    argument = {"name": "identifier", "value": "urn:air:example.com:weather:"}
    async with Client(_server(data_dir)) as client:  # stdio's viewer: the local user sees everything
        for item in (WEATHER, hidden):
            assert not (await client.call_tool("register_agent", {"entry": item})).is_error
        everyone = await client.complete(ref, argument)
    assert everyone.completion.values == sorted([WEATHER["identifier"], hidden["identifier"]])
    tokens = TokenStore({"reader-token-0123456789ab": Principal("reader", ())})
    async with Client(_server(data_dir, tokens=tokens)) as client:  # no token sent: the anonymous viewer
        anonymous = await client.complete(ref, argument)
    assert anonymous.completion.values == [WEATHER["identifier"]]


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")  # the client's, for calling it at all
@pytest.mark.anyio
async def test_the_logging_level_is_accepted_where_the_protocol_has_it(data_dir: Path) -> None:
    """`logging/setLevel` belongs to the handshake-era protocol (2025-11-25 and before): hosts that speak it call it
    when the server declares `logging`; 2026-07-28 removed it, and the SDK answers it there as it answers any
    method the version lacks."""
    async with Client(_server(data_dir), mode="legacy") as client:
        assert client.server_capabilities.logging is not None
        for level in ("debug", "info", "error"):
            await client.set_logging_level(level)


@pytest.mark.slow
def test_identifiers_complete_the_same_on_either_store(loaded: Registry) -> None:
    """The prefix is matched as typed on SQLite and PostgreSQL alike, in identifier order, bounded."""
    everyone = sorted(e["identifier"] for e in SAMPLE)
    assert loaded.identifiers_starting("", 100) == (everyone, False)
    assert loaded.identifiers_starting("", 2) == (everyone[:2], True)
    assert loaded.identifiers_starting(WEATHER["identifier"], 100) == ([WEATHER["identifier"]], False)
    assert loaded.identifiers_starting(WEATHER["identifier"].upper(), 100) == ([], False)
    assert loaded.identifiers_starting("urn:air:%", 100) == ([], False)  # no pattern characters
