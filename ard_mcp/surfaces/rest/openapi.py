"""`/openapi.json`: our REST surface described from the route table and the pydantic models that define
every body, so the description cannot drift from what the routes accept and answer.

Schemas are pydantic's validation-mode JSON Schemas (the wire models drop absent fields on output, which
pydantic's serialization-mode schema cannot express). Every operation lists every status it can answer
with, each with the error object of the draft the route belongs to. Security is described as the server
runs: an operation needs a bearer token only on a server with tokens, so an open server's document names
none (it once marked `GET /invocations` and the writes as needing `Authorization` while the server
answered them without).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from ard_mcp import __version__
from ard_mcp.formats import aidip, xu
from ard_mcp.formats.catalog import CatalogEntry
from ard_mcp.index.idempotency import KEEP_SECONDS
from ard_mcp.surfaces.rest.errors import ERROR_MODELS
from ard_mcp.surfaces.rest.idempotency import HEADER, MAX_KEY, REPLAYED
from ard_mcp.surfaces.rest.operations import OPERATIONS, Operation

REF = "#/components/schemas/{model}"
REGISTRATION_FORMATS: tuple[type[BaseModel], ...] = (CatalogEntry, xu.XuAgentMetadata, aidip.AidipAgent)
STATUS_TEXT = {
    200: "OK",
    201: "Created",
    400: "Malformed request, invalid field or filter",
    401: "Missing or invalid bearer token",
    403: "The token is not scoped to the entry's publisher, or the request came from a web page of an origin not allowed",
    404: "No such agent (or an id no route can carry, e.g. one with a line break)",
    408: "Request body not received in time",
    409: (
        "Registration older than the stored entry (stale), or an id another agent's identifier already derives from, "
        "or the first request with this Idempotency-Key is still being answered"
    ),
    413: "Request body over the size limit",
    415: "Body is not JSON (a write needs Content-Type: application/json)",
    421: "Host header not allowed",
    422: "The Idempotency-Key was already used with a different request (body, route or query)",
    429: "Over a rate limit (Retry-After says when to retry)",
    500: "Internal error",
    502: "The agent could not be reached, or answered with an error of its own making or something that is not JSON",
    503: "The store or the vector index cannot be reached (a PostgreSQL or Chroma server down or restarting); retry later",
    504: "The agent did not answer within the time limit",
}


_KEY_PARAMETER: dict[str, Any] = {
    "name": HEADER,
    "in": "header",
    "required": False,
    "description": (
        "IETF httpapi draft 'The Idempotency-Key HTTP Header Field': a unique value per request, such as a UUID, as a "
        f'Structured Field String ("..."). A retry with the same key and the same request is answered with the first '
        f"answer, without writing again; with another request, 422; while the first is still being answered, 409. Keys "
        f"are kept {KEEP_SECONDS // 3600} hours, per credential."
    ),
    "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY + 2},
}
_REPLAYED_HEADER = {
    "description": "true: the kept answer of an earlier request with the same Idempotency-Key",
    "schema": {"type": "string"},
}


def _statuses(op: Operation) -> list[int]:
    statuses = set(op.errors) | {421, 429, 500, 503}
    if op.method in ("POST", "PUT"):
        statuses |= {400, 408, 413, 415}
    if op.params:
        statuses.add(400)
    if op.write:
        statuses |= {401, 403}
    return sorted(statuses)


def build_openapi(transport: str = "streamable-http", credentials: bool = True) -> dict[str, Any]:
    """The document for a server on `transport`; `credentials`: whether it checks bearer tokens (a token
    file or an OAuth issuer), without which no operation needs one."""
    models: list[type[BaseModel]] = [*ERROR_MODELS.values(), *REGISTRATION_FORMATS]
    for op in OPERATIONS:
        models += [op.response] + ([op.request] if op.request else [])
    unique = list(dict.fromkeys(models))
    refs, schema = models_json_schema([(m, "validation") for m in unique], ref_template=REF)
    ref = {m: refs[(m, "validation")] for m in unique}

    def json_content(value: dict[str, Any]) -> dict[str, Any]:
        return {"application/json": {"schema": value}}

    paths: dict[str, dict[str, Any]] = {}
    for op in OPERATIONS:
        operation: dict[str, Any] = {"operationId": op.operation_id, "summary": op.summary, "tags": [op.tag]}
        parameters = [
            {
                "name": p.name,
                "in": "path" if p.name == "id" else "query",
                "required": p.name == "id",
                "description": p.description,
                "schema": p.schema,
            }
            for p in op.params
        ]
        if op.keyed:
            parameters.append(_KEY_PARAMETER)
        if parameters:
            operation["parameters"] = parameters
        if op.request is not None:
            operation["requestBody"] = {"required": True, "content": json_content(ref[op.request])}
        elif op.method in ("POST", "PUT"):
            body = {"anyOf": [ref[m] for m in REGISTRATION_FORMATS]}
            operation["requestBody"] = {
                "required": True,
                "description": "An ARD catalog entry, Xu Agent Metadata or AIDIP agent metadata.",
                "content": json_content(body),
            }
        responses: dict[str, Any] = {}
        for status in op.success:
            responses[str(status)] = {"description": STATUS_TEXT[status], "content": json_content(ref[op.response])}
            if op.keyed:
                responses[str(status)]["headers"] = {REPLAYED: _REPLAYED_HEADER}
        for status in _statuses(op):
            responses[str(status)] = {"description": STATUS_TEXT[status], "content": json_content(ref[ERROR_MODELS[op.dialect]])}
        operation["responses"] = responses
        if op.write and credentials:
            operation["security"] = [{"bearerAuth": []}]
        paths.setdefault(op.path, {})[op.method.lower()] = operation
    mcp = "/mcp (streamable HTTP)" if transport != "sse" else "/sse and /messages/ (SSE)"
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "ard-mcp registry REST API",
            "version": __version__,
            "description": (
                "ARD v0.9 search, explore and list; the Xu agent discovery profile (POST /discover, conformance D2); AIDIP "
                f"registration and search (/agents). MCP is served on the same port at {mcp}. Writes need a bearer token "
                "when the server has tokens. Errors: ARD routes answer {error: {code, message}, errorCode, message}; "
                "/discover answers {code, message, correlation_id}; AIDIP routes answer {error: {code, message, details?}}."
            ),
        },
        "paths": paths,
        "components": {
            "schemas": schema.get("$defs", {}),
            "securitySchemes": {
                "bearerAuth": {"type": "http", "scheme": "bearer", "description": "A token from the server's --token-file."}
            },
        },
    }
