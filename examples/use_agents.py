"""From finding to using: an MCP client attached only to ard-mcp finds two agents by a task, lists what they
can do and calls them, with no configuration for either agent.

    python examples/use_agents.py

Two small agents start on this machine: a unit-conversion MCP server (streamable HTTP) and a haiku-writing
A2A agent (a2a-sdk). `ard-mcp serve` starts over stdio as an MCP host would start it (invocation is on over
stdio; `--allow-private-networks` because these agents listen on 127.0.0.1), their catalog entries are
registered, and then, through ard-mcp alone: search_agents, get_agent_tools, call_agent.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import uvicorn
from a2a.helpers.proto_helpers import new_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from google.protobuf.json_format import MessageToDict
from mcp import Client, StdioServerParameters
from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.types import ASGIApp


@contextmanager
def listening(app_at: Callable[[str], ASGIApp]) -> Iterator[str]:
    """The app `app_at` makes for its base URL, served by uvicorn on a free loopback port in a thread; yields the URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(app_at(base), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        yield base
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def converter(base: str) -> ASGIApp:
    mcp = MCPServer("units")

    @mcp.tool(description="Convert a temperature between celsius and fahrenheit.")
    def convert_temperature(value: float, to: str) -> dict[str, float]:
        return {"result": value * 9 / 5 + 32 if to == "fahrenheit" else (value - 32) * 5 / 9}

    return mcp.streamable_http_app(streamable_http_path="/mcp")


class Poet(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        topic = context.get_user_input() or "the sea"
        await event_queue.enqueue_event(new_message([new_text_part(f"{topic} at dawn / light on the water / the day begins")]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


def poet_card(base: str) -> AgentCard:
    return AgentCard(
        name="Haiku Poet",
        description="Writes a haiku about any topic.",
        version="1.0.0",
        supported_interfaces=[AgentInterface(url=base + "/a2a", protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="haiku", name="Haiku", description="Write a haiku about a topic.", tags=["poetry"])],
    )


def poet(base: str) -> ASGIApp:
    card = poet_card(base)
    handler = DefaultRequestHandler(agent_executor=Poet(), task_store=InMemoryTaskStore(), agent_card=card)
    return Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/a2a")])


async def result(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    answer = await client.call_tool(tool, arguments)
    if answer.is_error:
        raise SystemExit(f"{tool}: {answer.content[0].text}")  # type: ignore[union-attr]
    return json.loads(answer.content[0].text)  # type: ignore[union-attr,no-any-return]


async def demo(data_dir: str, units: str, card: dict[str, Any]) -> None:
    entries = [
        {
            "identifier": "urn:air:units.example:mcp:converter",
            "displayName": "Unit Converter",
            "type": "application/mcp-server-card+json",
            "description": "Converts temperatures, lengths and weights between units.",
            "data": {"name": "units", "remotes": [{"type": "streamable-http", "url": units + "/mcp"}]},
        },
        {
            "identifier": "urn:air:poems.example:agents:haiku",
            "displayName": "Haiku Poet",
            "type": "application/a2a-agent-card+json",
            "description": "Writes a haiku about any topic.",
            "data": card,
        },
    ]
    # --no-snapshot: this registry holds the two agents started here, not the public servers a new one starts with
    command = [sys.executable, "-m", "ard_mcp", "serve", "--data-dir", data_dir, "--allow-private-networks", "--no-snapshot"]
    async with Client(StdioServerParameters(command=command[0], args=command[1:])) as client:
        for entry in entries:
            await result(client, "register_agent", {"entry": entry})
        for task, tool, arguments in (
            ("what is 21 degrees celsius in fahrenheit", "convert_temperature", {"value": 21, "to": "fahrenheit"}),
            ("write me a short poem about autumn leaves", "haiku", {"text": "autumn leaves"}),
        ):
            found = (await result(client, "search_agents", {"text": task}))["results"][0]["identifier"]
            tools = await result(client, "get_agent_tools", {"identifier": found})
            print(f"{task!r}\n  found {found} ({tools['protocol']} at {tools['endpoint']})")
            for listed in tools["tools"]:
                print(f"  tool {listed['name']}({listed.get('arguments') or ''}): {listed.get('description')}")
            called = await result(client, "call_agent", {"identifier": found, "tool": tool, "arguments": arguments})
            print(f"  call_agent {tool} -> {json.dumps(called['result'])} in {called['durationMs']:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", help="the registry's data directory (default: a fresh temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch, listening(converter) as units, listening(poet) as poems:
        anyio.run(demo, args.data_dir or scratch, units, MessageToDict(poet_card(poems)))


if __name__ == "__main__":
    main()
