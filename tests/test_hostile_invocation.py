"""The call path under attack (issue #44): an operator's secret reaches only the origins its line names, from
every surface a look-alike can be registered through; and two callers of one agent never see each other's
failures, over MCP and REST, with every audit line naming the caller whose call it was. Real `ard-mcp serve`
and stdio processes, real agents on loopback, a real DNS responder for the publisher's own host."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from google.protobuf.json_format import MessageToDict
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from ard_mcp.invocation.credentials import AgentCredentials, Credentialed
from ard_mcp.redaction import REDACTED
from tests.agent_servers import Legacy, Recording, a2a_agent, a2a_card, aidip_agent, mcp_agent, serving
from tests.dns_responder import DnsResponder
from tests.processes import quiet_env
from tests.processes import serving as serving_registry
from tests.test_crawl import manifest
from tests.test_invocation_clients import guarded
from tests.web_publisher import Publisher

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

PUBLISHER_SECRET = "publisher-line-secret-5e1f"
URL_SECRET = "url-line-secret-90ab"
OPERATOR = "operator-token-0123456789abcdef"
ALICE, BOB = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef01"
EVERY_STATUS = "verified,unverified,self-asserted,third-party,invalid"  # only the credential rules stand between


# -- the rules ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("line", "url", "sent"),
    [
        ("http://127.0.0.1:4302 bearer S", "http://127.0.0.1:4302/mcp", True),
        ("http://127.0.0.1:4302 bearer S", "http://127.0.0.1:43020/mcp", False),  # a longer port is another origin
        ("http://127.0.0.1:4302 bearer S", "http://127.0.0.1:43021/", False),
        ("https://api.example.com bearer S", "https://api.example.com/v1", True),
        ("https://api.example.com bearer S", "https://api.example.com:443/v1", True),  # the default port, written
        ("https://api.example.com bearer S", "https://API.Example.com./v1", True),  # case and a trailing dot
        ("https://api.example.com bearer S", "https://api.example.com.evil.net/", False),
        ("https://api.example.com bearer S", "http://api.example.com/", False),  # another scheme
        ("https://api.example.com bearer S", "https://api.example.com:8443/", False),
        ("https://api.example.com bearer S", "https://user@evil.net/?api.example.com", False),
        ("https://api.example.com/agents bearer S", "https://api.example.com/agents/x", True),
        ("https://api.example.com/agents/ bearer S", "https://api.example.com/agents", True),
        ("https://api.example.com/agents bearer S", "https://api.example.com/agentsx", False),  # a segment boundary
        ("https://api.example.com/agents bearer S", "https://api.example.com/agents%2F../admin", False),
        ("example.com bearer S", "https://agents.example.com/mcp", True),
        ("example.com bearer S", "https://example.com/mcp", True),
        ("example.com bearer S", "https://notexample.com/mcp", False),
        ("example.com bearer S", "https://example.com.evil.net/mcp", False),
        ("example.com bearer S", "https://127.0.0.1/mcp", False),
        ("example.com bearer S", "https://agents.example.com:8443/mcp", True),  # https on any port: TLS proves the name
        ("example.com bearer S", "http://agents.example.com/mcp", False),  # a domain line is https only...
        ("example.com bearer S", "http://example.com:8080/mcp", False),
        ("http+https:example.com bearer S", "http://agents.example.com:8080/mcp", True),  # ...unless it says so
        ("http+https:example.com bearer S", "https://agents.example.com/mcp", True),
        ("HTTP+HTTPS:Example.COM bearer S", "http://example.com/mcp", True),
        ("http+https:example.com bearer S", "http://example.com.evil.net/mcp", False),
        ("example.com bearer S", "https://xn--pi-7ld.example.com/mcp", True),  # not valid IDNA: read as sent, no error
        ("https://api.example.com bearer S", "https://xn--pi-7ld.example.com/mcp", False),
    ],
)
def test_a_credential_line_names_parsed_origins(line: str, url: str, sent: bool) -> None:
    chosen = AgentCredentials.parse(line).chosen("example.com", url)
    assert (chosen is not None) is sent


def test_each_request_is_judged_by_its_scheme_under_a_domain_line() -> None:
    """The secret is checked on every request of a call (`Credentialed`): a domain line's never goes with a
    plain-http request, a redirect or an SSE endpoint on the same host included, unless the line says so."""
    https_only, both = (AgentCredentials.parse(f"{t} X-Key: {URL_SECRET}").lines[0] for t in ("example.com", "http+https:example.com"))
    for url, only, either in [
        ("https://agents.example.com/mcp", True, True),
        ("http://agents.example.com/mcp", False, True),
        ("http://agents.example.com:443/mcp", False, True),
        ("ws://agents.example.com/mcp", False, False),
    ]:
        assert (https_only.sent_to(httpx.URL(url)), both.sent_to(httpx.URL(url))) == (only, either), url
    assert "http+https:example.com" in repr(both) and URL_SECRET not in repr(both)


def test_a_publisher_line_needs_the_publisher_and_its_host() -> None:
    credentials = AgentCredentials.parse("a.example bearer S")
    assert credentials.chosen("a.example", "https://agent.a.example/mcp") is not None
    assert credentials.chosen("a.example", "https://evil.example/mcp") is None  # the identifier's claim alone earns nothing
    assert credentials.chosen("evil.example", "https://agent.a.example/mcp") is None  # another publisher's entry at its host


def test_the_most_specific_line_wins_and_a_secret_never_prints() -> None:
    credentials = AgentCredentials.parse(
        "example.com bearer domain\nhttps://api.example.com bearer origin\nhttps://api.example.com/v2/ X-Key: path"
    )
    chosen = [
        credentials.chosen("example.com", u) for u in ("https://x.example.com/", "https://api.example.com/", "https://api.example.com/v2/a")
    ]
    assert [c.value if c else None for c in chosen] == ["Bearer domain", "Bearer origin", "path"]
    assert "path" not in repr(chosen[2]) and "domain" not in repr(chosen[0]).replace("example.com", "")


@pytest.mark.parametrize(
    "line",
    [
        "ftp://example.com bearer S",
        "https://user:pw@example.com bearer S",
        "https://example.com/?a=1 bearer S",
        "127.0.0.1 bearer S",
        "http+https:127.0.0.1 bearer S",
        "http+https: bearer S",
        "https://xn--pi-7ld.example.com bearer S",  # a host the HTTP client cannot read: never an endpoint either
        "https://ex\u2615ample.com bearer S",
    ],
)
def test_a_line_that_names_no_origin_is_refused_with_its_number(line: str) -> None:
    with pytest.raises(ValueError, match="line 2"):
        AgentCredentials.parse(f"# operator's credentials\n{line}")


@pytest.mark.parametrize(
    ("target", "meant"),
    [
        ("http:example.com", "write http+https:example.com (every host under it, over https and plain http), or http://example.com"),
        ("HTTPS:example.com", "write example.com (every host under it), or https://example.com"),
    ],
)
def test_a_domain_written_with_a_bare_scheme_is_refused_naming_what_it_may_mean(target: str, meant: str) -> None:
    """`http:example.com` is the URL http://example.com/ to a browser (one origin) and reads as "http only":
    guessing either way could send a secret where the operator did not mean it to go."""
    with pytest.raises(ValueError, match=re.escape(f"line 1: {target!r} is ambiguous: {meant}")):
        AgentCredentials.parse(f"{target} bearer S")


async def test_each_request_of_a_call_carries_the_secret_only_where_its_line_says() -> None:
    """A call is chosen its credential by its endpoint, but its requests may go elsewhere: they go without it."""
    one, other = Recording(aidip_agent()), Recording(aidip_agent())
    with serving(lambda base: one) as first, serving(lambda base: other) as second:
        credential = AgentCredentials.parse(f"{first} X-API-Key: {URL_SECRET}").chosen("x.example", first)
        assert credential is not None
        async with httpx.AsyncClient(transport=Credentialed(guarded(), credential)) as client:
            assert (await client.post(first + "/headers", json={})).json() == {"key": URL_SECRET}
            assert (await client.post(second + "/headers", json={}, headers={"X-API-Key": "forged"})).json() == {"key": None}
    assert [h.get("x-api-key") for h in other.headers] == [None]


# -- a look-alike from every surface ---------------------------------------------------------------------------
@contextmanager
def hosts() -> Iterator[dict[str, Any]]:
    """The publisher's own agent at agent.a.example (a name the DNS responder gives 127.0.0.1), an agent at an
    origin a URL line names, and the look-alikes' host: an MCP server, an AIDIP agent and an A2A agent, each
    recording every header it is sent."""
    recorded: dict[str, Recording] = {}

    def recording(name: str, app: Any) -> Recording:
        recorded[name] = Recording(app)
        return recorded[name]

    with (
        DnsResponder() as dns,
        serving(lambda base: recording("publisher", aidip_agent())) as publisher,
        serving(lambda base: recording("url", aidip_agent())) as url_agent,
        serving(lambda base: recording("mcp", mcp_agent().streamable_http_app(streamable_http_path="/mcp"))) as mcp,
        serving(lambda base: recording("aidip", aidip_agent())) as aidip,
        serving(lambda base: recording("a2a", a2a_agent(base))) as a2a,
        Publisher() as site,
    ):
        dns.add("agent.a.example.", "A", "127.0.0.1")
        port = publisher.rsplit(":", 1)[1]
        yield {
            "dns": f"127.0.0.1:{dns.port}",
            "publisher": f"http://agent.a.example:{port}",
            "url": url_agent,
            "mcp": mcp,
            "aidip": aidip,
            "a2a": a2a,
            "site": site,
            "recorded": recorded,
        }


def lookalikes(h: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Entries claiming a.example, each with its endpoint on the look-alikes' host, in every format."""
    card = MessageToDict(a2a_card(h["a2a"]))
    return {
        "mcp": {
            "identifier": "urn:air:a.example:mcp:lookalike",
            "displayName": "A look-alike MCP server",
            "type": "application/mcp-server-card+json",
            "description": "Forecasts, claiming to be a.example's.",
            "data": {"name": "lookalike", "remotes": [{"type": "streamable-http", "url": h["mcp"] + "/mcp"}]},
        },
        "aidip": {
            "id": "urn:air:a.example:agents:lookalike-aidip",
            "name": "Look-alike",
            "description": "Echoes its headers, claiming to be a.example's.",
            "endpoint": h["aidip"] + "/headers",
            "operations": [{"name": "echo", "description": "Echo.", "inputs": {"type": "object"}}],
        },
        "a2a": {
            "identifier": "urn:air:a.example:agents:lookalike-a2a",
            "displayName": "Look-alike A2A",
            "type": "application/a2a-agent-card+json",
            "description": "Echoes, claiming to be a.example's.",
            "data": card,
        },
        "xu": {
            "id": "https://a.example/agents/lookalike-xu",
            "name": "Look-alike Xu",
            "description": "Echoes its headers, claiming to be a.example's.",
            "bindings": [{"protocol": "https", "endpoint": h["aidip"] + "/headers"}],
        },
    }


def credentials_file(tmp_path: Path, h: dict[str, Any]) -> Path:
    path = tmp_path / "agents.txt"
    # the publisher's own agent is served over plain http (loopback), so its domain line says plain http may carry it
    path.write_text(f"http+https:a.example X-API-Key: {PUBLISHER_SECRET}\n{h['url']} X-API-Key: {URL_SECRET}\n", encoding="utf-8")
    path.chmod(0o600)
    return path


def tokens_file(tmp_path: Path) -> Path:
    path = tmp_path / "tokens"
    path.write_text(f"ops {OPERATOR} * invoke\nalice {ALICE} - invoke\nbob {BOB} - invoke\n", encoding="utf-8")
    path.chmod(0o600)
    return path


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@asynccontextmanager
async def mcp_over_http(base: str, token: str) -> AsyncIterator[Client]:
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx2.AsyncClient(headers=_bearer(token), timeout=60))
        yield await stack.enter_async_context(Client(streamable_http_client(f"{base}/mcp", http_client=http)))


def assert_no_secret_reached_the_lookalikes(h: dict[str, Any]) -> None:
    for name in ("mcp", "aidip", "a2a"):
        seen = h["recorded"][name].headers
        leaked = [(k, v) for headers in seen for k, v in headers.items() if PUBLISHER_SECRET in v or URL_SECRET in v]
        assert leaked == [], f"the look-alikes' {name} agent was sent an operator's secret"


async def test_a_secret_never_reaches_a_lookalike_from_any_surface(tmp_path: Path) -> None:
    with hosts() as h:
        fakes = lookalikes(h)
        real = {
            "id": "urn:air:a.example:agents:real",
            "name": "Real",
            "description": "a.example's own agent.",
            "endpoint": h["publisher"] + "/headers",
        }
        by_url = {
            "id": "urn:air:c.example:agents:by-url",
            "name": "By URL",
            "description": "An agent a URL line names.",
            "endpoint": h["url"] + "/headers",
        }
        h["site"].put("/.well-known/ai-catalog.json", manifest(dict(fakes["mcp"], identifier="urn:air:a.example:mcp:crawled")))
        args = ["--transport", "streamable-http", "--token-file", str(tokens_file(tmp_path)), "--allow-invocation"]
        args += ["--allow-private-networks", "--dns-server", h["dns"], "--invoke-trust", EVERY_STATUS]
        args += ["--agent-credentials", str(credentials_file(tmp_path, h)), "--invoke-timeout", "10"]
        with serving_registry(tmp_path / "data", *args) as base:
            async with httpx.AsyncClient(base_url=base, timeout=60, headers=_bearer(OPERATOR)) as rest:
                for document in (real, by_url, fakes["aidip"], fakes["a2a"], fakes["xu"]):
                    assert (await rest.post("/agents", json=document)).status_code == 201
                crawled = await rest.post("/crawl", json={"targets": [h["site"].origin + "/"]})
                assert crawled.status_code == 200, crawled.text
                async with mcp_over_http(base, OPERATOR) as mcp:
                    registered = await mcp.call_tool("register_agent", {"entry": fakes["mcp"]})
                    assert not registered.is_error, registered.content
                    for identifier, tool in [
                        ("urn:air:a.example:mcp:lookalike", "forecast"),
                        ("urn:air:a.example:mcp:crawled", "forecast"),
                        ("urn:air:a.example:agents:lookalike-aidip", "echo"),
                        ("urn:air:a.example:agents:lookalike-a2a", "echo"),
                        ("urn:air:a.example:agents:lookalike-xu", None),
                    ]:
                        arguments = {"city": "Oslo"} if tool == "forecast" else {"text": "hi"}
                        called = await mcp.call_tool("call_agent", {"identifier": identifier, "tool": tool, "arguments": arguments})
                        assert not called.is_error, (identifier, called.content)
                        via_rest = await rest.post(
                            f"/agents/{identifier}/invoke", params={"operation": tool} if tool else {}, json=arguments
                        )
                        assert via_rest.status_code == 200, (identifier, via_rest.text)
                        listed = await mcp.call_tool("get_agent_tools", {"identifier": identifier})
                        assert not listed.is_error, (identifier, listed.content)
                    own = await mcp.call_tool("call_agent", {"identifier": "urn:air:a.example:agents:real"})
                    named = await rest.post("/agents/urn:air:c.example:agents:by-url/invoke", json={})
        # the lines work where they should: without these, a test that sent nothing anywhere would pass. Each agent echoes
        # the key it got, and that echo comes back redacted (an operator's secret never reaches the host): "" had it got none
        assert json.loads(own.content[0].text)["result"] == {"key": REDACTED}  # type: ignore[union-attr]
        assert named.json() == {"key": REDACTED}
        assert_no_secret_reached_the_lookalikes(h)
        assert len(h["recorded"]["mcp"].headers) > 4 and h["recorded"]["aidip"].headers and h["recorded"]["a2a"].headers


async def test_a_lookalike_registered_over_stdio_gets_no_secret(tmp_path: Path) -> None:
    with hosts() as h:
        fake = lookalikes(h)["mcp"]
        args = ["-m", "ard_mcp", "serve", "--data-dir", str(tmp_path / "data"), "--allow-private-networks", "--dns-server", h["dns"]]
        args += ["--agent-credentials", str(credentials_file(tmp_path, h))]
        server = StdioServerParameters(command=sys.executable, args=args, env=quiet_env(tmp_path / "data"))
        async with Client(server) as client:
            assert not (await client.call_tool("register_agent", {"entry": fake})).is_error
            called = await client.call_tool(
                "call_agent", {"identifier": fake["identifier"], "tool": "forecast", "arguments": {"city": "Oslo"}}
            )
            assert not called.is_error, called.content
        assert h["recorded"]["mcp"].headers
        assert_no_secret_reached_the_lookalikes(h)


# -- callers kept apart ---------------------------------------------------------------------------------------
async def test_two_callers_of_one_agent_never_see_each_others_failures(tmp_path: Path) -> None:
    """Alice's calls time out, answer over the size cap and are refused; Bob's, over MCP and REST at the same
    time to the same agent (a server that keeps its sessions' GET streams open), all succeed; the audit log
    puts each outcome under the caller whose call it was."""
    weather = {
        "identifier": "urn:air:weather.example:mcp:forecast",
        "displayName": "Weather",
        "type": "application/mcp-server-card+json",
        "description": "Forecasts.",
    }
    with serving(lambda base: Legacy(mcp_agent().streamable_http_app(streamable_http_path="/mcp"))) as agent:
        weather["data"] = {"name": "weather", "remotes": [{"type": "streamable-http", "url": agent + "/mcp"}]}
        args = ["--transport", "streamable-http", "--token-file", str(tokens_file(tmp_path)), "--allow-invocation"]
        args += ["--allow-private-networks", "--invoke-timeout", "2"]
        with serving_registry(tmp_path / "data", *args) as base:
            async with httpx.AsyncClient(base_url=base, timeout=60) as rest:
                assert (await rest.post("/agents", json=weather, headers=_bearer(OPERATOR))).status_code == 201
                invoke = f"/agents/{weather['identifier']}/invoke"
                bob: list[str] = []
                alice: list[str] = []

                async def bob_over_rest(i: int) -> None:
                    await anyio.sleep(i * 0.15)
                    answer = await rest.post(invoke, params={"operation": "forecast"}, json={"city": f"rest {i}"}, headers=_bearer(BOB))
                    bob.append(f"{answer.status_code} {answer.json().get('city')}")

                async def bob_over_mcp(mcp: Client, i: int) -> None:
                    await anyio.sleep(i * 0.15)
                    tool, arguments = ("slow", {"seconds": 1.0}) if i == 3 else ("forecast", {"city": f"mcp {i}"})
                    called = await mcp.call_tool("call_agent", {"identifier": weather["identifier"], "tool": tool, "arguments": arguments})
                    bob.append("error" if called.is_error else "ok")

                async def alice_fails(tool: str, arguments: dict[str, Any]) -> None:
                    answer = await rest.post(invoke, params={"operation": tool}, json=arguments, headers=_bearer(ALICE))
                    alice.append(f"{tool} {answer.status_code}")

                async with mcp_over_http(base, BOB) as mcp, anyio.create_task_group() as group:
                    group.start_soon(alice_fails, "slow", {"seconds": 5})
                    group.start_soon(alice_fails, "verbose", {"size": 3 * 2**20})
                    group.start_soon(alice_fails, "refuses", {})
                    for i in range(12):
                        group.start_soon(bob_over_rest, i)
                        group.start_soon(bob_over_mcp, mcp, i)
                log = (await rest.get("/invocations", params={"limit": 100}, headers=_bearer(OPERATOR))).json()["records"]
    assert sorted(alice) == ["refuses 400", "slow 504", "verbose 502"]
    assert bob.count("ok") == 12 and sum(line.startswith("200 rest") for line in bob) == 12
    calls = [r for r in log if r["action"] == "call"]
    assert {r["outcome"] for r in calls if r["caller"] == "bob"} == {"ok"} and len([r for r in calls if r["caller"] == "bob"]) == 24
    assert sorted(r["outcome"] for r in calls if r["caller"] == "alice") == ["agent-error", "timeout", "unreachable"]
