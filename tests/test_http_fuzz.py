"""Property-based fuzzing of our own /openapi.json with hypothesis: for every operation, requests drawn from
its documented schemas (and from arbitrary JSON, junk parameters and odd ids) never get a 5xx, and every
answer is one the document describes, with a body valid against it. A matrix of Origin headers and body types
on a write: only JSON from no page, the registry's own pages or a configured CORS origin is stored.

The app runs once for the module in an event loop of its own (an anyio blocking portal); hypothesis drives
the synchronous test, which sends each request through the portal."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ard_mcp.surfaces.rest.operations import OPERATIONS, Operation
from ard_mcp.surfaces.rest.settings import HttpSettings
from ard_mcp.web.settings import CrawlSettings
from tests.conftest import SAMPLE, WEATHER, entry, keep_connections_on_loopback
from tests.http_support import AIDIP_TRANSLATOR, BASE_URL, XU_HR, assert_ours, running

pytestmark = pytest.mark.slow  # the model, Chroma or a server

Api = tuple[BlockingPortal, httpx.AsyncClient, dict[str, Any]]
FUZZ = settings(max_examples=50, deadline=None, database=None, suppress_health_check=list(HealthCheck))
CONFIGURED = "https://app.example"  # the fuzzed app's CORS origin

scalars = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20)
any_json = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=12
)
words = st.sampled_from(
    [
        "weather",
        "invoice",
        "translate",
        "hr",
        "nlp",
        "documents",
        "type",
        "tags",
        "urn:air:example.com:weather:forecast",
        "https://api.example.com/a",
        "",
    ]
)
texts = words | st.text(max_size=40)


def from_schema(schema: dict[str, Any], components: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """Instances shaped by a JSON Schema (loosely: bounds are sometimes crossed on purpose)."""
    if depth > 5:
        return scalars
    if "$ref" in schema:
        target = components[schema["$ref"].rsplit("/", 1)[-1]]
        return st.deferred(lambda: from_schema(target, components, depth + 1))
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return st.one_of([from_schema(s, components, depth + 1) for s in schema[key]])
    if "allOf" in schema:
        return from_schema(schema["allOf"][0], components, depth + 1)
    if "enum" in schema:
        return st.sampled_from(schema["enum"]) | texts
    if "const" in schema:
        return st.just(schema["const"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([from_schema({**schema, "type": k}, components, depth) for k in kind])
    if kind == "object":
        properties = schema.get("properties", {})
        required = set(schema.get("required", []))
        body = st.fixed_dictionaries(
            {k: from_schema(v, components, depth + 1) for k, v in properties.items() if k in required},
            optional={k: from_schema(v, components, depth + 1) for k, v in properties.items() if k not in required},
        )
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            return st.dictionaries(words, from_schema(extra, components, depth + 1), max_size=3) | body
        return body
    if kind == "array":
        return st.lists(from_schema(schema.get("items", {}), components, depth + 1), max_size=4)
    if kind == "string":
        return texts
    if kind == "integer":
        low, high = schema.get("minimum", -5), schema.get("maximum", 200)
        return st.integers(low - 2, high + 2)
    if kind == "number":
        return st.floats(-1e6, 1e6, allow_nan=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    return any_json


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory, offline_dns: str) -> Iterator[Api]:
    data_dir: Path = tmp_path_factory.mktemp("fuzz") / "data"
    offline = HttpSettings(  # fuzzed crawl targets never reach the system's resolvers
        cors_origins=(CONFIGURED,), crawl=CrawlSettings(dns_server=offline_dns)
    )
    with (
        pytest.MonkeyPatch.context() as patch,
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(running(data_dir, offline)) as client,
    ):
        keep_connections_on_loopback(patch)  # ... nor any address but loopback (a number is read as one)
        for item in [*SAMPLE, XU_HR, AIDIP_TRANSLATOR]:
            assert portal.call(partial(client.post, "/agents", json=item)).status_code == 201
        yield portal, client, portal.call(client.get, "/openapi.json").json()


def _request_body(op: Operation, openapi: dict[str, Any]) -> st.SearchStrategy[Any]:
    operation = openapi["paths"][op.path][op.method.lower()]
    if "requestBody" not in operation:
        return any_json
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    return from_schema(schema, openapi["components"]["schemas"]) | any_json


def draw_request(op: Operation, openapi: dict[str, Any], data: st.DataObject) -> tuple[str, dict[str, Any]]:
    """A request for `op`: documented shapes and arbitrary JSON, junk parameters, raw bytes, odd ids (also
    the reliability suite's, against a server process)."""
    path = op.path
    if "{id}" in path:
        ids = (words | st.text(min_size=1, max_size=30) | st.sampled_from([XU_HR["id"], "agent-12345"])).filter(lambda r: r.strip("."))
        reference = data.draw(ids, label="id")  # (an id of dots would be a dot segment: the URL names another route)
        path = path.replace("{id}", quote(reference, safe=":"))
    params: dict[str, Any] = {}
    for param in op.params:
        if param.name != "id" and data.draw(st.booleans(), label=f"with {param.name}"):
            params[param.name] = data.draw(from_schema(param.schema, {}) | texts, label=param.name)
    if data.draw(st.integers(0, 9), label="junk parameter") == 0:
        params[data.draw(words, label="junk name") or "junk"] = "1"
    kwargs: dict[str, Any] = {"params": {k: str(v) for k, v in params.items() if v is not None}, "headers": {}}
    if op.method in ("POST", "PUT"):
        if data.draw(st.integers(0, 9), label="raw bytes") == 0:
            kwargs["content"] = data.draw(st.binary(max_size=64), label="content")
            kwargs["headers"]["content-type"] = "application/json"
        else:
            kwargs["json"] = data.draw(_request_body(op, openapi), label="body")
    if op.keyed and data.draw(st.booleans(), label="with an Idempotency-Key"):  # any header value a client can send
        key = data.draw(st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF), max_size=40), label="key")
        # HTTP strips a value's outer whitespace, and h11 refuses to send a value that has any: it was a client error
        kwargs["headers"]["Idempotency-Key"] = key.strip(" ").encode("latin-1")
    return path, kwargs


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: f"{op.method} {op.path}")
@FUZZ
@given(data=st.data())
def test_no_operation_answers_with_a_server_error(api: Api, op: Operation, data: st.DataObject) -> None:
    portal, client, openapi = api
    path, kwargs = draw_request(op, openapi, data)
    response = portal.call(partial(client.request, op.method, path, **kwargs))
    assert response.status_code < 500, f"{op.method} {path} {kwargs} -> {response.status_code} {response.text[:500]}"
    assert_ours(openapi, op.path, op.method, response)


ORIGINS = {"absent": None, "foreign": "https://evil.example", "null": "null", "own": BASE_URL, "configured": CONFIGURED}
CONTENT_TYPES = {
    "missing": None,
    "text": "text/plain",
    "form": "application/x-www-form-urlencoded",
    "multipart": "multipart/form-data; boundary=x",
    "json": "application/json",
    "json-charset": "application/json; charset=utf-8",
    "json-suffix": "application/ai-catalog+json",
}


@pytest.mark.parametrize("origin", ORIGINS)
@pytest.mark.parametrize("content_type", CONTENT_TYPES)
def test_writes_need_json_from_an_allowed_origin(api: Api, origin: str, content_type: str) -> None:
    """A page of a foreign origin gets 403 whatever it sends; any other caller 415 unless its body is typed
    JSON (the types a browser sends cross-site without a preflight, and none at all); only then is it stored."""
    portal, client, openapi = api
    identifier = f"urn:air:example.com:origin:{uuid.uuid4().hex}"
    sent = {"origin": ORIGINS[origin], "content-type": CONTENT_TYPES[content_type]}
    headers = {name: value for name, value in sent.items() if value is not None}
    body = json.dumps(entry(WEATHER, identifier=identifier))
    response = portal.call(partial(client.post, "/agents", content=body, headers=headers))
    expected = 403 if origin in ("foreign", "null") else 201 if content_type.startswith("json") else 415
    assert response.status_code == expected, response.text
    assert_ours(openapi, "/agents", "POST", response)
    assert portal.call(client.get, f"/agents/{identifier}").status_code == (200 if expected == 201 else 404)
