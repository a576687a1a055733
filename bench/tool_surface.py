"""What attaching ard-mcp costs a host before its model has asked anything, and what an answer costs after.

A fresh `ard-mcp serve` over stdio, spoken to in raw JSON-RPC lines (what a host reads, byte for byte, with no
client library in between): `initialize`, then `tools/list`, printed per tool (its whole object, and its
description, input schema and output schema apart) and in all (the `result` object and the whole line). Then
the answers: a local MCP agent (`tests.agent_servers.mcp_agent`, streamable HTTP on loopback) is registered,
and `call_agent` asks its `verbose` tool for a 25-character answer; `get_agent_tools`, `search_agents`, a tool
error and the `ard://agents/{identifier}` resource are read too. For each: the characters of the whole result,
of its text content, and whether the text is compact JSON (no line breaks, no indentation).

Target (issue #47): the whole tool list at most 12,000 characters, output schemas included; answers as
compact JSON text beside the same object as structured content. `tests/test_tool_surface.py` holds the same
budget on the same list.

    python bench/tool_surface.py
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.agent_servers import mcp_agent, serving  # noqa: E402

BUDGET = 12_000
ENTRY = "urn:air:weather.example:mcp:forecast"


def size(value: Any) -> int:
    """Characters of `value` as compact JSON, as the server sends it."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


class Stdio:
    """`ard-mcp serve` over stdio, one JSON-RPC request at a time; keeps the raw answer lines."""

    def __init__(self, data_dir: Path) -> None:
        command = [sys.executable, "-m", "ard_mcp", "serve", "--data-dir", str(data_dir), "--allow-invocation", "--allow-private-networks"]
        env = {**os.environ, "ARD_MCP_LOG_LEVEL": "WARNING"}
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
        )
        self.next_id = 0

    def request(self, method: str, params: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """The raw line of the answer and the message it holds (notifications before it are skipped)."""
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, **({"params": params} if params is not None else {})})
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline()
            assert line, "ard-mcp serve closed its stdout"
            message = json.loads(line)
            if message.get("id") == self.next_id:
                return line.rstrip("\n"), message

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        _, message = self.request("tools/call", {"name": tool, "arguments": arguments})
        result: dict[str, Any] = message["result"]
        return result

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def tool_list(server: Stdio) -> None:
    line, message = server.request("tools/list")
    tools = message["result"]["tools"]
    print(f"tools/list as a host receives it: {len(tools)} tools")
    print(f"  {'tool':<18} {'all':>6} {'descr.':>7} {'input':>6} {'output':>7}")
    for tool in tools:
        output = tool.get("outputSchema")
        print(
            f"  {tool['name']:<18} {size(tool):>6,} {len(tool.get('description', '')):>7,} {size(tool['inputSchema']):>6,}"
            f" {size(output) if output is not None else 0:>7,}"
        )
    total = size(message["result"])
    verdict = "met" if total <= BUDGET else "NOT met"
    print(f"  {'total (result)':<18} {total:>6,}   (the whole JSON-RPC line: {len(line):,}; budget {BUDGET:,}: {verdict})")


def answer(name: str, result: dict[str, Any]) -> None:
    texts = [c["text"] for c in result.get("content", []) if c.get("type") == "text"]
    text = "".join(texts)
    compact = "\n" not in text and "  " not in text
    structured = result.get("structuredContent")
    same = structured is None or (compact and _parses_to(text, structured))
    print(
        f"  {name:<34} whole {size(result):>6,}  text {len(text):>6,}  structured {size(structured) if structured is not None else 0:>6,}"
        f"  {'compact' if compact else 'INDENTED'}{'' if same else ', text differs from structured content'}"
        f"{', error' if result.get('isError') else ''}"
    )


def _parses_to(text: str, structured: Any) -> bool:
    try:
        return bool(json.loads(text) == structured)
    except ValueError:
        return False


def answers(server: Stdio, agent_url: str) -> None:
    entry = {
        "identifier": ENTRY,
        "displayName": "Weather MCP",
        "type": "application/mcp-server-card+json",
        "description": "Weather forecasts for any city, over MCP.",
        "data": {"name": "weather", "remotes": [{"type": "streamable-http", "url": agent_url}]},
    }
    print("answers (characters of the result object; its text; its structured content):")
    answer("register_agent", server.call("register_agent", {"entry": entry}))
    answer("search_agents", server.call("search_agents", {"text": "weather forecast for a city"}))
    answer("get_agent_tools", server.call("get_agent_tools", {"identifier": ENTRY}))
    called = server.call("call_agent", {"identifier": ENTRY, "tool": "verbose", "arguments": {"size": 25}})
    answer("call_agent (a 25-character answer)", called)
    answer("call_agent (an agent's tool error)", server.call("call_agent", {"identifier": ENTRY, "tool": "broken"}))
    answer("get_agent (no such entry)", server.call("get_agent", {"identifier": "urn:air:nowhere.example:x"}))
    answer("search_agents (bad argument)", server.call("search_agents", {"text": "x", "pageSize": 0}))
    _, read = server.request("resources/read", {"uri": f"ard://agents/{ENTRY}"})
    text = read["result"]["contents"][0]["text"]
    shape = "compact" if "  " not in text and "\n" not in text else "INDENTED"
    print(f"  {'resource ard://agents/{identifier}':<34} text {len(text):>6,}  {shape}")
    print(f"  the 25-character answer, as the host reads it: {called['content'][0]['text']}")


def main() -> None:
    logging.disable(logging.INFO)  # the agent's own server logs each request
    with tempfile.TemporaryDirectory() as data, serving(lambda base: mcp_agent().streamable_http_app(streamable_http_path="/mcp")) as agent:
        server = Stdio(Path(data))
        try:
            init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}
            server.request("initialize", init)
            server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            tool_list(server)
            answers(server, agent + "/mcp")
        finally:
            server.close()


if __name__ == "__main__":
    main()
