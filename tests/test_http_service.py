"""What every route shares: bearer tokens for writes, body limit, allowed hosts, CORS, health, the OpenAPI
document; the MCP tools reaching the same capabilities; and `serve`'s refusal to expose open writes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import Client

from ard_mcp.assembly import cli
from ard_mcp.assembly.app import build_app
from ard_mcp.config import Config
from ard_mcp.surfaces.auth import Principal, TokenStore
from ard_mcp.surfaces.mcp.server import build_server
from ard_mcp.surfaces.rest.operations import OPERATIONS
from ard_mcp.surfaces.rest.settings import HttpSettings
from tests.conftest import INVOICES, PDF, SAMPLE, TRANSLATE, WEATHER
from tests.http_support import (
    AIDIP_TRANSLATOR,
    AIDIP_URN,
    XU_HR,
    XU_HR_URN,
    XU_MINIMAL,
    XU_MINIMAL_URN,
    assert_ard,
    running,
)

pytestmark = [pytest.mark.slow, pytest.mark.anyio]
TOKEN = "s3cret-token-for-tests-0001"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def tokens() -> TokenStore:
    return TokenStore({TOKEN: "ci"})


async def test_writes_need_a_valid_token_when_tokens_are_configured(tmp_path: Path, tokens: TokenStore) -> None:
    async with running(tmp_path / "data", HttpSettings(tokens=tokens)) as client:
        for headers in ({}, {"Authorization": "Bearer wrong-token-000000000"}, {"Authorization": TOKEN}, {"Authorization": "Basic x"}):
            refused = await client.post("/agents", json=WEATHER, headers=headers)
            assert refused.status_code == 401 and refused.json()["error"]["code"] == "Unauthorized"
            assert refused.headers["www-authenticate"].startswith("Bearer")
        malformed = await client.post("/agents", content=b"{oops", headers={"content-type": "application/json"})
        assert malformed.status_code == 401  # credentials are checked before the body is read
        assert (await client.post("/agents", json=WEATHER, headers=BEARER)).status_code == 201
        assert (await client.put(f"/agents/{WEATHER['identifier']}", json=WEATHER)).status_code == 401
        assert (await client.delete(f"/agents/{WEATHER['identifier']}")).status_code == 401
        # reads stay public
        assert (await client.post("/search", json={"query": {"text": "weather forecast"}})).status_code == 200
        assert (await client.get(f"/agents/{WEATHER['identifier']}")).status_code == 200
        assert (await client.delete(f"/agents/{WEATHER['identifier']}", headers=BEARER)).status_code == 200


async def test_a_refusal_for_want_of_a_token_names_what_was_refused(tmp_path: Path, tokens: TokenStore) -> None:
    """Issue #44: a read of the invocation log was told it needed a token "for writes"."""
    async with running(tmp_path / "data", HttpSettings(tokens=tokens)) as client:
        log = await client.get("/invocations")
        call = await client.post(f"/agents/{WEATHER['identifier']}/invoke", json={})
        write = await client.post("/agents", json=WEATHER)
    assert [r.status_code for r in (log, call, write)] == [401, 401, 401]
    assert "for reading the invocation log (an operator's token);" in log.json()["message"]
    assert "for calling agents;" in call.json()["error"]["message"]
    assert "for writes;" in write.json()["error"]["message"]


async def test_openapi_marks_security_as_the_server_runs(tmp_path: Path, tokens: TokenStore) -> None:
    """Issue #44: an open loopback server's document marked `GET /invocations` (and the writes) as needing
    `Authorization`, and answered them without."""
    async with running(tmp_path / "open") as client:
        document = (await client.get("/openapi.json")).json()
        assert (await client.get("/invocations")).status_code == 200
    assert [(op.method, op.path) for op in OPERATIONS if "security" in document["paths"][op.path][op.method.lower()]] == []
    async with running(tmp_path / "closed", HttpSettings(tokens=tokens)) as client:
        document = (await client.get("/openapi.json")).json()
    for op in OPERATIONS:
        assert ("security" in document["paths"][op.path][op.method.lower()]) == op.write, (op.method, op.path)


async def test_full_detail_shows_auth_only_to_a_token_holder(tmp_path: Path, tokens: TokenStore) -> None:
    async with running(tmp_path / "data", HttpSettings(tokens=tokens)) as client:
        await client.post("/agents", json=XU_HR, headers=BEARER)
        request = {"query": "Prepare a new-employee onboarding workflow.", "detail": "full"}
        anonymous = (await client.post("/discover", json=request)).json()
        assert "auth" not in anonymous["candidates"][0] and anonymous["candidates"][0]["redacted"] is True
        assert any("bearer token" in w for w in anonymous["warnings"])
        trusted = (await client.post("/discover", json=request, headers=BEARER)).json()
        assert trusted["candidates"][0]["auth"] == XU_HR["auth"] and "redacted" not in trusted["candidates"][0]


async def test_bodies_over_the_limit_get_413(tmp_path: Path) -> None:
    async with running(tmp_path / "data", HttpSettings(max_body_bytes=2000)) as client:
        big = {"query": {"text": "x" * 3000}}
        declared = await client.post("/search", json=big)
        assert declared.status_code == 413 and declared.json()["errorCode"] == "PAYLOAD_TOO_LARGE"
        assert_ard(declared.json(), "openapi:Error")

        async def chunks() -> AsyncIterator[bytes]:
            yield b'{"query": {"text": "'
            for _ in range(10):
                yield b"y" * 500
            yield b'"}}'

        streamed = await client.post("/search", content=chunks(), headers={"content-type": "application/json"})
        assert streamed.status_code == 413 and "over the limit" in streamed.json()["message"]
        xu = await client.post("/discover", json={"query": "z" * 3000})
        assert xu.status_code == 413 and xu.json()["code"] == "invalid_request"
        aidip = await client.post("/agents", json={**AIDIP_TRANSLATOR, "description": "d" * 3000})
        assert aidip.status_code == 413 and aidip.json()["error"]["code"] == "PayloadTooLarge"
        assert (await client.post("/search", json={"query": {"text": "small"}})).status_code == 200


async def test_foreign_hosts_form_bodies_and_cors(tmp_path: Path) -> None:
    async with running(tmp_path / "data") as client:
        foreign = await client.get("/healthz", headers={"host": "evil.example"})
        assert foreign.status_code == 421 and foreign.json()["errorCode"] == "MISDIRECTED_REQUEST"
        mcp = await client.post("/mcp", json={}, headers={"host": "evil.example"})
        assert mcp.status_code == 421
        form = await client.post("/search", content=b"query=weather", headers={"content-type": "application/x-www-form-urlencoded"})
        assert form.status_code == 415 and form.json()["errorCode"] == "UNSUPPORTED_MEDIA_TYPE"
        preflight = await client.options("/search", headers={"origin": "https://app.example", "access-control-request-method": "POST"})
        assert "access-control-allow-origin" not in preflight.headers  # CORS is off by default
    settings = HttpSettings(allowed_hosts=("registry.example.com",), cors_origins=("https://app.example",))
    async with running(tmp_path / "data2", settings) as client:
        assert (await client.get("/healthz", headers={"host": "registry.example.com"})).status_code == 200
        assert (await client.get("/healthz", headers={"host": "registry.example.com:8443"})).status_code == 200
        assert (await client.get("/healthz")).status_code == 421  # 127.0.0.1 is not in the list
        preflight = await client.options(
            "/search", headers={"host": "registry.example.com", "origin": "https://app.example", "access-control-request-method": "POST"}
        )
        assert preflight.headers["access-control-allow-origin"] == "https://app.example"


async def test_host_names_compare_case_insensitively_on_every_route(tmp_path: Path) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    headers = {"host": "LOCALHOST:8000", "accept": "application/json, text/event-stream"}
    async with running(tmp_path / "data") as client:
        assert (await client.get("/healthz", headers=headers)).status_code == 200
        mcp = await client.post("/mcp", json=initialize, headers=headers)
        assert mcp.status_code == 200, mcp.text  # was 421 on /mcp while REST answered


async def test_a_body_that_does_not_arrive_in_time_gets_408(tmp_path: Path) -> None:
    """A client trickling its body is cut off at the deadline (ASGI driven by hand: no client library
    sends a body this slowly)."""
    app = build_app(Config(tmp_path / "data"), HttpSettings(body_timeout=0.5), warm=False)
    sent: list[dict[str, Any]] = []

    async def trickle() -> dict[str, Any]:
        if not sent:
            await anyio.sleep(0.05)
            return {"type": "http.request", "body": b'{"query": ', "more_body": True}
        await anyio.sleep(60)  # never finishes
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/search",
        "raw_path": b"/search",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json")],
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 50000),
        "scheme": "http",
        "http_version": "1.1",
        "root_path": "",
    }
    async with app.router.lifespan_context(app):
        with anyio.fail_after(10):
            await app(scope, trickle, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = json.loads(b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body"))
    assert start["status"] == 408 and body["errorCode"] == "DEADLINE_EXCEEDED"


async def test_health_and_openapi(tmp_path: Path) -> None:
    async with running(tmp_path / "data") as client:
        health = await client.get("/healthz")
        assert health.status_code == 200 and health.json()["status"] == "ok" and health.json()["agents"] == 0
        openapi = (await client.get("/openapi.json")).json()
    assert openapi["openapi"] == "3.1.0"
    for op in OPERATIONS:
        operation = openapi["paths"][op.path][op.method.lower()]
        assert operation["operationId"] == op.operation_id and "500" in operation["responses"]
        assert "security" not in operation  # an open server: no operation needs a token
    for schema in openapi["components"]["schemas"].values():
        jsonschema.Draft202012Validator.check_schema(schema)
    assert "AgentDocument" in openapi["components"]["schemas"] and "DiscoveryRequest" in openapi["components"]["schemas"]


# -- MCP parity ----------------------------------------------------------------------------------------------
async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
    assert result.structured_content is not None
    return result.structured_content


async def test_mcp_tools_reach_every_capability(data_dir: Path) -> None:
    server = build_server(Config(data_dir), warm=False)
    async with Client(server) as client:
        for item in SAMPLE:
            await call(client, "register_agent", entry=item)
        assert (await call(client, "register_agent", entry=XU_HR))["entry"]["identifier"] == XU_HR_URN
        assert (await call(client, "register_agent", entry=XU_MINIMAL, format="xu"))["entry"]["identifier"] == XU_MINIMAL_URN
        assert (await call(client, "register_agent", entry=AIDIP_TRANSLATOR))["entry"]["identifier"] == AIDIP_URN

        tagged = await call(client, "search_agents", text="translate a document", required_tags=["nlp"], excluded_tags=["weather"])
        assert [r["identifier"] for r in tagged["results"]] == [AIDIP_URN]
        plain = await call(client, "search_agents", text="translate some text into english")
        boosted = await call(client, "search_agents", text="translate some text into english", preferred_tags=["nlp"])
        before = {r["identifier"]: r["score"] for r in plain["results"]}
        after = {r["identifier"]: r["score"] for r in boosted["results"]}
        assert after[AIDIP_URN] == min(100, before[AIDIP_URN] + 10) and after[TRANSLATE["identifier"]] == before[TRANSLATE["identifier"]]

        minimal = await call(client, "search_agents", text="will it rain in Lisbon?", detail="minimal")
        top = minimal["results"][0]
        assert set(top) == {"identifier", "displayName", "type", "url", "score", "source", "redacted"}
        assert top["url"] == f"ard://agents/{WEATHER['identifier']}"
        summary = await call(client, "search_agents", text="send an invoice", detail="summary")
        assert summary["results"][0]["url"] == INVOICES["url"] and "evidence" in summary["results"][0]
        assert "trustManifest" not in summary["results"][0] and summary["results"][0]["redacted"] is True

        found = await call(
            client,
            "discover_agents",
            query="find a translation agent",
            protocols=["https"],
            include_evidence=True,
            constraints={"unsupported_private_filter": "x"},
        )
        assert found["candidates"][0]["identifier"] == AIDIP_URN and found["unsupported_filters"] == ["unsupported_private_filter"]
        assert {"tag", "context", "example", "protocol", "freshness", "policy"} <= set(found["candidates"][0]["score_components"])

        listed = await call(client, "list_agents", filter="type = 'application/mcp-server-card+json' AND tags = weather")
        assert [i["identifier"] for i in listed["items"]] == [WEATHER["identifier"]]
        assert (await call(client, "get_agent", identifier="agent-12345"))["identifier"] == AIDIP_URN
        assert (await call(client, "deregister_agent", identifier=XU_MINIMAL["id"]))["identifier"] == XU_MINIMAL_URN


# -- serve's safety checks ------------------------------------------------------------------------------------
def test_serve_refuses_an_open_non_loopback_address(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["serve", "--transport", "streamable-http", "--host", "0.0.0.0", "--data-dir", str(data_dir)])
    assert code == 2 and "--token-file" in capsys.readouterr().err
    assert not data_dir.exists()  # refused before anything was opened


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "No such file"),
        ("# nothing\n\n", "holds no tokens"),
        ("short\n", "at least 16"),
        ("a b c d\n", "expected '[name] token [publisher domains [invoke]]'"),
        ("a 0123456789abcdef0123 - invoke extra\n", "expected '[name] token [publisher domains [invoke]]'"),
        ("ci 0123456789abcdef0123 example.com,not_a_domain\n", "'not_a_domain' is not a publisher domain"),
    ],
)
def test_bad_token_files_stop_serve(tmp_path: Path, content: str | None, expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "tokens"
    if content is not None:
        path.write_text(content)
    code = cli.main(["serve", "--transport", "streamable-http", "--token-file", str(path), "--data-dir", str(tmp_path / "data")])
    assert code == 2 and expected in capsys.readouterr().err


def test_token_file_scopes_principals_to_publishers(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "tokens"
    path.write_text(f"acme {TOKEN} Example.com,*.example.org\nops {TOKEN[::-1]} *\nold {TOKEN.upper()}\n")
    store = TokenStore.load(path)
    acme = store.principal({"authorization": f"Bearer {TOKEN}"})
    assert acme is not None and acme.publishers == ("example.com", "*.example.org")
    assert acme.may_write("example.com") and acme.may_write("docs.example.org") and acme.may_write("A.B.Example.ORG")
    assert not acme.may_write("example.org") and not acme.may_write("evilexample.com") and not acme.may_write("example.com.evil.net")
    ops = store.principal({"authorization": f"Bearer {TOKEN[::-1]}"})
    assert ops is not None and ops.may_write("anything.example")
    assert "old may write the entries of every publisher" in caplog.text  # a line without the column keeps its old meaning


async def test_a_scoped_token_writes_only_its_publishers_entries(tmp_path: Path) -> None:
    other = "other-token-0123456789abcdef"
    tokens = TokenStore({TOKEN: Principal("acme", ("example.com",)), other: Principal("other", ("*.example.org",))})
    theirs = {"Authorization": f"Bearer {other}"}
    async with running(tmp_path / "data", HttpSettings(tokens=tokens)) as client:
        assert (await client.post("/agents", json=WEATHER, headers=BEARER)).status_code == 201
        for method, path in (
            ("POST", "/agents"),
            ("PUT", f"/agents/{WEATHER['identifier']}"),
            ("DELETE", f"/agents/{WEATHER['identifier']}"),
        ):
            body = {**WEATHER, "description": "hijacked"} if method != "DELETE" else None
            refused = await client.request(method, path, json=body, headers=theirs)
            assert refused.status_code == 403 and refused.json()["error"]["code"] == "Forbidden", refused.text
        kept = (await client.get(f"/agents/{WEATHER['identifier']}")).json()
        assert kept["description"] == WEATHER["description"]
        assert (await client.post("/agents", json=PDF, headers=theirs)).status_code == 201  # docs.example.org is its own
        future = {**WEATHER, "updatedAt": "9999-12-31T00:00:00Z"}
        locked = await client.post("/agents", json=future, headers=BEARER)
        assert locked.status_code == 400 and "in the future" in locked.text  # would lock every later update out as stale


def test_token_file_names_principals(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text(f"# publishers\nci-bot {TOKEN}\n{TOKEN[::-1]}  # unnamed\n")
    store = TokenStore.load(path)
    assert store.principal({"authorization": f"Bearer {TOKEN}"}).name == "ci-bot"  # type: ignore[union-attr]
    assert store.principal({"authorization": f"bearer {TOKEN[::-1]}"}).name == "token-3"  # type: ignore[union-attr]
    assert store.principal({"authorization": "Bearer nope"}) is None and store.principal(None) is None
    assert all(TOKEN.encode() not in digest for digest, _ in store._entries)  # noqa: SLF001
