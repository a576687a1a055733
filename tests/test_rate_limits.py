"""Rate limits over HTTP: per client address and per token, reads and writes apart, failed authentication
throttled; 429 with Retry-After in each draft's error object."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.requests import Request

from ard_mcp.errors import RateLimited
from ard_mcp.surfaces.auth import TokenStore
from ard_mcp.surfaces.rest.guard import Forms, _kind
from ard_mcp.surfaces.rest.ratelimit import Limiter, RateLimits
from ard_mcp.surfaces.rest.settings import HttpSettings
from ard_mcp.ui.security import FORM_PATHS, INVOKE_FORM
from tests.conftest import WEATHER
from tests.http_support import running


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_bucket_allows_a_ten_second_burst_then_its_rate() -> None:
    clock = Clock()
    limiter = Limiter(RateLimits(reads=60), clock)
    for _ in range(10):  # 60 a minute: a burst of ten seconds' worth
        limiter.take("reads", ("a",))
    with pytest.raises(RateLimited) as refused:
        limiter.take("reads", ("a",))
    assert refused.value.retry_after == 1 and "at most 60 a minute" in refused.value.message
    limiter.take("reads", ("b",))  # another client has its own bucket
    clock.now += 1.0
    limiter.take("reads", ("a",))  # one more a second
    with pytest.raises(RateLimited):
        limiter.take("reads", ("a",))


def test_a_request_counts_against_every_key_and_takes_nothing_when_refused() -> None:
    clock = Clock()
    limiter = Limiter(RateLimits(writes=6), clock)  # a burst of one
    limiter.take("writes", ("address x", "credential acme"))
    with pytest.raises(RateLimited):
        limiter.take("writes", ("address y", "credential acme"))  # the token is spent, from any address
    limiter.take("writes", ("address y",))  # and address y was not charged for the refused request
    limiter.take("reads", ("address x",))  # reads and writes apart


def test_off_and_loopback() -> None:
    limiter = Limiter(RateLimits(reads=0))
    for _ in range(1000):
        limiter.take("reads", ("a",))
    assert not limiter.applies_to("127.0.0.1", loopback=True) and limiter.applies_to("203.0.113.9", loopback=False)
    assert Limiter(RateLimits(loopback=True)).applies_to("127.0.0.1", loopback=True)


def test_idle_buckets_are_forgotten_once_there_are_many() -> None:
    clock = Clock()
    limiter = Limiter(RateLimits(reads=60), clock)
    for i in range(10_002):
        limiter.take("reads", (f"client {i}",))
    clock.now += 60
    limiter.take("reads", ("newcomer",))
    assert len(limiter._buckets) == 1  # noqa: SLF001


def _request(method: str, path: str) -> Request:
    return Request({"type": "http", "method": method, "path": path, "headers": [], "query_string": b""})


@pytest.mark.parametrize(
    ("method", "path", "body", "kind"),
    [
        ("POST", "/search", b"", "reads"),
        ("POST", "/agents", b"", "writes"),
        ("POST", "/agents/search", b"", "reads"),
        ("DELETE", "/agents/urn:air:example.com:x", b"", "writes"),
        ("POST", "/agents/urn:air:example.com:x/invoke", b"{}", "invocations"),
        ("POST", "/mcp", b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "register_agent"}}', "writes"),
        ("POST", "/mcp", b'[{"method": "tools/call", "params": {"name": "search_agents"}}, {"method": "ping"}]', "reads"),
        ("POST", "/mcp", b'[{"method": "ping"}, {"method": "tools/call", "params": {"name": "deregister_agent"}}]', "writes"),
        ("POST", "/mcp", b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search_agents"}}', "reads"),
        ("POST", "/mcp", b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "call_agent"}}', "invocations"),
        ("POST", "/mcp", b"{not json", "reads"),
        ("POST", "/operator/login", b"token=x", "writes"),
        ("POST", "/operator/crawl", b"url=x", "writes"),
        ("POST", "/operator/invoke", b"id=x", "invocations"),
    ],
)
def test_which_limit_a_request_counts_against(method: str, path: str, body: bytes, kind: str) -> None:
    assert _kind(_request(method, path), body, Forms(FORM_PATHS, INVOKE_FORM)) == kind


@pytest.mark.slow
@pytest.mark.anyio
async def test_429_with_retry_after_in_each_dialect(tmp_path: Path) -> None:
    token = "rate-limit-token-0123456789"
    settings = HttpSettings(tokens=TokenStore({token: "ci"}), rate_limits=RateLimits(reads=6, writes=60, auth_failures=12, loopback=True))
    async with running(tmp_path / "data", settings) as client:
        answers = [(await client.post("/search", json={"query": {"text": "weather"}})).status_code for _ in range(2)]
        assert answers == [200, 429]  # 6 a minute: a burst of one
        refused = await client.post("/search", json={"query": {"text": "weather"}})
        assert refused.json()["errorCode"] == "RATE_LIMIT_EXCEEDED" and int(refused.headers["retry-after"]) >= 1
        xu = await client.post("/discover", json={"query": "weather"})
        assert xu.status_code == 429 and xu.json()["code"] == "rate_limited" and xu.json()["retry_after"] >= 1
        written = await client.post("/agents", json=WEATHER, headers={"Authorization": f"Bearer {token}"})
        assert written.status_code == 201  # writes have their own allowance
        bad = {"Authorization": "Bearer not-the-token-000000000"}
        guesses = [(await client.delete(f"/agents/{WEATHER['identifier']}", headers=bad)).status_code for _ in range(3)]
        assert guesses == [401, 401, 429]  # two failures make the burst of 12 a minute; then guessing waits
        aidip = await client.delete(f"/agents/{WEATHER['identifier']}", headers={"Authorization": f"Bearer {token}"})
        assert aidip.status_code == 429 and aidip.json()["error"]["code"] == "RateLimited"  # this address is throttled
