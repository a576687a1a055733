"""Endpoint hosts the registry's HTTP client cannot read, from every side they can come in: an entry's endpoint
(an MCP remote, an AIDIP or A2A endpoint, over MCP and REST), an agent's, a catalog's or an upstream
registry's redirect. httpx reads hosts by IDNA 2008 where browsers (and the one URL check before it) read
them by UTS 46: `ex☕ample.com` is an `InvalidURL` to it, and `xn--pi-7ld.example.com` (a label that breaks
IDNA's bidi rule) parses but raises an `idna` error the moment its host is read. Such an entry was stored,
and calling it raised that error to the caller unhandled, with no line in the audit log; a redirect to one
failed a whole federated search. Each is now a refusal that says why, audited like any other. Real
registry, real MCP client, real servers on loopback; nothing leaves the machine."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict
from mcp import Client
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ard_mcp.config import Config
from ard_mcp.errors import AgentUnreachable
from ard_mcp.federation.client import UpstreamClient, UpstreamError
from ard_mcp.federation.hops import Path as RequestPath
from ard_mcp.federation.settings import FederationSettings, Upstream
from ard_mcp.formats import registration
from ard_mcp.invocation.audit import AuditLog
from ard_mcp.invocation.policy import LOCAL, InvocationPolicy, Limits
from ard_mcp.invocation.service import Invoker
from ard_mcp.invocation.targets import Offline, target_of
from ard_mcp.net.fetcher import TEXT, Fetcher, FetchError
from ard_mcp.net.guard import NetworkPolicy, SystemResolver
from ard_mcp.registry import Registry
from ard_mcp.search.visibility import EVERYONE
from ard_mcp.surfaces.auth import Principal, TokenStore
from ard_mcp.surfaces.mcp.server import build_server
from ard_mcp.surfaces.rest.settings import HttpSettings
from ard_mcp.surfaces.services import Services
from tests.agent_servers import a2a_card, serving
from tests.http_support import running

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

POLICY = InvocationPolicy(enabled=True, allow_private_networks=True, limits=Limits(connect=2.0, total=5.0))
OPERATOR = "operator-token-0123456789abcdef"
TOKENS = TokenStore({OPERATOR: Principal("operator", ("*",), invoke=True)})
UNREADABLE = "is not a URL the registry's HTTP client can read"
# Hosts browsers read and httpx cannot: the bidi rule broken, in either case; a symbol, an emoji, a soft hyphen
# and full-width letters IDNA 2008 disallows; an A-label that is no punycode at all.
HOSTS = [
    "xn--pi-7ld.example.com",
    "XN--PI-7LD.example.com",
    "xn--pi-7ld.example.com.",
    "ex\u2615ample.com",
    "xn--ls8h.la",
    "exa\u00admple.com",
    "\uff25\uff38\uff21\uff2d\uff30\uff2c\uff25.com",
    "xn--.example.com",
]
# Hosts httpx reads but no resolver answers for: a call to one is unreachable, and says so.
NO_SUCH_NAME = ["a..example.com", "a" * 64 + ".example.com", "a.xn--pi-7ld.example.com", ".example.com"]


def mcp_entry(url: str) -> dict[str, Any]:
    return {
        "identifier": "urn:air:hosts.example:mcp:remote",
        "displayName": "Remote MCP server",
        "type": "application/mcp-server-card+json",
        "description": "An MCP server at a host the registry's HTTP client may not read.",
        "data": {"name": "remote", "remotes": [{"type": "streamable-http", "url": url}]},
    }


def aidip_entry(url: str) -> dict[str, Any]:
    return {
        "id": "urn:air:hosts.example:agents:aidip",
        "name": "AIDIP agent",
        "description": "An AIDIP agent at a host the registry's HTTP client may not read.",
        "endpoint": url,
        "operations": [{"name": "echo", "description": "Echo.", "inputs": {"type": "object"}}],
    }


def a2a_entry(base: str) -> dict[str, Any]:
    return {
        "identifier": "urn:air:hosts.example:agents:a2a",
        "displayName": "A2A agent",
        "type": "application/a2a-agent-card+json",
        "description": "An A2A agent at a host the registry's HTTP client may not read.",
        "data": MessageToDict(a2a_card(base)),
    }


def text_of(result: Any) -> str:
    return str(result.content[0].text)


# -- an entry's endpoint ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("host", HOSTS)
async def test_an_unreadable_endpoint_is_refused_over_mcp_and_every_call_audited(tmp_path: Path, host: str) -> None:
    """An MCP remote is listed, not bound: the entry is stored, and calling it is refused as offline, naming
    the host and why, with an audit line. An AIDIP or A2A endpoint is bound, so the entry is refused."""
    server = build_server(Config(tmp_path / "data"), warm=False, services=Services("http://registry.test", invocation=POLICY))
    remote = mcp_entry(f"https://{host}/mcp")
    async with Client(server) as client:
        assert not (await client.call_tool("register_agent", {"entry": remote})).is_error
        for bound in (aidip_entry(f"https://{host}/echo"), a2a_entry(f"https://{host}")):
            refused = await client.call_tool("register_agent", {"entry": bound})
            assert refused.is_error and UNREADABLE in text_of(refused), text_of(refused)
        called = await client.call_tool("call_agent", {"identifier": remote["identifier"], "tool": "forecast", "arguments": {}})
        tools = await client.call_tool("get_agent_tools", {"identifier": remote["identifier"]})
    assert called.is_error and "cannot be called through this registry" in text_of(called)
    assert UNREADABLE in text_of(called) and ascii(f"https://{host}/mcp") in text_of(called)
    assert UNREADABLE in json.loads(text_of(tools))["offline"]
    assert [(r.identifier, r.outcome, r.status) for r in AuditLog(tmp_path / "data").newest(5)] == [(remote["identifier"], "invalid", 400)]


@pytest.mark.parametrize("host", ["xn--pi-7ld.example.com", "ex\u2615ample.com"])
async def test_an_unreadable_endpoint_is_a_400_over_rest_never_a_500(tmp_path: Path, host: str) -> None:
    data = tmp_path / "data"
    remote = mcp_entry(f"https://{host}/mcp")
    async with running(data, HttpSettings(tokens=TOKENS, invocation=POLICY)) as client:
        operator = {"Authorization": f"Bearer {OPERATOR}"}
        assert (await client.post("/agents", json=remote, headers=operator)).status_code == 201
        for bound in (aidip_entry(f"https://{host}/echo"), a2a_entry(f"https://{host}")):
            refused = await client.post("/agents", json=bound, headers=operator)
            assert refused.status_code == 400 and UNREADABLE in refused.json()["error"]["message"], refused.text
        invoked = await client.post(f"/agents/{remote['identifier']}/invoke?operation=forecast", json={}, headers=operator)
    assert invoked.status_code == 400 and invoked.json()["error"]["code"] == "InvalidInput", invoked.text
    assert UNREADABLE in invoked.json()["error"]["message"]
    assert [(r.outcome, r.status) for r in AuditLog(data).newest(5)] == [("invalid", 400)]


def test_an_entry_stored_before_the_check_is_offline_naming_the_host() -> None:
    """An entry is checked on input only, so one stored before the check still names its host: it is offline,
    and says which URL is refused and why, in each format."""
    stored = [entry for entry, _ in callable_entries("https://agents.example.com")]
    bad = "https://xn--pi-7ld.example.com"
    stored[0]["data"]["endpoint"] = bad + "/echo"
    stored[1]["data"]["supportedInterfaces"][0]["url"] = bad + "/a2a"
    stored[2]["data"]["remotes"][0]["url"] = bad + "/mcp"
    for entry in stored:
        found = target_of(entry, Limits())
        assert isinstance(found, Offline) and f"'{bad}/" in found.reason and UNREADABLE in found.reason, found


@pytest.mark.parametrize(
    "remote", ["http://localhost:3001/sse", "http://127.0.0.1:8080/mcp", "http://192.168.1.20/mcp", "http://[::1]/mcp"]
)
def test_a_remote_on_the_publishers_own_machine_gives_way_to_the_package(remote: str) -> None:
    """A server description listing a package and a loopback or private remote (how its publisher runs it at home)
    is started from its package; one listing a public remote is called there; with no package, the remote is
    what there is (an operator may allow private networks)."""
    from ard_mcp.formats import mcp_server

    def described(url: str, packages: bool) -> dict[str, Any]:
        package = {"registryType": "npm", "identifier": "@acme/weather", "version": "1.0.0", "transport": {"type": "stdio"}}
        document = {
            "name": "io.github.acme/weather",
            "description": "Weather.",
            "version": "1.0.0",
            "remotes": [{"type": "sse", "url": url}],
        }
        return mcp_server.to_entry(document | ({"packages": [package]} if packages else {}))

    local = target_of(described(remote, packages=True), Limits())
    assert not isinstance(local, Offline) and local.package is not None and local.transport_kind == "stdio", local
    public = target_of(described("https://weather.example.com/sse", packages=True), Limits())
    assert not isinstance(public, Offline) and public.package is None and public.transport_kind == "sse", public
    alone = target_of(described(remote, packages=False), Limits())
    assert not isinstance(alone, Offline) and alone.package is None, alone


# -- hosts httpx reads that no resolver answers for ----------------------------------------------------------
class NoSuchName:
    """A resolver that knows no name, as the system's knows none of these (and without asking any DNS server)."""

    async def addresses(self, host: str) -> list[str]:
        raise OSError(f"{host}: no such name")


def callable_entries(base: str) -> list[tuple[dict[str, Any], str]]:
    """One entry of each kind with its endpoint at `base`, stored form, and the tool to call."""
    raws = [(aidip_entry(base + "/echo"), "echo"), (a2a_entry(base), "echo"), (mcp_entry(base + "/mcp"), "forecast")]
    return [(registration.to_entry(raw), tool) for raw, tool in raws]


@pytest.mark.parametrize("host", NO_SUCH_NAME)
async def test_a_host_no_resolver_answers_for_is_unreachable_and_audited(tmp_path: Path, host: str) -> None:
    data = tmp_path / "data"
    registry = Registry(Config(data))
    invoker = Invoker(registry, POLICY, resolver=NoSuchName())
    try:
        for entry, tool in callable_entries(f"https://{host}"):
            registry.indexer.register(entry)
            with pytest.raises(AgentUnreachable, match="no such name"):
                await invoker.call(entry["identifier"], tool, {}, EVERYONE, LOCAL)
    finally:
        await invoker.aclose()
        registry.close()
    assert [r.outcome for r in AuditLog(data).newest(5)] == ["unreachable"] * 3


# -- a redirect --------------------------------------------------------------------------------------------------
def redirecting(location: bytes) -> Callable[[str], Starlette]:
    """An app for `serving` answering every request with a 307 to `location`, sent as raw bytes (a UTF-8
    host goes as it is)."""

    async def moved(request: Request) -> Response:
        response = Response(status_code=307)
        response.raw_headers.append((b"location", location))
        return response

    app = Starlette(routes=[Route("/{path:path}", moved, methods=["GET", "POST"])])
    return lambda base: app


LOCATIONS = [b"https://xn--pi-7ld.example.com/x", b"//XN--PI-7LD.example.com/x", "https://ex\u2615ample.com/x".encode()]


@pytest.fixture(scope="module")
def redirectors() -> Iterator[list[str]]:
    with ExitStack() as stack:
        yield [stack.enter_context(serving(redirecting(location))) for location in LOCATIONS]


async def test_an_agents_redirect_to_an_unreadable_host_is_unreachable_and_audited(tmp_path: Path, redirectors: list[str]) -> None:
    """Every client (AIDIP's POST, the A2A SDK's, the MCP SDK's) is handed the redirect by the guarded
    transport as a protocol error it names, where httpx's client failed reading the Location's host."""
    data = tmp_path / "data"
    registry = Registry(Config(data))
    invoker = Invoker(registry, POLICY)
    try:
        for base in redirectors:
            for entry, tool in callable_entries(base):
                registry.indexer.register(entry)
                with pytest.raises(AgentUnreachable, match=UNREADABLE):
                    await invoker.call(entry["identifier"], tool, {}, EVERYONE, LOCAL)
    finally:
        await invoker.aclose()
        registry.close()
    assert [r.outcome for r in AuditLog(data).newest(20)] == ["unreachable"] * 9


async def test_a_catalogs_or_an_upstreams_redirect_to_an_unreadable_host_is_their_failure(redirectors: list[str]) -> None:
    """The crawler and federation share the parser: a catalog's redirect fails its fetch, an upstream's its
    answer (a third party's once failed a whole federated search), and neither asks an unreadable URL."""
    async with Fetcher(NetworkPolicy(allow_private=True), respect_robots=False) as fetcher:
        for url in [*(base + "/catalog.json" for base in redirectors), "https://xn--pi-7ld.example.com/catalog.json"]:
            with pytest.raises(FetchError, match=UNREADABLE):
                await fetcher.get(url, TEXT)
    client = UpstreamClient(FederationSettings(allow_private_networks=True), SystemResolver())
    try:
        for url in [*redirectors, "https://xn--pi-7ld.example.com", "https://ex\u2615ample.com"]:
            with pytest.raises(UpstreamError, match=UNREADABLE):
                await client.search(Upstream(url, configured=False), {"query": {"text": "x"}}, RequestPath.of({}), "https://a.example", 10)
    finally:
        await client.aclose()
