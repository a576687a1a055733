"""Shared by the HTTP tests: the app under a real httpx client, sample documents of the three formats, and
validators for the published ARD schemas and for our own /openapi.json."""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import yaml
from referencing import Registry as SchemaRegistry
from referencing import Resource
from referencing.jsonschema import DRAFT202012

from ard_mcp.assembly.app import build_app
from ard_mcp.config import Config
from ard_mcp.surfaces.rest.settings import HttpSettings
from ard_mcp.surfaces.services import Services
from tests.conftest import ARD_SCHEMAS
from tests.conftest import entry as doc  # noqa: F401 - the HTTP tests import it from here
from tests.test_packaging import FORMATS

BASE_URL = "http://127.0.0.1:8000"

# The draft's own examples (Xu §4.9 and §13.1, AIDIP §3.3).
XU_HR: dict[str, Any] = {
    "id": "https://agents.example.net/id/hr-core-automator",
    "name": "HR Core Automator",
    "description": "Optimizes HR workflows and onboarding checks.",
    "tags": ["hr", "workflow", "onboarding", "hcm", "api-automation"],
    "examples": [
        {"id": "ex-1", "text": "Prepare a new-employee onboarding workflow.", "tags": ["onboarding", "workflow"]},
        {"id": "ex-2", "text": "Check an employee record for missing payroll fields.", "tags": ["employee-record", "validation"]},
    ],
    "bindings": [
        {
            "protocol": "https",
            "endpoint": "https://agents.example.net/hr-core/invoke",
            "media_types": ["application/json"],
            "interaction_model": "request-response",
        }
    ],
    "auth": {"type": "oauth2", "token_url": "https://agents.example.net/token"},
    "constraints": {"region": "apac"},
    "status": "active",
    "version": "1.0.0",
    "updated_at": "2026-05-08T00:00:00Z",
    "x-example.net-tier": "gold",
}
XU_MINIMAL: dict[str, Any] = {
    "id": "https://example.net/agents/minimal",
    "name": "Minimal Agent",
    "description": "Answers short factual questions.",
    "bindings": [{"protocol": "https", "endpoint": "https://example.net/agent/invoke"}],
}
AIDIP_TRANSLATOR: dict[str, Any] = {
    "id": "agent-12345",
    "name": "Chinese-English Translator",
    "description": "Translates text between Chinese and English with high accuracy using a fine-tuned model.",
    "version": "1.2.0",
    "publisher": "ExampleAI Inc.",
    "capabilities": ["translation"],
    "tags": ["nlp", "chinese", "english", "cloud"],
    "endpoint": "https://api.example.com/agents/translate",
    "supported_languages": ["en", "zh"],
    "authentication": {"type": "api_key", "instructions": "Include 'X-API-Key' header with your API key."},
    "status": "active",
    "operations": [
        {
            "name": "translateText",
            "description": "Translates text from source language to target language.",
            "inputs": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "source_language": {"type": "string", "enum": ["en", "zh"]},
                    "target_language": {"type": "string", "enum": ["en", "zh"]},
                },
                "required": ["text", "source_language", "target_language"],
            },
            "outputs": {"type": "object", "properties": {"translated_text": {"type": "string"}}},
            "examples": [
                {
                    "input": {"text": "你好世界", "source_language": "zh", "target_language": "en"},
                    "output": {"translated_text": "Hello World"},
                }
            ],
        }
    ],
}
XU_HR_URN = "urn:air:agents.example.net:id:hr-core-automator"
XU_MINIMAL_URN = "urn:air:example.net:agents:minimal"
AIDIP_URN = "urn:air:api.example.com:agent-12345"


@asynccontextmanager
async def running(
    data_dir: Path,
    settings: HttpSettings | None = None,
    source_url: str | None = None,
    services: Services | None = None,
    store_url: str | None = None,
) -> AsyncIterator[httpx.AsyncClient]:
    """The whole app (lifespan included: registry, MCP session manager) under an httpx client."""
    config = Config(data_dir, source_url=source_url, store_url=store_url)
    app = build_app(config, settings or HttpSettings(), warm=False, services=services)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL, timeout=60) as client,
    ):
        yield client


Api = tuple[httpx.AsyncClient, dict[str, Any]]


@asynccontextmanager
async def seeded(
    data_dir: Path, documents: list[dict[str, Any]], source_url: str | None = None, store_url: str | None = None
) -> AsyncIterator[Api]:
    """The app with `documents` registered through POST /agents, and its /openapi.json."""
    async with running(data_dir, source_url=source_url, store_url=store_url) as client:
        for document in documents:
            response = await client.post("/agents", json=document)
            assert response.status_code == 201, response.text
        yield client, (await client.get("/openapi.json")).json()


# -- schema validation ------------------------------------------------------------------------------------
_ARD_BASE = "https://ard-spec.invalid/"


@functools.cache
def _ard_registry() -> SchemaRegistry:
    spec = yaml.safe_load((ARD_SCHEMAS / "ard.openapi.yaml").read_text(encoding="utf-8"))
    catalog = json.loads((ARD_SCHEMAS / "ai-catalog.schema.json").read_text(encoding="utf-8"))
    catalog_resource = Resource.from_contents(catalog)
    return SchemaRegistry().with_resources(
        [
            (_ARD_BASE + "ard.openapi.yaml", Resource.from_contents(spec, default_specification=DRAFT202012)),
            (_ARD_BASE + "ai-catalog.schema.json", catalog_resource),
            (catalog["$id"], catalog_resource),
        ]
    )


def ard_errors(instance: Any, pointer: str) -> list[str]:
    """Violations of the published ARD schemas. `pointer` is `openapi:<Component>`, `catalog:` (a manifest)
    or `catalog:<$def>`."""
    where, _, name = pointer.partition(":")
    if where == "openapi":
        ref = f"{_ARD_BASE}ard.openapi.yaml#/components/schemas/{name}"
    else:
        ref = f"{_ARD_BASE}ai-catalog.schema.json" + (f"#/$defs/{name}" if name else "")
    validator = jsonschema.Draft202012Validator({"$ref": ref}, registry=_ard_registry(), format_checker=FORMATS)
    return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in validator.iter_errors(instance)]


def assert_ard(instance: Any, pointer: str) -> None:
    errors = ard_errors(instance, pointer)
    assert not errors, f"not valid against the published ARD {pointer}: {errors[:5]}"


def response_schema(openapi: dict[str, Any], path: str, method: str, status: int) -> dict[str, Any] | None:
    responses = openapi["paths"][path][method.lower()]["responses"]
    described = responses.get(str(status))
    return None if described is None else described["content"]["application/json"]["schema"]


def assert_ours(openapi: dict[str, Any], path: str, method: str, response: httpx.Response) -> None:
    """The response's status is documented for the operation and its body is valid against that schema."""
    schema = response_schema(openapi, path, method, response.status_code)
    assert schema is not None, (
        f"{method} {path} answered {response.status_code}, which /openapi.json does not document: {response.text[:300]}"
    )
    validator = jsonschema.Draft202012Validator({"components": openapi["components"], "allOf": [schema]}, format_checker=FORMATS)
    errors = [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in validator.iter_errors(response.json())]
    assert not errors, f"{method} {path} {response.status_code} does not match /openapi.json: {errors[:5]}"
