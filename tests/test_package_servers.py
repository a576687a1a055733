"""Package servers from the public registries, used from a host attached only to ard-mcp (issue #45): found by a
task, consented to once each, installed, started in the sandbox, listed and called; over HTTP, only what the
operator approved runs. Real `mcp-server-time` (PyPI) and `@modelcontextprotocol/server-memory` (npm),
installed at test time, a real `ard-mcp serve` over stdio and over streamable HTTP, real bubblewrap."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import httpx2
import mcp_types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client

from ard_mcp.invocation.audit import AuditLog
from ard_mcp.packages.sandbox import SandboxUnavailable, check_available
from tests.processes import quiet_env, serving

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

TIME_KEY, MEMORY_KEY = "pypi:mcp-server-time@2026.10.19", "npm:@modelcontextprotocol/server-memory@2026.8.31"
TIME = {
    "identifier": "urn:air:modelcontextprotocol.io:mcp:server-time",
    "displayName": "Time",
    "type": "application/mcp-server-card+json",
    "description": "Tells the current time in any IANA time zone and converts a time from one zone to another.",
    "data": {
        "name": "io.modelcontextprotocol/server-time",
        "description": "Time and time zone conversion.",
        "version": "2026.10.19",
        "packages": [{"registryType": "pypi", "identifier": "mcp-server-time", "version": "2026.10.19", "transport": {"type": "stdio"}}],
    },
}
MEMORY = {
    "identifier": "urn:air:modelcontextprotocol.io:mcp:server-memory",
    "displayName": "Knowledge graph memory",
    "type": "application/mcp-server-card+json",
    "description": "Remembers people, things and facts about the user across conversations, in a local knowledge graph.",
    "data": {
        "name": "io.modelcontextprotocol/server-memory",
        "description": "Knowledge graph memory.",
        "version": "2026.8.31",
        "packages": [
            {
                "registryType": "npm",
                "identifier": "@modelcontextprotocol/server-memory",
                "version": "2026.8.31",
                "transport": {"type": "stdio"},
                "environmentVariables": [
                    {"name": "MEMORY_FILE_PATH", "description": "Where the graph is kept.", "default": "/tmp/memory.jsonl"}
                ],
            }
        ],
    },
}


def _sandbox_or_skip() -> None:
    try:
        check_available()
    except SandboxUnavailable as exc:
        pytest.skip(f"no sandbox here: {exc} (.ci/run installs bubblewrap)")


def text(result: Any) -> str:
    return str(result.content[0].text)


def answer(result: Any) -> dict[str, Any]:
    assert not result.is_error, text(result)
    parsed: dict[str, Any] = json.loads(text(result))
    return parsed


async def test_a_host_finds_consents_once_lists_and_calls_a_pypi_and_an_npm_server(tmp_path: Path) -> None:
    _sandbox_or_skip()
    data = tmp_path / "data"
    asked: list[str] = []

    async def consent(context: ClientRequestContext, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult:
        asked.append(params.message)
        return mcp_types.ElicitResult(action="accept", content={"network": False})

    server = StdioServerParameters(command=sys.executable, args=["-m", "ard_mcp", "serve", "--data-dir", str(data)], env=quiet_env(data))
    async with Client(server, elicitation_callback=consent) as client:
        for entry in (TIME, MEMORY):
            assert not (await client.call_tool("register_agent", {"entry": entry})).is_error
        found = answer(await client.call_tool("search_agents", {"text": "what time is it in Tokyo right now?"}))
        assert found["results"][0]["identifier"] == TIME["identifier"]
        found = answer(await client.call_tool("search_agents", {"text": "remember that my sister is called Ana"}))
        assert found["results"][0]["identifier"] == MEMORY["identifier"]

        listed = answer(await client.call_tool("get_agent_tools", {"identifier": TIME["identifier"]}))
        assert {t["name"] for t in listed["tools"]} >= {"get_current_time", "convert_time"}
        assert listed["endpoint"] == TIME_KEY and listed["thirdPartyContent"] is True
        now = answer(
            await client.call_tool(
                "call_agent", {"identifier": TIME["identifier"], "tool": "get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}
            )
        )
        assert now["result"]["timezone"] == "Asia/Tokyo" and now["endpoint"] == TIME_KEY

        arguments = {"entities": [{"name": "Ana", "entityType": "person", "observations": ["the user's sister"]}]}
        made = answer(
            await client.call_tool("call_agent", {"identifier": MEMORY["identifier"], "tool": "create_entities", "arguments": arguments})
        )
        assert made["result"]["entities"][0]["name"] == "Ana"
        graph = answer(await client.call_tool("call_agent", {"identifier": MEMORY["identifier"], "tool": "read_graph"}))
        assert [e["name"] for e in graph["result"]["entities"]] == ["Ana"]  # the same running server, its /tmp kept
    assert len(asked) == 2  # once for each package version, never again for its later calls
    assert "Package: pypi mcp-server-time, version 2026.10.19, from https://pypi.org/simple." in asked[0]
    assert 'The entry claims to be "urn:air:modelcontextprotocol.io:mcp:server-time"' in asked[0]
    assert "Package: npm @modelcontextprotocol/server-memory, version 2026.8.31" in asked[1]
    assert """MEMORY_FILE_PATH (the entry's default "/tmp/memory.jsonl", optional)""" in asked[1]
    assert all(question.startswith("ard-mcp asks: ") for question in asked)
    calls = [r for r in AuditLog(data).newest(20) if r.action == "call"]
    assert {r.endpoint for r in calls} == {TIME_KEY, MEMORY_KEY} and {r.outcome for r in calls} == {"ok"}
    assert {(r.endpoint or "").split(":")[0]: (r.integrity or "").split("-")[0].split("=")[0] for r in calls} == {
        "pypi": "sha256",
        "npm": "sha512",
    }


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_over_http_only_what_the_operator_approved_runs(tmp_path: Path) -> None:
    _sandbox_or_skip()
    data, token = tmp_path / "data", "http-token-0123456789abcdef"
    tokens = tmp_path / "tokens"
    tokens.write_text(f"ops {token} * invoke\n", encoding="utf-8")
    tokens.chmod(0o600)
    args = ["--transport", "streamable-http", "--token-file", str(tokens), "--allow-invocation", "--allow-package-servers"]
    with serving(data, *args) as base:
        async with httpx.AsyncClient(base_url=base, timeout=120, headers=_bearer(token)) as rest:
            assert (await rest.post("/agents", json=MEMORY)).status_code == 201
            invoke = f"/agents/{MEMORY['identifier']}/invoke"
            refused = await rest.post(invoke, params={"operation": "read_graph"}, json={})
            message = refused.json()["error"]["message"]
            assert refused.status_code == 403 and f"{MEMORY_KEY} has not been approved to run here with this launch" in message
            plan = re.search(r"ard-mcp packages allow (plan:[0-9a-f]{32})", message)
            assert plan is not None, message
            assert not (data / "packages" / "cache" / "npm").exists()  # nothing installed for an unapproved package
            keyed = json.loads(json.dumps(MEMORY)) | {"identifier": "urn:air:modelcontextprotocol.io:mcp:keyed-memory"}
            keyed["data"]["packages"][0]["environmentVariables"] = [{"name": "MEMORY_TOKEN", "isRequired": True, "isSecret": True}]
            assert (await rest.post("/agents", json=keyed)).status_code == 201
            lacking = await rest.post(f"/agents/{keyed['identifier']}/invoke", params={"operation": "read_graph"}, json={})
            said = lacking.json()["error"]["message"]  # what is missing, before anyone is told to approve what cannot run
            assert lacking.status_code == 400 and "needs MEMORY_TOKEN (a secret)" in said and "approve" not in said, said
            requested = json.loads((data / "packages" / "requested.json").read_text())["requested"]
            assert [[v["name"] for v in item["launch"]["variables"]] for item in requested] == [["MEMORY_FILE_PATH"]]  # not the keyed one

            def approve(*what: str) -> str:
                done = subprocess.run(
                    [sys.executable, "-m", "ard_mcp", "packages", "allow", *what, "--data-dir", str(data)],
                    env=quiet_env(data),
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                assert done.returncode == 0, done.stderr
                return done.stdout

            approve(MEMORY_KEY)  # the package with no arguments or variables: not the launch the entry declares
            still = await rest.post(invoke, params={"operation": "read_graph"}, json={})
            assert still.status_code == 403 and plan[1] in still.json()["error"]["message"]
            said = approve(plan[1])
            assert "variables MEMORY_FILE_PATH" in said and plan[1] in said
            done = await rest.post(invoke, params={"operation": "read_graph"}, json={})
            assert done.status_code == 200, done.text
            assert done.json() == {"entities": [], "relations": []} and done.headers["ard-invocation-endpoint"] == MEMORY_KEY
            async with (
                httpx2.AsyncClient(headers=_bearer(token), timeout=120) as http,
                Client(streamable_http_client(f"{base}/mcp", http_client=http)) as mcp,
            ):
                listed = answer(await mcp.call_tool("get_agent_tools", {"identifier": MEMORY["identifier"]}))
            assert "create_entities" in {t["name"] for t in listed["tools"]}


def test_a_servers_environment_is_what_it_declares_with_the_operators_values(tmp_path: Path) -> None:
    from ard_mcp.errors import InvalidArgument
    from ard_mcp.packages.environment import PackageSecrets, server_environment
    from ard_mcp.packages.specs import EnvVar, PackageSpec

    secrets_file = tmp_path / "package-secrets"
    secrets_file.write_text(
        "# the operator's values\nAPI_KEY=shared value\nnpm:@acme/weather API_KEY=acme's = value\nREGION=eu\n", encoding="utf-8"
    )
    secrets = PackageSecrets.load(secrets_file)
    declared = (
        EnvVar("API_KEY", True, True, None, None),
        EnvVar("REGION", False, False, None, "us"),
        EnvVar("UNITS", False, False, None, "metric"),
        EnvVar("HOME_TOKEN", False, True, None, None),
    )
    acme = PackageSpec("npm", "@acme/weather", "1.0.0", None, (), (), declared)
    other = PackageSpec("npm", "@other/weather", "1.0.0", None, (), (), declared)
    environ = {"ARD_MCP_PACKAGE_HOME_TOKEN": "set for packages", "REGION": "never: not named for packages", "GITHUB_TOKEN": "never"}
    assert server_environment(acme, secrets, environ) == {
        "API_KEY": "acme's = value",  # the package's own line first
        "REGION": "eu",
        "UNITS": "metric",
        "HOME_TOKEN": "set for packages",
    }
    held = {"ARD_MCP_PACKAGE_API_KEY": "k", "REGION": "a value ard-mcp holds for itself"}
    assert server_environment(other, PackageSecrets(), held)["REGION"] == "us"  # the default, never ard-mcp's plain REGION
    assert server_environment(other, secrets, {})["API_KEY"] == "shared value"
    with pytest.raises(InvalidArgument, match=r"npm:@acme/weather@1.0.0 needs API_KEY \(a secret\).*'npm:@acme/weather API_KEY=\.\.\.'"):
        server_environment(acme, PackageSecrets(), {})
    secrets_file.write_text("npm:@acme/weather no equals sign\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 1: expected 'NAME=value'"):
        PackageSecrets.load(secrets_file)


async def test_what_a_server_writes_beside_its_code_lasts_across_restarts(tmp_path: Path) -> None:
    """server-memory as published keeps its graph beside its own code (issue #54: EROFS on the read-only install):
    it writes into its own view of the package, which lasts when ard-mcp stops and starts again, while the
    install other launches share is left as it was."""
    _sandbox_or_skip()
    data = tmp_path / "data"
    published = json.loads(json.dumps(MEMORY))
    del published["data"]["packages"][0]["environmentVariables"]

    async def consent(context: ClientRequestContext, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult:
        return mcp_types.ElicitResult(action="accept", content={"network": False})

    server = StdioServerParameters(command=sys.executable, args=["-m", "ard_mcp", "serve", "--data-dir", str(data)], env=quiet_env(data))
    remember = {"entities": [{"name": "Ana", "entityType": "person", "observations": ["the user's sister, birthday May 3"]}]}
    for step in ("remember", "recall"):
        async with Client(server, elicitation_callback=consent) as client:
            if step == "remember":
                assert not (await client.call_tool("register_agent", {"entry": published})).is_error
                call = {"identifier": MEMORY["identifier"], "tool": "create_entities", "arguments": remember}
                assert answer(await client.call_tool("call_agent", call))["result"]["entities"][0]["name"] == "Ana"
            else:
                graph = answer(await client.call_tool("call_agent", {"identifier": MEMORY["identifier"], "tool": "read_graph"}))
    assert [e["observations"] for e in graph["result"]["entities"]] == [["the user's sister, birthday May 3"]]
    install = data / "packages" / "cache" / "npm" / "@modelcontextprotocol+server-memory" / "2026.8.31"
    assert list(install.rglob("memory.jsonl")) == []  # written in its own view, not into the shared install
    assert len(list((data / "packages" / "servers").rglob("memory.jsonl"))) == 1
