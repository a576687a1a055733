"""RestBench (github.com/Yifan-Song793/RestGPT): the TMDB and Spotify REST endpoints as a catalog, and the
benchmark's human-written instructions with their gold solution paths as queries. Held out: nothing is
tuned or trained on it (`suite.HELD_OUT_SOURCES`).

* Catalog: one entry per endpoint of `specs/tmdb_oas.json` (54) and `specs/spotify_oas.json` (40), both APIs
  in one catalog, `urn:air:restbench.example.org:endpoint:<api>-<method>-<path>`, typed
  `application/openapi+json`. Per endpoint, not per API: with one entry per API the catalog would hold two
  entries and every query would name one of them in its first word, while the gold solutions name
  endpoints (`GET /search/person`, then `GET /person/{person_id}/movie_credits`), which is the choice an
  agent actually has to make among 94. The display name is `<API>: <summary> (<METHOD> <path>)`, since
  TMDB's summaries repeat ("Get Details" is the summary of 11 endpoints); the description is the
  operation's own (its summary when it has none); Spotify's operation tags are the tags.
* Tools: the endpoint itself, its parameters (path-level and operation-level, `$ref`s into
  `components/parameters` resolved) and, for a JSON request body, the body's properties as JSON Schema.
  Response schemas and examples stay out (TMDB's examples are movie plots and reviews, not what the
  endpoint does).
* Queries: every instruction of `datasets/tmdb.json` (100) and `datasets/spotify.json` (57); `relevant` =
  every distinct endpoint of its solution, matched with path-parameter names ignored (one TMDB solution says
  `/person/{movie_id}/movie_credits` for `/person/{person_id}/movie_credits`), and surrounding spaces
  dropped. An instruction whose solution names an endpoint no spec has (Spotify's `GET /track/{id}`) is left
  out. Kind: `tmdb` or `spotify`; category `single-endpoint` or `multi-endpoint`.
* Licence: the repository's MIT licence. The specs are TMDB's and Spotify's public API descriptions as the
  repository ships them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .common import REST_TYPE, Dataset, Snapshot, catalog_entry, clean, identifier, labelled_query, licence_name, slug, tool

NAME = "restbench"
REPO = "Yifan-Song793/RestGPT"
PUBLISHER = "restbench.example.org"
#: (kind, the API's name in the catalog, its OpenAPI spec, its instructions)
APIS = (
    ("tmdb", "TMDB", "specs/tmdb_oas.json", "datasets/tmdb.json"),
    ("spotify", "Spotify", "specs/spotify_oas.json", "datasets/spotify.json"),
)
METHODS = ("get", "post", "put", "patch", "delete")
_PATH_PARAMETER = re.compile(r"\{[^}]*\}")


def endpoint_key(text: str) -> str:
    """`GET /person/{movie_id}/movie_credits ` → `GET /person/{}/movie_credits`: what two spellings of an
    endpoint share (the method, and the path with its parameter names left out)."""
    method, _, path = text.strip().partition(" ")
    return f"{method.upper()} {_PATH_PARAMETER.sub('{}', path.strip())}"


def _resolve(spec: Mapping[str, Any], node: Any) -> Any:
    """A `{"$ref": "#/components/..."}` node replaced by what it points to (one level at a time, to the end)."""
    seen = 0
    while isinstance(node, Mapping) and isinstance(node.get("$ref"), str) and node["$ref"].startswith("#/") and seen < 10:
        target: Any = spec
        for part in node["$ref"][2:].split("/"):
            target = target.get(part) if isinstance(target, Mapping) else None
        node, seen = target, seen + 1
    return node


def _parameter(spec: Mapping[str, Any], raw: Mapping[str, Any]) -> dict[str, Any]:
    """One OpenAPI parameter or body property as JSON Schema: its type, description, enum and default."""
    schema = _resolve(spec, raw.get("schema")) or {}
    out: dict[str, Any] = {}
    kind = raw.get("type") or schema.get("type")
    if isinstance(kind, str):
        out["type"] = kind
    description = raw.get("description") or schema.get("description")
    if isinstance(description, str) and description.strip():
        out["description"] = clean(description)
    for key in ("enum", "default"):
        value = raw.get(key, schema.get(key))
        if value is not None:
            out[key] = value
    return out


def _input_schema(spec: Mapping[str, Any], path_item: Mapping[str, Any], operation: Mapping[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    for raw in [*(path_item.get("parameters") or []), *(operation.get("parameters") or [])]:
        parameter = _resolve(spec, raw)
        if not isinstance(parameter, Mapping) or not isinstance(parameter.get("name"), str):
            continue
        properties[parameter["name"]] = _parameter(spec, parameter)
        if str(parameter.get("required")).lower() == "true":
            required.append(parameter["name"])
    body = _resolve(spec, operation.get("requestBody")) or {}
    body_schema = _resolve(spec, ((body.get("content") or {}).get("application/json") or {}).get("schema")) or {}
    for name, raw in (body_schema.get("properties") or {}).items():
        if isinstance(raw, Mapping):
            properties[str(name)] = _parameter(spec, raw)
    required += [name for name in body_schema.get("required") or [] if name in properties]
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(dict.fromkeys(required))
    return schema


def _entries(kind: str, api: str, spec: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(endpoint key, entry) for every operation of the spec, in the spec's order."""
    server = ((spec.get("servers") or [{}])[0] or {}).get("url")
    out = []
    for path, path_item in (spec.get("paths") or {}).items():
        for method in (m for m in METHODS if m in path_item):
            operation = path_item[method]
            summary = clean(operation.get("summary") or "", 256)
            description = operation.get("description") or summary
            label = f"{method.upper()} {path}"
            name = f"{api}: {summary} ({label})" if summary else f"{api}: {label}"
            operation_id = operation.get("operationId") or slug(label)
            data = {
                "api": api,
                "method": method.upper(),
                "path": path,
                "operationId": operation_id,
                "server": server,
                "tools": [tool(operation_id, description, _input_schema(spec, path_item, operation), path=path, method=method.upper())],
            }
            entry = catalog_entry(
                ident=identifier(PUBLISHER, "endpoint", slug(f"{kind} {label}")),
                name=name,
                media_type=REST_TYPE,
                description=description,
                tags=[api, *(operation.get("tags") or [])],
                data={k: v for k, v in data.items() if v is not None},
                source=NAME,
            )
            out.append((f"{kind} {endpoint_key(label)}", entry))
    return out


def build(git_dir: Path, commit: str = "HEAD") -> Dataset:
    snapshot = Snapshot(git_dir, commit)
    entries: list[dict[str, Any]] = []
    queries = []
    for kind, api, spec_path, instructions in APIS:
        endpoints = _entries(kind, api, snapshot.json(spec_path))
        ids = {key: entry["identifier"] for key, entry in endpoints}
        entries += [entry for _, entry in endpoints]
        for n, item in enumerate(snapshot.json(instructions)):
            wanted = list(dict.fromkeys(f"{kind} {endpoint_key(step)}" for step in item.get("solution") or []))
            if not wanted or any(key not in ids for key in wanted):
                continue  # an endpoint the specs lack: no fair label
            category = "single-endpoint" if len(wanted) == 1 else "multi-endpoint"
            queries.append(labelled_query(f"rb-{kind}-{n}", item["query"], [ids[key] for key in wanted], kind, category))
    licence = snapshot.text("LICENSE")
    return Dataset(NAME, "RestBench TMDB and Spotify endpoints", REPO, snapshot.commit, licence_name(licence), licence, entries, queries)
