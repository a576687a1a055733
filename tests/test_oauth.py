"""Bearer JWTs from an OAuth issuer: real signatures (RSA and EC keys), the issuer's keys served over a real
loopback HTTP server (OpenID discovery, then JWKS), scopes mapped to the publishers a token may write."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from ard_mcp.assembly import cli
from ard_mcp.surfaces.auth import Principal, TokenStore
from ard_mcp.surfaces.oauth import JwtVerifier
from ard_mcp.surfaces.rest.settings import HttpSettings
from tests.conftest import PDF, WEATHER
from tests.http_support import running

AUDIENCE = "https://registry.example.com/"
RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())
STRANGER = rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _jwk(key: Any, kid: str, alg: str) -> dict[str, Any]:
    algorithm = jwt.algorithms.RSAAlgorithm if alg.startswith("RS") else jwt.algorithms.ECAlgorithm
    return {**json.loads(algorithm.to_jwk(key.public_key())), "kid": kid, "alg": alg, "use": "sig"}


class Issuer:
    """An authorization server's public face: discovery metadata and JWKS, counting key fetches."""

    def __init__(self) -> None:
        self.fetches = 0
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/.well-known/openid-configuration":
                    body: dict[str, Any] = {"issuer": issuer.url, "jwks_uri": f"{issuer.url}/jwks.json"}
                elif self.path == "/jwks.json":
                    issuer.fetches += 1
                    body = {"keys": [_jwk(RSA_KEY, "rsa-1", "RS256"), _jwk(EC_KEY, "ec-1", "ES256")]}
                else:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def token(self, key: Any = RSA_KEY, kid: str = "rsa-1", alg: str = "RS256", **claims: Any) -> str:
        now = int(time.time())
        body = {"iss": self.url, "aud": AUDIENCE, "sub": "alice", "iat": now, "exp": now + 300, **claims}
        return jwt.encode({k: v for k, v in body.items() if v is not None}, key, algorithm=alg, headers={"kid": kid})


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    started = Issuer()
    yield started
    started.server.shutdown()


@pytest.fixture
def verifier(issuer: Issuer) -> JwtVerifier:
    made = JwtVerifier(issuer.url, AUDIENCE)
    made.prefetch()  # through discovery: no --oauth-jwks-url given
    return made


def test_a_valid_token_names_its_subject_and_the_publishers_its_scopes_grant(issuer: Issuer, verifier: JwtVerifier) -> None:
    token = issuer.token(scope="openid ard:publish:example.com ard:publish:*.example.org ard:publish:bad_domain")
    principal = verifier.principal(token)
    assert principal is not None and principal.name == "oauth:alice"
    assert principal.publishers == ("example.com", "*.example.org")  # the invalid scope is ignored
    assert principal.may_write("example.com") and principal.may_write("docs.example.org") and not principal.may_write("example.net")
    ec_token = issuer.token(EC_KEY, "ec-1", "ES256", scp=["ard:publish:*"])
    operator = verifier.principal(ec_token)
    assert operator is not None and operator.may_write("anyone.example")
    reader = verifier.principal(issuer.token())
    assert reader is not None and not reader.may_write("example.com") and not reader.invoke  # identified, may write nothing
    caller = verifier.principal(issuer.token(scope="openid ard:invoke"))
    assert caller is not None and caller.invoke and caller.publishers == ()


@pytest.mark.parametrize(
    "changes",
    [
        {"exp": int(time.time()) - 3600},
        {"iss": "https://evil.example"},
        {"aud": "https://another-registry.example"},
        {"exp": None},
        {"sub": None},
    ],
    ids=["expired", "issuer", "audience", "no exp", "no sub"],
)
def test_tokens_that_do_not_hold_are_refused(issuer: Issuer, verifier: JwtVerifier, changes: dict[str, Any]) -> None:
    assert verifier.principal(issuer.token(scope="ard:publish:*", **changes)) is None


def test_forged_signatures_are_refused(issuer: Issuer, verifier: JwtVerifier) -> None:
    assert verifier.principal(issuer.token(STRANGER, scope="ard:publish:*")) is None  # signed by a key not the issuer's
    unsigned = jwt.encode({"iss": issuer.url, "aud": AUDIENCE, "sub": "x", "exp": int(time.time()) + 60}, None, algorithm="none")
    assert verifier.principal(unsigned) is None
    assert verifier.principal("not.a.jwt") is None


def test_unknown_key_ids_refetch_the_keys_at_most_once_a_minute(issuer: Issuer, verifier: JwtVerifier) -> None:
    before = issuer.fetches
    for i in range(20):
        assert verifier.principal(issuer.token(STRANGER, kid=f"random-{i}")) is None
    assert issuer.fetches - before <= 1


@pytest.mark.anyio
async def test_the_token_store_is_the_mcp_sdk_token_verifier(issuer: Issuer, verifier: JwtVerifier) -> None:
    static = "static-token-0123456789abcdef"
    tokens = TokenStore({static: Principal("ci", ("example.com",))}, verifier=verifier)
    access = await tokens.verify_token(issuer.token(scope="ard:publish:example.org"))
    assert access is not None and access.client_id == "oauth:alice" and access.scopes == ["ard:publish:example.org"]
    from_file = await tokens.verify_token(static)
    assert from_file is not None and from_file.client_id == "ci" and from_file.scopes == ["ard:publish:example.com"]
    assert await tokens.verify_token(issuer.token(aud="https://elsewhere.example")) is None
    assert await tokens.verify_token("wrong-token-0123456789abcdef") is None


def test_an_issuer_without_keys_stops_start() -> None:
    with pytest.raises(ValueError, match="no signing keys could be fetched"):
        JwtVerifier("http://127.0.0.1:9", AUDIENCE).prefetch()  # nothing listens on port 9


@pytest.mark.slow
@pytest.mark.anyio
async def test_rest_writes_with_oauth_tokens_are_scoped_like_token_file_lines(
    tmp_path: Path, issuer: Issuer, verifier: JwtVerifier
) -> None:
    tokens = TokenStore(verifier=verifier)
    publisher = {"Authorization": f"Bearer {issuer.token(scope='ard:publish:example.com')}"}
    async with running(tmp_path / "data", HttpSettings(tokens=tokens)) as client:
        assert (await client.post("/agents", json=WEATHER, headers=publisher)).status_code == 201
        assert (await client.post("/agents", json=PDF, headers=publisher)).status_code == 403  # docs.example.org is not its
        expired = {"Authorization": f"Bearer {issuer.token(scope='ard:publish:*', exp=int(time.time()) - 60)}"}
        assert (await client.delete(f"/agents/{WEATHER['identifier']}", headers=expired)).status_code == 401
        assert (await client.delete(f"/agents/{WEATHER['identifier']}", headers=publisher)).status_code == 200


def test_serve_stops_when_the_issuer_has_no_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["serve", "--transport", "streamable-http", "--oauth-issuer", "http://127.0.0.1:9", "--data-dir", str(tmp_path / "d")])
    assert code == 2 and "no signing keys could be fetched for the issuer http://127.0.0.1:9" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.anyio
async def test_an_mcp_endpoint_that_requires_a_token_advertises_the_issuer(tmp_path: Path, issuer: Issuer, verifier: JwtVerifier) -> None:
    settings = HttpSettings(tokens=TokenStore(verifier=verifier), mcp_issuer=issuer.url)
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    accept = {"accept": "application/json, text/event-stream"}
    async with running(tmp_path / "data", settings) as client:
        refused = await client.post("/mcp", json=initialize, headers=accept)
        assert refused.status_code == 401 and "resource_metadata" in refused.headers["www-authenticate"]
        metadata = (await client.get("/.well-known/oauth-protected-resource/mcp")).json()
        assert metadata["authorization_servers"] == [issuer.url + "/"] or metadata["authorization_servers"] == [issuer.url]
        signed_in = await client.post("/mcp", json=initialize, headers={**accept, "Authorization": f"Bearer {issuer.token()}"})
        assert signed_in.status_code == 200, signed_in.text
        assert (await client.post("/search", json={"query": {"text": "weather"}})).status_code == 200  # REST reads stay public
