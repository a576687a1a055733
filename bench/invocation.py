"""What calling an agent through the registry costs, and what `get_agent_tools` costs a host in tokens.

1. Overhead: a local MCP agent (streamable HTTP on loopback) and a local AIDIP agent run in a process of their
   own, the registry (`ard-mcp`'s HTTP app with invocation allowed, logging as `ard-mcp serve` does) in this
   process's threads. One MCP client calls the agent's tool
   directly over one session, and another calls the same tool through the registry's `call_agent`, as a host
   attached only to ard-mcp would; one HTTP client POSTs to the AIDIP agent directly and through
   `POST /agents/{id}/invoke`. The direct and the proxied calls take turns, `calls` of each, so the load of a
   shared machine weighs on both alike. Prints p50 and p99 of each and their ratio (target: through the registry
   at most 1.3x the direct p50 plus 5 ms), and, for the MCP path, the CPU time each side spends on one call:
   the host's MCP client on a direct call and on a `call_agent` call, and the registry on a `call_agent` call
   (its thread's CPU time while it serves the request; the calls come one at a time, so that time is the
   call's). The registry's share is an MCP server and an MCP client of the same SDK as the direct call's
   client and agent, which is why the ratio stays near 2x however fast the machine is.
2. Tokens: the `get_agent_tools` answer for the MCP servers with the most tools in the benchmark catalogs
   (their tools and input schemas as published), compact and full, counted with the bundled tokenizer
   (target: about 1,500 for a 20-tool server).

    python bench/invocation.py [--calls 200] [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import numpy as np
from mcp import Client
from starlette.types import ASGIApp, Receive, Scope, Send
from tokenizers import Tokenizer

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ard_mcp.assembly.app import build_app  # noqa: E402
from ard_mcp.config import Config  # noqa: E402
from ard_mcp.invocation.calls import AgentTools, ToolSummary  # noqa: E402
from ard_mcp.invocation.compact import compact  # noqa: E402
from ard_mcp.invocation.policy import InvocationPolicy  # noqa: E402
from ard_mcp.surfaces.cli.log_setup import configure_logging  # noqa: E402
from ard_mcp.surfaces.rest.settings import HttpSettings  # noqa: E402
from tests.agent_servers import serving  # noqa: E402

ENTRY = "urn:air:weather.example:mcp:forecast"
TRANSLATOR = "urn:air:agents.example:translate"


def _percentiles(samples: list[float]) -> tuple[float, float]:
    return float(np.percentile(samples, 50)), float(np.percentile(samples, 99))


async def _alternated(
    direct: Client, through: Client, tool: str, arguments: dict[str, Any], calls: int, cpu: dict[str, list[float]]
) -> tuple[list[float], list[float]]:
    """`calls` calls of `tool` directly and as many through the registry's `call_agent`, one of each in turn,
    so that a busy moment of a shared machine falls on both alike; the host client's CPU time per call in `cpu`."""
    proxied = {"identifier": ENTRY, "tool": tool, "arguments": arguments}
    plain: list[float] = []
    through_registry: list[float] = []
    for i in range(calls + 10):  # the first 10 of each warm up: connections, sessions, the registry's first look-ups
        for client, name, args, samples, side in (
            (direct, tool, arguments, plain, "host client, direct"),
            (through, "call_agent", proxied, through_registry, "host client, call_agent"),
        ):
            started, used = time.perf_counter(), time.thread_time()
            result = await client.call_tool(name, args)
            if i >= 10:
                samples.append((time.perf_counter() - started) * 1000)
                cpu[side].append((time.thread_time() - used) * 1000)
            assert not result.is_error, result.content
    return plain, through_registry


class _CpuProbe:
    """The registry's app, keeping the CPU time its thread spends on each MCP request (one at a time here)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.samples: list[float] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        used = time.thread_time()
        await self.app(scope, receive, send)
        if scope["type"] == "http" and scope["path"] == "/mcp":
            self.samples.append((time.thread_time() - used) * 1000)


def _posted(client: httpx.Client, direct: str, through: str, body: dict[str, Any], calls: int) -> tuple[list[float], list[float]]:
    """The same for a POST to the agent and to the registry's `/agents/{id}/invoke`."""
    plain: list[float] = []
    through_registry: list[float] = []
    for i in range(calls + 10):
        for url, samples in ((direct, plain), (through, through_registry)):
            started = time.perf_counter()
            answer = client.post(url, json=body)
            if i >= 10:
                samples.append((time.perf_counter() - started) * 1000)
            assert answer.status_code == 200, answer.text
    return plain, through_registry


_AGENTS = """
import sys
sys.path.insert(0, sys.argv[1])
from ard_mcp.surfaces.cli.log_setup import configure_logging
from tests.agent_servers import aidip_agent, mcp_agent, serving
server = mcp_agent()
configure_logging("warning")
with serving(lambda b: server.streamable_http_app(streamable_http_path="/mcp")) as agent, serving(lambda b: aidip_agent()) as aidip:
    print(agent, aidip, flush=True)
    sys.stdin.read()
"""


@contextmanager
def _agents() -> Iterator[tuple[str, str]]:
    """The MCP agent and the AIDIP agent, served by a process of their own (as an agent is another process, or
    another machine: in this one's threads they took the GIL from the registry while it worked); their base URLs."""
    process = subprocess.Popen([sys.executable, "-c", _AGENTS, str(REPO)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        agent, aidip = process.stdout.readline().split()
        yield agent, aidip
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)


def overhead(calls: int) -> tuple[dict[str, tuple[list[float], list[float]]], dict[str, list[float]]]:
    """(direct, through the registry) samples in ms: an MCP tool over MCP, and an AIDIP agent over REST; and
    the CPU time per MCP call in ms of the host's client (direct, call_agent) and of the registry."""
    configure_logging("info")  # as `ard-mcp serve` logs
    policy = InvocationPolicy(enabled=True, allow_private_networks=True)
    cpu: dict[str, list[float]] = {"host client, direct": [], "host client, call_agent": []}
    with tempfile.TemporaryDirectory() as data, _agents() as (agent, aidip):
        app = _CpuProbe(build_app(Config(Path(data)), HttpSettings(invocation=policy), warm=False))
        with serving(lambda base: app) as registry, httpx.Client(timeout=60) as http:
            entry = {
                "identifier": ENTRY,
                "displayName": "Weather MCP",
                "type": "application/mcp-server-card+json",
                "description": "Weather forecasts for any city.",
                "data": {"name": "weather", "remotes": [{"type": "streamable-http", "url": agent + "/mcp"}]},
            }
            translator = {"id": TRANSLATOR, "name": "Translator", "description": "Translates text.", "endpoint": aidip + "/translate"}
            for document in (entry, translator):
                assert http.post(registry + "/agents", json=document).status_code == 201

            async def run() -> tuple[list[float], list[float]]:
                async with Client(agent + "/mcp") as direct, Client(registry + "/mcp") as through:
                    return await _alternated(direct, through, "forecast", {"city": "Oslo"}, calls, cpu)

            body = {"text": "hello", "target_language": "fr"}
            timings = {"MCP tool over MCP (call_agent)": anyio.run(run)}
            cpu["registry, call_agent"] = app.samples[-calls:]  # after its warm-up calls
            timings["AIDIP agent over REST (POST /agents/{id}/invoke)"] = _posted(
                http, aidip + "/translate", f"{registry}/agents/{TRANSLATOR}/invoke", body, calls
            )
            return timings, cpu


def tokens(data: Path, largest: int = 5) -> list[tuple[str, int, int, int]]:
    """(server, tools, compact tokens, full tokens) for the catalogs' servers with the most tools."""
    tokenizer = Tokenizer.from_file(str(REPO / "models" / "tokenizer.json"))
    tokenizer.no_truncation()
    servers = []
    for catalog in sorted(data.glob("*/catalog.json")):
        for entry in json.loads(catalog.read_text(encoding="utf-8"))["entries"]:
            listed = (entry.get("data") or {}).get("tools") or []
            if listed:
                servers.append((entry["identifier"], listed))
    found = []
    for identifier, listed in sorted(servers, key=lambda s: -len(s[1]))[:largest]:
        full = [ToolSummary(name=t["name"], description=t.get("description"), inputSchema=t.get("inputSchema")) for t in listed]

        def count(shown: list[ToolSummary], identifier: str = identifier) -> int:
            answer = AgentTools(identifier=identifier, protocol="mcp", endpoint="https://example.org/mcp", tools=shown)
            return len(tokenizer.encode(answer.model_dump_json()).ids)

        found.append((identifier, len(listed), count([compact(t) for t in full]), count(full)))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    args = parser.parse_args()
    timings, cpu = overhead(args.calls)
    for label, (plain, proxied) in timings.items():
        (d50, d99), (r50, r99) = _percentiles(plain), _percentiles(proxied)
        print(f"{label}, {args.calls} calls each (ms)")
        print(f"  direct            p50 {d50:7.2f}  p99 {d99:7.2f}")
        print(f"  through registry  p50 {r50:7.2f}  p99 {r99:7.2f}")
        print(f"  ratio p50 {r50 / d50:.2f}x, p99 {r99 / d99:.2f}x; target p50 <= 1.3 x direct + 5 ms = {1.3 * d50 + 5:.2f} ms")
    print("CPU time per MCP call, p50 (ms): " + ", ".join(f"{side} {np.percentile(s, 50):.2f}" for side, s in cpu.items()))
    if args.data.is_dir():
        print("get_agent_tools tokens (bundled tokenizer), the servers with the most tools")
        for identifier, count, small, whole in tokens(args.data):
            print(f"  {identifier:<60} {count:3d} tools  compact {small:6d} ({small * 20 / count:5.0f} per 20 tools)  full {whole:6d}")


if __name__ == "__main__":
    main()
